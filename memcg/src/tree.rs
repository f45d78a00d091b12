//! The memcg hierarchy: creation under a parent, lookup by id, offline with reparenting,
//! and freeing after an RCU grace period (`mem_cgroup_css_alloc()`, `mem_cgroup_from_id()`,
//! `mem_cgroup_css_offline()`, `mem_cgroup_css_free()`; the id table is Linux's
//! `mem_cgroup_idr`).
//!
//! The topology (id table, children lists, the zombie and dying lists) sits behind one lock,
//! as Linux's `cgroup_mutex`. The hot paths never take it: charging, stat updates and LRU
//! work go through a [`MemcgRef`], a counted reference (`css_get()`/`css_put()`).
//!
//! Lifetime of a memcg: online -> [`MemcgTree::offline`] (stocks drained, LRU folios and
//! their charges moved to the parent, the tree's own reference dropped; the memcg becomes a
//! zombie that keeps its id) -> [`MemcgTree::reap`] notices it is unreferenced and holds no
//! charge, flushes its stats into the parent and unlinks it -> after an RCU grace period the
//! next `reap` frees it and drops its reference on the parent.

use crate::error::{MemcgError, MemcgId};
use crate::memcontrol::MemCgroup;
use crate::pn::{MemCgroupPerNode, PnPlacement};
use crate::rcu::RcuPoll;
use crate::stock::ChargeStocks;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ptr::NonNull;
use ksync::LockFamily;
use ksync::class::std_classes::{MemcgTreeLock, RstatLock};
use lock_api::Mutex;
use lru::sync::Lock;

/// Largest number of memcgs an id can name (`MEM_CGROUP_ID_MAX` + 1; ids are 16-bit, the
/// width `lru`'s folios store).
pub const MEM_CGROUP_ID_MAX: usize = u16::MAX as usize;

/// Sizes and placement a tree is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemcgConfig {
    /// Number of CPUs (ids `0..nr_cpus`).
    pub nr_cpus: usize,
    /// Number of memory nodes (ids `0..nr_nodes`).
    pub nr_nodes: usize,
    /// Most memcgs alive at once, the root and zombies included (at most
    /// [`MEM_CGROUP_ID_MAX`]).
    pub max_memcgs: usize,
    /// Where each `mem_cgroup_per_node` starts within a 128-byte pair.
    pub placement: PnPlacement,
}

impl MemcgConfig {
    /// A configuration with room for 16384 memcgs, pair-aligned `mem_cgroup_per_node`.
    pub fn new(nr_cpus: usize, nr_nodes: usize) -> Self {
        Self {
            nr_cpus,
            nr_nodes,
            max_memcgs: 16384,
            placement: PnPlacement::PairStart,
        }
    }

    fn validate(&self) -> Result<(), MemcgError> {
        if self.nr_cpus == 0 {
            return Err(MemcgError::InvalidConfig("nr_cpus must be at least 1"));
        }
        if self.nr_nodes == 0 {
            return Err(MemcgError::InvalidConfig("nr_nodes must be at least 1"));
        }
        if self.max_memcgs == 0 || self.max_memcgs > MEM_CGROUP_ID_MAX {
            return Err(MemcgError::InvalidConfig("max_memcgs must be in 1..=65535"));
        }
        Ok(())
    }
}

struct Slot<F: LockFamily, P: MemCgroupPerNode> {
    memcg: NonNull<MemCgroup<F, P>>,
    children: Vec<MemcgId>,
}

struct TreeInner<F: LockFamily, P: MemCgroupPerNode> {
    slots: Vec<Option<Slot<F, P>>>,
    free_ids: Vec<MemcgId>,
    /// Offline memcgs still linked (they keep their id until unreferenced and uncharged).
    zombies: Vec<MemcgId>,
    /// Unlinked memcgs waiting for their grace period, with its cookie.
    dying: Vec<(NonNull<MemCgroup<F, P>>, u64)>,
    nr_linked: usize,
}

// SAFETY: the raw pointers are owned memcgs, which are Send + Sync when R is.
unsafe impl<F: LockFamily, P: MemCgroupPerNode> Send for TreeInner<F, P> {}

impl<F: LockFamily, P: MemCgroupPerNode> TreeInner<F, P> {
    fn slot(&self, id: MemcgId) -> Option<&Slot<F, P>> {
        self.slots.get(id as usize).and_then(|s| s.as_ref())
    }

