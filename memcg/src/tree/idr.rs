//! The memcg id table (`mem_cgroup_idr`): id -> memcg, readable under RCU with no lock.
//!
//! Linux keeps memcg ids in an IDR that `mem_cgroup_from_id()` reads under
//! `rcu_read_lock()`; memcgs are freed only after a grace period, so a reader that found a
//! memcg in the table may use it until its read-side section ends, and takes a reference
//! (`css_tryget()`) to keep it longer. This table is the one-level case of an IDR: one
//! pointer slot per possible id, written under the tree lock (publish after the memcg is
//! fully built, clear before the grace period that precedes the free) and read with one
//! Acquire load.
//!
//! This is what makes the relock path lock-free: folio batches look up each folio's
//! lruvec (`folio_lruvec_relock()`) while holding the previous lruvec's lock, and a lookup
//! that took the tree lock would invert against reaping, which holds the tree lock while it
//! takes lruvec locks (reparenting).

use crate::memcontrol::MemCgroup;
use crate::pn::MemCgroupPerNode;
use crate::sync::{AtomicPtr, Ordering};
use alloc::boxed::Box;

/// One slot per possible id.
pub(crate) struct IdTable<P: MemCgroupPerNode> {
    slots: Box<[AtomicPtr<MemCgroup<P>>]>,
}

impl<P: MemCgroupPerNode> IdTable<P> {
    pub(crate) fn new(max_ids: usize) -> Self {
        Self {
            slots: (0..max_ids)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect(),
        }
    }

    /// Publish `m` at `id` (`idr_replace()`). The caller holds the tree lock and `m` is
    /// fully initialised.
    pub(crate) fn publish(&self, id: usize, m: *mut MemCgroup<P>) {
        if let Some(s) = self.slots.get(id) {
            s.store(m, Ordering::Release);
        }
    }

    /// Clear `id` (`idr_remove()`), before the grace period that precedes the free. The
    /// caller holds the tree lock.
    pub(crate) fn unpublish(&self, id: usize) {
        if let Some(s) = self.slots.get(id) {
            s.store(core::ptr::null_mut(), Ordering::Release);
        }
    }

    /// The memcg at `id`, or null (`idr_find()` under RCU).
    pub(crate) fn find(&self, id: usize) -> *mut MemCgroup<P> {
        self.slots
            .get(id)
            .map_or(core::ptr::null_mut(), |s| s.load(Ordering::Acquire))
    }
}
