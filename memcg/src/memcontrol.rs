//! `struct mem_cgroup`: one memory cgroup, its page counter, css reference count, per-CPU
//! statistics and per-node `mem_cgroup_per_node` (include/linux/memcontrol.h).
//!
//! The hot paths live here: the two stat update variants of seed 001 and the walk up the
//! hierarchy for `memcg_rstat_updated()`. Charging (stock, page counter, reclaim) is in
//! [`crate::charge`], lifetime (create, offline, reparent, free) in [`crate::tree`].
//!
//! A memcg is reference counted like a css: the tree's online reference, every
//! [`crate::MemcgRef`] handle, every charge stock that caches it, every charged folio and
//! every child hold one. The count is a [`crate::percpu_ref::PercpuRef`]: charges,
//! uncharges and stock refills made on a CPU use that CPU's slot while the memcg is online,
//! so they write no line other CPUs share; handles and the tree's bookkeeping use the
//! shared count.
//! It is freed only when it is offline, unreferenced and has no charged pages left, and only
//! after an RCU grace period (see `lru::rcu`).
//!
//! Unsafe code here, and why: a memcg links its parent and children by raw pointers
//! (Linux's `css->parent`, `children`, `sibling`), read under RCU and kept valid by the
//! references children hold. The stat path checks the CPU once per update against the
//! count every per-CPU structure of the tree is built with, and then updates the node's,
//! the lruvec's and the memcg's counters without checking it again (`check_cpu`).
#![allow(unsafe_code)]

use crate::error::{MemcgError, MemcgId};
use crate::page_counter::PageCounter;
use crate::percpu_ref::PercpuRef;
use crate::pn::{MemCgroupPerNode, PnCache, PnInit};
use crate::stats::{MemcgEvent, MemcgVmstats, NodeStatItem, memcg_index_of_event};
use crate::stock::StockTarget;
use crate::sync::{AtomicBool, AtomicPtr, Ordering};
use alloc::boxed::Box;
use core::ptr::NonNull;
use lru::NodeId;
use lru::{LruMode, Lruvec, LruvecLock, PgData};

/// Reference count, online state and place among its siblings (`struct
/// cgroup_subsys_state`).
///
/// The children of a memcg form a list readable under RCU, as Linux's `css->children` and
/// `css->sibling` (`css_next_child()`): writers link and unlink under the tree lock,
/// readers follow `first_child` and `next_sibling` in a read-side section with no lock
/// ([`MemCgroup::next_descendant_pre`]). A child is appended at the tail (creation order);
/// an unlinked child keeps its `next_sibling`, so a reader standing on it walks on, and it
/// is freed only after a grace period. The links hold the address of the `MemCgroup` the
/// css is embedded in (null: none); `prev_sibling` and `last_child` are for writers only.
#[derive(Debug)]
pub(crate) struct Css {
    /// Per CPU while online, one atomic after offline ([`PercpuRef`]).
    pub(crate) refcnt: PercpuRef,
    pub(crate) online: AtomicBool,
    first_child: AtomicPtr<()>,
    last_child: AtomicPtr<()>,
    next_sibling: AtomicPtr<()>,
    prev_sibling: AtomicPtr<()>,
}

/// A memory cgroup.
#[repr(C)]
pub struct MemCgroup<P: MemCgroupPerNode> {
    /// `memory.max` / `memory.current`: usage alone on its line.
    pub(crate) memory: PageCounter,
    pub(crate) css: Css,
    pub(crate) id: MemcgId,
    pub(crate) parent: Option<NonNull<MemCgroup<P>>>,
    pub(crate) vmstats: MemcgVmstats,
    /// `nodeinfo[nid]`: objects of the tree's `mem_cgroup_per_node` slab ([`PnCache`]),
    /// freed with the memcg by the tree.
    pub(crate) nodeinfo: Box<[NonNull<P>]>,
    /// `NODE_DATA()`: every node's `pglist_data` (stat path B reaches the node through it).
    pub(crate) node_data: NodeData<P>,
}

/// Every node's `pglist_data`, indexed by node id (`NODE_DATA(nid)`).
pub type NodeData<P> = &'static [&'static PgData<P>];

