//! Per-lock contention statistics that can be switched on at run time.
//!
//! Models Linux's `CONFIG_LOCK_STAT` (`kernel/locking/lockdep.c`, `/proc/lock_stat`) reduced to
//! the four numbers the lru_lock experiments need: acquisitions, contended acquisitions, and
//! the total and maximum cycles spent waiting (counted over contended acquisitions only, as
//! `waittime-total`/`waittime-max` are in Linux). Recording is off by default and costs one
//! relaxed load when off; it is switched on per lock ([`LockStat::set_enabled`]) or for every
//! lock at once ([`set_global_enabled`], like `echo 1 > /proc/sys/kernel/lock_stat`).
//!
//! The counters are written only by the CPU that has just acquired the lock, so they are
//! serialised by the lock itself and need no locked read-modify-write: each is a relaxed
//! load plus a relaxed store. They are atomics only so that other CPUs may read a snapshot
//! while the lock is in use. A lock that does not want the bytes at all uses [`NoStat`].

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

static GLOBAL_ENABLED: AtomicBool = AtomicBool::new(false);

/// Switches statistics on (or off) for every lock that embeds a [`LockStat`].
pub fn set_global_enabled(on: bool) {
    GLOBAL_ENABLED.store(on, Relaxed);
}

/// Whether statistics are switched on for every lock.
#[must_use]
pub fn global_enabled() -> bool {
    GLOBAL_ENABLED.load(Relaxed)
}

/// The cycle counter used for wait times (the TSC; `rdtsc` is unprivileged and cheap).
#[inline]
#[must_use]
pub fn cycles() -> u64 {
    // SAFETY: `rdtsc` has no memory effects; CR4.TSD is clear so it is allowed at any CPL.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// What a lock does with its statistics: [`LockStat`] records, [`NoStat`] is zero-sized.
pub trait StatMode: Sync {
    /// The initial (empty, switched off) value, usable in `const` lock initialisers.
    const INIT: Self;
    /// Whether this acquisition should be timed and recorded.
    fn is_on(&self) -> bool;
    /// Records one acquisition; `wait` is the cycles spent spinning when `contended`.
    ///
    /// Called only by the lock holder, right after acquiring.
    fn record(&self, contended: bool, wait: u64);
}

/// No statistics: a lock with `NoStat` is as small as the lock word.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoStat;

impl StatMode for NoStat {
    const INIT: Self = NoStat;
    #[inline]
    fn is_on(&self) -> bool {
        false
    }
    #[inline]
    fn record(&self, _contended: bool, _wait: u64) {}
}

/// Contention counters of one lock (see the module docs).
#[derive(Debug, Default)]
pub struct LockStat {
    enabled: AtomicBool,
    acquisitions: AtomicU64,
    contended: AtomicU64,
    wait_total: AtomicU64,
    wait_max: AtomicU64,
}

impl LockStat {
    /// Empty counters, recording off.
    #[must_use]
    pub const fn new() -> Self {
        LockStat {
            enabled: AtomicBool::new(false),
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait_total: AtomicU64::new(0),
            wait_max: AtomicU64::new(0),
        }
    }

    /// Switches recording on or off for this lock (the global switch also turns it on).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Relaxed);
    }

    /// Reads the counters. Taken while other CPUs use the lock, the four numbers may come from
    /// slightly different instants; taken while the lock is held they are consistent.
    #[must_use]
    pub fn snapshot(&self) -> LockStatSnapshot {
        LockStatSnapshot {
            acquisitions: self.acquisitions.load(Relaxed),
            contended: self.contended.load(Relaxed),
            wait_total_cycles: self.wait_total.load(Relaxed),
            wait_max_cycles: self.wait_max.load(Relaxed),
        }
    }

    /// Zeroes the counters. Only meaningful while nobody takes the lock (or while holding it).
    pub fn reset(&self) {
        self.acquisitions.store(0, Relaxed);
        self.contended.store(0, Relaxed);
        self.wait_total.store(0, Relaxed);
        self.wait_max.store(0, Relaxed);
    }
}

/// `counter += v` without a locked instruction: the caller is the only writer.
#[inline]
fn bump(counter: &AtomicU64, v: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(v), Relaxed);
}

impl StatMode for LockStat {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = LockStat::new();

    #[inline]
    fn is_on(&self) -> bool {
        self.enabled.load(Relaxed) || GLOBAL_ENABLED.load(Relaxed)
    }

    #[inline]
    fn record(&self, contended: bool, wait: u64) {
        bump(&self.acquisitions, 1);
        if contended {
            bump(&self.contended, 1);
            bump(&self.wait_total, wait);
            if wait > self.wait_max.load(Relaxed) {
                self.wait_max.store(wait, Relaxed);
            }
        }
    }
}

/// A copy of a lock's counters, printable as one line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LockStatSnapshot {
    /// Successful `lock`/`try_lock` calls while recording.
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and had to wait.
    pub contended: u64,
    /// Cycles spent waiting, summed over contended acquisitions.
    pub wait_total_cycles: u64,
    /// The longest single wait, in cycles.
    pub wait_max_cycles: u64,
}

impl LockStatSnapshot {
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
        }
    }
}

impl fmt::Display for LockStatSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pm = self.contended_permille();
        write!(
            f,
            "acquisitions={} contended={} ({}.{}%) wait_total={}cyc wait_max={}cyc wait_avg={}cyc",
            self.acquisitions,
            self.contended,
            pm / 10,
            pm % 10,
            self.wait_total_cycles,
            self.wait_max_cycles,
            self.wait_avg_cycles()
        )
    }
}
