//! One run: every chosen CPU loops batches of one instance until the deadline (or its
//! operation count), and the run's per-CPU operations and times, lock-statistics deltas and
//! counter deltas are collected.
//!
//! The loop is will-it-scale's worker loop with mmtests' timing: the platform lines the CPUs
//! up at a barrier, then each CPU reads the clock itself, runs batches, reads the clock after
//! each, and stops at the first reading past its deadline; its time is from its own start
//! to that reading, and the run's time is the slowest CPU's (so `ops / ns` is the rate all of
//! them sustained together). Between batches a CPU passes a quiescent point
//! ([`super::BenchPlatform::quiescent`]), as a Linux CPU does between two trips into the
//! kernel. A failing batch stops its CPU and tells the others to stop after their current
//! batch; its error is kept (the first one) and the run fails.
//!
//! Work the seed's benchmark does not time ([`Instance::untimed`], pft's unmap) runs before a
//! batch with the CPU's clock paused: its time is left out of the CPU's and its deadline
//! moves by as much, and the run's counters carry it as `untimed_ns` (every CPU's sum). The
//! platform hears of it ([`super::BenchPlatform::untimed_begins`]/`untimed_ends`), so the
//! counts of the CPU's window (the coherence plugin's) leave it out as well.
//!
//! Each CPU starts its hardware counters ([`super::BenchPlatform::pmu_start`]) right before
//! its first clock reading and stops them after its last; the run keeps the counts only when
//! every CPU returned some.
//!
//! A run without a record of its own (the floor the engine measures around each run of a
//! fault scenario) is [`Marks::Off`]: the platform hears neither its start and end nor its
//! CPUs' windows, so a counter that pairs its n-th run with the n-th `run` record (the
//! coherence plugin, `scripts/guest-insn-count.py`) never sees it, and it has no PMU counts.
//!
//! Lock statistics are zeroed before the run (the engine owns them while it runs; every CPU
//! is idle) and read after it, so a run's numbers, the longest wait included, are its own.
//! The classes the instance's premises read ([`Instance::lock_classes`]) record during the
//! run and are listed even if never taken; the others record only when the engine turned
//! statistics on for every class (`lock_stat=all`), and are listed when taken.

use super::platform::BenchPlatform;
use super::request::RunLength;
use super::scenario::{BatchCtx, Instance, ScenarioError};
use crate::record::{CpuShare, LockStat, PmuCpu};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

ksync::lock_class!(
    /// The first error of a run (taken only when a batch fails).
    pub RunErrorLock, "bench.run_error"
);

/// What one run measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// Per CPU: operations and ns.
    pub per_cpu: Vec<CpuShare>,
    /// Lock classes whose statistics changed, with their numbers over the run.
    pub locks: BTreeMap<String, LockStat>,
    /// Counter changes over the run.
    pub counters: BTreeMap<String, i64>,
    /// Per CPU: hardware counts (`None`: some CPU's platform counted nothing).
    pub pmu: Option<Vec<PmuCpu>>,
}

impl Measured {
    /// Operations on every CPU.
    #[must_use]
    pub fn ops(&self) -> u64 {
        self.per_cpu.iter().map(|c| c.ops).sum()
    }

    /// The slowest CPU's time.
    #[must_use]
    pub fn ns(&self) -> u64 {
        self.per_cpu.iter().map(|c| c.ns).max().unwrap_or(0)
    }
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunFailure {
    /// The platform could not run the CPUs.
    Platform(String),
    /// A batch failed on this CPU.
    Batch {
        /// The CPU.
        cpu: u32,
        /// What it said.
        error: ScenarioError,
    },
}

impl core::fmt::Display for RunFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RunFailure::Platform(e) => write!(f, "the platform could not run the CPUs: {e}"),
            RunFailure::Batch { cpu, error } => write!(f, "a batch on cpu {cpu} failed: {error}"),
        }
    }
}

/// The counter that carries a run's untimed work, ns over every CPU.
pub const UNTIMED_NS: &str = "untimed_ns";

