//! The architectural performance-monitoring unit: what CPUID leaf 0xA reports, and the MSR
//! values that program it to count a benchmark run.
//!
//! Models what Linux's `intel_pmu_init()` reads (arch/x86/events/intel/core.c: `union
//! cpuid10_eax/ebx/edx`) and the encodings of `x86_pmu_config` / `intel_pmu_enable_fixed()`,
//! for the four counts the benchmark reports per operation: instructions retired and unhalted
//! core cycles on the fixed counters 0 and 1, the architectural "LLC reference" (event 0x2E,
//! umask 0x4F) and "LLC miss" (event 0x2E, umask 0x41) on general counters 0 and 1.
//!
//! Layouts, from the SDM (Vol. 3B, 20.2 "Architectural Performance Monitoring", and Vol. 4's
//! MSR list):
//!
//! - CPUID.0AH: EAX bits 0..7 version, 8..15 general counters per logical CPU, 16..23 their
//!   width, 24..31 the length of EBX's event vector; EBX bit `i` set means architectural event
//!   `i` is *not* available (0 core cycles, 1 instructions retired, 2 reference cycles, 3 LLC
//!   reference, 4 LLC miss, 5 branches retired, 6 branch misses retired); EDX bits 0..4 fixed
//!   counters, 5..12 their width (version 2 on).
//! - `IA32_PERFEVTSELx` (0x186 + x): event select bits 0..7, unit mask 8..15, USR 16, OS 17,
//!   edge 18, PC 19, INT 20, ANY 21, EN 22, INV 23, counter mask 24..31.
//! - `IA32_FIXED_CTR_CTRL` (0x38D): 4 bits per fixed counter `i` at `4 * i`: bit 0 counts in
//!   ring 0 (OS), bit 1 above ring 0 (USR), bit 2 AnyThread, bit 3 PMI on overflow.
//! - `IA32_PERF_GLOBAL_CTRL` (0x38F, version 2 on): bit `i` enables general counter `i`, bit
//!   `32 + i` fixed counter `i`.
//! - Counters: `IA32_PMCx` at 0xC1 + x, `IA32_FIXED_CTRx` at 0x309 + x (fixed counter 0 is
//!   INST_RETIRED.ANY, 1 is CPU_CLK_UNHALTED.CORE).
//!
//! Every function here is pure; the kernel's `arch::x86_64::pmu` executes the `cpuid`,
//! `rdmsr` and `wrmsr` that these values feed. A version-1 PMU (no global control, no fixed
//! counters) and one with fewer than two fixed counters are not used: the benchmark then
//! reports no counts, as it does on a CPU without the leaf (AMD, whose counters are not the
//! architectural ones, and QEMU's TCG, which emulates none).

/// MSR addresses (SDM Vol. 4, table 2-2).
pub mod msr {
    /// `IA32_PMC0`: general counter 0; counter `i` is at `IA32_PMC0 + i`.
    pub const IA32_PMC0: u32 = 0xC1;
    /// `IA32_PERFEVTSEL0`: event select of general counter 0; counter `i`'s at `+ i`.
    pub const IA32_PERFEVTSEL0: u32 = 0x186;
    /// `IA32_FIXED_CTR0` (instructions retired); fixed counter `i` is at `+ i`.
    pub const IA32_FIXED_CTR0: u32 = 0x309;
    /// `IA32_FIXED_CTR_CTRL`.
    pub const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
    /// `IA32_PERF_GLOBAL_STATUS`.
    pub const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;
    /// `IA32_PERF_GLOBAL_CTRL`.
    pub const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;

    /// `IA32_PMCi`.
    #[must_use]
    pub const fn pmc(i: u32) -> u32 {
        IA32_PMC0 + i
    }

    /// `IA32_PERFEVTSELi`.
    #[must_use]
    pub const fn perfevtsel(i: u32) -> u32 {
        IA32_PERFEVTSEL0 + i
    }

    /// `IA32_FIXED_CTRi`.
    #[must_use]
    pub const fn fixed_ctr(i: u32) -> u32 {
        IA32_FIXED_CTR0 + i
    }
}

/// `IA32_PERFEVTSELx` bits.
pub mod evtsel {
    /// Count while CPL > 0.
    pub const USR: u64 = 1 << 16;
    /// Count while CPL = 0.
    pub const OS: u64 = 1 << 17;
    /// Count edges.
    pub const EDGE: u64 = 1 << 18;
    /// Interrupt (PMI) on overflow.
    pub const INT: u64 = 1 << 20;
    /// Enable the counter.
    pub const EN: u64 = 1 << 22;
    /// Invert the counter mask comparison.
    pub const INV: u64 = 1 << 23;
}