/// What every memcg of a tree is built with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemcgInit<P: MemCgroupPerNode> {
    pub(crate) nr_cpus: usize,
    pub(crate) node_data: NodeData<P>,
    pub(crate) mode: LruMode,
    pub(crate) lock: LruvecLock,
    pub(crate) now: u64,
}

// SAFETY: all shared mutable state is atomic or behind locks inside the lruvecs; the raw
// parent pointer is kept valid by the reference the child holds on its parent.
unsafe impl<P: MemCgroupPerNode> Send for MemCgroup<P> {}
// SAFETY: as above.
unsafe impl<P: MemCgroupPerNode> Sync for MemCgroup<P> {}

impl<P: MemCgroupPerNode> core::fmt::Debug for MemCgroup<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemCgroup")
            .field("id", &self.id)
            .field("usage", &self.memory.usage())
            .field("max", &self.memory.max())
            .field("online", &self.is_online())
            .finish()
    }
}

impl<P: MemCgroupPerNode> MemCgroup<P> {
    /// Allocates a memcg with its per-node info from `cache`. The caller links it into the
    /// tree, and frees it with [`MemCgroup::free`] on the same cache.
    ///
    /// # Safety
    ///
    /// `parent`, if given, must be a live memcg on which the caller holds a reference that
    /// the new memcg takes over (released when the new memcg is freed).
    pub(crate) unsafe fn alloc(
        id: MemcgId,
        parent: Option<NonNull<Self>>,
        init: MemcgInit<P>,
        cache: &mut PnCache<P>,
    ) -> Box<Self> {
        let memory = match parent {
            // SAFETY: the caller keeps `parent` alive for the new memcg's whole life, and the
            // parent is boxed, so its counter does not move.
            Some(p) => unsafe {
                PageCounter::new_child(
                    NonNull::from(&p.as_ref().memory),
                    crate::page_counter::PAGE_COUNTER_MAX,
                )
            },
            None => PageCounter::new_root(crate::page_counter::PAGE_COUNTER_MAX),
        };
        let mut memcg = Box::new(Self {
            memory,
            css: Css {
                refcnt: PercpuRef::new(init.nr_cpus),
                online: AtomicBool::new(true),
                first_child: AtomicPtr::new(core::ptr::null_mut()),
                last_child: AtomicPtr::new(core::ptr::null_mut()),
                next_sibling: AtomicPtr::new(core::ptr::null_mut()),
                prev_sibling: AtomicPtr::new(core::ptr::null_mut()),
            },
            id,
            parent,
            vmstats: MemcgVmstats::new(init.nr_cpus),
            nodeinfo: Box::new([]),
            node_data: init.node_data,
        });
        let back = NonNull::from(&*memcg).cast::<()>();
        let mut nodes = alloc::vec::Vec::with_capacity(init.node_data.len());
        for &pgdat in init.node_data {
            nodes.push(cache.alloc(P::new(PnInit {
                memcg: back,
                memcg_id: id,
                pgdat,
                nr_cpus: init.nr_cpus,
                mode: init.mode,
                lock: init.lock,
                now: init.now,
                _marker: core::marker::PhantomData,
            })));
        }
        memcg.nodeinfo = nodes.into_boxed_slice();
        memcg
    }

    /// Frees a memcg made by [`MemCgroup::alloc`] and its per-node info.
    ///
    /// # Safety
    ///
    /// `ptr` came from `Box::leak` of [`MemCgroup::alloc`] with `cache`, nothing refers to
    /// the memcg any more (unlinked, unreferenced, past its grace period), and it is freed
    /// once.
    pub(crate) unsafe fn free(ptr: NonNull<Self>, cache: &mut PnCache<P>) {
        // SAFETY: by the contract, `ptr` is a leaked box nobody uses any more.
        let m = unsafe { Box::from_raw(ptr.as_ptr()) };
        for &pn in m.nodeinfo.iter() {
            // SAFETY: each `nodeinfo` entry was allocated from `cache` for this memcg and is
            // freed only here.
            unsafe { cache.free(pn) };
        }
        drop(m);
    }

    /// The memcg's id (`mem_cgroup_id()`).
    #[inline]
    pub fn id(&self) -> MemcgId {
        self.id
    }

    /// The parent memcg (`parent_mem_cgroup()`); `None` for the root.
    #[inline]
    pub fn parent(&self) -> Option<&Self> {
        // SAFETY: a child holds a reference on its parent until the child is freed, so the
        // parent outlives `&self`.
        self.parent.map(|p| unsafe { p.as_ref() })
    }

