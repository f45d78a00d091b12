//! The memcg hierarchy: creation under a parent, lookup by id, offline with reparenting,
//! and freeing after an RCU grace period (`mem_cgroup_css_alloc()`, `mem_cgroup_from_id()`,
//! `mem_cgroup_css_offline()`, `mem_cgroup_css_free()`).
//!
//! The topology (children lists, the zombie and dying lists, id allocation) sits behind the
//! tree lock (class `memcg_tree`, Linux's `cgroup_mutex`). The hot paths never take it:
//! charging, stat updates and LRU work go through a [`MemcgRef`] (`css_get()`/`css_put()`)
//! or look memcgs up by id in the RCU-readable id table (`idr`) with no lock at all;
//! reclaim walks a subtree through the RCU-readable child lists in each css
//! (`MemcgTree::iter_next`, `mem_cgroup_iter()`), which writers keep beside the
//! children lists here;
//! the lock order is the tree lock, then `rstat_lock`, then LRU locks (see
//! `docs/design.md`).
//!
//! Lifetime of a memcg: online -> [`MemcgTree::offline`] (stocks drained, LRU folios and
//! their charges moved to the parent, its css count switched towards atomic mode
//! (`percpu_ref_kill()`, see [`crate::percpu_ref`]), the tree's own reference dropped; the
//! memcg becomes a zombie that keeps its id) -> once a grace period has passed since
//! offline, [`MemcgTree::reap`] folds the per-CPU counts into the shared one (the count is
//! exact only from then on), notices it is unreferenced and holds no
//! charge (every charged folio holds a css reference, as in Linux), flushes its stats into
//! the parent, takes it off the memcg FIFOs and out of the id table -> once a grace period
//! of the tree's RCU domain has passed since then
//! (`start_poll_synchronize_rcu()`/`poll_state_synchronize_rcu()`), the next `reap` frees
//! it and drops its reference on the parent.
//!
//! Unsafe code here, and why: the tree owns its memcgs as raw allocations, links and
//! unlinks them under its lock, frees them after a grace period, and hands out counted
//! references to them.
#![allow(unsafe_code)]

mod handle;
pub(crate) mod idr;

pub use handle::MemcgRef;

use crate::error::{MemcgError, MemcgId};
use crate::lock_classes::{MemcgTreeLock, RstatLock};
use crate::lru_glue::{FolioHooks, FolioOwner, TreeLru};
use crate::memcontrol::{MemCgroup, MemcgInit, NodeData};
use crate::pn::{MemCgroupPerNode, PnCache, PnPlacement};
use crate::stock::ChargeStocks;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ptr::NonNull;
use idr::IdTable;
use ksync::rcu::RcuReadGuard;
use lock_api::Mutex;
use lru::sync::Lock;
use lru::{LruvecLock, NodeId, Rcu};

/// Largest number of memcgs an id can name (`MEM_CGROUP_ID_MAX` + 1; ids are 16-bit, the
/// width `lru`'s folios store).
pub const MEM_CGROUP_ID_MAX: usize = u16::MAX as usize;

/// The root memcg's id. Ids start at 1, as Linux's (`mem_cgroup_alloc_id()` allocates from
/// 1): 0 is what a folio's memcg id reads when it is not charged, so no memcg may have it
/// (a folio reparented to the root would look uncharged).
pub const ROOT_ID: MemcgId = 1;

/// Sizes, placement and lock variant a tree is built with.
#[derive(Clone, Copy, Debug)]
pub struct MemcgConfig {
    /// Number of CPUs (ids `0..nr_cpus`).
    pub nr_cpus: usize,
    /// Number of memory nodes (ids `0..nr_nodes`); the tree's `NODE_DATA` has as many.
    pub nr_nodes: usize,
    /// Most memcgs alive at once, the root and zombies included (at most
    /// [`MEM_CGROUP_ID_MAX`]).
    pub max_memcgs: usize,
    /// Where each `mem_cgroup_per_node` starts within a 128-byte pair.
    pub placement: PnPlacement,
    /// Which lru_lock every lruvec of the tree takes (seed 004): its own (per memcg per
    /// node) or its node's.
    pub lru_lock: LruvecLock,
    /// Where the platform's CPU ids are CPUs (the kernel): each CPU's charge stock is then
    /// its own, behind Linux's `local_lock` ([`ChargeStocks::new_local`]); `None`: a lock.
    pub local_cpus: Option<ksync::local_lock::LocalCpus>,
}

