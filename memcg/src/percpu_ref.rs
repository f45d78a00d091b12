//! `struct percpu_ref` (include/linux/percpu-refcount.h, lib/percpu-refcount.c): the css
//! reference count, per CPU while the memcg is online, one shared atomic once it is not.
//!
//! A memcg is referenced by every charged folio, so a count kept in one atomic would be
//! written by every charge and uncharge on every CPU: the line would bounce between CPUs
//! on each fault and free, which Linux's css count never does. As Linux's, the count here
//! has two modes:
//!
//! - **per CPU** (while the memcg is online): a get or put on a CPU adds to or subtracts
//!   from that CPU's slot only (`this_cpu_add`). A slot on its own may wrap: a reference
//!   taken on one CPU and dropped on another leaves +1 in one slot and -1 (wrapped) in the
//!   other; only the sum means anything. The shared count holds [`PERCPU_COUNT_BIAS`] plus
//!   the initial reference, so it cannot reach zero in this mode.
//! - **atomic** (after [`PercpuRef::kill`], at offline): gets and puts go to the shared
//!   count, which the reaper reads to tell when the memcg is unreferenced.
//!
//! **The switch** (`percpu_ref_kill()` -> `percpu_ref_switch_to_atomic_rcu()`). `kill`
//! sets the atomic flag. A CPU that read the flag before that may still be about to write
//! its slot; every such access is inside a read-side section of the tree's RCU domain (the
//! callers pass the CPU they hold a section on, [`PercpuRef::get_many`]). So once a grace
//! period that started after the flag was set has completed (a cookie taken after `kill`,
//! [`PercpuRef::set_confirm_cookie`]), no CPU will write a slot again, and
//! [`PercpuRef::try_confirm`] folds the slots' sum into the shared count and takes the bias
//! out: from then on the shared count is the exact count. An operation whose caller is in
//! no read-side section (no CPU given, or one offline in the RCU domain) always uses the
//! shared count: that is correct in either mode, as the true count is the shared count
//! plus the slots minus the bias until the fold.
//!
//! Ordering: a slot write before a CPU's quiescent state is released by that report and
//! acquired by the grace-period machinery, whose completion the confirming CPU acquires
//! before reading the slots; a CPU whose section starts after its report has acquired the
//! grace-period counter that was advanced after the flag store, so it sees the flag. The
//! shared count's updates are all read-modify-writes, so mixing them with the fold (one
//! more) loses nothing. `tests/suite/loom_models/percpu_ref.rs` checks this against the real RCU.
//!
//! Every write to the shared count is counted in the writing CPU's slot
//! ([`PercpuRef::atomic_writes`]), so tests and the benchmark can show that the fault
//! path writes no shared line.

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use ksync::PerCpu;

/// `PERCPU_COUNT_BIAS`: what the shared count holds on top of the true count while the
/// slots are in use, so that it never reads zero in per-CPU mode.
pub const PERCPU_COUNT_BIAS: usize = 1 << (usize::BITS - 1);

/// One CPU's slot: its share of the count (wrapping) and its writes to the shared count.
#[derive(Debug)]
struct RefCpu {
    count: AtomicUsize,
    atomic_writes: AtomicU64,
}

/// A reference count per CPU, switchable once to one shared atomic; see the module
/// documentation.
#[derive(Debug)]
pub struct PercpuRef {
    /// `__PERCPU_REF_ATOMIC`: set once by [`Self::kill`], read by every get and put.
    atomic: AtomicBool,
    /// The slots were folded into `count`: it is now the exact count.
    folded: AtomicBool,
    /// The grace period after which the slots may be folded (0: none asked for yet).
    confirm: AtomicU64,
    /// `percpu_ref_data::count`.
    count: AtomicUsize,
    cpus: PerCpu<RefCpu>,
}

