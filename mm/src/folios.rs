//! The part of a [`Vm`](crate::context::Vm) its memcg tree holds: the owner of the
//! folios' frames.
//!
//! memcg and the LRU code call back up into `mm` when reclaim evicts a folio and when a
//! folio's last reference drops inside them (`__folio_put`): both end in the page allocator,
//! and both count events and update folio statistics. What they need of the `Vm` is this:
//! the page allocator, the event counters, the stat path and the number of CPUs.
//! [`VmFolios`] holds exactly that and lives inside the `Vm`'s tree
//! (`MemcgTree<P, VmFolios>`, memcg's `FolioOwner`), which hands it the tree at every call;
//! so nothing points back at the `Vm` and no lifetime is made up. The `Vm` reaches it through
//! its tree ([`Vm::folios`](crate::context::Vm::folios)).
//!
//! Statistics: folio stats (`NR_ANON_MAPPED`, `NR_FILE_PAGES`, `NR_SHMEM`) go through the
//! lruvec or with the memcg and node known ([`StatPath`]: seed 001's patch 2), chosen at run
//! time; the LRU size statistics are the list code's and always go through the lruvec.
//!
//! Eviction and release themselves are `vm/reclaim.rs`.

use crate::counters::{VmCounters, VmEvent};
use crate::tlb_kept::TlbKept;
use core::sync::atomic::{AtomicU8, Ordering};
use lru::{Folio, NodeId, NodeStatItem};
use memcg::{MemCgroup, MemCgroupPerNode, MemcgTree};
use page_alloc::page_alloc::PageAlloc;

/// How folio statistics reach the memcg (seed 001 patch 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum StatPath {
    /// Through the lruvec (`__lruvec_stat_mod_folio` before the patch): the node is
    /// `lruvec->pgdat`, the memcg `container_of(lruvec)->memcg`.
    ThroughLruvec = 0,
    /// With the memcg and node the caller knows (after the patch).
    Direct = 1,
}

/// The owner of a `Vm`'s frames; see the module documentation.
pub struct VmFolios {
    pub(crate) alloc: &'static PageAlloc,
    pub(crate) counters: VmCounters,
    /// Frames kept after failed TLB flushes.
    pub(crate) tlb_kept: TlbKept,
    stat_path: AtomicU8,
    nr_cpus: usize,
}

impl core::fmt::Debug for VmFolios {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VmFolios")
            .field("stat_path", &self.stat_path())
            .field("nr_cpus", &self.nr_cpus)
            .finish()
    }
}

impl VmFolios {
    /// Frames from `alloc`, events counted for `nr_cpus` CPUs, folio stats by `stat_path`.
    pub(crate) fn new(alloc: &'static PageAlloc, nr_cpus: usize, stat_path: StatPath) -> Self {
        VmFolios {
            alloc,
            counters: VmCounters::new(nr_cpus),
            tlb_kept: TlbKept::new(),
            stat_path: AtomicU8::new(stat_path as u8),
            nr_cpus,
        }
    }

    /// `cpu` folded into this context's CPU range (hooks may run on a CPU id the caller
    /// did not pass, e.g. `ksync::this_cpu()` on a host thread).
    #[inline]
    pub(crate) fn cpu(&self, cpu: usize) -> usize {
        ksync::cpu::fold(cpu, self.nr_cpus)
    }

    /// Counts an event.
    #[inline]
    pub(crate) fn count(&self, cpu: usize, ev: VmEvent) {
        self.counters.add(cpu, ev, 1);
    }

    /// The stat path folio statistics take now.
    #[must_use]
    pub fn stat_path(&self) -> StatPath {
        if self.stat_path.load(Ordering::Relaxed) == StatPath::Direct as u8 {
            StatPath::Direct
        } else {
            StatPath::ThroughLruvec
        }
    }

    /// Switches the stat path (between runs).
    pub fn set_stat_path(&self, p: StatPath) {
        self.stat_path.store(p as u8, Ordering::Relaxed);
    }

    /// A folio statistic of `memcg` on `node`, by the current [`StatPath`]
    /// (`__lruvec_stat_mod_folio` / `mod_memcg_lruvec_state`).
    #[inline(always)]
    pub(crate) fn mod_folio_stat<P: MemCgroupPerNode>(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        node: NodeId,
        item: NodeStatItem,
        delta: i64,
    ) {
        let _ = match self.stat_path() {
            StatPath::ThroughLruvec => memcg
                .lruvec_ref(node)
                .and_then(|l| l.mod_state(cpu, item, delta)),
            StatPath::Direct => memcg.mod_lruvec_state(cpu, node, item, delta),
        };
    }

    /// A folio statistic of the memcg `folio` is charged to in `tree` (found under RCU).
    // Out of line and in the kernel's `.text.hot`: reclaim calls it per evicted folio, and
    // one variant's copy straddling a page once cost seed000's B 0.68 unchained transitions
    // per read that its A did not pay (`crate::fault`, "Placement").
    #[inline(never)]
    pub(crate) fn mod_folio_stat_of<P: MemCgroupPerNode>(
        &self,
        tree: &MemcgTree<P, Self>,
        cpu: usize,
        folio: &Folio,
        item: NodeStatItem,
        delta: i64,
    ) {
        self.mod_memcg_stat_by_id(tree, cpu, folio.memcg_id(), folio.node(), item, delta);
    }

    /// A folio statistic of the memcg of `tree` with id `id` (found under RCU) on `node`.
    pub(crate) fn mod_memcg_stat_by_id<P: MemCgroupPerNode>(
        &self,
        tree: &MemcgTree<P, Self>,
        cpu: usize,
        id: memcg::MemcgId,
        node: NodeId,
        item: NodeStatItem,
        delta: i64,
    ) {
        let Ok(guard) = tree.rcu().read_lock(cpu) else {
            return;
        };
        if let Ok(m) = tree.lookup_rcu(&guard, id) {
            self.mod_folio_stat(m, cpu, node, item, delta);
        }
    }
}