impl MemcgConfig {
    /// A configuration with room for 16384 memcgs, pair-aligned `mem_cgroup_per_node`,
    /// and a lru_lock per lruvec.
    pub fn new(nr_cpus: usize, nr_nodes: usize) -> Self {
        Self {
            nr_cpus,
            nr_nodes,
            max_memcgs: 16384,
            placement: PnPlacement::PairStart,
            lru_lock: LruvecLock::Own,
            local_cpus: None,
        }
    }

    fn validate<P: MemCgroupPerNode>(&self, node_data: NodeData<P>) -> Result<(), MemcgError> {
        if self.nr_cpus == 0 {
            return Err(MemcgError::InvalidConfig("nr_cpus must be at least 1"));
        }
        if self.nr_nodes == 0 {
            return Err(MemcgError::InvalidConfig("nr_nodes must be at least 1"));
        }
        if self.max_memcgs == 0 || self.max_memcgs > MEM_CGROUP_ID_MAX {
            return Err(MemcgError::InvalidConfig("max_memcgs must be in 1..=65535"));
        }
        if node_data.len() != self.nr_nodes {
            return Err(MemcgError::InvalidConfig(
                "node_data must hold one pglist_data per node",
            ));
        }
        for (nid, pgdat) in node_data.iter().enumerate() {
            if pgdat.node_id() as usize != nid {
                return Err(MemcgError::InvalidConfig("node_data[nid] must be node nid"));
            }
            if pgdat.rcu().domain() != node_data[0].rcu().domain() {
                return Err(MemcgError::InvalidConfig(
                    "all nodes must share one RCU domain",
                ));
            }
            if pgdat.rcu().nr_cpus() < self.nr_cpus {
                return Err(MemcgError::InvalidConfig(
                    "the RCU domain must cover every CPU",
                ));
            }
            // The stat path indexes the node's per-CPU deltas with a CPU it checked against
            // `nr_cpus` only (`MemCgroup::check_cpu`).
            if pgdat.vmstat().nr_cpus() < self.nr_cpus {
                return Err(MemcgError::InvalidConfig(
                    "every node's counters must cover every CPU",
                ));
            }
        }
        Ok(())
    }
}

struct Slot<P: MemCgroupPerNode> {
    memcg: NonNull<MemCgroup<P>>,
    children: Vec<MemcgId>,
}

struct TreeInner<P: MemCgroupPerNode> {
    slots: Vec<Option<Slot<P>>>,
    free_ids: Vec<MemcgId>,
    /// Offline memcgs still linked (they keep their id until unreferenced and uncharged).
    zombies: Vec<MemcgId>,
    /// Unlinked memcgs waiting for their grace period, with its cookie.
    dying: Vec<(NonNull<MemCgroup<P>>, u64)>,
    nr_linked: usize,
    /// Writes to the shared css counts of memcgs already freed.
    retired_css_writes: u64,
    /// The `mem_cgroup_per_node` slab cache.
    pn_cache: PnCache<P>,
}

// SAFETY: the raw pointers are owned memcgs, which are Send + Sync.
unsafe impl<P: MemCgroupPerNode> Send for TreeInner<P> {}

impl<P: MemCgroupPerNode> TreeInner<P> {
    fn slot(&self, id: MemcgId) -> Option<&Slot<P>> {
        self.slots.get(id as usize).and_then(|s| s.as_ref())
    }

    fn slot_mut(&mut self, id: MemcgId) -> Option<&mut Slot<P>> {
        self.slots.get_mut(id as usize).and_then(|s| s.as_mut())
    }

