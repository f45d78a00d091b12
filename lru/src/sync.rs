//! Synchronisation shim: `core` atomics normally, loom's under `cfg(loom)`.
//!
//! Every atomic that takes part in a lockless protocol (folio flags, hlist_nulls links,
//! the memcg FIFO, the QSBR counters, the drain generation) is imported from here, so the
//! loom models in `tests/suite/loom_models/` model-check the same code the kernel runs.
//! Spin loops call [`hint::spin_loop`], which under loom yields to the model scheduler.
//!
//! Locks are not here: every lock of this crate is `F::Lock<C>` for the caller's
//! [`ksync::LockFamily`] `F` and the lock's class `C` from [`crate::lock_classes`].
//! The kernel, the host tests and the host benchmarks all use [`ksync::Ticket`] (the
//! four-byte ticket lock), so every struct that embeds a lock has one layout everywhere;
//! loom models plug in a family of loom-aware locks.

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

/// The raw lock of class `C` in family `F` (`spinlock_t` of that class).
pub type Lock<F, C> = <F as ksync::LockFamily>::Lock<C>;
