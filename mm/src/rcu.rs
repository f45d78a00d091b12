//! What the virtual-memory code needs from RCU: deferring a free past a grace period.
//!
//! Regions and region tables are found by lockless lookups (`lock_vma_under_rcu`), so a
//! region that was unpublished may still be looked at by a CPU that found it just before;
//! it is freed only after a grace period (`call_rcu`). The kernel and the host benchmark pass
//! their `ksync::Rcu` (QSBR: the read side costs nothing, CPUs report quiescent states between
//! operations); tests may pass [`Immediate`] when no lookup can race.

use alloc::boxed::Box;

/// Deferred freeing after a grace period.
pub trait RcuDefer: Sync + Send {
    /// Runs `f` after every CPU has passed a quiescent state (`call_rcu`).
    fn call_rcu(&self, f: Box<dyn FnOnce() + Send>);
}

/// Runs the callback at once: only for single-threaded tests, where no lockless reader can
/// hold a reference.
#[derive(Debug, Default)]
pub struct Immediate;

impl RcuDefer for Immediate {
    fn call_rcu(&self, f: Box<dyn FnOnce() + Send>) {
        f();
    }
}

impl<F: ksync::LockFamily> RcuDefer for ksync::Rcu<F> {
    fn call_rcu(&self, f: Box<dyn FnOnce() + Send>) {
        ksync::Rcu::call_rcu(self, f);
    }
}