    /// Whether the memcg is online (not yet removed).
    #[inline]
    pub fn is_online(&self) -> bool {
        self.css.online.load(Ordering::Acquire)
    }

    /// The page counter (`memcg->memory`).
    #[inline]
    pub fn memory(&self) -> &PageCounter {
        &self.memory
    }

    /// `memory.current` in pages.
    #[inline]
    pub fn usage(&self) -> u64 {
        self.memory.usage()
    }

    /// The statistics (read totals after a flush).
    #[inline]
    pub fn vmstats(&self) -> &MemcgVmstats {
        &self.vmstats
    }

    /// Number of nodes.
    #[inline]
    pub fn nr_nodes(&self) -> usize {
        self.nodeinfo.len()
    }

    /// The per-node info of `node` (`memcg->nodeinfo[nid]`).
    #[inline]
    pub fn nodeinfo(&self, node: NodeId) -> Result<&P, MemcgError> {
        self.nodeinfo
            .get(node as usize)
            // SAFETY: the per-node objects live as long as their memcg (freed together by
            // `MemCgroup::free`), so for the borrow of `self`.
            .map(|p| unsafe { p.as_ref() })
            .ok_or(MemcgError::InvalidNode {
                node,
                nr_nodes: self.nodeinfo.len(),
            })
    }

    /// The lruvec of `node` (`mem_cgroup_lruvec()`).
    #[inline]
    pub fn lruvec(&self, node: NodeId) -> Result<&Lruvec<P>, MemcgError> {
        Ok(self.nodeinfo(node)?.lruvec())
    }

    /// Whether `self` is `ancestor` or below it (`mem_cgroup_is_descendant()`).
    pub fn is_descendant(&self, ancestor: &Self) -> bool {
        let mut m = Some(self);
        while let Some(c) = m {
            if core::ptr::eq(c, ancestor) {
                return true;
            }
            m = c.parent();
        }
        false
    }

