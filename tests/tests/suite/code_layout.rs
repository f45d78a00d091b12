//! Where the kernel's hot loops sit in its text, read from the built ELF with `objdump`.
//!
//! TCG chains one translated block to the next only when both lie in one 4 KiB guest
//! page; a jump across a page boundary leaves through the emulator's block lookup. A tight
//! loop that straddles a boundary pays that lookup twice per trip. `clear_page_orig`'s
//! loop runs 64 trips per page and is inlined into every fault path and into the `limit`
//! floor, so where a build happens to place one copy would decide how fast that path runs
//! under TCG (a copy across a boundary was seen to add 125 unchained transitions and about
//! 0.5 microseconds to each of shmem's fault+free operations, which took 3 without). Its asm
//! aligns the loop to 64 bytes, which its 39 bytes then never leave.
//!
//! The functions the benchmarks run per operation sit where the linker script's
//! `.text.trap`, `.text.buddy`, `.text.hot` and `.text.lockstat` put them (each on a page
//! of its own, each in a slot that divides a page, or a caller packed with its callees
//! into one page), so that an A and a B of one scenario do
//! not differ by where their copies fell: page-counter-802f1d's B once ran 2.4 unchained
//! transitions per operation against A's 0.25 for the same instructions. The test reads
//! the rules from the script itself, and fails when a pattern no longer names a function.
use std::process::Command;

/// One instruction of `objdump -d -M intel`: its address, mnemonic and operands.
struct Insn {
    addr: u64,
    text: String,
    /// The enclosing symbol, as objdump names it in the jump target (for messages).
    target_sym: String,
}

/// What binutils' `tool` prints for `elf` with `args`.
fn binutils(tool: &str, args: &[&str], elf: &std::path::Path) -> String {
    let out = Command::new(tool)
        .args(args)
        .arg(elf)
        .output()
        .unwrap_or_else(|e| panic!("{tool} runs (binutils): {e}"));
    assert!(out.status.success(), "{tool} failed on {}", elf.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn disassemble(elf: &std::path::Path) -> Vec<Insn> {
    binutils(
        "objdump",
        &["-d", "-C", "--no-show-raw-insn", "-M", "intel"],
        elf,
    )
    .lines()
    .filter_map(|l| {
        let (addr, rest) = l.trim_start().split_once(":\t")?;
        let addr = u64::from_str_radix(addr, 16).ok()?;
        let rest = rest.trim();
        let (text, target_sym) = match rest.split_once(" <") {
            Some((t, s)) => (t.trim(), s.trim_end_matches('>')),
            None => (rest, ""),
        };
        Some(Insn {
            addr,
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            target_sym: target_sym.to_string(),
        })
    })
    .collect()
}

/// The start and end (exclusive) of every `clear_page_orig` loop: eight 8-byte stores of
/// `rax` through `rdi`, `add rdi,0x40`, `dec ecx` and a `jne` back to the first store.
fn clear_page_loops(insns: &[Insn]) -> Vec<(u64, u64, String)> {
    let mut want: Vec<String> = vec!["mov QWORD PTR [rdi],rax".to_string()];
    want.extend((1..8).map(|i| format!("mov QWORD PTR [rdi+{:#x}],rax", i * 8)));
    want.push("add rdi,0x40".to_string());
    want.push("dec ecx".to_string());
    insns
        .windows(want.len() + 1)
        .filter(|w| w.iter().zip(&want).all(|(i, t)| i.text == *t))
        .filter(|w| {
            let jne = &w[want.len()];
            jne.text == format!("jne {:x}", w[0].addr)
        })
        .map(|w| {
            let jne = &w[want.len()];
            // `jne rel8` is two bytes.
            (w[0].addr, jne.addr + 2, jne.target_sym.clone())
        })
        .collect()
}

#[test]
fn every_clear_page_orig_loop_starts_on_a_64_byte_boundary() {
    let elf = &tests::kernel().elf64;
    let loops = clear_page_loops(&disassemble(elf));
    // At least the floor's copy and the fault paths' copies.
    assert!(
        loops.len() >= 2,
        "found {} clear_page_orig loops in {}: the pattern no longer matches the asm",
        loops.len(),
        elf.display()
    );
    let bad: Vec<String> = loops
        .iter()
        .filter(|(start, end, _)| start % 64 != 0 || (end - 1) / 64 != start / 64)
        .map(|(start, end, sym)| {
            let pages = if (end - 1) >> 12 != start >> 12 {
                " (across a 4 KiB page boundary)"
            } else {
                ""
            };
            format!("{start:#x}..{end:#x}{pages} in {sym}")
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} clear_page_orig loops are not in one 64-byte line:\n{}",
        bad.len(),
        loops.len(),
        bad.join("\n")
    );
}

/// One placement rule of the linker script: an output section before `.text` and the
/// function sections its input patterns take, either each on a page of its own
/// (`SUBALIGN(4K)`), each in a slot of its own that divides a page (`SUBALIGN(512)`: so
/// that none straddles a page), or packed together into one page.
struct Rule {
    section: String,
    /// `SUBALIGN`'s bytes, if any.
    subalign: Option<u64>,
    patterns: Vec<String>,
}

/// `SUBALIGN(4K)` or `SUBALIGN(512)` in an output section's attributes.
fn subalign(attrs: &str) -> Option<u64> {
    let arg = attrs.split_once("SUBALIGN(")?.1.split_once(')')?.0;
    let n = match arg.strip_suffix('K') {
        Some(k) => k.parse::<u64>().ok()? * 1024,
        None => arg.parse().ok()?,
    };
    assert!(
        n.is_power_of_two() && n <= 4096,
        "SUBALIGN({arg}) does not divide a page"
    );
    Some(n)
}

/// The rules of the kernel's linker script: every output section named `.text.<x>`.
fn placement_rules() -> Vec<Rule> {
    let path = tests::workspace()
        .root()
        .join("kernel/src/arch/x86_64/linker.ld");
    let script = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut rules = Vec::new();
    let mut cur: Option<Rule> = None;
    for line in script.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix(".text.") {
            let (name, attrs) = rest.split_once(' ').unwrap_or((rest, ""));
            cur = Some(Rule {
                section: format!(".text.{name}"),
                subalign: subalign(attrs),
                patterns: Vec::new(),
            });
        } else if let (Some(rule), Some(p)) = (cur.as_mut(), line.strip_prefix("*(")) {
            let p = p.strip_suffix(')').expect("one input pattern per line");
            assert!(
                !p.contains(['?', '[', ' ']),
                "{}: pattern {p} uses more than `*`, which this test does not read",
                rule.section
            );
            rule.patterns.push(p.to_string());
        } else if line == "}" {
            rules.extend(cur.take());
        }
    }
    rules
}

/// Whether `text` matches the linker's glob `pattern` (only `*` is special here).
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return text == pattern;
    }
    if !text.starts_with(first) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    text.ends_with(last)
}

