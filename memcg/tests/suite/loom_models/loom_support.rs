//! A `lock_api::RawMutex` usable inside loom models, and the lock family made of it.
//!
//! `RawMutex::INIT` must be a constant and loom's atomics cannot be built in a constant, so
//! the lock word is a `core` atomic and a waiter yields to loom's scheduler while it spins.
//! Loom runs one model thread at a time, so the word behaves as a lock; the interleavings
//! loom explores are those of the loom atomics the critical sections use.
#![allow(dead_code)]

use core::sync::atomic::{AtomicBool, Ordering};

pub struct LoomRawMutex(AtomicBool);

// SAFETY: `lock` returns only after flipping the word from false to true, `unlock` stores
// false; one model thread runs at a time, so at most one holder exists.
unsafe impl lock_api::RawMutex for LoomRawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = LoomRawMutex(AtomicBool::new(false));
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        while !self.try_lock() {
            loom::thread::yield_now();
        }
    }

    fn try_lock(&self) -> bool {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The lock family of the loom models: `Lock<C>` is [`LoomRawMutex`] for every class `C`.
pub struct Loom;

impl ksync::LockFamily for Loom {
    type Lock<C: ksync::LockClass> = LoomRawMutex;
}

/// A loom model bounded so the whole suite runs in seconds.
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}
