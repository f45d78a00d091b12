//! A fair ticket spinlock of four bytes, with its class as a type parameter.
//!
//! Models the x86 `arch_spinlock_t` ticket lock Linux used before qspinlock
//! (arch/x86/include/asm/spinlock.h, 2.6.25 .. 4.1): one 32-bit word holds two 16-bit
//! counters, `owner` (low half, the ticket now served) and `next` (high half, the next ticket
//! to hand out). `lock` takes a ticket with one `lock xadd` on the high half and spins,
//! reading only, until `owner` reaches it; `unlock` advances `owner`. Waiters are served in
//! arrival order, so no CPU starves however hard the others hammer the lock: that fairness
//! is what makes lru_lock contention comparable between variants.
//!
//! Only the holder changes `owner`, so `unlock` needs no locked instruction: on x86 it is a
//! plain 16-bit `add` to the owner half (Linux's unlock, without a lock prefix), which wraps
//! to 0 inside the half; elsewhere (and under loom) an atomic add of 1, or a subtraction of
//! `0xffff` at `0xffff`, so the low half wraps without carrying into `next`.
//! 65 535 simultaneous waiters would be needed to overflow the queue.
//!
//! The lock is exactly its word: the class `C` is zero-sized, and statistics
//! ([`crate::stat`]) and lock-order checking ([`crate::lockdep`]) live in the class's static
//! data, recorded by the new holder right after it acquires. It does not disable
//! interrupts: the kernel takes these locks only in thread context and in the page-fault
//! handler, never in an interrupt handler that could interrupt a holder on the same CPU.
//!
//! Unsafe code here, and why: it is the ticket lock: `unsafe fn release` trusts its caller
//! to hold the lock, and a lock viewed over another structure's word (`from_word`) trusts
//! nobody else to use that word.
#![allow(unsafe_code)]

use crate::class::LockClass;
use core::marker::PhantomData;

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU32, Ordering};
#[cfg(loom)]
use loom::sync::atomic::{AtomicU32, Ordering};

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

/// The ticket lock of class `C`: four bytes.
#[repr(transparent)]
pub struct TicketLock<C: LockClass> {
    word: AtomicU32,
    _class: PhantomData<fn() -> C>,
}

#[cfg(not(loom))]
const _: () = {
    crate::lock_class!(SizeCheck, "size-check");
    assert!(core::mem::size_of::<TicketLock<SizeCheck>>() == 4);
    assert!(core::mem::align_of::<TicketLock<SizeCheck>>() == 4);
};

impl<C: LockClass> core::fmt::Debug for TicketLock<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let w = self.word.load(Ordering::Relaxed);
        f.debug_struct("TicketLock")
            .field("class", &C::NAME)
            .field("owner", &owner(w))
            .field("next", &next(w))
            .finish()
    }
}

