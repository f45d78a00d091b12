//! The atomics shim: `core::sync::atomic` normally, loom's under `cfg(loom)`, so the loom
//! models of the layers above (lru's) model-check the same folio flags and counts the
//! kernel runs.

#[cfg(loom)]
pub use loom::sync::atomic;

#[cfg(not(loom))]
pub use core::sync::atomic;
