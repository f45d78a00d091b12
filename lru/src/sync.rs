//! Synchronisation shim: `core` atomics normally, loom's under `cfg(loom)` (the `page`
//! crate's shim, which the folio's flags already use).
//!
//! Every atomic that takes part in a lockless protocol (folio flags, hlist_nulls links,
//! the memcg FIFO, the drain generation) is imported from here, so the loom models in
//! `tests/suite/loom_models/` model-check the same code the kernel runs.
//!
//! Locks are not here: every lock of this crate is `F::Lock<C>` for the caller's
//! [`ksync::LockFamily`] `F` and the lock's class `C` from [`crate::lock_classes`].
//! The kernel, the host tests and the host benchmarks all use [`ksync::Ticket`] (the
//! four-byte ticket lock), so every struct that embeds a lock has one layout everywhere;
//! loom models plug in a family of loom-aware locks.

pub use ksync::family::Lock;
pub use page::sync::atomic;