    /// Ids of `id`'s subtree in pre-order, each memcg followed by its children's subtrees in
    /// creation order (`css_next_descendant_pre()`, the order of `mem_cgroup_iter()`).
    fn subtree(&self, id: MemcgId, out: &mut Vec<MemcgId>) {
        out.clear();
        let mut todo = alloc::vec![id];
        while let Some(id) = todo.pop() {
            out.push(id);
            if let Some(s) = self.slot(id) {
                todo.extend(s.children.iter().rev());
            }
        }
    }
}

/// The memcg hierarchy and everything shared by its memcgs (charge stocks, flush lock,
/// the nodes and their RCU domain), its folios' frames owned by `O` (the layer above, which
/// frees what reclaim evicts and releases folios whose last reference drops here).
pub struct MemcgTree<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>> = FolioHooks> {
    config: MemcgConfig,
    node_data: NodeData<P>,
    /// id -> memcg, read under RCU.
    idr: IdTable<P>,
    inner: Mutex<Lock<P::Family, MemcgTreeLock>, TreeInner<P>>,
    /// Serialises stat flushes (Linux's rstat lock); nests inside the tree lock.
    flush_lock: Mutex<Lock<P::Family, RstatLock>, ()>,
    pub(crate) stocks: ChargeStocks<P::Family, MemCgroup<P>>,
    pub(crate) lru: TreeLru<O>,
    rcu: &'static Rcu<P::Family>,
    root: NonNull<MemCgroup<P>>,
}

