//! What the engine needs from the machine it runs on: CPUs to run closures on together, a
//! clock, a quiescent point between batches, somewhere to print, a description of itself,
//! and (where it has them) hardware performance counters.
//!
//! Two implementations exist: the kernel's (`on_cpus` to the chosen CPUs with a spin barrier
//! in front, the TSC, serial and framebuffer consoles) and the host runner's (`kx bench
//! --host`: one thread per chosen core, pinned with `sched_setaffinity`, each declaring its
//! CPU id to ksync, `CLOCK_MONOTONIC`, the progress bar and the results directory). The
//! engine itself knows nothing else about either, which is what lets the same scenario code
//! run on both.

use crate::record::{Machine, PmuCpu};
use crate::table::Style;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Where a piece of output goes; the platform decides how each kind is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// One `KRESULT` line: the machine-readable channel (the kernel: serial only; the
    /// host: the log the results directory is made from).
    Record,
    /// One `KPROGRESS` line: for the people watching (the kernel: serial and screen; the
    /// host: the progress bar). Printed after every run.
    Progress,
    /// A sentence for the people watching (a scenario skipped or failing), already also a
    /// `note` record where it matters for the results.
    Message,
    /// The final results table in this style: the engine offers both, the platform shows
    /// each where it fits (the kernel: wide on serial, compact on an 80-column screen).
    Table(Style),
    /// One `KOBJECT` line (`objects=1`): an object a scenario instance uses, with its
    /// physical address and fields, for the coherence plugin's hot lines (the kernel:
    /// serial only; the host: dropped).
    Object,
}

/// Why the platform could not run something on its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformError(pub String);

impl fmt::Display for PlatformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The machine the engine runs on.
///
/// CPUs are numbered `0..cpus()` in the engine's terms: the ids a scenario sees in
/// [`super::BatchCtx::cpu`] and that ksync's per-CPU statistics are indexed by (the kernel's
/// CPU ids; on the host, the id each pinned thread declares to ksync).
pub trait BenchPlatform: Sync {
    /// How many CPUs the benchmark may use (ids `0..cpus()`).
    fn cpus(&self) -> u32;

    /// Runs `f(cpu)` on each CPU `0..n` at the same time and returns when every one of them
    /// has returned. The CPUs are lined up first (a barrier), so the calls start together;
    /// CPUs `n..` stay idle meanwhile. Everything the calls wrote is visible to the caller
    /// when this returns. `n` is at least 1 and at most [`Self::cpus`].
    fn on_cpus(&self, n: u32, f: &(dyn Fn(u32) + Sync)) -> Result<(), PlatformError>;

    /// Nanoseconds on a clock that is monotonic on every CPU and comparable across them.
    fn now_ns(&self) -> u64;

    /// Called by CPU `cpu` between two batches of a run: the point where it holds no
    /// reference into any RCU-protected structure (the kernel's `rcu::quiescent()`).
    fn quiescent(&self, cpu: u32);

    /// Shows `text` (one or more lines, without the final newline) as `kind`.
    fn output(&self, kind: Output, text: &dyn fmt::Display);

    /// The `machine` record of this platform.
    fn machine(&self) -> Machine;

    /// The physical address of the kernel object at virtual address `virt` (`None`: the
    /// platform has no physical addresses to give, as on the host).
    fn phys_addr(&self, _virt: usize) -> Option<u64> {
        None
    }

    /// Called once right before a run's workers start, and [`Self::run_ends`] once after
    /// they all returned: where the kernel empties the per-CPU page lists, so every run
    /// starts from the same allocator state whatever ran before it, and marks the run for
    /// the coherence plugin (`abi::coherence`). The default does nothing.
    fn run_begins(&self) {}

    /// See [`Self::run_begins`].
    fn run_ends(&self) {}

    /// Called by CPU `cpu` on itself inside its measured window right before untimed work
    /// ([`super::Instance::untimed`]), and [`Self::untimed_ends`] right after it: where the
    /// kernel pauses the coherence plugin's counting of that CPU (`abi::coherence`). The
    /// default does nothing.
    fn untimed_begins(&self, _cpu: u32) {}

    /// See [`Self::untimed_begins`].
    fn untimed_ends(&self, _cpu: u32) {}

    /// Called by CPU `cpu` on itself right before its first batch of a run: zeroes and
    /// starts its hardware performance counters, where the platform has them (the kernel:
    /// the architectural PMU's fixed and LLC counters). The default counts nothing.
    fn pmu_start(&self, _cpu: u32) {}

    /// Called by CPU `cpu` on itself right after its last batch of a run: stops its counters
    /// and returns what they counted since [`Self::pmu_start`] (`cpu` filled in), or `None`
    /// where the platform counts nothing. A run records counts only when every CPU of it
    /// returned some.
    fn pmu_stop(&self, _cpu: u32) -> Option<PmuCpu> {
        None
    }

    /// Sentences about this platform that belong with its results (printed as `note`
    /// records after the plan): what its numbers can and cannot mean.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}
