//! `struct mem_cgroup`: one memory cgroup, its page counter, css reference count, per-CPU
//! statistics and per-node `mem_cgroup_per_node` (include/linux/memcontrol.h).
//!
//! The hot paths live here: the two stat update variants of seed 001 and the walk up the
//! hierarchy for `memcg_rstat_updated()`. Charging (stock, page counter, reclaim) is in
//! [`crate::charge`], lifetime (create, offline, reparent, free) in [`crate::tree`].
//!
//! A memcg is reference counted like a css: the tree's online reference, every
//! [`crate::MemcgRef`] handle, every charge stock that caches it and every child hold one.
//! It is freed only when it is offline, unreferenced and has no charged pages left, and only
//! after an RCU grace period (see [`crate::rcu`]).

use crate::error::{MemcgError, MemcgId};
use crate::page_counter::PageCounter;
use crate::pn::{MemCgroupPerNode, PnBox, PnLruvec};
use crate::stats::{
    MemcgEvent, MemcgVmstats, NodeStatItem, lruvec_stats_add, memcg_index_of_event,
};
use crate::stock::StockTarget;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};
use alloc::boxed::Box;
use core::ptr::NonNull;
use ksync::LockFamily;

/// Reference count and online state (`struct cgroup_subsys_state`).
#[derive(Debug)]
pub(crate) struct Css {
    pub(crate) refcnt: AtomicUsize,
    pub(crate) online: AtomicBool,
}

/// A memory cgroup.
#[repr(C)]
pub struct MemCgroup<F: LockFamily, P: MemCgroupPerNode> {
    /// `memory.max` / `memory.current`: usage alone on its line.
    pub(crate) memory: PageCounter,
    pub(crate) css: Css,
    pub(crate) id: MemcgId,
    pub(crate) parent: Option<NonNull<MemCgroup<F, P>>>,
    pub(crate) vmstats: MemcgVmstats,
    pub(crate) nodeinfo: Box<[PnBox<P>]>,
    _lock: core::marker::PhantomData<F>,
}

// SAFETY: all shared mutable state is atomic or behind `R` locks inside the lruvecs; the raw
// parent pointer is kept valid by the reference the child holds on its parent.
unsafe impl<F: LockFamily, P: MemCgroupPerNode> Send for MemCgroup<F, P> {}
// SAFETY: as above.
unsafe impl<F: LockFamily, P: MemCgroupPerNode> Sync for MemCgroup<F, P> {}

impl<F: LockFamily, P: MemCgroupPerNode> core::fmt::Debug for MemCgroup<F, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemCgroup")
            .field("id", &self.id)
            .field("usage", &self.memory.usage())
            .field("max", &self.memory.max())
            .field("online", &self.is_online())
            .finish()
    }
}

impl<F: LockFamily, P: MemCgroupPerNode> MemCgroup<F, P> {
    /// Allocates a memcg with its per-node info. The caller links it into the tree.
    ///
    /// # Safety
    ///
    /// `parent`, if given, must be a live memcg on which the caller holds a reference that
    /// the new memcg takes over (released when the new memcg is freed).
    pub(crate) unsafe fn alloc(
        id: MemcgId,
        parent: Option<NonNull<Self>>,
        nr_cpus: usize,
        nr_nodes: usize,
        placement: crate::pn::PnPlacement,
        mglru: bool,
    ) -> Result<Box<Self>, MemcgError> {
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
                refcnt: AtomicUsize::new(1),
                online: AtomicBool::new(true),
            },
            id,
            parent,
            vmstats: MemcgVmstats::new(nr_cpus),
            nodeinfo: Box::new([]),
            _lock: core::marker::PhantomData,
        });
        let back = NonNull::from(&*memcg).cast::<()>();
        let mut nodes = alloc::vec::Vec::with_capacity(nr_nodes);
        for node in 0..nr_nodes {
            nodes.push(PnBox::new(
                P::new(back, id, node, nr_cpus, mglru)?,
                placement,
            ));
        }
        memcg.nodeinfo = nodes.into_boxed_slice();
        Ok(memcg)
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
    pub fn nodeinfo(&self, node: usize) -> Result<&P, MemcgError> {
        self.nodeinfo
            .get(node)
            .map(|b| b.get())
            .ok_or(MemcgError::InvalidNode {
                node,
                nr_nodes: self.nodeinfo.len(),
            })
    }

    /// The lruvec of `node` (`mem_cgroup_lruvec()`).
    #[inline]
    pub fn lruvec(&self, node: usize) -> Result<&P::Lruvec, MemcgError> {
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

    /// `memcg_rstat_updated()`: counts `val` towards the flush threshold at every level.
    #[inline]
    fn rstat_updated(&self, cpu: usize, val: i64) {
        let mut m = Some(self);
        while let Some(c) = m {
            if !c.vmstats.rstat_updated(cpu, val) {
                break;
            }
            m = c.parent();
        }
    }

    /// Stat update with the memcg and node the caller already knows
    /// (`mod_memcg_lruvec_state()` after seed 001 patch 2): reads `memcg->nodeinfo[nid]`
    /// and the read-mostly line of `mem_cgroup_per_node`, never the lruvec.
    pub fn mod_lruvec_state(
        &self,
        cpu: usize,
        node: usize,
        item: NodeStatItem,
        val: i64,
    ) -> Result<(), MemcgError> {
        let pn = self.nodeinfo(node)?;
        self.mod_pn_state(pn, cpu, item, val)
    }

    /// Shared tail of both update paths: per-CPU lruvec and memcg counters, then rstat.
    #[inline]
    pub(crate) fn mod_pn_state(
        &self,
        pn: &P,
        cpu: usize,
        item: NodeStatItem,
        val: i64,
    ) -> Result<(), MemcgError> {
        let rm = pn.read_mostly();
        if !lruvec_stats_add(&rm.lruvec_stats_percpu, cpu, item, val) {
            return Err(self.bad_cpu(cpu));
        }
        self.vmstats.add(cpu, item as usize, val);
        self.rstat_updated(cpu, val);
        Ok(())
    }

    /// Counts `count` events (`count_memcg_events()`).
    pub fn count_events(&self, cpu: usize, ev: MemcgEvent, count: u64) -> Result<(), MemcgError> {
        let val = count as i64;
        if !self.vmstats.add(cpu, memcg_index_of_event(ev), val) {
            return Err(self.bad_cpu(cpu));
        }
        self.rstat_updated(cpu, val);
        Ok(())
    }

    fn bad_cpu(&self, cpu: usize) -> MemcgError {
        MemcgError::InvalidCpu {
            cpu,
            nr_cpus: self.vmstats.nr_cpus(),
        }
    }

    /// Takes a reference the caller already holds one of (`css_get()`).
    #[inline]
    pub(crate) fn css_get(&self) {
        self.css.refcnt.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops a reference (`css_put()`). The memcg is freed later by the tree's reaper once
    /// the count is zero and it is offline.
    #[inline]
    pub(crate) fn css_put(&self) {
        self.css.refcnt.fetch_sub(1, Ordering::Release);
    }

    /// Current reference count.
    pub(crate) fn css_refcnt(&self) -> usize {
        self.css.refcnt.load(Ordering::Acquire)
    }
}

// SAFETY: `css_get` pins the memcg: the tree frees a memcg only when its count is zero, so
// it stays alive and in place (it is boxed) until the matching `css_put`.
unsafe impl<F: LockFamily, P: MemCgroupPerNode> StockTarget for MemCgroup<F, P> {
    fn page_counter(&self) -> &PageCounter {
        &self.memory
    }

    fn css_get(&self) {
        MemCgroup::css_get(self);
    }

    unsafe fn css_put(this: NonNull<Self>) {
        // SAFETY: the caller passes a pointer it holds a reference through, so it is live.
        unsafe { this.as_ref() }.css_put();
    }
}

/// A lruvec reached through its memcg (`mem_cgroup_lruvec()`), for the stat update path
/// that goes through the lruvec. It can only be made from a `mem_cgroup_per_node`, which is
/// what makes the `container_of` in [`MemcgLruvec::mod_state`] sound.
pub struct MemcgLruvec<'a, F: LockFamily, P: MemCgroupPerNode> {
    lruvec: &'a P::Lruvec,
    _memcg: core::marker::PhantomData<&'a MemCgroup<F, P>>,
}

