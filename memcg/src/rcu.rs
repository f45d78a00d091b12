//! The RCU grace-period source the memcg tree waits on before freeing a memcg
//! (`get_state_synchronize_rcu()` / `poll_state_synchronize_rcu()`).
//!
//! Lockless readers (the MGLRU memcg FIFO walk in `lru`, which follows `hlist_nulls` links
//! into a memcg's lruvecs) may still hold pointers into an offline memcg after it has been
//! unlinked, so the struct is freed only after a full grace period has elapsed since the
//! unlink. The kernel plugs in `lru`'s QSBR domain; host tests use [`ManualRcu`].

use crate::sync::{AtomicU64, Ordering};
#[cfg(not(loom))]
use ksync::LockFamily;

/// A polled RCU grace-period source.
///
/// # Safety
///
/// `poll_state_synchronize_rcu(c)` may return `true` only when every RCU read-side critical
/// section that was running when `get_state_synchronize_rcu()` returned `c` has ended.
/// Memory is freed on the strength of that answer.
pub unsafe trait RcuPoll: Sync {
    /// A cookie for the grace period that must elapse from now.
    fn get_state_synchronize_rcu(&self) -> u64;
    /// Whether the grace period of `cookie` has elapsed.
    fn poll_state_synchronize_rcu(&self, cookie: u64) -> bool;
}

/// A grace-period source advanced by hand, for tests and for single-CPU setups where the
/// caller knows when no reader is running.
#[derive(Debug)]
pub struct ManualRcu {
    completed: AtomicU64,
}

impl ManualRcu {
    /// A domain with no grace period completed yet.
    pub fn new() -> Self {
        Self {
            completed: AtomicU64::new(0),
        }
    }

    /// Completes every grace period requested so far.
    ///
    /// # Safety
    ///
    /// No RCU reader that started before this call may still be running.
    pub unsafe fn advance(&self) {
        self.completed.fetch_add(1, Ordering::SeqCst);
    }

    /// Number of grace periods completed.
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::SeqCst)
    }
}

impl Default for ManualRcu {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a cookie is the number of the next grace period; `advance` completes it and its
// contract says no reader from before is still running, which is exactly the guarantee.
unsafe impl RcuPoll for ManualRcu {
    fn get_state_synchronize_rcu(&self) -> u64 {
        self.completed.load(Ordering::SeqCst) + 1
    }

    fn poll_state_synchronize_rcu(&self, cookie: u64) -> bool {
        self.completed.load(Ordering::SeqCst) >= cookie
    }
}

/// [`RcuPoll`] on top of `lru`'s QSBR [`lru::Rcu`]: each cookie is a `call_rcu()` callback
/// that marks it complete, so a cookie completes once the owner has run a grace period
/// (`synchronize`) and the callbacks (`run_callbacks`), as the kernel does from its idle
/// loop.
///
/// `lru::Rcu` has no `get_state_synchronize_rcu()` / `poll_state_synchronize_rcu()` of its
/// own; with those this adapter would not need the callbacks.
#[cfg(not(loom))]
pub struct QsbrPoll<'a, F: LockFamily> {
    rcu: &'a lru::Rcu<F>,
    next: AtomicU64,
    done: alloc::sync::Arc<AtomicU64>,
}

#[cfg(not(loom))]
impl<'a, F: LockFamily> QsbrPoll<'a, F> {
    /// Polls grace periods of `rcu`.
    pub fn new(rcu: &'a lru::Rcu<F>) -> Self {
        Self {
            rcu,
            next: AtomicU64::new(0),
            done: alloc::sync::Arc::new(AtomicU64::new(0)),
        }
    }

    /// The RCU domain.
    pub fn rcu(&self) -> &'a lru::Rcu<F> {
        self.rcu
    }
}

#[cfg(not(loom))]
impl<F: LockFamily> core::fmt::Debug for QsbrPoll<'_, F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QsbrPoll")
            .field("issued", &self.next.load(Ordering::Relaxed))
            .field("done", &self.done.load(Ordering::Relaxed))
            .finish()
    }
}

// SAFETY: the callback for cookie `c` is queued with `call_rcu` after the caller unlinked
// the object, so it runs only after a grace period that started after the unlink, i.e.
// after every reader that could have seen the object finished. Callbacks run in queue
// order (their grace periods never decrease), so `done >= c` implies cookie `c`'s own
// callback has run.
#[cfg(not(loom))]
unsafe impl<F: LockFamily> RcuPoll for QsbrPoll<'_, F> {
    fn get_state_synchronize_rcu(&self) -> u64 {
        let cookie = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let done = self.done.clone();
        self.rcu.call_rcu(move || {
            done.fetch_max(cookie, Ordering::SeqCst);
        });
        cookie
    }

    fn poll_state_synchronize_rcu(&self, cookie: u64) -> bool {
        self.done.load(Ordering::SeqCst) >= cookie
    }
}
