//! Loom: the ticket lock itself ([`TicketLock`], the lock every lru and memcg lock class
//! uses in the kernel and on the host), not a stand-in. Under loom its word is a loom
//! atomic and its release is the portable `fetch_add` (the kernel's x86 release is a plain
//! 16-bit `add` on the owner half, which loom cannot express; the host tests run that one).
//!
//! - Mutual exclusion: two CPUs' critical sections on a loom `UnsafeCell` never overlap (loom reports
//!   any concurrent access as a data race), and every increment made under the lock is
//!   seen by the next holder (Acquire on the turn, Release on the hand-over).
//! - `try_acquire` never takes a held lock, and a lock is free once every holder let go.
use ksync::TicketLock;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

ksync::lock_class!(ModelLock, "loom-ticket");

struct Counter {
    lock: TicketLock<ModelLock>,
    value: UnsafeCell<u32>,
}

// SAFETY: `value` is only touched with `lock` held (that is what the model checks).
unsafe impl Sync for Counter {}

impl Counter {
    fn bump(&self) {
        self.lock.acquire();
        // SAFETY: the lock is held; loom flags any access that is not ordered after the
        // previous holder's.
        self.value.with_mut(|v| unsafe { *v += 1 });
        // SAFETY: acquired just above on this thread.
        unsafe { self.lock.release() };
    }
}

/// A bounded model; a ticket waiter spins (yielding to loom at every turn), so its paths are
/// longer than loom's default branch limit allows.
fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.max_branches = 10_000;
    b.check(f);
}

#[test]
fn critical_sections_never_overlap_and_keep_every_update() {
    model(3, || {
        let c = Arc::new(Counter {
            lock: TicketLock::new(),
            value: UnsafeCell::new(0),
        });
        let others: Vec<_> = (0..1)
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || c.bump())
            })
            .collect();
        c.bump();
        for t in others {
            t.join().unwrap();
        }
        assert!(!c.lock.is_held());
        c.lock.acquire();
        // SAFETY: the lock is held.
        let v = c.value.with(|v| unsafe { *v });
        // SAFETY: acquired just above.
        unsafe { c.lock.release() };
        assert_eq!(v, 2);
    });
}

#[test]
fn try_acquire_never_takes_a_held_lock() {
    model(3, || {
        let c = Arc::new(Counter {
            lock: TicketLock::new(),
            value: UnsafeCell::new(0),
        });
        let holder = {
            let c = c.clone();
            thread::spawn(move || c.bump())
        };
        if c.lock.try_acquire() {
            // SAFETY: try_acquire succeeded: the lock is ours.
            c.value.with_mut(|v| unsafe { *v += 1 });
            // SAFETY: acquired just above.
            unsafe { c.lock.release() };
        }
        holder.join().unwrap();
        assert!(!c.lock.is_held());
        assert_eq!(c.lock.waiters(), 0);
    });
}
