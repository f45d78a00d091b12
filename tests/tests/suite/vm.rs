//! The fault core booted: the in-kernel `vm_*` suite (anonymous fault-in and zap on every
//! CPU, pft in both `vm_area_struct` layouts, memory.max with mapped file pages, readtwice,
//! a full memcg failing a touch, fault injection, a short soak, lookups racing with
//! truncation) at 1 and 4 vCPUs and on two NUMA nodes; the command line's
//! `fail_page_alloc=` / `fail_charge=` reaching the fault-injection test; bad
//! fault-injection values refused as a bad command line; and the soak and the truncation
//! race with their race windows widened (`race_delay=`), at 4 and at 12 vCPUs.
use abi::ExitCode;
use qemu::RunOutput;
use std::time::Duration;
use tests::{assert_exit, assert_line, boot_direct_smp, describe, line_starting};

/// Generous: the suite takes a few seconds at 4 vCPUs, but the CI machine is shared.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Every in-kernel `vm_` test that `test=all` runs: the kernel expands the prefix from its table.
const VM_TESTS: &str = "vm_*";

fn suite_passes(smp: u32, nodes: Option<u32>, extra: &str) -> RunOutput {
    tests::suite_passes(smp, nodes, VM_TESTS, extra, TIMEOUT)
}

#[test]
fn vm_suite_1_cpu() {
    suite_passes(1, None, "");
}

#[test]
fn vm_suite_4_cpus() {
    let out = suite_passes(4, None, "");
    line_starting(&out, "  1500 ops per CPU: ");
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
    assert_line(&out, "  fail_page_alloc Every(3), fail_charge Off");
    assert_line(
        &out,
        "  333 of 1000 touches failed: 333 frame allocations, 0 charges",
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

/// The number in "race windows stalled N times" on `line`: a run whose windows never
/// stalled widened no race, and cannot pass for one that did.
fn stalls(line: &str) -> u64 {
    line.split("race windows stalled ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no stall count in `{line}`"))
}

/// Lookups racing with truncation, the race windows widened (`race_delay=`): without
/// `filemap_get_entry`'s release of a last reference this fails within the boot (a folio
/// left on its LRU with no reference).
#[test]
fn truncation_racing_lookups_with_race_delays() {
    let out = tests::suite_passes(
        4,
        None,
        "vm_truncate_races_lookups",
        "race_delay=2000",
        TIMEOUT,
    );
    assert_line(
        &out,
        "race_delay: race windows stall up to 2000 spin iterations",
    );
    let line = line_starting(&out, "  200 truncations, ");
    assert!(stalls(line) > 0, "{line}");
}

/// The soak and the truncation race at 12 vCPUs (six per core of a 2-core host: vCPUs
/// preempted at arbitrary instructions), the race windows widened: where the soak once
/// lost a folio's reference.
#[test]
fn soak_at_12_vcpus_with_race_delays() {
    let out = tests::suite_passes(
        12,
        None,
        "vm_soak,vm_truncate_races_lookups",
        "race_delay=2000",
        TIMEOUT,
    );
    let soak = line_starting(&out, "  race windows stalled ");
    assert!(stalls(soak) > 0, "{soak}");
    let races = line_starting(&out, "  200 truncations, ");
    assert!(stalls(races) > 0, "{races}");
}
