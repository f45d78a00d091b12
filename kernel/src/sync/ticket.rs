//! A fair ticket spinlock implementing [`lock_api::RawMutex`].
//!
//! Models the x86 `arch_spinlock_t` ticket lock Linux used before qspinlock
//! (`arch/x86/include/asm/spinlock.h`, 2.6.25 .. 4.1): one 32-bit word holds two 16-bit
//! counters, `owner` (low half, the ticket now being served) and `next` (high half, the next
//! ticket to hand out). `lock` takes a ticket with one `lock xadd` on the high half and spins,
//! reading only, until `owner` reaches it; `unlock` advances `owner`. Waiters are served in
//! arrival order, so no CPU starves however hard the others hammer the lock: that fairness is
//! what makes lru_lock contention numbers comparable between variants.
//!
//! Only the holder ever changes `owner`, so `unlock` knows its value; when it is `0xffff` the
//! holder subtracts `0xffff` instead of adding 1, so the low half wraps to 0 without carrying
//! into `next`. 65 535 simultaneous waiters would be needed to overflow the queue.
//!
//! The lock does not disable interrupts: it must not be taken from an interrupt handler that
//! can interrupt a holder on the same CPU (the kernel takes these locks only in thread
//! context). Statistics ([`super::lock_stat`]) are recorded by the new holder right after it
//! acquires, so their updates are serialised by the lock they describe.

use core::sync::atomic::{AtomicU32, Ordering};

use super::lock_stat::{LockStat, LockStatSnapshot, NoStat, StatMode, cycles};

const OWNER_MASK: u32 = 0xffff;
const NEXT_ONE: u32 = 1 << 16;

#[inline]
fn owner(word: u32) -> u16 {
    (word & OWNER_MASK) as u16
}

#[inline]
fn next(word: u32) -> u16 {
    (word >> 16) as u16
}

/// The raw ticket lock; `S` chooses whether it carries statistics.
#[derive(Debug)]
#[repr(C)]
pub struct RawTicketLock<S: StatMode = LockStat> {
    word: AtomicU32,
    stat: S,
}

/// The ticket lock with switchable statistics (off until switched on).
pub type TicketLock = RawTicketLock<LockStat>;
/// The ticket lock without statistics: exactly four bytes, like Linux's `arch_spinlock_t`.
pub type PlainTicketLock = RawTicketLock<NoStat>;

const _: () = assert!(core::mem::size_of::<PlainTicketLock>() == 4);

impl<S: StatMode> RawTicketLock<S> {
    /// An unlocked lock.
    #[must_use]
    pub const fn new() -> Self {
        RawTicketLock {
            word: AtomicU32::new(0),
            stat: S::INIT,
        }
    }

    /// How many CPUs are queued behind the holder (0 when unlocked or uncontended).
    ///
    /// A racy hint, exact only while the queue does not change.
    #[must_use]
    pub fn waiters(&self) -> u16 {
        let w = self.word.load(Ordering::Relaxed);
        next(w).wrapping_sub(owner(w)).saturating_sub(1)
    }

    #[inline]
    fn acquire(&self) {
        let timed = self.stat.is_on();
        let start = if timed { cycles() } else { 0 };
        let old = self.word.fetch_add(NEXT_ONE, Ordering::Acquire);
        let ticket = next(old);
        let mut contended = false;
        if owner(old) != ticket {
            contended = true;
            while owner(self.word.load(Ordering::Acquire)) != ticket {
                core::hint::spin_loop();
            }
        }
        if timed {
            let wait = if contended {
                cycles().wrapping_sub(start)
            } else {
                0
            };
            self.stat.record(contended, wait);
        }
    }
}

impl RawTicketLock<LockStat> {
    /// This lock's statistics (switch them on with [`LockStat::set_enabled`]).
    #[must_use]
    pub fn stat(&self) -> &LockStat {
        &self.stat
    }

    /// A copy of this lock's counters.
    #[must_use]
    pub fn stat_snapshot(&self) -> LockStatSnapshot {
        self.stat.snapshot()
    }
}

impl<S: StatMode> Default for RawTicketLock<S> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: `lock` returns only when this CPU's ticket is being served, and tickets are handed
// out by an atomic fetch_add, so at most one holder exists at a time; `Acquire` on the load
// that observes our turn pairs with `Release` in `unlock`, ordering the critical sections.
unsafe impl<S: StatMode> lock_api::RawMutex for RawTicketLock<S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();

    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock(&self) {
        self.acquire();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let w = self.word.load(Ordering::Relaxed);
        if owner(w) != next(w) {
            return false;
        }
        let ok = self
            .word
            .compare_exchange(
                w,
                w.wrapping_add(NEXT_ONE),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok();
        if ok && self.stat.is_on() {
            self.stat.record(false, 0);
        }
        ok
    }

    #[inline]
    unsafe fn unlock(&self) {
        // Only the holder (us, by the caller's contract) changes the owner half.
        let served = owner(self.word.load(Ordering::Relaxed));
        if served == u16::MAX {
            self.word.fetch_sub(OWNER_MASK, Ordering::Release);
        } else {
            self.word.fetch_add(1, Ordering::Release);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        let w = self.word.load(Ordering::Relaxed);
        owner(w) != next(w)
    }
}

// SAFETY: handing the lock to the next ticket is what `unlock` always does.
unsafe impl<S: StatMode> lock_api::RawMutexFair for RawTicketLock<S> {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: same contract as `unlock`, forwarded from our caller.
        unsafe { lock_api::RawMutex::unlock(self) }
    }
}