impl PercpuRef {
    /// A count of one (the initial reference) in per-CPU mode (`percpu_ref_init()`), with a
    /// slot for each of `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> Self {
        Self {
            atomic: AtomicBool::new(false),
            folded: AtomicBool::new(false),
            confirm: AtomicU64::new(0),
            count: AtomicUsize::new(PERCPU_COUNT_BIAS + 1),
            cpus: PerCpu::new(nr_cpus.max(1), |_| RefCpu {
                count: AtomicUsize::new(0),
                atomic_writes: AtomicU64::new(0),
            }),
        }
    }

    /// The slot to use: `cpu`'s while in per-CPU mode, `None` for the shared count.
    #[inline]
    fn percpu(&self, cpu: Option<usize>) -> Option<&RefCpu> {
        let slot = self.cpus.get(cpu?)?;
        // Relaxed: the grace period, not this load, orders slot writes before the fold.
        (!self.atomic.load(Ordering::Relaxed)).then_some(slot)
    }

    /// Counts a write to the shared count in the writer's slot.
    #[inline]
    fn note_atomic_write(&self, cpu: Option<usize>) {
        let nr = self.cpus.nr_cpus();
        let cpu = ksync::cpu::fold(cpu.unwrap_or_else(ksync::this_cpu), nr);
        if let Some(s) = self.cpus.get(cpu) {
            s.atomic_writes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes `n` references (`percpu_ref_get_many()`). `cpu` is the CPU the caller holds a
    /// read-side section of the RCU domain the switch is confirmed by; `None` when it holds
    /// none (the shared count is used).
    #[inline]
    pub fn get_many(&self, cpu: Option<usize>, n: usize) {
        match self.percpu(cpu) {
            Some(s) => {
                s.count.fetch_add(n, Ordering::Relaxed);
            }
            None => {
                self.count.fetch_add(n, Ordering::Relaxed);
                self.note_atomic_write(cpu);
            }
        }
    }

    /// Drops `n` references (`percpu_ref_put_many()`); `cpu` as for [`Self::get_many`].
    /// Nothing is released here: the owner checks [`Self::is_zero`].
    #[inline]
    pub fn put_many(&self, cpu: Option<usize>, n: usize) {
        match self.percpu(cpu) {
            Some(s) => {
                s.count.fetch_sub(n, Ordering::Release);
            }
            None => {
                self.count.fetch_sub(n, Ordering::Release);
                self.note_atomic_write(cpu);
            }
        }
    }

    /// Takes a reference unless the count is zero (`percpu_ref_tryget()`): always succeeds
    /// in per-CPU mode (the count cannot be zero before the switch); in atomic mode fails
    /// once the count reached zero, so a lockless lookup never revives a memcg the reaper
    /// may be freeing. `cpu` as for [`Self::get_many`].
    #[inline]
    pub fn tryget(&self, cpu: Option<usize>) -> bool {
        if let Some(s) = self.percpu(cpu) {
            s.count.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let ok = self
            .count
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |r| {
                (r != 0).then_some(r + 1)
            })
            .is_ok();
        if ok {
            self.note_atomic_write(cpu);
        }
        ok
    }

    /// Starts the switch to atomic mode (`percpu_ref_kill()` without the put of the initial
    /// reference, which the caller does): from now on every get and put that reads the
    /// flag uses the shared count. Returns false if it was already killed. The caller then
    /// takes a grace-period cookie and hands it to [`Self::set_confirm_cookie`].
    pub fn kill(&self) -> bool {
        !self.atomic.swap(true, Ordering::AcqRel)
    }

    /// Records the grace period after which [`Self::try_confirm`] may fold: a cookie taken
    /// after [`Self::kill`] (`start_poll_synchronize_rcu()`).
    pub fn set_confirm_cookie(&self, cookie: u64) {
        self.confirm.store(cookie, Ordering::Release);
    }

    /// Finishes the switch once the grace period is over (`percpu_ref_switch_to_atomic_rcu()`):
    /// `gp_passed(cookie)` says whether the recorded cookie's grace period has completed
    /// (`poll_state_synchronize_rcu()`). Returns whether the count is now exact in the shared
    /// counter (folded now or before). Callers serialise (the tree lock): two folds at once
    /// would count the slots twice.
    pub fn try_confirm(&self, gp_passed: impl FnOnce(u64) -> bool) -> bool {
        if self.folded.load(Ordering::Acquire) {
            return true;
        }
        if !self.atomic.load(Ordering::Acquire) {
            return false;
        }
        let cookie = self.confirm.load(Ordering::Acquire);
        if cookie == 0 || !gp_passed(cookie) {
            return false;
        }
        let sum = self.cpus.iter().fold(0usize, |a, (_, s)| {
            a.wrapping_add(s.count.load(Ordering::Acquire))
        });
        self.count
            .fetch_add(sum.wrapping_sub(PERCPU_COUNT_BIAS), Ordering::AcqRel);
        self.folded.store(true, Ordering::Release);
        true
    }

    /// Whether the switch is confirmed and no reference is left (`percpu_ref_is_zero()`).
    pub fn is_zero(&self) -> bool {
        self.folded.load(Ordering::Acquire) && self.count.load(Ordering::Acquire) == 0
    }

    /// Whether gets and puts still use the per-CPU slots (`percpu_ref_is_dying()` negated).
    pub fn is_percpu(&self) -> bool {
        !self.atomic.load(Ordering::Acquire)
    }

    /// The count, exact when nothing runs concurrently: the shared count plus, until the
    /// fold, the slots minus the bias. For tests and reports.
    pub fn count(&self) -> usize {
        let shared = self.count.load(Ordering::Acquire);
        if self.folded.load(Ordering::Acquire) {
            return shared;
        }
        self.cpus
            .iter()
            .fold(shared.wrapping_sub(PERCPU_COUNT_BIAS), |a, (_, s)| {
                a.wrapping_add(s.count.load(Ordering::Acquire))
            })
    }

    /// Writes made to the shared count so far, by all CPUs (gets, puts and successful
    /// trygets in atomic mode or without a CPU; the fold is not counted).
    pub fn atomic_writes(&self) -> u64 {
        self.cpus
            .iter()
            .map(|(_, s)| s.atomic_writes.load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn per_cpu_until_killed_then_exact_after_the_fold() {
        let r = PercpuRef::new(2);
        r.get_many(Some(0), 3);
        r.put_many(Some(1), 2);
        assert!(r.tryget(Some(1)));
        assert_eq!((r.count(), r.atomic_writes()), (3, 0), "1 + 3 - 2 + 1");
        assert!(!r.is_zero());
        assert!(r.kill());
        assert!(!r.kill(), "killed once");
        r.put_many(Some(0), 1);
        assert_eq!(
            r.atomic_writes(),
            1,
            "after the flag, puts go to the shared count"
        );
        assert!(!r.try_confirm(|_| true), "no cookie yet");
        r.set_confirm_cookie(7);
        assert!(!r.try_confirm(|c| c != 7), "grace period not over");
        assert_eq!(r.count(), 2);
        assert!(r.try_confirm(|c| c == 7));
        assert!(r.try_confirm(|_| false), "folded once, stays folded");
        assert_eq!(r.count(), 2);
        r.put_many(None, 2);
        assert!(r.is_zero());
        assert!(!r.tryget(Some(0)), "zero in atomic mode: no revival");
        assert_eq!(r.count(), 0);
    }
}
