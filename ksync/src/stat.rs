//! Lock statistics, per class and per CPU (`CONFIG_LOCK_STAT`, `/proc/lock_stat`).
//!
//! Four numbers per class: acquisitions, contended acquisitions, and the total and maximum
//! cycles spent waiting (over contended acquisitions, as Linux's `waittime-total` /
//! `waittime-max`). Each CPU records into its own 128-byte slot of the class
//! ([`crate::ClassData`]), with a relaxed load and store (the slot's only writer is its CPU),
//! so recording never touches the lock's line or another CPU's line; readers sum the slots
//! ([`crate::ClassData::snapshot`]). Recording is off until [`set_enabled`] switches it on
//! for every class, or [`crate::ClassData::set_recording`] for one class; whether a class
//! records ([`recording`]) costs one relaxed load of a read-mostly byte of the class and one
//! compare per acquisition (the class keeps a copy of the switch for every class, see
//! [`crate::class`]), and a recorded acquisition the slot's updates (out of line for a
//! ticket lock) plus two cycle-counter reads on a contended one.
//!
//! Unsafe code here, and why: lock statistics time waits with `rdtsc`, an intrinsic that is
//! `unsafe` to call.
#![allow(unsafe_code)]

use crate::handoff::{HandoffTable, Seen};
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Switches statistics on or off for every class (`echo 1 > /proc/sys/kernel/lock_stat`):
/// the switch, and its copy in every registered class. Waits while another CPU does the
/// same; never call it from an interrupt handler.
pub fn set_enabled(on: bool) {
    crate::class::set_all(|on| ENABLED.store(on, Relaxed), on);
}

/// Whether statistics are being recorded for every class.
#[inline]
#[must_use]
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Whether acquisitions of class `data` are recorded: while statistics are on for every
/// class ([`set_enabled`]), or for this one ([`crate::ClassData::set_recording`]).
#[inline(always)]
#[must_use]
pub fn recording(data: &'static crate::ClassData) -> bool {
    data.records()
}

/// The cycle counter wait times are measured in (the TSC on x86_64).
#[inline]
#[must_use]
pub fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no memory effects and is allowed at any privilege level
        // (CR4.TSD is clear in the kernel; user space may always use it on Linux).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// One class's counters: one 128-byte slot per CPU.
pub struct ClassStats([crate::percpu::CachePadded<CpuLockStat>; crate::cpu::MAX_CPUS]);

impl ClassStats {
    /// Zeroed counters.
    #[must_use]
    pub const fn new() -> Self {
        ClassStats([const { crate::percpu::CachePadded(CpuLockStat::new()) }; crate::cpu::MAX_CPUS])
    }

    pub(crate) fn cpu(&self, cpu: usize) -> &CpuLockStat {
        &self.0[cpu % crate::cpu::MAX_CPUS].0
    }

    pub(crate) fn cpus(&self) -> impl Iterator<Item = &CpuLockStat> {
        self.0.iter().map(|c| &c.0)
    }
}

impl Default for ClassStats {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for ClassStats {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClassStats").finish_non_exhaustive()
    }
}

/// One CPU's counters for one class, and its memory of the class's words it wrote
/// ([`crate::handoff`]).
#[derive(Debug)]
pub(crate) struct CpuLockStat {
    acquisitions: AtomicU64,
    contended: AtomicU64,
    wait_total: AtomicU64,
    wait_max: AtomicU64,
    handoffs: HandoffTable,
}

const _: () = assert!(
    core::mem::size_of::<CpuLockStat>() <= 128,
    "a CPU's slot of a class stays in its own 128-byte pair"
);

/// Adds `v` to a counter only its CPU writes (a relaxed load and store, no locked RMW).
#[inline]
pub(crate) fn bump(c: &AtomicU64, v: u64) {
    c.store(c.load(Relaxed).wrapping_add(v), Relaxed);
}

impl CpuLockStat {
    pub(crate) const fn new() -> Self {
        CpuLockStat {
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait_total: AtomicU64::new(0),
            wait_max: AtomicU64::new(0),
            handoffs: HandoffTable::new(),
        }
    }

    /// Records one acquisition by the CPU owning this slot.
    #[inline]
    pub(crate) fn record(&self, contended: bool, wait: u64) {
        bump(&self.acquisitions, 1);
        if contended {
            bump(&self.contended, 1);
            bump(&self.wait_total, wait);
            if wait > self.wait_max.load(Relaxed) {
                self.wait_max.store(wait, Relaxed);
            }
        }
    }

    pub(crate) fn read(&self) -> LockStatSnapshot {
        let (handoffs, untracked) = self.handoffs.read();
        LockStatSnapshot {
            acquisitions: self.acquisitions.load(Relaxed),
            contended: self.contended.load(Relaxed),
            wait_total_cycles: self.wait_total.load(Relaxed),
            wait_max_cycles: self.wait_max.load(Relaxed),
            handoffs,
            untracked,
        }
    }

    pub(crate) fn reset(&self) {
        self.acquisitions.store(0, Relaxed);
        self.contended.store(0, Relaxed);
        self.wait_total.store(0, Relaxed);
        self.wait_max.store(0, Relaxed);
        self.handoffs.reset();
    }
}

