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
//! ring: the batches, the quiescent points between them, the untimed work of scenarios that
//! have some, and the interrupts it serves (TLB shootdowns, IPIs).

use super::msr::{self, MsrFault};
use hw::pmu::{Counts, NoPmu, PmuInfo, Setup, msr as pmu_msr};
use spin::Once;

/// What detection found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pmu {
    /// Counters programmed as `setup` says.
    Present {
        /// Leaf 0xA.
        info: PmuInfo,
        /// What is counted.
        setup: Setup,
    },
    /// CPUID reports none that can be used.
    NotReported(NoPmu),
    /// CPUID reports one, but an access to one of its MSRs raised #GP.
    Faulted {
        /// Leaf 0xA.
        info: PmuInfo,
        /// The access.
        fault: MsrFault,
    },
    /// CPUID reports one and its MSRs accept every access, but the counters did not count
    /// (QEMU's TCG answers MSRs it does not implement with 0 and ignores writes, without a
    /// #GP: a model that advertised leaf 0xA there would read as this).
    Inert {
        /// Leaf 0xA.
        info: PmuInfo,
    },
}

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
        let info = leaf_0a();
        match info.setup() {
            Err(why) => Pmu::NotReported(why),
            Ok(setup) => match probe(&setup) {
                Ok(true) => Pmu::Present { info, setup },
                Ok(false) => Pmu::Inert { info },
                Err(fault) => Pmu::Faulted { info, fault },
            },
        }
    })
}

/// The counters' setup, when there is a PMU (after [`init`]).
#[must_use]
pub fn setup() -> Option<Setup> {
    match PMU.get()? {
        Pmu::Present { setup, .. } => Some(*setup),
        _ => None,
    }
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

impl Pmu {
    /// Why there are no counters (`None`: there are).
    #[must_use]
    pub fn why_none(&self) -> Option<alloc::string::String> {
        match self {
            Pmu::Present { .. } => None,
            Pmu::NotReported(why) => Some(alloc::format!("{why}")),
            Pmu::Faulted { info, fault } => Some(alloc::format!(
                "CPUID leaf 0xA reports version {} with {} general and {} fixed counters, but \
                 {fault}",
                info.version,
                info.general,
                info.fixed
            )),
            Pmu::Inert { info } => Some(alloc::format!(
                "CPUID leaf 0xA reports version {} with {} general and {} fixed counters, but \
                 they counted nothing over a test loop",
                info.version,
                info.general,
                info.fixed
            )),
        }
    }
}

impl core::fmt::Display for Pmu {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Pmu::Present { info, setup } => {
                write!(
                    f,
                    "architectural PMU v{}: {} general counters ({} bits), {} fixed ({} bits); \
                     counting instructions, cycles",
                    info.version, info.general, info.general_width, info.fixed, info.fixed_width
                )?;
                if setup.llc {
                    f.write_str(", LLC references and misses")
                } else {
                    f.write_str(" (no LLC events: fewer than 2 general counters or not offered)")
                }
            }
            Pmu::NotReported(_) | Pmu::Faulted { .. } | Pmu::Inert { .. } => {
                write!(f, "none: {}", self.why_none().unwrap_or_default())
            }
        }
    }
}

/// Writes the summary's `pmu:` line.
pub fn describe(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
    writeln!(w, "pmu: {}", init())
}