#[derive(Default)]
struct Slot {
    ops: AtomicU64,
    ns: AtomicU64,
    untimed_ns: AtomicU64,
    pmu: PmuSlot,
}

/// One CPU's hardware counts, written by that CPU and read after `on_cpus` returned.
#[derive(Default)]
struct PmuSlot {
    /// Bit 0: counted; bit 1: `llc_refs` counted; bit 2: `llc_misses` counted.
    present: AtomicU8,
    cycles: AtomicU64,
    instructions: AtomicU64,
    llc_refs: AtomicU64,
    llc_misses: AtomicU64,
}

impl PmuSlot {
    fn set(&self, p: Option<PmuCpu>) {
        let Some(p) = p else {
            self.present.store(0, Ordering::Relaxed);
            return;
        };
        self.cycles.store(p.cycles, Ordering::Relaxed);
        self.instructions.store(p.instructions, Ordering::Relaxed);
        self.llc_refs
            .store(p.llc_refs.unwrap_or(0), Ordering::Relaxed);
        self.llc_misses
            .store(p.llc_misses.unwrap_or(0), Ordering::Relaxed);
        let bits = 1 | u8::from(p.llc_refs.is_some()) << 1 | u8::from(p.llc_misses.is_some()) << 2;
        self.present.store(bits, Ordering::Relaxed);
    }

    fn get(&self, cpu: u32) -> Option<PmuCpu> {
        let bits = self.present.load(Ordering::Relaxed);
        (bits & 1 != 0).then(|| PmuCpu {
            cpu,
            cycles: self.cycles.load(Ordering::Relaxed),
            instructions: self.instructions.load(Ordering::Relaxed),
            llc_refs: (bits & 2 != 0).then(|| self.llc_refs.load(Ordering::Relaxed)),
            llc_misses: (bits & 4 != 0).then(|| self.llc_misses.load(Ordering::Relaxed)),
        })
    }
}

fn counter_deltas(before: Vec<(String, i64)>, after: Vec<(String, i64)>) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    for (name, v) in after {
        let e = out.entry(name).or_insert(0);
        *e = e.wrapping_add(v);
    }
    for (name, v) in before {
        let e = out.entry(name).or_insert(0);
        *e = e.wrapping_sub(v);
    }
    out
}

/// The lock statistics of the run just ended: every class it took, and each of `named`
/// (the instance's premise classes) even if never taken.
fn locks_after(named: &[&'static ksync::ClassData]) -> BTreeMap<String, LockStat> {
    ksync::classes()
        .filter(|c| c.name() != <RunErrorLock as ksync::LockClass>::NAME)
        .filter_map(|c| {
            let s = c.snapshot();
            let listed = named.iter().any(|&n| core::ptr::eq(n, c));
            (listed || s.acquisitions != 0 || s.contended != 0).then(|| (c.name().into(), s.into()))
        })
        .collect()
}

/// Whether the platform hears of a run (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marks {
    /// A run with a record: [`BenchPlatform::run_begins`]/`run_ends` around it, and each
    /// CPU's window (`pmu_start`/`pmu_stop`, `untimed_begins`/`untimed_ends`).
    On,
    /// A run without a record: none of them.
    Off,
}