    /// `__this_cpu_add(memcg->vmstats_percpu->state[idx], val)` and `memcg_rstat_updated()`:
    /// the counter, then `val` towards the flush threshold at every level, the first level
    /// on the slot the counter is in.
    fn mod_vmstat(&self, cpu: usize, idx: usize, val: i64) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        // SAFETY: `cpu` passed `check_cpu`.
        unsafe { self.mod_vmstat_unchecked(cpu, idx, val) };
        Ok(())
    }

    /// [`Self::mod_vmstat`] for a CPU that passed [`Self::check_cpu`]: this memcg's and
    /// every ancestor's counters are built with the tree's count it was checked against.
    /// Inlined into the stat paths, as Linux's is.
    ///
    /// # Safety
    ///
    /// `cpu` passed [`Self::check_cpu`].
    #[inline(always)]
    unsafe fn mod_vmstat_unchecked(&self, cpu: usize, idx: usize, val: i64) {
        // SAFETY: the caller's promise; this memcg's counters are built with its count.
        if !unsafe { self.vmstats.add_updated_unchecked(cpu, idx, val) } {
            return;
        }
        let mut m = self.parent();
        while let Some(c) = m {
            // SAFETY: an ancestor is in this memcg's tree, so built with the same count.
            if !unsafe { c.vmstats.rstat_updated_unchecked(cpu, val) } {
                break;
            }
            m = c.parent();
        }
    }

    /// Stat path B: the update with the memcg and node the caller already knows
    /// (`mod_memcg_lruvec_state()` after seed 001 patch 2). Reads `memcg->nodeinfo[nid]`,
    /// the node's `pglist_data` from `NODE_DATA(nid)` and the read-mostly line of
    /// `mem_cgroup_per_node`, never the lruvec; updates the node counters
    /// (`__mod_node_page_state()`), then the memcg's and the lruvec's.
    #[inline(always)]
    pub fn mod_lruvec_state(
        &self,
        cpu: usize,
        node: NodeId,
        item: NodeStatItem,
        val: i64,
    ) -> Result<(), MemcgError> {
        lru::events::count(lru::events::LruEvent::StatDirect, 1);
        let pn = self.nodeinfo(node)?;
        self.check_cpu(cpu)?;
        let pgdat = self.node_data[node as usize];
        // The CPU passed `check_cpu`: it is below the tree's count, which every per-CPU
        // structure of the stat path covers (the node's counters, `node_data` being the
        // tree's and validated when it was built; `pn`'s and every memcg's, from
        // `MemcgInit::nr_cpus`).
        // SAFETY: so `cpu` is below each structure's slot count, as the callees require.
        unsafe {
            pgdat.vmstat().mod_state_unchecked(cpu, item, val);
            self.mod_pn_state_unchecked(pn, cpu, item, val);
        }
        Ok(())
    }

    /// Whether `cpu` is below this memcg's CPU count, the count its tree's per-CPU
    /// structures are built with (`MemcgInit::nr_cpus`: this memcg's and every other's
    /// statistics and per-node counters; the tree checks its nodes' counters against it
    /// when it is built). A CPU that passes may index all of them unchecked.
    #[inline]
    fn check_cpu(&self, cpu: usize) -> Result<(), MemcgError> {
        if cpu < self.vmstats.nr_cpus() {
            Ok(())
        } else {
            Err(self.bad_cpu(cpu))
        }
    }

    /// The memcg and lruvec part of both update paths (`__mod_memcg_lruvec_state()`):
    /// per-CPU memcg and lruvec counters, then rstat. Inlined into both, as Linux's is.
    ///
    /// # Safety
    ///
    /// `cpu` passed [`Self::check_cpu`], and `pn` is one of this memcg's per-node infos.
    #[inline(always)]
    pub(crate) unsafe fn mod_pn_state_unchecked(
        &self,
        pn: &P,
        cpu: usize,
        item: NodeStatItem,
        val: i64,
    ) {
        let rm = pn.read_mostly();
        // SAFETY: the caller's promise; `pn`'s counters are built with its memcg's count.
        unsafe {
            crate::stats::lruvec_stats_add_unchecked(&rm.lruvec_stats_percpu, cpu, item, val);
            self.mod_vmstat_unchecked(cpu, item as usize, val);
        }
    }

    /// Counts `count` events (`count_memcg_events()`).
    pub fn count_events(&self, cpu: usize, ev: MemcgEvent, count: u64) -> Result<(), MemcgError> {
        self.mod_vmstat(cpu, memcg_index_of_event(ev), count as i64)
    }

    fn bad_cpu(&self, cpu: usize) -> MemcgError {
        MemcgError::InvalidCpu {
            cpu,
            nr_cpus: self.vmstats.nr_cpus(),
        }
    }

    /// Runs `f` inside a read-side section on `cpu` of the RCU domain the css switch is
    /// confirmed by, passing `Some(cpu)`; or outside one, passing `None`, when `cpu` cannot
    /// enter one (out of range, offline): the reference then uses the shared count.
    #[inline]
    fn css_on<R>(&self, cpu: usize, f: impl FnOnce(Option<usize>) -> R) -> R {
        let guard = self
            .node_data
            .first()
            .and_then(|n| n.rcu().read_lock(cpu).ok());
        let r = f(guard.as_ref().map(|_| cpu));
        drop(guard);
        r
    }

    /// Takes a reference the caller already holds one of (`css_get()`), on the shared count:
    /// for callers that know no CPU (handles, the tree's own bookkeeping).
    #[inline]
    pub(crate) fn css_get(&self) {
        self.css.refcnt.get_many(None, 1);
    }

    /// Drops a reference on the shared count (`css_put()`). The memcg is freed later by the
    /// tree's reaper once it is offline and the count is zero.
    #[inline]
    pub(crate) fn css_put(&self) {
        self.css.refcnt.put_many(None, 1);
    }

    /// `css_get_many()` on the shared count.
    #[inline]
    pub(crate) fn css_get_many(&self, n: usize) {
        self.css.refcnt.get_many(None, n);
    }

    /// `css_put_many()` on the shared count.
    #[inline]
    pub(crate) fn css_put_many(&self, n: usize) {
        self.css.refcnt.put_many(None, n);
    }

    /// `css_get_many()` on `cpu`: that CPU's slot while the memcg is online.
    #[inline]
    pub(crate) fn css_get_many_on(&self, cpu: usize, n: usize) {
        self.css_on(cpu, |c| self.css.refcnt.get_many(c, n));
    }

    /// `css_put_many()` on `cpu`: that CPU's slot while the memcg is online.
    #[inline]
    pub(crate) fn css_put_many_on(&self, cpu: usize, n: usize) {
        self.css_on(cpu, |c| self.css.refcnt.put_many(c, n));
    }

    /// `css_tryget()`: takes a reference unless the count already reached zero (the
    /// reaper may then be unlinking the memcg). For lockless lookups, which must never
    /// revive a memcg the reaper can act on. On the shared count.
    #[inline]
    pub(crate) fn css_tryget(&self) -> bool {
        self.css.refcnt.tryget(None)
    }

    /// [`Self::css_tryget`] on `cpu`: that CPU's slot while the memcg is online.
    #[inline]
    pub(crate) fn css_tryget_on(&self, cpu: usize) -> bool {
        self.css_on(cpu, |c| self.css.refcnt.tryget(c))
    }

    /// Current reference count (exact when nothing runs concurrently).
    pub fn css_refcnt(&self) -> usize {
        self.css.refcnt.count()
    }

    /// Writes made to this memcg's shared css count so far (atomic-mode and CPU-less gets
    /// and puts; see [`PercpuRef::atomic_writes`]). While the memcg is online, charges and
    /// uncharges made on a CPU make none.
    pub fn css_atomic_writes(&self) -> u64 {
        self.css.refcnt.atomic_writes()
    }

    /// Whether the css count is still per CPU (the memcg has not been taken offline).
    pub fn css_is_percpu(&self) -> bool {
        self.css.refcnt.is_percpu()
    }

    fn link_of(p: &AtomicPtr<()>, order: Ordering) -> Option<&MemCgroup<P>> {
        let p = p.load(order).cast::<MemCgroup<P>>();
        // SAFETY: a css link holds null or the address of a memcg of the same tree, linked
        // when it was stored; an unlinked memcg is freed only after a grace period, and
        // every caller is inside a read-side section or holds the tree lock.
        unsafe { p.as_ref() }
    }

    /// The memcg after `pos` in a pre-order walk of `root`'s subtree
    /// (`css_next_descendant_pre()`): `root` itself first (`pos` `None`), then each memcg's
    /// children before its next sibling; `None` at the end. Lockless: the caller is inside
    /// a read-side section of the tree's RCU domain, which keeps every memcg it reaches
    /// allocated, and `pos` was reached in that section (or is pinned). A memcg linked
    /// meanwhile may be missed, as in Linux.
    pub(crate) fn next_descendant_pre<'a>(
        pos: Option<&'a MemCgroup<P>>,
        root: &'a MemCgroup<P>,
    ) -> Option<&'a MemCgroup<P>> {
        let Some(mut pos) = pos else {
            return Some(root);
        };
        if let Some(child) = Self::link_of(&pos.css.first_child, Ordering::Acquire) {
            return Some(child);
        }
        while !core::ptr::eq(pos, root) {
            if let Some(next) = Self::link_of(&pos.css.next_sibling, Ordering::Acquire) {
                return Some(next);
            }
            pos = pos.parent()?;
        }
        None
    }

    /// Appends `child` to this memcg's children (`list_add_tail_rcu(&css->sibling,
    /// &parent->children)`), published to lockless walkers.
    ///
    /// # Safety
    ///
    /// The caller holds the tree lock; `child` is a fully built memcg of the same tree whose
    /// parent is `self`, not yet linked, and stays allocated until it is unlinked
    /// ([`Self::unlink_child`]) and a grace period has passed.
    pub(crate) unsafe fn link_child(&self, child: &MemCgroup<P>) {
        let c = core::ptr::from_ref(child).cast_mut().cast::<()>();
        let last = self.css.last_child.load(Ordering::Relaxed);
        child
            .css
            .next_sibling
            .store(core::ptr::null_mut(), Ordering::Relaxed);
        child.css.prev_sibling.store(last, Ordering::Relaxed);
        // Release: a walker that finds the child sees it fully built (rcu_assign_pointer).
        match Self::link_of(&self.css.last_child, Ordering::Relaxed) {
            Some(prev) => prev.css.next_sibling.store(c, Ordering::Release),
            None => self.css.first_child.store(c, Ordering::Release),
        }
        self.css.last_child.store(c, Ordering::Relaxed);
    }

    /// Takes `child` off this memcg's children (`list_del_rcu(&css->sibling)`): later walks
    /// do not reach it; a walker standing on it still finds its next sibling.
    ///
    /// # Safety
    ///
    /// The caller holds the tree lock and `child` is linked among this memcg's children; it
    /// is freed only after a grace period from now.
    pub(crate) unsafe fn unlink_child(&self, child: &MemCgroup<P>) {
        let next = child.css.next_sibling.load(Ordering::Relaxed);
        let prev = child.css.prev_sibling.load(Ordering::Relaxed);
        match Self::link_of(&child.css.prev_sibling, Ordering::Relaxed) {
            Some(p) => p.css.next_sibling.store(next, Ordering::Release),
            None => self.css.first_child.store(next, Ordering::Release),
        }
        match Self::link_of(&child.css.next_sibling, Ordering::Relaxed) {
            Some(n) => n.css.prev_sibling.store(prev, Ordering::Relaxed),
            None => self.css.last_child.store(prev, Ordering::Relaxed),
        }
    }
}