/// Every function of the ELF: (address, size, mangled name), from `nm -S`.
fn functions(elf: &std::path::Path) -> Vec<(u64, u64, String)> {
    binutils("nm", &["-S", "--defined-only"], elf)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [addr, size, kind, name] = f[..] else {
                return None;
            };
            if !kind.eq_ignore_ascii_case("t") {
                return None;
            }
            let addr = u64::from_str_radix(addr, 16).ok()?;
            Some((addr, u64::from_str_radix(size, 16).ok()?, name.to_string()))
        })
        .collect()
}

#[test]
fn glob_matches_as_the_linker_does_for_stars() {
    assert!(glob(
        ".text.*run_batch*",
        ".text._ZN5bench9run_batch17habcE"
    ));
    assert!(glob("*a*b*", "xxaxxbxx"));
    assert!(!glob("*a*b*", "xxbxxaxx"));
    assert!(!glob(
        ".text.*9move_each17h*",
        ".text._ZN3lru4swap9move_each2E"
    ));
    assert!(glob("abc", "abc") && !glob("abc", "abcd"));
    assert!(!glob("*ab*ba*", "aba"));
}

#[test]
fn every_hot_function_sits_where_the_linker_script_puts_it() {
    let elf = &tests::kernel().elf64;
    let rules = placement_rules();
    let names: Vec<&str> = rules.iter().map(|r| r.section.as_str()).collect();
    for want in [".text.trap", ".text.buddy", ".text.hot", ".text.lockstat"] {
        assert!(
            names.contains(&want),
            "no {want} in the linker script: {names:?}"
        );
    }
    let funcs = functions(elf);
    let mut bad = Vec::new();
    for rule in &rules {
        let mut placed: Vec<&(u64, u64, String)> = Vec::new();
        for p in &rule.patterns {
            let hits: Vec<_> = funcs
                .iter()
                .filter(|(_, _, name)| glob(p, &format!(".text.{name}")))
                .collect();
            // A pattern no function matches any more (a rename, or the function was
            // inlined into its callers) would leave its code wherever it falls.
            assert!(
                !hits.is_empty(),
                "{}: no function of {} matches {p}",
                rule.section,
                elf.display()
            );
            placed.extend(hits);
        }
        if let Some(slot) = rule.subalign {
            for (addr, size, name) in &placed {
                // A function in a slot smaller than a page must fit its slot: a longer
                // one runs into the next slot and may straddle a page.
                if addr % slot != 0 || (slot < 4096 && *size > slot) {
                    bad.push(format!(
                        "{}: {addr:#x} ({size} bytes, slots of {slot}) {name}",
                        rule.section
                    ));
                }
            }
        } else {
            let lo = placed.iter().map(|f| f.0).min().unwrap_or(0);
            let hi = placed.iter().map(|f| f.0 + f.1).max().unwrap_or(0);
            if lo % 4096 != 0 || hi - lo > 4096 {
                bad.push(format!(
                    "{}: {lo:#x}..{hi:#x} is not one 4 KiB page ({} functions)",
                    rule.section,
                    placed.len()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "functions not placed as the linker script says:\n{}",
        bad.join("\n")
    );
}