/// Runs `inst` on CPUs `0..cpus` for `length`, telling the platform where it runs when
/// `marks` is [`Marks::On`].
pub fn measure(
    platform: &dyn BenchPlatform,
    inst: &dyn Instance,
    cpus: u32,
    length: RunLength,
    marks: Marks,
) -> Result<Measured, RunFailure> {
    let marked = marks == Marks::On;
    let slots: Vec<Slot> = (0..cpus).map(|_| Slot::default()).collect();
    let stop = AtomicBool::new(false);
    let first_error: ksync::SpinMutex<RunErrorLock, Option<(u32, ScenarioError)>> =
        ksync::SpinMutex::new(None);
    let (span_ns, target) = match length {
        RunLength::Timed { ns } => (Some(ns), u64::MAX),
        RunLength::Counted { ops } => (None, ops),
    };
    let counters_before = inst.counters();
    // The premises' classes record in this run whether or not every class does
    // (`lock_stat=all`); registering them first lists them below even if never taken.
    let named = inst.lock_classes();
    for c in &named {
        c.set_recording(true);
    }
    for c in ksync::classes() {
        c.reset();
    }
    let worker = |cpu: u32| {
        if marked {
            platform.pmu_start(cpu);
        }
        let start = platform.now_ns();
        let deadline = span_ns.map_or(u64::MAX, |ns| start.saturating_add(ns));
        let mut done: u64 = 0;
        let mut end = start;
        let mut paused: u64 = 0;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let ctx = BatchCtx {
                cpu,
                index: cpu,
                max_ops: target - done,
                deadline_ns: deadline.saturating_add(paused),
            };
            let mut untimed = Ok(());
            if inst.untimed_due(&ctx) {
                let t0 = platform.now_ns();
                if marked {
                    platform.untimed_begins(cpu);
                }
                untimed = inst.untimed(&ctx);
                if marked {
                    platform.untimed_ends(cpu);
                }
                paused += platform.now_ns().saturating_sub(t0);
            }
            let ctx = BatchCtx {
                deadline_ns: deadline.saturating_add(paused),
                ..ctx
            };
            let result = match untimed {
                Ok(()) => inst.run_batch(&ctx),
                Err(e) => Err(e),
            };
            let failed = match result {
                Ok(0) => Some(ScenarioError::new("a batch completed no operation")),
                Ok(n) if n > ctx.max_ops => Some(ScenarioError::new(alloc::format!(
                    "a batch did {n} operations, {} were asked for",
                    ctx.max_ops
                ))),
                Ok(n) => {
                    done += n;
                    None
                }
                Err(e) => Some(e),
            };
            end = platform.now_ns();
            if let Some(e) = failed {
                first_error.lock().get_or_insert((cpu, e));
                stop.store(true, Ordering::Relaxed);
                break;
            }
            if end >= deadline.saturating_add(paused) || done >= target {
                break;
            }
            platform.quiescent(cpu);
        }
        let pmu = if marked { platform.pmu_stop(cpu) } else { None };
        let slot = &slots[cpu as usize];
        slot.pmu.set(pmu);
        slot.ops.store(done, Ordering::Relaxed);
        slot.ns.store(
            end.saturating_sub(start).saturating_sub(paused),
            Ordering::Relaxed,
        );
        slot.untimed_ns.store(paused, Ordering::Relaxed);
    };
    if marked {
        platform.run_begins();
    }
    let ran = platform.on_cpus(cpus, &worker);
    if marked {
        platform.run_ends();
    }
    for c in &named {
        c.set_recording(false);
    }
    let locks = locks_after(&named);
    if let Err(e) = ran {
        return Err(RunFailure::Platform(e.0));
    }
    if let Some((cpu, error)) = first_error.lock().take() {
        return Err(RunFailure::Batch { cpu, error });
    }
    let per_cpu = slots
        .iter()
        .enumerate()
        .map(|(cpu, s)| CpuShare {
            cpu: cpu as u32,
            ops: s.ops.load(Ordering::Relaxed),
            ns: s.ns.load(Ordering::Relaxed),
        })
        .collect();
    let mut counters = counter_deltas(counters_before, inst.counters());
    let untimed: u64 = slots
        .iter()
        .map(|s| s.untimed_ns.load(Ordering::Relaxed))
        .sum();
    if untimed > 0 {
        counters.insert(UNTIMED_NS.into(), untimed as i64);
    }
    let pmu = slots
        .iter()
        .enumerate()
        .map(|(cpu, s)| s.pmu.get(cpu as u32))
        .collect();
    Ok(Measured {
        per_cpu,
        locks,
        counters,
        pmu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_deltas_cover_both_sides() {
        let d = counter_deltas(
            alloc::vec![("a".into(), 10), ("gone".into(), 3)],
            alloc::vec![("a".into(), 25), ("new".into(), -4)],
        );
        assert_eq!(d["a"], 15);
        assert_eq!(d["gone"], -3);
        assert_eq!(d["new"], -4);
        assert_eq!(d.len(), 3);
    }
}