impl<C: LockClass> TicketLock<C> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    #[must_use]
    pub const fn new() -> Self {
        TicketLock {
            word: AtomicU32::new(0),
            _class: PhantomData,
        }
    }

    /// An unlocked lock (loom atomics cannot be built in a `const`).
    #[cfg(loom)]
    #[must_use]
    pub fn new() -> Self {
        TicketLock {
            word: AtomicU32::new(0),
            _class: PhantomData,
        }
    }

    /// Views a 32-bit word that lives elsewhere as a ticket lock of class `C` (Linux's
    /// split PTE lock lives in the page-table page's `struct page`; here in its folio's
    /// `private` word).
    ///
    /// # Safety
    ///
    /// For as long as the returned reference is used, `word` must be used by nobody as
    /// anything but this lock (so it starts at an unlocked value, e.g. 0, and is released
    /// before it is reused for something else).
    #[cfg(not(loom))]
    #[must_use]
    pub unsafe fn from_word(word: &AtomicU32) -> &TicketLock<C> {
        // SAFETY: `TicketLock<C>` is `repr(transparent)` over an `AtomicU32` (its other
        // field is a zero-sized `PhantomData`), so the cast preserves size, alignment and
        // validity; the caller guarantees exclusive use of the word as this lock.
        unsafe { &*core::ptr::from_ref(word).cast::<TicketLock<C>>() }
    }

    /// How many CPUs are queued behind the holder (0 when unlocked or uncontended). A racy
    /// hint, exact only while the queue does not change.
    #[must_use]
    pub fn waiters(&self) -> u16 {
        let w = self.word.load(Ordering::Relaxed);
        next(w).wrapping_sub(owner(w)).saturating_sub(1)
    }

    /// Takes the lock, spinning in ticket order.
    ///
    /// The uncontended path is the `lock xadd`, one compare and the check whether the class
    /// records statistics, inlined into the caller as Linux's `spin_lock` fast path is: the
    /// wait, with its clock reads, and the recording are out of line (`wait_for`,
    /// `record`), so the common case saves no registers for them and costs no call.
    #[inline(always)]
    pub fn acquire(&self) {
        let old = self.word.fetch_add(NEXT_ONE, Ordering::Acquire);
        let ticket = next(old);
        if owner(old) != ticket {
            self.wait_for(ticket);
            return;
        }
        self.acquired(crate::stat::recording(C::data()), false, 0, ticket);
    }

    /// Waits until `ticket` is served, then records the contended acquisition. The wait is
    /// timed from the moment the lock is found taken, as lock_stat's `lock_contended()`
    /// does: an uncontended acquisition reads no clock at all (a `rdtsc` per acquisition
    /// would cost more than the lock under an emulator).
    #[cold]
    #[inline(never)]
    fn wait_for(&self, ticket: u16) {
        let timed = crate::stat::recording(C::data());
        let start = if timed { crate::stat::cycles() } else { 0 };
        let mut spins = 0u32;
        while owner(self.word.load(Ordering::Acquire)) != ticket {
            spin_loop(&mut spins);
        }
        self.acquired(timed, true, start, ticket);
    }

    /// Takes the lock if it is free.
    #[inline(always)]
    pub fn try_acquire(&self) -> bool {
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
        if ok {
            self.acquired(crate::stat::recording(C::data()), false, 0, next(w));
        }
        ok
    }

    /// Records the acquisition of `ticket`: its wait, and whether another CPU took a
    /// ticket since this CPU's last acquisition of this lock (a handoff: the `next` half
    /// this CPU left at `ticket + 1` last time is not the one it found).
    #[inline(always)]
    fn acquired(&self, timed: bool, contended: bool, start: u64, ticket: u16) {
        if timed {
            self.record(contended, start, ticket);
        }
        crate::lockdep::acquire(C::data());
    }

    /// The statistics of [`Self::acquired`], out of line: most classes do not record
    /// (`lock_stat=premises`), and those that do pay a call rather than every caller
    /// inlining the slot's updates.
    #[cold]
    #[inline(never)]
    fn record(&self, contended: bool, start: u64, ticket: u16) {
        let wait = if contended {
            crate::stat::cycles().wrapping_sub(start)
        } else {
            0
        };
        crate::stat::record_lock(
            C::data(),
            contended,
            wait,
            core::ptr::from_ref(&self.word) as usize,
            (u64::from(ticket), u64::from(ticket.wrapping_add(1))),
        );
    }

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The caller holds the lock (acquired on this CPU or thread and not yet released).
    #[inline]
    pub unsafe fn release(&self) {
        crate::lockdep::release(C::data());
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        // SAFETY: the word is this lock's, live for `&self`. Only the holder (us, by the
        // caller's contract) writes the owner half (the low 16 bits on little-endian
        // x86), and a 16-bit `add` writes only those two bytes: a waiter's concurrent
        // `lock xadd` on the whole word changes only the `next` half (it writes the
        // owner bytes back unchanged, atomically), so it can neither lose our increment
        // nor be lost by it. The increment wraps from 0xffff to 0 inside the half. x86
        // orders a store after every earlier load and store (TSO), and the asm is a
        // compiler barrier (it may read and write memory), so it is a release. This is
        // Linux's ticket `arch_spin_unlock` (`__add(&lock->tickets.head, 1,
        // UNLOCK_LOCK_PREFIX)`, no lock prefix): no locked read-modify-write per unlock.
        unsafe {
            core::arch::asm!(
                "add word ptr [{w}], 1",
                w = in(reg) self.word.as_ptr(),
                options(nostack),
            );
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom))))]
        {
            // Only the holder changes the owner half.
            let served = owner(self.word.load(Ordering::Relaxed));
            if served == u16::MAX {
                self.word.fetch_sub(OWNER_MASK, Ordering::Release);
            } else {
                self.word.fetch_add(1, Ordering::Release);
            }
        }
    }

    /// Whether the lock is held by anyone.
    #[must_use]
    pub fn is_held(&self) -> bool {
        let w = self.word.load(Ordering::Relaxed);
        owner(w) != next(w)
    }
}