    fn slot_mut(&mut self, id: MemcgId) -> Option<&mut Slot<F, P>> {
        self.slots.get_mut(id as usize).and_then(|s| s.as_mut())
    }

    /// Ids of `id`'s subtree, parents before children (pre-order).
    fn subtree(&self, id: MemcgId, out: &mut Vec<MemcgId>) {
        out.clear();
        out.push(id);
        let mut i = 0;
        while i < out.len() {
            if let Some(s) = self.slot(out[i]) {
                out.extend_from_slice(&s.children);
            }
            i += 1;
        }
    }
}

/// The memcg hierarchy and everything shared by its memcgs (charge stocks, flush lock,
/// grace-period source).
pub struct MemcgTree<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> {
    config: MemcgConfig,
    inner: Mutex<Lock<F, MemcgTreeLock>, TreeInner<F, P>>,
    /// Serialises stat flushes (Linux's rstat lock).
    flush_lock: Mutex<Lock<F, RstatLock>, ()>,
    pub(crate) stocks: ChargeStocks<F, MemCgroup<F, P>>,
    pub(crate) lru: crate::lru_glue::TreeLru<F, P::Lruvec>,
    rcu: G,
    root: NonNull<MemCgroup<F, P>>,
}

// SAFETY: all shared state is behind `R` locks or atomic; memcgs are Send + Sync.
unsafe impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll + Send> Send for MemcgTree<F, P, G> {}
// SAFETY: as above.
unsafe impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> Sync for MemcgTree<F, P, G> {}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> core::fmt::Debug for MemcgTree<F, P, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemcgTree")
            .field("config", &self.config)
            .field("nr_memcgs", &self.nr_memcgs())
            .finish()
    }
}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> MemcgTree<F, P, G> {
    /// A tree holding only the root memcg (id 0, no limit).
    pub fn new(
        config: MemcgConfig,
        rcu: G,
        lru: crate::lru_glue::TreeLru<F, P::Lruvec>,
    ) -> Result<Self, MemcgError> {
        config.validate()?;
        // SAFETY: the root has no parent.
        let root = unsafe {
            MemCgroup::<F, P>::alloc(
                0,
                None,
                config.nr_cpus,
                config.nr_nodes,
                config.placement,
                lru.mglru(),
            )
        }?;
        let root = NonNull::from(Box::leak(root));
        let slots = alloc::vec![Some(Slot {
            memcg: root,
            children: Vec::new(),
        })];
        let tree = Self {
            config,
            inner: Mutex::new(TreeInner {
                slots,
                free_ids: Vec::new(),
                zombies: Vec::new(),
                dying: Vec::new(),
                nr_linked: 1,
            }),
            flush_lock: Mutex::new(()),
            stocks: ChargeStocks::new(config.nr_cpus),
            lru,
            rcu,
            root,
        };
        // SAFETY: the root was just allocated and is owned by the tree.
        tree.lru.online(unsafe { root.as_ref() });
        Ok(tree)
    }

    /// The configuration.
    pub fn config(&self) -> &MemcgConfig {
        &self.config
    }

    /// The `lru` side: memcg FIFOs, folio free hook, LRU add/del helpers.
    pub fn lru(&self) -> &crate::lru_glue::TreeLru<F, P::Lruvec> {
        &self.lru
    }

    /// The charge stocks (for inspection and explicit drains).
    pub fn stocks(&self) -> &ChargeStocks<F, MemCgroup<F, P>> {
        &self.stocks
    }

    /// The grace-period source.
    pub fn rcu(&self) -> &G {
        &self.rcu
    }

    /// The root memcg.
    pub fn root(&self) -> MemcgRef<'_, F, P, G> {
        // SAFETY: the root is never freed before the tree; the new handle takes a reference.
        let root = unsafe { self.root.as_ref() };
        root.css_get();
        MemcgRef {
            tree: self,
            memcg: self.root,
        }
    }

    /// Memcgs linked in the tree (online and zombie).
    pub fn nr_memcgs(&self) -> usize {
        self.inner.lock().nr_linked
    }

    /// Offline memcgs not yet unlinked.
    pub fn nr_zombies(&self) -> usize {
        self.inner.lock().zombies.len()
    }

    /// Unlinked memcgs waiting for their grace period.
    pub fn nr_dying(&self) -> usize {
        self.inner.lock().dying.len()
    }

    /// Creates a memcg under `parent` (`mkdir`).
    pub fn create(
        &self,
        parent: &MemcgRef<'_, F, P, G>,
    ) -> Result<MemcgRef<'_, F, P, G>, MemcgError> {
        self.create_under(parent.id())
    }

    /// Creates a memcg under the memcg with id `parent`.
    pub fn create_under(&self, parent: MemcgId) -> Result<MemcgRef<'_, F, P, G>, MemcgError> {
        let mut inner = self.inner.lock();
        let pslot = inner
            .slot(parent)
            .ok_or(MemcgError::NoSuchMemcg { id: parent })?;
        let pptr = pslot.memcg;
        // SAFETY: linked memcgs are alive while the tree lock is held.
        let p = unsafe { pptr.as_ref() };
        if !p.is_online() {
            return Err(MemcgError::ParentOffline { parent });
        }
        let id = match inner.free_ids.pop() {
            Some(id) => id,
            None if inner.slots.len() < self.config.max_memcgs => inner.slots.len() as MemcgId,
            None => {
                return Err(MemcgError::TooManyMemcgs {
                    max: self.config.max_memcgs,
                });
            }
        };
        // The child's reference on its parent, dropped when the child is freed.
        p.css_get();
        // SAFETY: we just took the reference the child keeps on `pptr`.
        let child = unsafe {
            MemCgroup::alloc(
                id,
                Some(pptr),
                self.config.nr_cpus,
                self.config.nr_nodes,
                self.config.placement,
                self.lru.mglru(),
            )
        };
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                p.css_put();
                if id as usize != inner.slots.len() {
                    inner.free_ids.push(id);
                }
                return Err(e);
            }
        };
        let cptr = NonNull::from(Box::leak(child));
        if id as usize == inner.slots.len() {
            inner.slots.push(None);
        }
        inner.slots[id as usize] = Some(Slot {
            memcg: cptr,
            children: Vec::new(),
        });
        if let Some(ps) = inner.slot_mut(parent) {
            ps.children.push(id);
        }
        inner.nr_linked += 1;
        // SAFETY: just linked; the handle below takes its own reference.
        let c = unsafe { cptr.as_ref() };
        c.css_get();
        self.lru.online(c);
        Ok(MemcgRef {
            tree: self,
            memcg: cptr,
        })
    }

    /// Looks up an online memcg by id (`mem_cgroup_from_id()` + `css_tryget_online()`).
    pub fn lookup(&self, id: MemcgId) -> Result<MemcgRef<'_, F, P, G>, MemcgError> {
        let inner = self.inner.lock();
        let slot = inner.slot(id).ok_or(MemcgError::NoSuchMemcg { id })?;
        // SAFETY: linked memcgs are alive while the tree lock is held.
        let m = unsafe { slot.memcg.as_ref() };
        if !m.is_online() {
            return Err(MemcgError::Offline { id });
        }
        m.css_get();
        Ok(MemcgRef {
            tree: self,
            memcg: slot.memcg,
        })
    }

    /// Looks up a linked memcg by id, online or zombie (`mem_cgroup_from_id()`): what an
    /// uncharge of a folio that names its memcg by id needs. A zombie whose count already
    /// dropped to zero may be taken again: only the reaper acts on a zero count, and it does
    /// so under the tree lock held here, so it cannot unlink the memcg meanwhile.
    pub fn lookup_any(&self, id: MemcgId) -> Result<MemcgRef<'_, F, P, G>, MemcgError> {
        let inner = self.inner.lock();
        let slot = inner.slot(id).ok_or(MemcgError::NoSuchMemcg { id })?;
        // SAFETY: linked memcgs are alive while the tree lock is held.
        unsafe { slot.memcg.as_ref() }.css_get();
        Ok(MemcgRef {
            tree: self,
            memcg: slot.memcg,
        })
    }

    /// Takes the memcg with id `id` offline (`rmdir`): drains the charge stocks caching it,
    /// moves its LRU folios and their charges to the parent, drops the tree's reference and
    /// leaves a zombie that [`Self::reap`] frees once nothing refers to it.
    ///
    /// `cpu` is the CPU doing the work (its stat counters record the folios that move).
    pub fn offline(&self, id: MemcgId, cpu: usize) -> Result<(), MemcgError> {
        if cpu >= self.config.nr_cpus {
            return Err(MemcgError::InvalidCpu {
                cpu,
                nr_cpus: self.config.nr_cpus,
            });
        }
        let ptr = {
            let inner = self.inner.lock();
            let slot = inner.slot(id).ok_or(MemcgError::NoSuchMemcg { id })?;
            if id == 0 {
                return Err(MemcgError::RootOffline);
            }
            // SAFETY: linked memcgs are alive while the tree lock is held.
            let m = unsafe { slot.memcg.as_ref() };
            if !m.is_online() {
                return Err(MemcgError::Offline { id });
            }
            for &c in &slot.children {
                if let Some(cs) = inner.slot(c) {
                    // SAFETY: as above.
                    if unsafe { cs.memcg.as_ref() }.is_online() {
                        return Err(MemcgError::HasChildren { id });
                    }
                }
            }
            m.css.online.store(false, crate::sync::Ordering::Release);
            // Pin it across the unlocked work below.
            m.css_get();
            slot.memcg
        };
        // SAFETY: we hold a reference taken under the lock.
        let m = unsafe { ptr.as_ref() };
        self.stocks.drain_all(|c| c.is_descendant(m));
        self.lru.offline(m);
        self.reparent(m, cpu);
        // The tree's online reference, then our pin.
        m.css_put();
        m.css_put();
        self.inner.lock().zombies.push(id);
        self.reap(cpu);
        Ok(())
    }

    /// Moves `m`'s LRU folios and their charges to its parent.
    fn reparent(&self, m: &MemCgroup<F, P>, cpu: usize) {
        if let Some(parent) = m.parent() {
            for node in 0..m.nr_nodes() {
                self.lru.reparent_node(m, parent, node, cpu);
            }
        }
    }

    /// Unlinks unreferenced, uncharged zombies and frees memcgs whose grace period has
    /// elapsed (`css_release()` / `css_free_rwork_fn()`). Returns how many were freed.
    /// `cpu` is the CPU doing the work; an out-of-range id makes it a no-op.
    pub fn reap(&self, cpu: usize) -> usize {
        if cpu >= self.config.nr_cpus {
            return 0;
        }
        let mut freed = Vec::new();
        {
            // Lock order: flush lock, then tree lock (as `flush_stats`).
            let _flush = self.flush_lock.lock();
            let mut inner = self.inner.lock();
            let mut i = 0;
            while i < inner.zombies.len() {
                let id = inner.zombies[i];
                let Some(slot) = inner.slot(id) else {
                    inner.zombies.swap_remove(i);
                    continue;
                };
                let ptr = slot.memcg;
                let has_children = !slot.children.is_empty();
                // SAFETY: linked memcgs are alive while the tree lock is held.
                let m = unsafe { ptr.as_ref() };
                if has_children || m.css_refcnt() != 0 {
                    i += 1;
                    continue;
                }
                // Folios that reached its LRU after offline (e.g. from per-CPU batches).
                self.reparent(m, cpu);
                if m.usage() != 0 {
                    i += 1;
                    continue;
                }
                // Final flush: its remaining deltas go to the parent's pending totals.
                self.flush_one(m);
                self.lru.release(m);
                inner.zombies.swap_remove(i);
                inner.slots[id as usize] = None;
                inner.free_ids.push(id);
                inner.nr_linked -= 1;
                if let Some(parent) = m.parent() {
                    let pid = parent.id();
                    if let Some(ps) = inner.slot_mut(pid) {
                        ps.children.retain(|&c| c != id);
                    }
                }
                let cookie = self.rcu.get_state_synchronize_rcu();
                inner.dying.push((ptr, cookie));
            }
            let mut j = 0;
            while j < inner.dying.len() {
                let (ptr, cookie) = inner.dying[j];
                if self.rcu.poll_state_synchronize_rcu(cookie) {
                    inner.dying.swap_remove(j);
                    freed.push(ptr);
                } else {
                    j += 1;
                }
            }
        }
        let n = freed.len();
        for ptr in freed {
            // SAFETY: unlinked, unreferenced and past its grace period: no one can reach it.
            let m = unsafe { Box::from_raw(ptr.as_ptr()) };
            let parent = m.parent;
            drop(m);
            if let Some(p) = parent {
                // SAFETY: the freed child held this reference on its parent.
                unsafe { p.as_ref() }.css_put();
            }
        }
        n
    }

    /// Folds one memcg's per-CPU deltas into its totals and its parent's pending.
    fn flush_one(&self, m: &MemCgroup<F, P>) {
        let parent = m.parent();
        m.vmstats.flush(parent.map(|p| &p.vmstats));
        for node in 0..m.nr_nodes() {
            let Ok(pn) = m.nodeinfo(node) else { continue };
            let ppn = parent.and_then(|p| p.nodeinfo(node).ok());
            let rm = pn.read_mostly();
            rm.lruvec_stats.flush(
                &rm.lruvec_stats_percpu,
                ppn.map(|p| &*p.read_mostly().lruvec_stats),
            );
        }
    }

    /// Flushes the statistics of `memcg`'s subtree, children first
    /// (`mem_cgroup_flush_stats()` without the threshold check). Totals of `memcg` and every
    /// descendant are exact afterwards for updates that finished before the call.
    pub fn flush_stats(&self, memcg: &MemCgroup<F, P>) {
        let _flush = self.flush_lock.lock();
        let inner = self.inner.lock();
        let mut ids = Vec::new();
        inner.subtree(memcg.id(), &mut ids);
        for &id in ids.iter().rev() {
            if let Some(s) = inner.slot(id) {
                // SAFETY: linked memcgs are alive while the tree lock is held.
                self.flush_one(unsafe { s.memcg.as_ref() });
            }
        }
    }

    /// Flushes `memcg`'s subtree only if more than `MEMCG_CHARGE_BATCH * nr_cpus` updates
    /// are pending (`mem_cgroup_flush_stats()`). Returns whether it flushed.
    pub fn flush_stats_if_needed(&self, memcg: &MemCgroup<F, P>) -> bool {
        if memcg.vmstats.needs_flush() {
            self.flush_stats(memcg);
            true
        } else {
            false
        }
    }

    /// The linked memcgs of `memcg`'s subtree (zombies included: reclaim empties them too),
    /// pre-order, each with a reference.
    pub(crate) fn subtree_refs(&self, memcg: &MemCgroup<F, P>) -> Vec<MemcgRef<'_, F, P, G>> {
        let inner = self.inner.lock();
        let mut ids = Vec::new();
        inner.subtree(memcg.id(), &mut ids);
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = inner.slot(id) {
                // SAFETY: linked memcgs are alive while the tree lock is held.
                unsafe { s.memcg.as_ref() }.css_get();
                out.push(MemcgRef {
                    tree: self,
                    memcg: s.memcg,
                });
            }
        }
        out
    }
}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> Drop for MemcgTree<F, P, G> {
    fn drop(&mut self) {
        // No handle outlives the tree (they borrow it), so only the tree's own references,
        // the stocks' and the children's remain.
        self.stocks.drain_all(|_| true);
        let inner = self.inner.get_mut();
        let mut all: Vec<NonNull<MemCgroup<F, P>>> =
            inner.slots.iter().flatten().map(|s| s.memcg).collect();
        all.extend(inner.dying.iter().map(|&(p, _)| p));
        for ptr in &all {
            // SAFETY: still allocated; memcgs are freed only below.
            self.lru.release(unsafe { ptr.as_ref() });
        }
        for ptr in all {
            // SAFETY: every memcg was leaked from a Box by this tree and is freed once here;
            // children's parent pointers are not followed during the drop.
            drop(unsafe { Box::from_raw(ptr.as_ptr()) });
        }
    }
}

