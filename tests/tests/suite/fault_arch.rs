//! The page-fault path's x86 side booted at 1, 2 and 4 vCPUs (`qemu -kernel`, TCG): the
//! in-kernel `fault_*` suite passes at each size (touches resolved by a region handler,
//! failures through exception-table fixups, TLB shootdowns from one sender, from two at
//! once, and into a CPU that waits inside its own fault handler), and the shootdown tests
//! report what they measured.
use std::time::Duration;
use tests::{describe, line_starting, suite_passes};

/// Generous: each boot takes about a second, but the CI machine is shared.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Every in-kernel `fault_` test: the kernel expands the prefix from its own table.
const FAULT_TESTS: &str = "fault_*";

fn fault_suite_passes(smp: u32) {
    let out = suite_passes(smp, None, FAULT_TESTS, "", TIMEOUT);
    let others = smp - 1;
    let line = line_starting(&out, "  tlb: without a shootdown ");
    assert!(
        line.ends_with(&format!(" of {others} other CPUs still read the old frame")),
        "{line}\n{}",
        describe(&out)
    );
    let concurrent = format!("  tlb: {} senders x ", smp.min(2));
    assert!(
        out.lines()
            .any(|l| l.starts_with(&concurrent) && l.contains(&format!("on {smp} CPUs"))),
        "no `{concurrent}...` line:\n{}",
        describe(&out)
    );
}

#[test]
fn fault_path_1_cpu() {
    fault_suite_passes(1);
}

#[test]
fn fault_path_2_cpus() {
    fault_suite_passes(2);
}

#[test]
fn fault_path_4_cpus() {
    fault_suite_passes(4);
}
