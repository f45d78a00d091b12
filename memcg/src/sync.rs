//! The atomics shim: `core::sync::atomic` in normal builds, `loom`'s model-checked atomics
//! under `--cfg loom`.
//!
//! Every atomic that takes part in a concurrency protocol of this crate (page_counter usage
//! and max, the charge stock, css reference counts, stat counters, the id table's slots)
//! comes from here, so the loom models in `tests/suite/loom_models/` explore the same code
//! the kernel runs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};

pub(crate) use core::sync::atomic::Ordering;
