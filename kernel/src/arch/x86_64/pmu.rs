//! The architectural PMU: detected once from CPUID leaf 0xA, probed with #GP-safe MSR
//! accesses, then started and stopped on each CPU around every benchmark run.
//!
//! The decoding and the MSR values are [`hw::pmu`]'s (pure, host-tested against the SDM's
//! layouts); this module executes them. Detection (boot CPU, [`init`]): leaf 0xA decoded, and
//! when it reports a usable PMU (version 2 or later, two fixed counters) the whole start
//! sequence is written once and the counters read back through [`super::msr`]'s safe
//! accessors, so a CPU model or hypervisor that advertises counters it does not implement
//! gives "no PMU" (with the MSR that faulted) rather than a fatal #GP, and one whose MSRs
//! accept everything but count nothing (an emulator) gives "no PMU" too. The CPUs of a machine
//! are assumed alike (one CPUID for all), and every later access is still the safe one: an
//! AP that faults reports no counts for its runs.
//!
//! Counting is per CPU and per run, as perf's `-C` counting mode: [`start`] zeroes and
//! enables the counters right before a CPU's first batch, [`stop`] disables them after its
//! last and reads them. The counts include everything the CPU executes meanwhile, in every
//! ring: the batches, the quiescent points between them and the interrupts it serves (TLB
//! shootdowns, IPIs), but not the untimed work of scenarios that have some (pft's unmap,
//! with the CPU's clock paused): [`pause`] holds the counters at their values around it and
//! [`resume`] lets them go on, as the coherence plugin's window marks do.

use super::msr::{self, MsrFault};
use hw::pmu::{Counts, Detected, PmuInfo, Setup, msr as pmu_msr};
use spin::Once;

/// What detection found ([`hw::pmu::Detected`], faults as this kernel's MSR accessors report
/// them).
pub type Pmu = Detected<MsrFault>;

static PMU: Once<Pmu> = Once::new();

fn leaf_0a() -> PmuInfo {
    hw::cpuid::pmu_info(&raw_cpuid::CpuIdReaderNative)
}

/// Reads global control, then counts a short stretch of code: `Ok(false)` when the counters
/// stayed at zero.
fn probe(setup: &Setup) -> Result<bool, MsrFault> {
    msr::read_safe(pmu_msr::IA32_PERF_GLOBAL_CTRL)?;
    start(setup)?;
    let mut x = 0u64;
    for i in 0..1000u64 {
        x = core::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    let c = stop(setup)?;
    Ok(c.instructions > 0 && c.cycles > 0)
}

/// Detects the PMU (boot CPU; the first call decides, later calls return its result).
pub fn init() -> &'static Pmu {
    PMU.call_once(|| {
        msr::init();
        hw::pmu::detect(leaf_0a(), probe)
    })
}

/// The counters' setup, when there is a PMU (after [`init`]).
#[must_use]
pub fn setup() -> Option<Setup> {
    PMU.get()?.setup()
}

/// Zeroes and starts the counters on this CPU.
pub fn start(setup: &Setup) -> Result<(), MsrFault> {
    for w in setup.start().as_slice() {
        msr::write_safe(w.msr, w.value)?;
    }
    Ok(())
}

/// Stops the counters on this CPU and returns what they counted since [`start`].
pub fn stop(setup: &Setup) -> Result<Counts, MsrFault> {
    let off = setup.stop();
    msr::write_safe(off.msr, off.value)?;
    let mut values = [0u64; 4];
    for (v, &m) in values.iter_mut().zip(setup.reads()) {
        *v = msr::read_safe(m)?;
    }
    Ok(setup.counts(&values[..setup.reads().len()]))
}

/// Holds this CPU's counters at their values (untimed work inside a window).
pub fn pause(setup: &Setup) -> Result<(), MsrFault> {
    let off = setup.pause();
    msr::write_safe(off.msr, off.value)
}

/// Lets this CPU's counters go on from where [`pause`] held them.
pub fn resume(setup: &Setup) -> Result<(), MsrFault> {
    let on = setup.resume();
    msr::write_safe(on.msr, on.value)
}

/// Writes the summary's `pmu:` line.
pub fn describe(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
    writeln!(w, "pmu: {}", init())
}