/// One fixed counter's 4-bit field of `IA32_FIXED_CTR_CTRL`.
pub mod fixed {
    /// Count in ring 0.
    pub const OS: u64 = 0b0001;
    /// Count above ring 0.
    pub const USR: u64 = 0b0010;
    /// Count for every thread of the core (AnyThread).
    pub const ANY: u64 = 0b0100;
    /// PMI on overflow.
    pub const PMI: u64 = 0b1000;
    /// Fixed counter 0: instructions retired (INST_RETIRED.ANY).
    pub const INSTRUCTIONS: u32 = 0;
    /// Fixed counter 1: unhalted core cycles (CPU_CLK_UNHALTED.CORE).
    pub const CYCLES: u32 = 1;
}

/// An architectural event: its EBX availability bit, event select and unit mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchEvent {
    /// Bit of CPUID.0AH:EBX that says the event is unavailable.
    pub ebx_bit: u32,
    /// Event select.
    pub event: u8,
    /// Unit mask.
    pub umask: u8,
}

/// "UnHalted Core Cycles" (for reference; counted on fixed counter 1).
pub const CORE_CYCLES: ArchEvent = ArchEvent {
    ebx_bit: 0,
    event: 0x3C,
    umask: 0x00,
};
/// "Instructions Retired" (for reference; counted on fixed counter 0).
pub const INSTRUCTIONS_RETIRED: ArchEvent = ArchEvent {
    ebx_bit: 1,
    event: 0xC0,
    umask: 0x00,
};
/// "LLC Reference": requests to the last-level cache.
pub const LLC_REFERENCE: ArchEvent = ArchEvent {
    ebx_bit: 3,
    event: 0x2E,
    umask: 0x4F,
};
/// "LLC Misses": those that missed it.
pub const LLC_MISSES: ArchEvent = ArchEvent {
    ebx_bit: 4,
    event: 0x2E,
    umask: 0x41,
};

/// `IA32_PERFEVTSELx` counting `e` in rings 0 and 3, enabled (no edge, no PMI, no mask).
#[must_use]
pub const fn evtsel_value(e: ArchEvent) -> u64 {
    e.event as u64 | (e.umask as u64) << 8 | evtsel::USR | evtsel::OS | evtsel::EN
}

/// The `IA32_FIXED_CTR_CTRL` field `bits` (4 bits: [`fixed`]) placed for fixed counter `i`.
#[must_use]
pub const fn fixed_ctr_ctrl_field(i: u32, bits: u64) -> u64 {
    (bits & 0xF) << (4 * i)
}

/// `IA32_PERF_GLOBAL_CTRL` enabling general counters `0..general` and fixed `0..fixed`.
#[must_use]
pub const fn global_ctrl_value(general: u32, fixed: u32) -> u64 {
    low_bits(general) | low_bits(fixed) << 32
}

const fn low_bits(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// How far a `width`-bit counter advanced from `before` to `after` (once around at most).
#[must_use]
pub const fn counter_delta(before: u64, after: u64, width: u8) -> u64 {
    after.wrapping_sub(before) & low_bits(width as u32)
}

/// What CPUID leaf 0xA reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmuInfo {
    /// Architectural PMU version (0: none).
    pub version: u8,
    /// General counters per logical CPU.
    pub general: u8,
    /// Their width in bits.
    pub general_width: u8,
    /// Fixed counters (0 before version 2).
    pub fixed: u8,
    /// Their width in bits.
    pub fixed_width: u8,
    /// Length of the EBX event vector.
    pub ebx_len: u8,
    /// EBX: bit `i` set = architectural event `i` unavailable.
    pub ebx: u32,
}

impl PmuInfo {
    /// Decodes leaf 0xA; `max_basic_leaf` is CPUID.0:EAX (the leaf does not exist below 0xA,
    /// and a CPU answers a missing leaf with its highest one's values).
    #[must_use]
    pub const fn decode(max_basic_leaf: u32, eax: u32, ebx: u32, edx: u32) -> PmuInfo {
        if max_basic_leaf < 0xA {
            return PmuInfo {
                version: 0,
                general: 0,
                general_width: 0,
                fixed: 0,
                fixed_width: 0,
                ebx_len: 0,
                ebx: 0,
            };
        }
        let version = (eax & 0xFF) as u8;
        let (fixed, fixed_width) = if version >= 2 {
            ((edx & 0x1F) as u8, ((edx >> 5) & 0xFF) as u8)
        } else {
            (0, 0)
        };
        PmuInfo {
            version,
            general: ((eax >> 8) & 0xFF) as u8,
            general_width: ((eax >> 16) & 0xFF) as u8,
            fixed,
            fixed_width,
            ebx_len: (eax >> 24) as u8,
            ebx,
        }
    }

    /// Whether architectural event `e` is available.
    #[must_use]
    pub const fn has_event(&self, e: ArchEvent) -> bool {
        e.ebx_bit < self.ebx_len as u32 && self.ebx & (1 << e.ebx_bit) == 0
    }

