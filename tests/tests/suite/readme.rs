//! The README documents the contract as the code defines it: every kernel command-line key
//! with its accepted values (`abi::cmdline::ACCEPTED`), every kernel exit code with its port
//! value, QEMU status and runner status, and every runner exit status; its scenario table is
//! generated from `bench::catalog`. A change to either side without the other fails here.
use abi::ExitCode;
use qemu::RunnerExit;

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    std::fs::read_to_string(path).expect("README.md at the workspace root")
}

#[test]
fn every_command_line_key_is_documented() {
    let text = readme();
    for (key, values) in abi::cmdline::ACCEPTED {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{key}=")) && l.contains(values)),
            "README lacks a line `{key}= {values}`"
        );
    }
}

#[test]
fn every_kernel_exit_code_is_documented() {
    let text = readme();
    for c in ExitCode::ALL {
        let row = format!(
            "| `{}` | `0x{:02x}` | {} | {} |",
            c.name(),
            c.port_value(),
            c.qemu_status(),
            RunnerExit::Kernel(c).status()
        );
        assert!(text.contains(&row), "README lacks the row {row}");
    }
}

#[test]
fn every_runner_exit_status_is_documented() {
    let text = readme();
    for (e, meaning) in RunnerExit::OWN {
        let row = format!("| {} | {meaning} |", e.status());
        assert!(text.contains(&row), "README lacks the row {row}");
    }
}

/// Where the README's scenario table starts and ends.
const TABLE_BEGIN: &str = "<!-- scenario table: generated from bench::catalog; `KX_BLESS=1 cargo test -p tests \
     --test suite readme` rewrites it -->\n";
const TABLE_END: &str = "<!-- end of the scenario table -->\n";

/// The README's scenario table is the catalog's (`bench::catalog::readme_table`): adding
/// an experiment's catalog entry adds its row. With `KX_BLESS=1` the test rewrites the
/// table instead of failing.
#[test]
fn the_scenario_table_is_generated_from_the_catalog() {
    let text = readme();
    let begin = text
        .find(TABLE_BEGIN)
        .expect("the scenario table's first marker")
        + TABLE_BEGIN.len();
    let end = begin
        + text[begin..]
            .find(TABLE_END)
            .expect("the scenario table's last marker");
    let want = bench::catalog::readme_table();
    if text[begin..end] == want {
        return;
    }
    if std::env::var_os("KX_BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
        std::fs::write(path, format!("{}{want}{}", &text[..begin], &text[end..]))
            .expect("README.md rewritten");
        return;
    }
    panic!(
        "README's scenario table is not the catalog's; run `KX_BLESS=1 cargo test -p tests \
         --test suite readme` to rewrite it. The catalog's:\n{want}"
    );
}

/// Every catalog scenario has its paragraph under "The scenarios" (`- **`name`**`), in table
/// order, and every paragraph there is a catalog scenario's: adding an experiment's entry
/// without its description, or leaving a removed one's, fails.
#[test]
fn every_scenario_has_its_paragraph_and_every_paragraph_a_scenario() {
    let text = readme();
    let start = text
        .find("### The scenarios\n")
        .expect("a section on the scenarios");
    let section = &text[start..];
    let section = &section[..section[4..].find("\n#").map_or(section.len(), |e| e + 4)];
    let described: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- **`"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let catalog: Vec<&str> = bench::catalog::SCENARIOS.iter().map(|s| s.name).collect();
    assert_eq!(
        described, catalog,
        "README's paragraphs against the catalog"
    );
}

/// docs/design.md's premise table has a row per experiment (by its catalog name, or the
/// seed's short name before the first `-`), and no row for anything else.
#[test]
fn the_design_premise_table_has_a_row_per_experiment() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/design.md");
    let text = std::fs::read_to_string(path).expect("docs/design.md");
    let head = "| scenario | premise | where counted |\n|---|---|---|\n";
    let start = text.find(head).expect("the premise table") + head.len();
    let rows: Vec<&str> = text[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1).map(str::trim))
        .collect();
    let experiments = bench::catalog::SCENARIOS
        .iter()
        .filter(|s| s.name != bench::catalog::LIMIT);
    let mut want = Vec::new();
    for s in experiments {
        let short = s.name.split('-').next().unwrap_or(s.name);
        let row = rows
            .iter()
            .find(|r| **r == s.name || (short.starts_with("seed") && **r == short))
            .unwrap_or_else(|| panic!("docs/design.md's premise table lacks {}", s.name));
        want.push(*row);
    }
    let mut rows = rows;
    rows.sort_unstable();
    want.sort_unstable();
    assert_eq!(rows, want, "a premise-table row for no experiment");
}

#[test]
fn quick_start_is_two_commands() {
    let text = readme();
    let start = text.find("## Quick start").expect("a quick start section");
    let section = &text[start..];
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a shell block in the quick start");
    let commands: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(commands, ["cargo run --release -p qemu", "cargo test"]);
}
