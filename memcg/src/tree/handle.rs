//! [`MemcgRef`]: a counted reference to a memcg (`css_get()` / `css_put()`).
//!
//! A handle borrows its tree, so no handle outlives the tree; the count it holds keeps
//! the memcg from being reaped (a memcg is freed only when offline, unreferenced and
//! uncharged, after a grace period).
//!
//! Unsafe code here, and why: a counted reference holds its memcg by raw pointer (the count
//! keeps it alive) and declares itself `Send`/`Sync` on that.
#![allow(unsafe_code)]

use super::MemcgTree;
use crate::lru_glue::{FolioHooks, FolioOwner};
use crate::memcontrol::MemCgroup;
use crate::pn::MemCgroupPerNode;
use core::ptr::NonNull;

/// A counted reference to a memcg (`css_get()` on creation and clone, `css_put()` on drop).
pub struct MemcgRef<'t, P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>> = FolioHooks> {
    pub(crate) tree: &'t MemcgTree<P, O>,
    pub(crate) memcg: NonNull<MemCgroup<P>>,
}

// SAFETY: a handle is a shared reference to the tree plus a counted reference to a memcg;
// both may be used from any thread (the tree and its memcgs are Sync).
unsafe impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> Send for MemcgRef<'_, P, O> {}
// SAFETY: as above; `&MemcgRef` only gives `&MemCgroup`.
unsafe impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> Sync for MemcgRef<'_, P, O> {}

impl<'t, P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> MemcgRef<'t, P, O> {
    /// Wraps a reference the caller has already counted on `memcg`.
    pub(crate) fn new(tree: &'t MemcgTree<P, O>, memcg: NonNull<MemCgroup<P>>) -> Self {
        Self { tree, memcg }
    }

    /// The tree this memcg belongs to.
    pub fn tree(&self) -> &'t MemcgTree<P, O> {
        self.tree
    }

    /// Drops the handle's reference on `cpu`'s slot of the memcg's per-CPU count (while it
    /// is online; the shared count once it is offline), where dropping the handle would
    /// write the shared count: for a reference taken on `cpu` (`css_tryget_on`), such as
    /// reclaim's pin of each memcg it visits.
    pub fn put_on(self, cpu: usize) {
        let this = core::mem::ManuallyDrop::new(self);
        this.css_put_many_on(cpu, 1);
    }
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> core::ops::Deref for MemcgRef<'_, P, O> {
    type Target = MemCgroup<P>;
    fn deref(&self) -> &MemCgroup<P> {
        // SAFETY: the handle holds a reference, so the memcg is not freed.
        unsafe { self.memcg.as_ref() }
    }
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> Clone for MemcgRef<'_, P, O> {
    fn clone(&self) -> Self {
        self.css_get();
        Self {
            tree: self.tree,
            memcg: self.memcg,
        }
    }
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> Drop for MemcgRef<'_, P, O> {
    fn drop(&mut self) {
        self.css_put();
    }
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> core::fmt::Debug for MemcgRef<'_, P, O> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&**self, f)
    }
}