// SAFETY: `css_get` pins the memcg: the tree frees a memcg only when its count is zero, so
// it stays alive and in place (it is boxed) until the matching `css_put`; and `reap` frees
// it only after a grace period of the tree's RCU domain (the one its stocks are built
// with) that started once the count was seen at zero, so after the last `css_put`.
unsafe impl<P: MemCgroupPerNode> StockTarget for MemCgroup<P> {
    fn page_counter(&self) -> &PageCounter {
        &self.memory
    }

    fn css_get_many(&self, cpu: usize, n: usize) {
        self.css_get_many_on(cpu, n);
    }

    unsafe fn css_put_many(this: NonNull<Self>, cpu: Option<usize>, n: usize) {
        // SAFETY: the caller passes a pointer it holds references through, so it is live.
        let m = unsafe { this.as_ref() };
        match cpu {
            Some(cpu) => m.css_put_many_on(cpu, n),
            None => MemCgroup::css_put_many(m, n),
        }
    }
}

/// A lruvec reached through its memcg (`mem_cgroup_lruvec()`), for the stat update path
/// that goes through the lruvec. It can only be made from a `mem_cgroup_per_node`, which is
/// what makes the `container_of` in [`MemcgLruvec::mod_state`] sound.
pub struct MemcgLruvec<'a, P: MemCgroupPerNode> {
    lruvec: &'a Lruvec<P>,
}