// SAFETY: all shared state is behind the tree's locks or atomic; memcgs are Send + Sync, and
// so is the owner (`FolioOwner: Send + Sync`).
unsafe impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> Send for MemcgTree<P, O> {}
// SAFETY: as above.
unsafe impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> Sync for MemcgTree<P, O> {}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> core::fmt::Debug for MemcgTree<P, O> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemcgTree")
            .field("config", &self.config)
            .field("nr_memcgs", &self.nr_memcgs())
            .finish()
    }
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> MemcgTree<P, O> {
    /// A tree holding only the root memcg (id [`ROOT_ID`], no limit) over the nodes `node_data`
    /// (`NODE_DATA()`, one `PgData` per node, sharing the RCU domain memcgs are freed by).
    pub fn new(
        config: MemcgConfig,
        node_data: NodeData<P>,
        lru: TreeLru<O>,
    ) -> Result<Self, MemcgError> {
        config.validate(node_data)?;
        let init = Self::init_of(&config, node_data, &lru);
        let mut pn_cache = PnCache::new(config.placement);
        // SAFETY: the root has no parent.
        let root = unsafe { MemCgroup::<P>::alloc(ROOT_ID, None, init, &mut pn_cache) };
        let root = NonNull::from(Box::leak(root));
        // Slot 0 is never used: id 0 means "not charged" in a folio.
        let slots = alloc::vec![
            None,
            Some(Slot {
                memcg: root,
                children: Vec::new(),
            })
        ];
        let rcu = node_data[0].rcu();
        let tree = Self {
            config,
            node_data,
            idr: IdTable::new(config.max_memcgs + 1),
            inner: Mutex::new(TreeInner {
                slots,
                free_ids: Vec::new(),
                zombies: Vec::new(),
                dying: Vec::new(),
                nr_linked: 1,
                retired_css_writes: 0,
                pn_cache,
            }),
            flush_lock: Mutex::new(()),
            stocks: match config.local_cpus {
                Some(cpus) => ChargeStocks::new_local(config.nr_cpus, cpus, rcu),
                None => ChargeStocks::new(config.nr_cpus),
            },
            lru,
            rcu,
            root,
        };
        tree.idr.publish(ROOT_ID as usize, root.as_ptr());
        // SAFETY: the root was just allocated and is owned by the tree.
        tree.lru.online(unsafe { root.as_ref() });
        Ok(tree)
    }

    /// A tree over `config.nr_nodes` fresh nodes (each with `config.nr_cpus` CPUs, 1 GiB of
    /// managed pages for the vmstat threshold, memcg FIFO insertion `tail_mode`) in the RCU
    /// domain `rcu`: for hosts without a page allocator to own the nodes (tests, host
    /// benchmarks). The nodes are leaked, as `NODE_DATA()` lives as long as the system.
    pub fn with_new_nodes(
        config: MemcgConfig,
        tail_mode: lru::TailMode,
        rcu: &'static Rcu<P::Family>,
        lru: TreeLru<O>,
    ) -> Result<Self, MemcgError> {
        let nodes = lru::pgdat::alloc_nodes::<P>(
            config.nr_nodes.max(1),
            config.nr_cpus,
            1 << 18,
            tail_mode,
            rcu,
        )
        .map_err(|e| match e {
            lru::LruError::InvalidNode(n) => MemcgError::InvalidNode {
                node: n,
                nr_nodes: config.nr_nodes,
            },
            e => MemcgError::Lru(e),
        })?;
        Self::new(config, nodes, lru)
    }

    fn init_of(config: &MemcgConfig, node_data: NodeData<P>, lru: &TreeLru<O>) -> MemcgInit<P> {
        MemcgInit {
            nr_cpus: config.nr_cpus,
            node_data,
            mode: lru.mode(),
            lock: config.lru_lock,
            now: lru.now(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &MemcgConfig {
        &self.config
    }

    /// `NODE_DATA()`: every node's `pglist_data`.
    pub fn node_data(&self) -> NodeData<P> {
        self.node_data
    }

    /// The `lru` side: folio free hook, reclaim parameters, LRU add/del helpers.
    pub fn lru(&self) -> &TreeLru<O> {
        &self.lru
    }

    /// The charge stocks (for inspection and explicit drains).
    pub fn stocks(&self) -> &ChargeStocks<P::Family, MemCgroup<P>> {
        &self.stocks
    }

    /// The RCU domain memcgs are freed by (the nodes'): lockless lookups and FIFO walks
    /// hold its read guard, and whoever drives its grace periods lets [`Self::reap`] free.
    pub fn rcu(&self) -> &'static Rcu<P::Family> {
        self.rcu
    }

    /// The root memcg.
    pub fn root(&self) -> MemcgRef<'_, P, O> {
        // SAFETY: the root is never freed before the tree; the new handle takes a reference.
        let root = unsafe { self.root.as_ref() };
        root.css_get();
        MemcgRef::new(self, self.root)
    }

    /// The root memcg, borrowed for the tree's lifetime (no reference taken).
    pub(crate) fn root_memcg(&self) -> &MemCgroup<P> {
        // SAFETY: the root is never freed before the tree.
        unsafe { self.root.as_ref() }
    }

    /// Writes made so far to the shared css counts of this tree's memcgs, freed ones
    /// included (see [`MemCgroup::css_atomic_writes`]): zero growth while every get and put
    /// runs on a CPU against online memcgs. Takes the tree lock; for reports.
    pub fn css_atomic_writes(&self) -> u64 {
        let inner = self.inner.lock();
        let linked = inner.slots.iter().flatten().map(|s| s.memcg);
        let dying = inner.dying.iter().map(|&(p, _)| p);
        let live: u64 = linked
            .chain(dying)
            // SAFETY: linked and dying memcgs are freed only by `reap` under the tree lock.
            .map(|p| unsafe { p.as_ref() }.css_atomic_writes())
            .sum();
        live + inner.retired_css_writes
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
    pub fn create(&self, parent: &MemcgRef<'_, P, O>) -> Result<MemcgRef<'_, P, O>, MemcgError> {
        self.create_under(parent.id())
    }

    /// Creates a memcg under the memcg with id `parent`.
    pub fn create_under(&self, parent: MemcgId) -> Result<MemcgRef<'_, P, O>, MemcgError> {
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
            None if inner.slots.len() <= self.config.max_memcgs => inner.slots.len() as MemcgId,
            None => {
                return Err(MemcgError::TooManyMemcgs {
                    max: self.config.max_memcgs,
                });
            }
        };
        // The child's reference on its parent, dropped when the child is freed.
        p.css_get();
        let init = Self::init_of(&self.config, self.node_data, &self.lru);
        // SAFETY: we just took the reference the child keeps on `pptr`.
        let child = unsafe { MemCgroup::alloc(id, Some(pptr), init, &mut inner.pn_cache) };
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
        // Published last, fully built: lockless walks and lookups may find it from now on.
        // SAFETY: the tree lock is held, `c` is a new child of `p`, built above, and is
        // unlinked (in `reap`) before its grace period starts.
        unsafe { p.link_child(c) };
        self.idr.publish(id as usize, cptr.as_ptr());
        Ok(MemcgRef::new(self, cptr))
    }

    /// Looks up an online memcg by id under the tree lock (`mem_cgroup_from_id()` +
    /// `css_tryget_online()` on a management path, as under `cgroup_mutex`). The hot paths
    /// use [`Self::lookup_rcu`] / [`Self::tryget_online`] instead.
    pub fn lookup(&self, id: MemcgId) -> Result<MemcgRef<'_, P, O>, MemcgError> {
        let inner = self.inner.lock();
        let slot = inner.slot(id).ok_or(MemcgError::NoSuchMemcg { id })?;
        // SAFETY: linked memcgs are alive while the tree lock is held.
        let m = unsafe { slot.memcg.as_ref() };
        if !m.is_online() {
            return Err(MemcgError::Offline { id });
        }
        m.css_get();
        Ok(MemcgRef::new(self, slot.memcg))
    }

    /// Looks up a linked memcg by id under the tree lock, online or zombie. A zombie whose
    /// count already dropped to zero may be taken again: only the reaper acts on a zero
    /// count, and it does so under the tree lock held here, so it cannot unlink the memcg
    /// meanwhile (lockless lookups never revive a zero count: they `tryget`).
    pub fn lookup_any(&self, id: MemcgId) -> Result<MemcgRef<'_, P, O>, MemcgError> {
        let inner = self.inner.lock();
        let slot = inner.slot(id).ok_or(MemcgError::NoSuchMemcg { id })?;
        // SAFETY: linked memcgs are alive while the tree lock is held.
        unsafe { slot.memcg.as_ref() }.css_get();
        Ok(MemcgRef::new(self, slot.memcg))
    }

    /// `mem_cgroup_from_id()` under RCU: the memcg with id `id`, online or zombie, borrowed
    /// for the read-side section `guard` (which must be of [`Self::rcu`]'s domain). No lock
    /// is taken; the memcg cannot be freed before the section ends.
    pub fn lookup_rcu<'g>(
        &'g self,
        guard: &'g RcuReadGuard<'_>,
        id: MemcgId,
    ) -> Result<&'g MemCgroup<P>, MemcgError> {
        if guard.domain() != self.rcu.domain() {
            return Err(MemcgError::Lru(lru::LruError::RcuWrongDomain));
        }
        let p = self.idr.find(id as usize);
        // SAFETY: a non-null slot was published (Release, pairs with `find`'s Acquire) with a
        // fully built memcg; it is cleared before the memcg's grace period starts and the
        // memcg freed only after it, so it is valid for the read-side section 'g.
        unsafe { p.as_ref() }.ok_or(MemcgError::NoSuchMemcg { id })
    }

    /// `mem_cgroup_from_id()` + `css_tryget_online()` under RCU: a counted reference to the
    /// online memcg `id`, found with no lock. Fails for unknown, offline or dying memcgs.
    pub fn tryget_online(
        &self,
        guard: &RcuReadGuard<'_>,
        id: MemcgId,
    ) -> Result<MemcgRef<'_, P, O>, MemcgError> {
        let m = self.lookup_rcu(guard, id)?;
        if !m.is_online() {
            return Err(MemcgError::Offline { id });
        }
        if !m.css_tryget() {
            return Err(MemcgError::Offline { id });
        }
        Ok(MemcgRef::new(self, NonNull::from(m)))
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
            if id == ROOT_ID {
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
        let mut pins = Vec::new();
        self.reparent(m, &mut pins);
        self.put_pins(cpu, &pins);
        // `percpu_ref_kill()`: from here on every get and put of this memcg's css uses the
        // shared count; once a grace period has passed since the flag was set, no CPU can
        // still be writing its slot and `reap` folds the slots into it.
        if m.css.refcnt.kill() {
            m.css
                .refcnt
                .set_confirm_cookie(self.rcu.start_poll_synchronize_rcu());
        }
        // The tree's online reference, then our pin.
        m.css_put();
        m.css_put();
        self.inner.lock().zombies.push(id);
        self.reap(cpu);
        Ok(())
    }

    /// Moves `m`'s LRU folios and their charges to its parent; the folios pinned to move
    /// them go on `pins` (see [`Self::put_pins`]).
    fn reparent(&self, m: &MemCgroup<P>, pins: &mut Vec<&'static lru::Folio>) {
        if let Some(parent) = m.parent() {
            for node in 0..m.nr_nodes() as NodeId {
                self.lru.reparent_node(m, parent, node, pins);
            }
        }
    }

    /// Drops the pins reparenting took, with no lock held: one may be the folio's last
    /// reference (its other holders let go meanwhile), which releases it.
    fn put_pins(&self, cpu: usize, pins: &[&'static lru::Folio]) {
        for &f in pins {
            ksync::warn_on_once!(
                lru::folio_put(self, cpu, f).is_err(),
                "reparenting dropped a pin the folio did not hold"
            );
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
        let mut pins = Vec::new();
        // Lock order: tree lock, then rstat lock (as `flush_stats`).
        let mut inner = self.inner.lock();
        {
            let _flush = self.flush_lock.lock();
            // Each zombie and each dying memcg is looked at once: those that stay go back.
            let zombies = core::mem::take(&mut inner.zombies);
            for id in zombies {
                let Some(slot) = inner.slot(id) else {
                    continue;
                };
                let ptr = slot.memcg;
                let has_children = !slot.children.is_empty();
                // SAFETY: linked memcgs are alive while the tree lock is held.
                let m = unsafe { ptr.as_ref() };
                // The css count is exact only once its switch to atomic mode is confirmed
                // (a grace period after offline); until then it cannot read zero.
                let confirmed = m
                    .css
                    .refcnt
                    .try_confirm(|c| self.rcu.poll_state_synchronize_rcu(c));
                // Every charged folio holds a reference: zero means none is left either.
                if has_children || !confirmed || !m.css.refcnt.is_zero() {
                    inner.zombies.push(id);
                    continue;
                }
                // Folios that reached its LRU after offline (e.g. from per-CPU batches).
                self.reparent(m, &mut pins);
                if m.usage() != 0 {
                    inner.zombies.push(id);
                    continue;
                }
                // Final flush: its remaining deltas go to the parent's pending totals.
                self.flush_one(m);
                self.lru.release(m);
                self.idr.unpublish(id as usize);
                inner.slots[id as usize] = None;
                inner.free_ids.push(id);
                inner.nr_linked -= 1;
                if let Some(parent) = m.parent() {
                    let pid = parent.id();
                    if let Some(ps) = inner.slot_mut(pid) {
                        ps.children.retain(|&c| c != id);
                    }
                    // SAFETY: the tree lock is held and `m` is linked among its parent's
                    // children (since `create_under`); it is freed after the grace period
                    // started below.
                    unsafe { parent.unlink_child(m) };
                }
                // Off the FIFOs and out of the id table: the grace period starts now.
                // start_poll: the grace period must happen even if nothing else in the
                // system asks for one (no callbacks queued), or the memcg is never freed.
                let cookie = self.rcu.start_poll_synchronize_rcu();
                inner.dying.push((ptr, cookie));
            }
            let dying = core::mem::take(&mut inner.dying);
            for (ptr, cookie) in dying {
                if self.rcu.poll_state_synchronize_rcu(cookie) {
                    freed.push(ptr);
                } else {
                    inner.dying.push((ptr, cookie));
                }
            }
        }
        let n = freed.len();
        for ptr in freed {
            // SAFETY: still allocated (freed just below).
            let parent = unsafe { ptr.as_ref() }.parent;
            // SAFETY: as above.
            inner.retired_css_writes += unsafe { ptr.as_ref() }.css_atomic_writes();
            // SAFETY: unlinked, unreferenced and past its grace period: no one can reach it;
            // it was allocated from this tree's cache.
            unsafe { MemCgroup::free(ptr, &mut inner.pn_cache) };
            if let Some(p) = parent {
                // SAFETY: the freed child held this reference on its parent, which is still
                // linked (a parent outlives its children's references).
                unsafe { p.as_ref() }.css_put();
            }
        }
        drop(inner);
        self.put_pins(cpu, &pins);
        n
    }

    /// Folds one memcg's per-CPU deltas into its totals and its parent's pending.
    fn flush_one(&self, m: &MemCgroup<P>) {
        let parent = m.parent();
        m.vmstats.flush(parent.map(|p| &p.vmstats));
        for node in 0..m.nr_nodes() as NodeId {
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
    pub fn flush_stats(&self, memcg: &MemCgroup<P>) {
        let inner = self.inner.lock();
        let _flush = self.flush_lock.lock();
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
    pub fn flush_stats_if_needed(&self, memcg: &MemCgroup<P>) -> bool {
        if memcg.vmstats.needs_flush() {
            self.flush_stats(memcg);
            true
        } else {
            false
        }
    }

    /// Every linked memcg (online and zombie), parents before children, each with a
    /// reference (for invariant checkers and reports).
    pub fn all_memcgs(&self) -> Vec<MemcgRef<'_, P, O>> {
        // SAFETY: the root is never freed before the tree.
        self.subtree_refs(unsafe { self.root.as_ref() })
    }

    /// `mem_cgroup_iter()` over `root`'s subtree, from the memcg after `prev` (the first:
    /// `root` itself, for `prev` `None`) in pre-order, zombies included (reclaim empties
    /// them too): the next memcg, pinned on `cpu`'s slot of its css count
    /// (`css_tryget()`), or `None` at the end. `prev`'s pin is dropped on `cpu`.
    ///
    /// No lock is taken and no shared line written while the memcgs are online: the walk
    /// follows the RCU-readable child lists in a read-side section
    /// (`css_next_descendant_pre()`), skipping memcgs whose count already reached
    /// zero, and the pins are per CPU. Hand the last memcg back with
    /// [`MemcgRef::put_on`] (or to the next call).
    pub fn iter_next<'t>(
        &'t self,
        root: &MemCgroup<P>,
        prev: Option<MemcgRef<'t, P, O>>,
        cpu: usize,
    ) -> Option<MemcgRef<'t, P, O>> {
        let next = match self.rcu.read_lock(cpu) {
            Ok(_guard) => {
                let mut pos = prev.as_deref();
                loop {
                    let Some(m) = MemCgroup::next_descendant_pre(pos, root) else {
                        break None;
                    };
                    if m.css_tryget_on(cpu) {
                        break Some(MemcgRef::new(self, NonNull::from(m)));
                    }
                    pos = Some(m);
                }
            }
            // A CPU outside the tree's RCU domain, or offline in it: nothing can be walked
            // safely. Counted (the invariant checker fails on it), never silent.
            Err(_) => {
                ksync::warn_on_once!(true, "a memcg walk on a CPU outside its RCU domain");
                None
            }
        };
        if let Some(p) = prev {
            p.put_on(cpu);
        }
        next
    }

    /// The linked memcgs of `memcg`'s subtree (zombies included), pre-order, each with a
    /// reference, collected under the tree lock (for checkers and reports; reclaim walks
    /// with [`Self::iter_next`]).
    pub(crate) fn subtree_refs(&self, memcg: &MemCgroup<P>) -> Vec<MemcgRef<'_, P, O>> {
        let inner = self.inner.lock();
        let mut ids = Vec::new();
        inner.subtree(memcg.id(), &mut ids);
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = inner.slot(id) {
                // SAFETY: linked memcgs are alive while the tree lock is held.
                unsafe { s.memcg.as_ref() }.css_get();
                out.push(MemcgRef::new(self, s.memcg));
            }
        }
        out
    }
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> lru::LruvecLookup<P> for MemcgTree<P, O> {
    type Guard<'a>
        = RcuReadGuard<'a>
    where
        Self: 'a;

    fn read_lock(&self, cpu: usize) -> Result<RcuReadGuard<'_>, lru::LruError> {
        self.rcu.read_lock(cpu).map_err(lru::LruError::from)
    }

    /// `folio_lruvec()`: the lruvec of the folio's memcg on the folio's node, found in the
    /// id table under RCU with no lock. The folio's charge holds a reference on its memcg,
    /// so the memcg stays linked while the folio is being moved.
    fn folio_lruvec<'g>(
        &'g self,
        guard: &'g RcuReadGuard<'_>,
        folio: &lru::Folio,
    ) -> Option<&'g lru::Lruvec<P>> {
        let m = self.lookup_rcu(guard, folio.memcg_id()).ok()?;
        m.lruvec(folio.node()).ok()
    }

    /// A batch's reference dropped; the last one releases the folio (`__folio_put`, by the
    /// tree's owner).
    fn folio_put(&self, cpu: usize, folio: &'static lru::Folio) -> Result<(), lru::LruError> {
        lru::folio_put(self, cpu, folio)
    }
}

