//! The README documents the contract as the code defines it: every kernel command-line key
//! with its accepted values (`abi::cmdline::ACCEPTED`), every kernel exit code with its port
//! value, QEMU status and runner status, every runner exit status, and every benchmark
//! scenario of `abi::catalog` with its variants and the seed's published figure. A change to
//! either side without the other fails here.
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

#[test]
fn every_benchmark_scenario_is_documented_with_its_seed_figure() {
    let text = readme();
    for s in abi::catalog::SCENARIOS {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", s.name)))
            .unwrap_or_else(|| panic!("README lacks a scenario row for `{}`", s.name));
        for v in s.variants {
            assert!(
                row.contains(&format!("`{}`", v.name)),
                "{}: variant {}",
                s.name,
                v.name
            );
        }
        for c in s.configs {
            assert!(row.contains(&format!("`{c}`")), "{}: config {c}", s.name);
        }
        if let Some(p) = &s.published {
            assert!(
                row.contains(p.text),
                "{}: the seed's figure `{}`",
                s.name,
                p.text
            );
        }
    }
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
