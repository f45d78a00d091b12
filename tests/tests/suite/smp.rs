//! SMP bring-up booted at 1, 2, 4 and 8 vCPUs (`qemu -kernel`, multiboot1, TCG): every CPU
//! comes up, the in-kernel SMP tests pass at each size, `cpus=K` is obeyed, a bad `cpus=`
//! value is a bad command line, and the system summary lists the CPUs.
use abi::ExitCode;
use qemu::{Outcome, RunOutput};
use std::time::Duration;
use tests::{assert_exit, assert_line, boot_direct_smp, describe, suite_passes};

/// Generous: eight vCPUs on a loaded two-core host.
const TIMEOUT: Duration = Duration::from_secs(240);

/// Every in-kernel SMP test: the kernel expands the prefix from its own table.
const SMP_TESTS: &str = "smp_*";

fn boot_smp(smp: u32, cmdline: &str) -> RunOutput {
    boot_direct_smp(smp, cmdline, TIMEOUT)
}

fn smp_suite_passes(smp: u32) {
    let out = suite_passes(smp, None, SMP_TESTS, "", TIMEOUT);
    assert_line(&out, &format!("smp: {smp} of {smp} CPUs online"));
    for cpu in 0..smp {
        assert_line(&out, &format!("  cpu {cpu}: apic id {cpu}"));
    }
}

#[test]
fn smp_1_cpu() {
    smp_suite_passes(1);
}

#[test]
fn smp_2_cpus() {
    smp_suite_passes(2);
}

#[test]
fn smp_4_cpus() {
    smp_suite_passes(4);
}

#[test]
fn smp_8_cpus() {
    smp_suite_passes(8);
}

#[test]
fn cpus_limit_is_obeyed() {
    let out = boot_smp(
        4,
        "run=test test=smp_cpus_online,smp_cpus_limit,smp_ticket_lock_contention cpus=2",
    );
    assert_exit(&out, ExitCode::Success);
    assert_line(&out, "smp: 2 of 4 CPUs online (cpus=2)");
    assert!(
        !out.lines().any(|l| l == "  cpu 2: apic id 2"),
        "{}",
        describe(&out)
    );
}

#[test]
fn bad_cpus_value_is_a_bad_command_line() {
    for bad in ["cpus=0", "cpus=257", "cpus=two"] {
        let out = boot_smp(2, bad);
        assert_eq!(
            out.outcome,
            Outcome::Kernel(ExitCode::BadCmdline),
            "`{bad}`:\n{}",
            describe(&out)
        );
    }
}

#[test]
fn summary_lists_cpus_found_and_started() {
    let out = boot_smp(4, "run=summary cpus=3");
    assert_exit(&out, ExitCode::Success);
    for want in [
        "cpus: 4 found, 3 started (cpus=3)",
        "  apic id   0 (acpi uid 0): online as cpu 0",
        "  apic id   2 (acpi uid 2): online as cpu 2",
        "  apic id   3 (acpi uid 3): not started (cpus= limit)",
    ] {
        assert_line(&out, want);
    }
}
