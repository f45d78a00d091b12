//! The fault core booted: the in-kernel `vm_*` suite (anonymous fault-in and zap on every
//! CPU, pft in both `vm_area_struct` layouts, memory.max with mapped file pages, readtwice,
//! a full memcg failing a touch, fault injection, a short soak) at 1 and 4 vCPUs and on two
//! NUMA nodes; the command line's `fail_page_alloc=` / `fail_charge=` reaching the
//! fault-injection test; and bad fault-injection values refused as a bad command line.
#![forbid(unsafe_code)]

use abi::ExitCode;
use qemu::RunOutput;
use std::time::Duration;
use tests::{assert_exit, assert_suite_passed, boot_direct_numa, boot_direct_smp, describe};

/// Generous: the suite takes a few seconds at 4 vCPUs, but the CI machine is shared.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Every in-kernel `vm_` test that `test=all` runs: the kernel expands the prefix from its table.
const VM_TESTS: &str = "vm_*";

fn suite_passes(smp: u32, nodes: Option<u32>, extra: &str) -> RunOutput {
    let out = boot_direct_numa(
        smp,
        nodes,
        &format!("run=test test={VM_TESTS} {extra}"),
        TIMEOUT,
    );
    let plan = assert_suite_passed(&out);
    assert!(plan.iter().all(|n| n.starts_with("vm_")), "{plan:?}");
    out
}

#[test]
fn vm_suite_1_cpu() {
    suite_passes(1, None, "");
}

#[test]
fn vm_suite_4_cpus() {
    let out = suite_passes(4, None, "");
    assert!(
        out.lines().any(|l| l.starts_with("  1500 ops per CPU: ")),
        "no soak line:\n{}",
        describe(&out)
    );
}

#[test]
fn vm_suite_2_nodes() {
    suite_passes(4, Some(2), "");
}

/// The command line's specs replace the test's defaults: every 3rd frame allocation fails
/// and charges never do, so exactly a third of the 1000 touches (2 vCPUs x 500) fail.
#[test]
fn command_line_fault_injection_reaches_the_fault_path() {
    let out = suite_passes(2, None, "fail_page_alloc=every:3");
    assert!(
        out.lines()
            .any(|l| l == "  fail_page_alloc Every(3), fail_charge Off"),
        "{}",
        describe(&out)
    );
    assert!(
        out.lines()
            .any(|l| l == "  333 of 1000 touches failed: 333 frame allocations, 0 charges"),
        "{}",
        describe(&out)
    );
}

#[test]
fn bad_fault_injection_values_are_a_bad_command_line() {
    for (line, says) in [
        (
            "run=test fail_charge=every:0",
            "bad value `every:0` for `fail_charge`",
        ),
        (
            "run=test fail_page_alloc=prob:150",
            "bad value `prob:150` for `fail_page_alloc`",
        ),
        ("fail_charge=every:2", "`fail_charge=` needs `run=test`"),
    ] {
        let out = boot_direct_smp(1, line, TIMEOUT);
        assert_exit(&out, ExitCode::BadCmdline);
        assert!(out.serial.contains(says), "{line}:\n{}", describe(&out));
    }
}
