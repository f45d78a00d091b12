//! The #GP-safe MSR accessors ([`crate::arch::msr`]) and the PMU detection built on
//! them: an MSR the CPU does not implement returns an error instead of a fatal #GP (on real
//! CPUs and KVM; TCG raises none), one it implements reads, and detection agrees with CPUID
//! leaf 0xA: counters it promises must count.

use crate::arch::{cpu, msr, pmu};
use crate::ensure;
use crate::ktest::TestResult;
use alloc::format;
use ktest::ktest;

/// An MSR address in no architectural or model-specific range (none of Intel's or AMD's
/// MSRs lies between 0x0000_2000 and 0x4000_0000).
const NO_SUCH_MSR: u32 = 0x1234_5678;

/// A real CPU (and KVM) raises #GP on an MSR it does not implement: the safe accessors turn
/// it into an error, counted once per access. QEMU 7.2's TCG raises none: it answers an
/// unknown MSR with 0 and ignores the write (which is why PMU detection also checks that the
/// counters count); there the test checks that answer instead.
#[ktest]
fn msr_gp_is_an_error() -> TestResult {
    pmu::init();
    let tcg = cpu::platform() == cpu::Platform::QemuTcg;
    let before = msr::faults_fixed_up();
    let r = msr::read_safe(NO_SUCH_MSR);
    let w = msr::write_safe(NO_SUCH_MSR, 1);
    let fixed = msr::faults_fixed_up() - before;
    if tcg {
        ensure!(r == Ok(0) && w.is_ok(), "TCG answered {r:?} and {w:?}");
        ensure!(fixed == 0, "{fixed} #GPs under TCG");
    } else {
        ensure!(
            r == Err(msr::MsrFault {
                msr: NO_SUCH_MSR,
                write: false
            }),
            "rdmsr of a missing MSR gave {r:?}"
        );
        ensure!(w.is_err(), "wrmsr of a missing MSR gave {w:?}");
        ensure!(fixed == 2, "{fixed} #GPs fixed up, expected 2");
    }
    Ok(())
}

/// Detection agrees with CPUID leaf 0xA, and counters CPUID promises count: a CPU model or
/// hypervisor that advertises leaf 0xA but whose counters fault or stay at zero fails here
/// (the benchmark would silently report no counts on it).
#[ktest]
fn pmu_detection_matches_cpuid() -> TestResult {
    let info = hw::cpuid::pmu_info(&raw_cpuid::CpuIdReaderNative);
    let found = pmu::init();
    match (info.setup(), found) {
        (Err(why), pmu::Pmu::NotReported(w)) => ensure!(why == *w, "{why} vs {w}"),
        (Ok(_), pmu::Pmu::Present { .. }) => {}
        (Ok(_), f) if f.broken_promise() => {
            return Err(format!("CPUID promises counters that do not count: {f}"));
        }
        (s, f) => return Err(format!("CPUID says {s:?}, detection found {f:?}")),
    }
    Ok(())
}