impl<P: MemCgroupPerNode> core::fmt::Debug for MemcgLruvec<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemcgLruvec")
            .field("lruvec", self.lruvec)
            .finish()
    }
}

impl<'a, P: MemCgroupPerNode> MemcgLruvec<'a, P> {
    /// The lruvec.
    #[inline]
    pub fn lruvec(&self) -> &'a Lruvec<P> {
        self.lruvec
    }

    /// Stat path A: the update through the lruvec (`__mod_lruvec_state()`, what folio and
    /// kmem stats did before seed 001 patch 2). The node is `lruvec->pgdat`, near the end
    /// of the lruvec (on a line the lock holder's `lru_zone_size` writes may share a pair
    /// with); the memcg is `container_of(lruvec)->memcg` (the read-mostly line). Updates
    /// the node counters, then the memcg's and the lruvec's.
    #[inline(always)]
    pub fn mod_state(&self, cpu: usize, item: NodeStatItem, val: i64) -> Result<(), MemcgError> {
        mod_lruvec_state(self.lruvec, cpu, item, val)
    }
}

/// `__mod_lruvec_state(lruvec, idx, val)`: stat path A for any memcg lruvec.
#[inline(always)]
pub fn mod_lruvec_state<P: MemCgroupPerNode>(
    lruvec: &Lruvec<P>,
    cpu: usize,
    item: NodeStatItem,
    val: i64,
) -> Result<(), MemcgError> {
    lru::events::count(lru::events::LruEvent::StatThroughLruvec, 1);
    let memcg = lruvec_memcg(lruvec);
    memcg.check_cpu(cpu)?;
    // SAFETY: `memcg` is `lruvec`'s, and `cpu` passed its check.
    unsafe { mod_lruvec_state_unchecked(lruvec, memcg, cpu, item, val) };
    Ok(())
}

