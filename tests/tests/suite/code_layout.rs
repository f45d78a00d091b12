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
//! Each benchmark instance's batch loop (`Instance::run_batch`, one copy per scenario type
//! and variant) starts a page of its own (the linker script's `.text.batch`), so an A and a
//! B of one scenario do not differ by where their loops fell: page-counter-802f1d's B once
//! ran 2.4 unchained transitions per operation against A's 0.25 for the same instructions.
use std::process::Command;

/// One instruction of `objdump -d -M intel`: its address, mnemonic and operands.
struct Insn {
    addr: u64,
    text: String,
    /// The enclosing symbol, as objdump names it in the jump target (for messages).
    target_sym: String,
}

fn disassemble(elf: &std::path::Path) -> Vec<Insn> {
    let out = Command::new("objdump")
        .args(["-d", "-C", "--no-show-raw-insn", "-M", "intel"])
        .arg(elf)
        .output()
        .expect("objdump runs (binutils)");
    assert!(out.status.success(), "objdump failed on {}", elf.display());
    String::from_utf8_lossy(&out.stdout)
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

#[test]
fn every_benchmark_batch_loop_starts_a_page_of_its_own() {
    let elf = &tests::kernel().elf64;
    let out = Command::new("nm")
        .args(["-C", "--defined-only"])
        .arg(elf)
        .output()
        .expect("nm runs (binutils)");
    assert!(out.status.success(), "nm failed on {}", elf.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let loops: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            let (addr, kind, name) = (f.next()?, f.next()?, f.next()?);
            if !kind.eq_ignore_ascii_case("t") || !name.ends_with(">::run_batch") {
                return None;
            }
            Some((u64::from_str_radix(addr, 16).ok()?, name))
        })
        .collect();
    // At least the floor's, the page counter's A and B, and the fault scenarios'.
    assert!(
        loops.len() >= 4,
        "found {} run_batch copies in {}: {loops:?}",
        loops.len(),
        elf.display()
    );
    let bad: Vec<String> = loops
        .iter()
        .filter(|(addr, _)| addr % 4096 != 0)
        .map(|(addr, name)| format!("{addr:#x} {name}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} run_batch copies do not start a 4 KiB page:\n{}",
        bad.len(),
        loops.len(),
        bad.join("\n")
    );
}
