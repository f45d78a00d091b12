//! `spin_loop` for spin loops outside the lock itself (RCU's grace-period wait): the CPU's
//! pause hint normally; under loom a yield to the model scheduler, which otherwise would
//! never run the thread being waited for.

/// Tell the CPU (or, under loom, the model scheduler) that we are spinning.
#[cfg(loom)]
#[inline]
pub fn spin_loop() {
    loom::thread::yield_now();
}

#[cfg(not(loom))]
pub use core::hint::spin_loop;
