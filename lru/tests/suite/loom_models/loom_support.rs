//! Loom-only helpers: a `lock_api::RawMutex` built on loom atomics, the lock family made of
//! it (every lock class gets the same loom lock), and a bounded model builder shared by
//! the loom models.
#![allow(dead_code)]

use loom::sync::atomic::{AtomicBool, Ordering};
use std::cell::UnsafeCell;

/// A spinlock on a loom atomic. `RawMutex::INIT` must be a `const`, which loom atomics
/// cannot be, so the atomic is created on first use. Loom runs every model thread on one
/// OS thread and switches only at loom operations, so the lazy creation cannot race; but
/// loom checks that creation happens-before every access, so tests take each lock once
/// on the main thread before spawning.
pub struct LoomRawMutex {
    flag: UnsafeCell<Option<AtomicBool>>,
}

// SAFETY: see the type's doc: creation of the flag is never interleaved under loom, and
// after creation all access goes through the loom atomic.
unsafe impl Sync for LoomRawMutex {}
// SAFETY: as above.
unsafe impl Send for LoomRawMutex {}

impl LoomRawMutex {
    fn flag(&self) -> &AtomicBool {
        // SAFETY: see the type's doc; the Option is written at most once, before any
        // reference to its contents is handed out.
        unsafe { (*self.flag.get()).get_or_insert_with(|| AtomicBool::new(false)) }
    }
}

// SAFETY: the flag is taken with an Acquire CAS and released with a Release store.
unsafe impl lock_api::RawMutex for LoomRawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = LoomRawMutex {
        flag: UnsafeCell::new(None),
    };
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        while !self.try_lock() {
            loom::thread::yield_now();
        }
    }

    fn try_lock(&self) -> bool {
        self.flag()
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self) {
        self.flag().store(false, Ordering::Release);
    }
}

/// The lock family of the loom models: `Lock<C>` is [`LoomRawMutex`] for every class `C`.
pub struct Loom;

impl ksync::LockFamily for Loom {
    type Lock<C: ksync::LockClass> = LoomRawMutex;
}

/// A loom model with a small preemption bound, so the suite runs in seconds.
pub fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}