impl<F: LockFamily, P: MemCgroupPerNode> core::fmt::Debug for MemcgLruvec<'_, F, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemcgLruvec")
            .field("node", &self.lruvec.node_id())
            .finish()
    }
}

impl<'a, F: LockFamily, P: MemCgroupPerNode> MemcgLruvec<'a, F, P> {
    /// The lruvec.
    #[inline]
    pub fn lruvec(&self) -> &'a P::Lruvec {
        self.lruvec
    }

    /// Stat update through the lruvec (`__mod_lruvec_state()` before seed 001 patch 2):
    /// the node comes from the lruvec (`lruvec_pgdat()`, a read of the lruvec's line next to
    /// lru_lock), the memcg from `container_of(lruvec)->memcg` (the read-mostly line).
    pub fn mod_state(&self, cpu: usize, item: NodeStatItem, val: i64) -> Result<(), MemcgError> {
        let node = self.lruvec.node_id();
        // SAFETY: a `MemcgLruvec` is only built by `MemCgroup::lruvec_ref` from the lruvec
        // field of a live `P`, borrowed for 'a.
        let pn = unsafe { P::from_lruvec(self.lruvec) };
        let rm = pn.read_mostly();
        // SAFETY: `memcg` is the back pointer set at allocation to the `MemCgroup<F, P>` that
        // owns `pn`; that memcg outlives the borrow 'a this handle was made from.
        let memcg = unsafe { rm.memcg.cast::<MemCgroup<F, P>>().as_ref() };
        if node != rm.node() {
            return Err(MemcgError::InvalidNode {
                node,
                nr_nodes: memcg.nr_nodes(),
            });
        }
        memcg.mod_pn_state(pn, cpu, item, val)
    }
}

impl<F: LockFamily, P: MemCgroupPerNode> MemCgroup<F, P> {
    /// The lruvec of `node` as a handle for the through-the-lruvec stat path.
    pub fn lruvec_ref(&self, node: usize) -> Result<MemcgLruvec<'_, F, P>, MemcgError> {
        Ok(MemcgLruvec {
            lruvec: self.lruvec(node)?,
            _memcg: core::marker::PhantomData,
        })
    }

    /// Node-`node` lruvec totals at the last flush (`lruvec_page_state()`).
    pub fn lruvec_state(&self, node: usize, item: NodeStatItem) -> Result<i64, MemcgError> {
        Ok(self
            .nodeinfo(node)?
            .read_mostly()
            .lruvec_stats()
            .state(item))
    }

    /// Node-`node` lruvec totals of this memcg alone at the last flush.
    pub fn lruvec_state_local(&self, node: usize, item: NodeStatItem) -> Result<i64, MemcgError> {
        Ok(self
            .nodeinfo(node)?
            .read_mostly()
            .lruvec_stats()
            .state_local(item))
    }
}