    /// The counters the benchmark programs on this PMU, or why none.
    pub fn setup(&self) -> Result<Setup, NoPmu> {
        if self.version == 0 {
            return Err(NoPmu::NoLeaf);
        }
        if self.version < 2 {
            return Err(NoPmu::Version1);
        }
        if self.fixed < 2 || self.fixed_width == 0 {
            return Err(NoPmu::FewFixed(self.fixed));
        }
        let llc = self.general >= 2
            && self.general_width > 0
            && self.has_event(LLC_REFERENCE)
            && self.has_event(LLC_MISSES);
        Ok(Setup {
            llc,
            general_width: self.general_width,
            fixed_width: self.fixed_width,
        })
    }
}

/// Why the benchmark counts nothing on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoPmu {
    /// CPUID reports no architectural PMU (version 0, or no leaf 0xA).
    NoLeaf,
    /// Version 1: no global control and no fixed counters.
    Version1,
    /// Fewer than the two fixed counters (instructions, cycles).
    FewFixed(u8),
}

impl core::fmt::Display for NoPmu {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NoPmu::NoLeaf => f.write_str("CPUID leaf 0xA reports no architectural PMU"),
            NoPmu::Version1 => f.write_str(
                "an architectural PMU of version 1 (no global control, no fixed counters)",
            ),
            NoPmu::FewFixed(n) => write!(f, "{n} fixed counters (instructions and cycles need 2)"),
        }
    }
}

/// What PMU detection found: leaf 0xA decoded and, where it promises counters, a probe of
/// them (the kernel's `arch::x86_64::pmu::init` runs it with `#GP`-safe MSR accesses whose
/// fault is `F`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detected<F> {
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
        fault: F,
    },
    /// CPUID reports one and its MSRs accept every access, but the counters did not count
    /// (QEMU's TCG answers MSRs it does not implement with 0 and ignores writes, without a
    /// #GP: a model that advertised leaf 0xA there would read as this).
    Inert {
        /// Leaf 0xA.
        info: PmuInfo,
    },
}

/// Detection: `info` decoded, and where it promises counters, `probe` (start them, run a
/// loop, stop and read them) says whether they counted or which access faulted.
pub fn detect<F>(info: PmuInfo, probe: impl FnOnce(&Setup) -> Result<bool, F>) -> Detected<F> {
    match info.setup() {
        Err(why) => Detected::NotReported(why),
        Ok(setup) => match probe(&setup) {
            Ok(true) => Detected::Present { info, setup },
            Ok(false) => Detected::Inert { info },
            Err(fault) => Detected::Faulted { info, fault },
        },
    }
}

impl<F: core::fmt::Display> Detected<F> {
    /// Whether CPUID promised counters that do not work: a CPU model or hypervisor that
    /// advertises leaf 0xA without implementing it. The kernel still runs without counts,
    /// but its PMU test fails on this (a machine whose counters were promised must count).
    #[must_use]
    pub fn broken_promise(&self) -> bool {
        matches!(self, Detected::Faulted { .. } | Detected::Inert { .. })
    }

    /// The counters' setup, when there are counters.
    #[must_use]
    pub fn setup(&self) -> Option<Setup> {
        match self {
            Detected::Present { setup, .. } => Some(*setup),
            _ => None,
        }
    }

    /// Why there are no counters (`None`: there are).
    #[must_use]
    pub fn why_none(&self) -> Option<alloc::string::String> {
        let promised = |info: &PmuInfo| {
            alloc::format!(
                "CPUID leaf 0xA reports version {} with {} general and {} fixed counters, but",
                info.version,
                info.general,
                info.fixed
            )
        };
        match self {
            Detected::Present { .. } => None,
            Detected::NotReported(why) => Some(alloc::format!("{why}")),
            Detected::Faulted { info, fault } => Some(alloc::format!("{} {fault}", promised(info))),
            Detected::Inert { info } => Some(alloc::format!(
                "{} they counted nothing over a test loop",
                promised(info)
            )),
        }
    }
}

impl<F: core::fmt::Display> core::fmt::Display for Detected<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Detected::Present { info, setup } => {
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
            _ => write!(f, "none: {}", self.why_none().unwrap_or_default()),
        }
    }
}

/// A write of `value` to MSR `msr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrWrite {
    /// The MSR.
    pub msr: u32,
    /// The value.
    pub value: u64,
}

const fn w(msr: u32, value: u64) -> MsrWrite {
    MsrWrite { msr, value }
}

/// The counters programmed on a PMU: fixed 0 and 1 always, general 0 and 1 (LLC reference
/// and miss) when the PMU has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Whether general counters 0 and 1 count the LLC events.
    pub llc: bool,
    /// General counters' width.
    pub general_width: u8,
    /// Fixed counters' width.
    pub fixed_width: u8,
}