#[cfg(not(loom))]
impl<C: LockClass> Default for TicketLock<C> {
    fn default() -> Self {
        Self::new()
    }
}

/// One turn of the wait loop. On the host (feature `std`) a waiter yields its core every
/// 128 turns: test threads outnumber cores, and a fair lock whose next ticket belongs to a
/// descheduled thread would otherwise stall every waiter for a whole time slice. Pinned
/// benchmark threads (one per core) are never descheduled, so they just spin.
#[inline]
fn spin_loop(spins: &mut u32) {
    #[cfg(loom)]
    {
        let _ = spins;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        core::hint::spin_loop();
        *spins = spins.wrapping_add(1);
        #[cfg(any(test, feature = "std"))]
        if (*spins).is_multiple_of(128) {
            std::thread::yield_now();
        }
    }
}

// SAFETY: `lock` returns only when this CPU's ticket is served, and tickets are handed out
// by an atomic fetch_add, so at most one holder exists; `Acquire` on the load that sees our
// turn pairs with `Release` in `unlock`, ordering the critical sections.
#[cfg(not(loom))]
unsafe impl<C: LockClass> lock_api::RawMutex for TicketLock<C> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();

    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock(&self) {
        self.acquire();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.try_acquire()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: forwarded: lock_api calls `unlock` only for a held lock.
        unsafe { self.release() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.is_held()
    }
}

// SAFETY: handing the lock to the next ticket is what `unlock` always does.
#[cfg(not(loom))]
unsafe impl<C: LockClass> lock_api::RawMutexFair for TicketLock<C> {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: same contract as `unlock`, forwarded from our caller.
        unsafe { lock_api::RawMutex::unlock(self) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    crate::lock_class!(TestTicket, "test-ticket");
    crate::lock_class!(TestStats, "test-stats");

    #[test]
    fn mutual_exclusion_across_threads() {
        let lock = std::sync::Arc::new(crate::SpinMutex::<TestTicket, u64>::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let l = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*lock.lock(), 40_000);
    }

    #[test]
    fn owner_wraps_without_carrying_into_next() {
        let l = TicketLock::<TestTicket>::new();
        l.word.store(0xffff_ffff, Ordering::Relaxed); // owner = next = 0xffff: unlocked
        assert!(!l.is_held());
        l.acquire();
        assert!(l.is_held());
        // SAFETY: held by this thread.
        unsafe { l.release() };
        assert_eq!(l.word.load(Ordering::Relaxed), 0);
        assert!(!l.is_held());
        assert!(l.try_acquire());
        assert!(!l.try_acquire());
        // SAFETY: held.
        unsafe { l.release() };
    }

    #[test]
    fn statistics_are_per_class_and_out_of_line() {
        crate::stat::set_enabled(true);
        let before = TestStats::data().snapshot();
        let l = TicketLock::<TestStats>::new();
        for _ in 0..5 {
            l.acquire();
            // SAFETY: held.
            unsafe { l.release() };
        }
        assert!(l.try_acquire());
        // SAFETY: held.
        unsafe { l.release() };
        let d = TestStats::data().snapshot().since(&before);
        assert_eq!(d.acquisitions, 6);
        assert_eq!(d.contended, 0);
        assert!(crate::classes().any(|c| c.name() == "test-stats"));
        // Contended acquisitions from another thread are counted with their waits.
        static SHARED: TicketLock<TestStats> = TicketLock::new();
        static WAITING: AtomicU64 = AtomicU64::new(0);
        SHARED.acquire();
        let t = std::thread::spawn(|| {
            WAITING.store(1, Ordering::SeqCst);
            SHARED.acquire();
            // SAFETY: held by this thread.
            unsafe { SHARED.release() };
        });
        while WAITING.load(Ordering::SeqCst) == 0 || SHARED.waiters() == 0 {
            std::hint::spin_loop();
        }
        // SAFETY: held by this thread.
        unsafe { SHARED.release() };
        t.join().unwrap();
        let d = TestStats::data().snapshot().since(&before);
        assert_eq!(d.acquisitions, 8);
        assert_eq!(d.contended, 1);
        assert!(d.wait_total_cycles > 0 || !cfg!(target_arch = "x86_64"));
    }
}
