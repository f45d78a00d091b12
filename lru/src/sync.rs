//! Synchronisation shim: `core` atomics normally, loom's under `cfg(loom)`.
//!
//! Every atomic that takes part in a lockless protocol (folio flags, hlist_nulls links,
//! the memcg FIFO, the QSBR counters, the drain generation) is imported from here, so the
//! loom tests in `tests/loom_*.rs` model-check the same code the kernel runs. Spin loops
//! call [`hint::spin_loop`], which under loom yields to the model scheduler.
//!
//! [`RawSpinlock`] is a small test-and-test-and-set lock implementing
//! [`lock_api::RawMutex`]; it stands in for the kernel's ticket lock in host tests. It is
//! not built under loom (loom atomics cannot be created in a `const`).

#[cfg(loom)]
pub use loom::sync::atomic;

#[cfg(not(loom))]
pub use core::sync::atomic;

/// Spin-wait hints.
pub mod hint {
    /// Tell the CPU (or, under loom, the model scheduler) that we are spinning.
    #[cfg(loom)]
    #[inline]
    pub fn spin_loop() {
        loom::thread::yield_now();
    }

    #[cfg(not(loom))]
    pub use core::hint::spin_loop;
}

#[cfg(not(loom))]
pub use spinlock::RawSpinlock;

#[cfg(not(loom))]
mod spinlock {
    use core::sync::atomic::{AtomicBool, Ordering};

    /// A minimal test-and-test-and-set spinlock for host tests and benchmarks.
    ///
    /// Use it as the `R` of [`crate::Lruvec`] or [`crate::LruGenMemcg`] when no platform
    /// lock is at hand. It never sleeps; waiters spin with `core::hint::spin_loop`.
    #[derive(Debug)]
    pub struct RawSpinlock {
        locked: AtomicBool,
    }

    // SAFETY: `lock` returns only after swapping `locked` from false to true with Acquire
    // ordering, and `unlock` stores false with Release, so at most one holder exists and
    // the holder's writes happen-before the next holder's reads.
    unsafe impl lock_api::RawMutex for RawSpinlock {
        const INIT: Self = RawSpinlock {
            locked: AtomicBool::new(false),
        };
        type GuardMarker = lock_api::GuardSend;

        fn lock(&self) {
            while !self.try_lock() {
                while self.locked.load(Ordering::Relaxed) {
                    core::hint::spin_loop();
                }
            }
        }

        fn try_lock(&self) -> bool {
            !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::Acquire)
        }

        unsafe fn unlock(&self) {
            self.locked.store(false, Ordering::Release);
        }

        fn is_locked(&self) -> bool {
            self.locked.load(Ordering::Relaxed)
        }
    }
}