/// One CPU's counts over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Instructions retired.
    pub instructions: u64,
    /// Unhalted core cycles.
    pub cycles: u64,
    /// LLC references (`None`: not counted on this PMU).
    pub llc_refs: Option<u64>,
    /// LLC misses.
    pub llc_misses: Option<u64>,
}

impl Setup {
    /// `IA32_PERF_GLOBAL_CTRL` with this setup's counters on.
    #[must_use]
    pub const fn global_ctrl(&self) -> u64 {
        global_ctrl_value(if self.llc { 2 } else { 0 }, 2)
    }

    /// `IA32_FIXED_CTR_CTRL`: fixed counters 0 and 1 counting in rings 0 and 3, no PMI.
    #[must_use]
    pub const fn fixed_ctr_ctrl(&self) -> u64 {
        fixed_ctr_ctrl_field(fixed::INSTRUCTIONS, fixed::OS | fixed::USR)
            | fixed_ctr_ctrl_field(fixed::CYCLES, fixed::OS | fixed::USR)
    }

    /// The writes that start counting from zero, in order: everything off, the counters
    /// zeroed, the event selects and fixed control written, then global control on (the
    /// order `intel_pmu_enable_all()` relies on: the per-counter enables first, the global
    /// one last, so every counter starts at the same instruction).
    #[must_use]
    pub fn start(&self) -> StartWrites {
        let mut s = StartWrites {
            writes: [w(0, 0); 10],
            len: 0,
        };
        let mut push = |x: MsrWrite| {
            s.writes[s.len] = x;
            s.len += 1;
        };
        push(w(msr::IA32_PERF_GLOBAL_CTRL, 0));
        push(w(msr::IA32_FIXED_CTR_CTRL, 0));
        push(w(msr::fixed_ctr(fixed::INSTRUCTIONS), 0));
        push(w(msr::fixed_ctr(fixed::CYCLES), 0));
        if self.llc {
            push(w(msr::perfevtsel(0), evtsel_value(LLC_REFERENCE)));
            push(w(msr::perfevtsel(1), evtsel_value(LLC_MISSES)));
            push(w(msr::pmc(0), 0));
            push(w(msr::pmc(1), 0));
        }
        push(w(msr::IA32_FIXED_CTR_CTRL, self.fixed_ctr_ctrl()));
        push(w(msr::IA32_PERF_GLOBAL_CTRL, self.global_ctrl()));
        s
    }

    /// The write that stops every counter (they keep their values for reading).
    #[must_use]
    pub const fn stop(&self) -> MsrWrite {
        w(msr::IA32_PERF_GLOBAL_CTRL, 0)
    }

    /// The write that holds every counter at its value while the CPU does work the
    /// benchmark leaves out of its window (a scenario's untimed work): the same write as
    /// [`Self::stop`], with [`Self::resume`] after it instead of a read.
    #[must_use]
    pub const fn pause(&self) -> MsrWrite {
        self.stop()
    }

    /// The write that lets the counters go on from the values [`Self::pause`] held: global
    /// control on again, nothing zeroed or reprogrammed (the last write of [`Self::start`]).
    #[must_use]
    pub const fn resume(&self) -> MsrWrite {
        w(msr::IA32_PERF_GLOBAL_CTRL, self.global_ctrl())
    }

    /// The MSRs to read after [`Self::stop`], in [`Self::counts`]' order.
    #[must_use]
    pub fn reads(&self) -> &'static [u32] {
        const WITH_LLC: [u32; 4] = [
            msr::fixed_ctr(fixed::INSTRUCTIONS),
            msr::fixed_ctr(fixed::CYCLES),
            msr::pmc(0),
            msr::pmc(1),
        ];
        if self.llc { &WITH_LLC } else { &WITH_LLC[..2] }
    }

    /// The counts from the values read at [`Self::reads`] (masked to the counters' widths:
    /// they started at zero).
    #[must_use]
    pub fn counts(&self, values: &[u64]) -> Counts {
        let get = |i: usize| values.get(i).copied().unwrap_or(0);
        let general = |i: usize| {
            self.llc
                .then(|| counter_delta(0, get(i), self.general_width))
        };
        Counts {
            instructions: counter_delta(0, get(0), self.fixed_width),
            cycles: counter_delta(0, get(1), self.fixed_width),
            llc_refs: general(2),
            llc_misses: general(3),
        }
    }
}

/// The writes of [`Setup::start`].
#[derive(Clone, Copy, Debug)]
pub struct StartWrites {
    writes: [MsrWrite; 10],
    len: usize,
}

impl StartWrites {
    /// The writes, in order.
    #[must_use]
    pub fn as_slice(&self) -> &[MsrWrite] {
        &self.writes[..self.len]
    }
}

#[cfg(test)]
mod tests;