/// A counted reference to a memcg (`css_get()` on creation and clone, `css_put()` on drop).
pub struct MemcgRef<'t, F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> {
    pub(crate) tree: &'t MemcgTree<F, P, G>,
    pub(crate) memcg: NonNull<MemCgroup<F, P>>,
}

// SAFETY: a handle is a shared reference to the tree plus a counted reference to a memcg;
// both may be used from any thread when the tree and its memcgs are Sync.
unsafe impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> Send for MemcgRef<'_, F, P, G> {}
// SAFETY: as above; `&MemcgRef` only gives `&MemCgroup`.
unsafe impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> Sync for MemcgRef<'_, F, P, G> {}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> MemcgRef<'_, F, P, G> {
    /// The tree this memcg belongs to.
    pub fn tree(&self) -> &MemcgTree<F, P, G> {
        self.tree
    }
}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> core::ops::Deref for MemcgRef<'_, F, P, G> {
    type Target = MemCgroup<F, P>;
    fn deref(&self) -> &MemCgroup<F, P> {
        // SAFETY: the handle holds a reference, so the memcg is not freed.
        unsafe { self.memcg.as_ref() }
    }
}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> Clone for MemcgRef<'_, F, P, G> {
    fn clone(&self) -> Self {
        self.css_get();
        Self {
            tree: self.tree,
            memcg: self.memcg,
        }
    }
}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> Drop for MemcgRef<'_, F, P, G> {
    fn drop(&mut self) {
        self.css_put();
    }
}

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> core::fmt::Debug for MemcgRef<'_, F, P, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&**self, f)
    }
}