/// [`mod_lruvec_state`] on the running CPU, folded into the tree's CPU range as every
/// per-CPU update of a CPU id past it is (`ksync::cpu::fold`): the id read and its one
/// comparison with the tree's count, where passing `fold`'s result to [`mod_lruvec_state`]
/// compares twice (`__update_lru_size()`'s `__mod_lruvec_state()` under `lru_lock`).
#[inline(always)]
pub(crate) fn mod_lruvec_state_this_cpu<P: MemCgroupPerNode>(
    lruvec: &Lruvec<P>,
    item: NodeStatItem,
    val: i64,
) -> Result<(), MemcgError> {
    let memcg = lruvec_memcg(lruvec);
    let cpu = ksync::this_cpu();
    if memcg.check_cpu(cpu).is_err() {
        return mod_lruvec_state(
            lruvec,
            ksync::cpu::fold(cpu, memcg.vmstats.nr_cpus()),
            item,
            val,
        );
    }
    lru::events::count(lru::events::LruEvent::StatThroughLruvec, 1);
    // SAFETY: `memcg` is `lruvec`'s, and `cpu` passed its check.
    unsafe { mod_lruvec_state_unchecked(lruvec, memcg, cpu, item, val) };
    Ok(())
}

/// The memcg that owns `lruvec` (`lruvec_memcg()`).
#[inline(always)]
fn lruvec_memcg<P: MemCgroupPerNode>(lruvec: &Lruvec<P>) -> &MemCgroup<P> {
    let pn = P::from_lruvec(lruvec);
    // SAFETY: `memcg` is the back pointer set at allocation to the `MemCgroup<P>` that
    // owns `pn`; the memcg owns the `mem_cgroup_per_node` and outlives it, and `pn` is
    // borrowed from `lruvec` for as long as the result.
    unsafe { pn.read_mostly().memcg.cast::<MemCgroup<P>>().as_ref() }
}

/// The body of [`mod_lruvec_state`] once the CPU is checked.
///
/// # Safety
///
/// `memcg` is `lruvec`'s ([`lruvec_memcg`]) and `cpu` passed its [`MemCgroup::check_cpu`].
#[inline(always)]
unsafe fn mod_lruvec_state_unchecked<P: MemCgroupPerNode>(
    lruvec: &Lruvec<P>,
    memcg: &MemCgroup<P>,
    cpu: usize,
    item: NodeStatItem,
    val: i64,
) {
    let pn = P::from_lruvec(lruvec);
    // As in `MemCgroup::mod_lruvec_state`: `cpu` passed the memcg's check (the caller's
    // promise), and the lruvec's node is one of its tree's, whose counters cover the tree's
    // CPUs.
    // SAFETY: so `cpu` is below each structure's slot count, as the callees require.
    unsafe {
        lruvec.pgdat().vmstat().mod_state_unchecked(cpu, item, val);
        memcg.mod_pn_state_unchecked(pn, cpu, item, val);
    }
}

impl<P: MemCgroupPerNode> MemCgroup<P> {
    /// The lruvec of `node` as a handle for the through-the-lruvec stat path.
    pub fn lruvec_ref(&self, node: NodeId) -> Result<MemcgLruvec<'_, P>, MemcgError> {
        Ok(MemcgLruvec {
            lruvec: self.lruvec(node)?,
        })
    }

    /// `NODE_DATA(node)`.
    pub fn pgdat(&self, node: NodeId) -> Result<&'static PgData<P>, MemcgError> {
        self.node_data
            .get(node as usize)
            .copied()
            .ok_or(MemcgError::InvalidNode {
                node,
                nr_nodes: self.node_data.len(),
            })
    }

    /// Node-`node` lruvec totals at the last flush (`lruvec_page_state()`).
    pub fn lruvec_state(&self, node: NodeId, item: NodeStatItem) -> Result<i64, MemcgError> {
        Ok(self
            .nodeinfo(node)?
            .read_mostly()
            .lruvec_stats()
            .state(item))
    }

    /// Node-`node` lruvec totals of this memcg alone at the last flush.
    pub fn lruvec_state_local(&self, node: NodeId, item: NodeStatItem) -> Result<i64, MemcgError> {
        Ok(self
            .nodeinfo(node)?
            .read_mostly()
            .lruvec_stats()
            .state_local(item))
    }
}