/// Records a write of the word at `addr` of class `data` on the running CPU: one
/// acquisition, judged for a handoff ([`crate::handoff`]).
#[inline]
pub(crate) fn record_write(
    data: &'static crate::ClassData,
    addr: usize,
    old: u64,
    new: u64,
) -> Seen {
    let _ = data.id();
    let slot = data.stats.cpu(crate::this_cpu());
    bump(&slot.acquisitions, 1);
    slot.handoffs.note(addr, old, new)
}

/// Records a compare-and-swap on a word of class `data` that lost to another CPU's write:
/// one contended acquisition, with no acquisition (the retry that succeeds is the write).
#[inline]
pub(crate) fn record_retry(data: &'static crate::ClassData) {
    let _ = data.id();
    bump(&data.stats.cpu(crate::this_cpu()).contended, 1);
}

/// Records an acquisition, on the running CPU, of the lock of class `data` whose word is at
/// `addr`, and judges it for a handoff in the same slot: the word held `old` in the half
/// its acquirers write, and this CPU left `new` there.
#[inline]
pub(crate) fn record_lock(
    data: &'static crate::ClassData,
    contended: bool,
    wait: u64,
    addr: usize,
    (old, new): (u64, u64),
) {
    // Listed by `classes()` from its first recorded acquisition on, also in release builds
    // where lockdep (which registers classes too) is compiled out. After the first call
    // this is one load of the class's read-mostly id.
    let _ = data.id();
    let slot = data.stats.cpu(crate::this_cpu());
    slot.record(contended, wait);
    slot.handoffs.note(addr, old, new);
}

/// A class's counters (summed over CPUs), printable as one line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LockStatSnapshot {
    /// Acquisitions (`lock` and successful `try_lock`) while recording.
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and had to wait.
    pub contended: u64,
    /// Cycles spent waiting, summed over contended acquisitions.
    pub wait_total_cycles: u64,
    /// The longest single wait, in cycles.
    pub wait_max_cycles: u64,
    /// Acquisitions (writes, for a word class) that found the word last written by
    /// another CPU since this CPU's previous one ([`crate::handoff`]).
    pub handoffs: u64,
    /// Acquisitions or writes that could not be judged (the CPU's first on the word in
    /// this run, or the word forgotten).
    pub untracked: u64,
}

impl LockStatSnapshot {
    /// Adds another CPU's counters (the maximum is the larger one).
    pub fn add(&mut self, o: &LockStatSnapshot) {
        self.acquisitions = self.acquisitions.wrapping_add(o.acquisitions);
        self.contended = self.contended.wrapping_add(o.contended);
        self.wait_total_cycles = self.wait_total_cycles.wrapping_add(o.wait_total_cycles);
        self.wait_max_cycles = self.wait_max_cycles.max(o.wait_max_cycles);
        self.handoffs = self.handoffs.wrapping_add(o.handoffs);
        self.untracked = self.untracked.wrapping_add(o.untracked);
    }

    /// Average wait of a contended acquisition, in cycles (0 when never contended).
    #[must_use]
    pub fn wait_avg_cycles(&self) -> u64 {
        self.wait_total_cycles
            .checked_div(self.contended)
            .unwrap_or(0)
    }

    /// Contended acquisitions per thousand acquisitions.
    #[must_use]
    pub fn contended_permille(&self) -> u64 {
        (self.contended.saturating_mul(1000))
            .checked_div(self.acquisitions)
            .unwrap_or(0)
    }

    /// The change from `earlier` to `self` (the maximum is kept as is: it is not additive).
    #[must_use]
    pub fn since(&self, earlier: &LockStatSnapshot) -> LockStatSnapshot {
        LockStatSnapshot {
            acquisitions: self.acquisitions.wrapping_sub(earlier.acquisitions),
            contended: self.contended.wrapping_sub(earlier.contended),
            wait_total_cycles: self
                .wait_total_cycles
                .wrapping_sub(earlier.wait_total_cycles),
            wait_max_cycles: self.wait_max_cycles,
            handoffs: self.handoffs.wrapping_sub(earlier.handoffs),
            untracked: self.untracked.wrapping_sub(earlier.untracked),
        }
    }
}

impl fmt::Display for LockStatSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pm = self.contended_permille();
        write!(
            f,
            "acquisitions={} contended={} ({}.{}%) wait_total={}cyc wait_max={}cyc wait_avg={}cyc \
             handoffs={} untracked={}",
            self.acquisitions,
            self.contended,
            pm / 10,
            pm % 10,
            self.wait_total_cycles,
            self.wait_max_cycles,
            self.wait_avg_cycles(),
            self.handoffs,
            self.untracked
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::lock_class!(
        /// Recorded into directly, never through a lock (so lockdep never sees it).
        StatOnlyLock, "test.stat_only"
    );

    #[test]
    fn a_recorded_class_is_listed_without_lockdep() {
        use crate::LockClass;
        let data = <StatOnlyLock as LockClass>::data();
        assert!(!crate::classes().any(|c| c.name() == "test.stat_only"));
        record_lock(data, true, 7, 0x40, (0, 1));
        let listed = crate::classes()
            .find(|c| c.name() == "test.stat_only")
            .expect("a class with recorded acquisitions is listed");
        let s = listed.snapshot();
        assert_eq!(
            (s.acquisitions, s.contended, s.wait_total_cycles),
            (1, 1, 7)
        );
    }
}