/// `__folio_put` for the LRU code working on this tree's folios: the owner of the frames
/// releases them, with the tree at hand.
impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> lru::FolioRelease for MemcgTree<P, O> {
    fn release_folio(&self, cpu: usize, folio: &'static lru::Folio) {
        self.lru.owner().release_folio(self, cpu, folio);
    }
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> Drop for MemcgTree<P, O> {
    fn drop(&mut self) {
        // No handle outlives the tree (they borrow it), so only the tree's own references,
        // the stocks' and the children's remain.
        self.stocks.drain_all(|_| true);
        let inner = self.inner.get_mut();
        let mut all: Vec<NonNull<MemCgroup<P>>> =
            inner.slots.iter().flatten().map(|s| s.memcg).collect();
        all.extend(inner.dying.iter().map(|&(p, _)| p));
        for ptr in &all {
            // SAFETY: still allocated; memcgs are freed only after a grace period below.
            let m = unsafe { ptr.as_ref() };
            self.lru.release(m);
            self.idr.unpublish(m.id() as usize);
        }
        // Readers of the nodes' FIFOs need not borrow the tree: free after a grace period,
        // from the RCU callbacks (whoever runs them; until then the memory stays). The
        // slab cache goes with them.
        let cache = core::mem::replace(&mut inner.pn_cache, PnCache::new(self.config.placement));
        let all = SendPtrs(all, cache);
        self.rcu.call_rcu(move || {
            let mut all = all;
            for ptr in core::mem::take(&mut all.0) {
                // SAFETY: every memcg was allocated by this tree from this cache and is freed
                // once here; they are off every FIFO and out of the id table, and a grace
                // period has passed, so no reader can reach them. Children's parent pointers
                // are not followed during the drop.
                unsafe { MemCgroup::free(ptr, &mut all.1) };
            }
        });
    }
}

/// Memcg pointers and their slab cache, handed to an RCU callback.
struct SendPtrs<P: MemCgroupPerNode>(Vec<NonNull<MemCgroup<P>>>, PnCache<P>);

// SAFETY: memcgs are Send + Sync; the vector owns the only remaining pointers to them.
unsafe impl<P: MemCgroupPerNode> Send for SendPtrs<P> {}
