//! The memory-management context the fault path runs in: frames, memcgs, LRUs, RCU, MMU.
//!
//! One [`Vm`] ties together what a fault touches, as Linux's global state does: the page
//! allocator (frames from the faulting CPU's per-CPU list on its node), a memcg hierarchy
//! ([`memcg::MemcgTree`]) over the nodes' LRU state (`pglist_data`'s LRU part, one per
//! node, built here), the per-CPU folio batches (`cpu_fbatches`), the platform's MMU and
//! RCU, the two fault-injection knobs and the event counters. The benchmark builds one
//! `Vm` per variant that changes a type (the `mem_cgroup_per_node` layout, the
//! `lru_gen_folio` layout) or the hierarchy's configuration (the lru_lock variant, the
//! memcg FIFO's tail mode), all over the one page allocator of the machine.
//!
//! The memcg crate and the LRU code call back up when reclaim evicts a folio and when a
//! folio's last reference drops inside them (`__folio_put`). They reach no `Vm`: the tree is
//! generic over the owner of its frames and holds it by value ([`VmFolios`], `vm/folios.rs`:
//! the page allocator, the event counters, the stat path), handing it the tree at each call.
//! The `Vm` reaches the same state through its tree ([`Vm::folios`]).

use crate::counters::{VmCounters, VmEvent};
use crate::fault_inject::{FaultAttr, FaultSpec};
pub use crate::folios::StatPath;
use crate::folios::VmFolios;
use crate::pgtable::Mmu;
use crate::rcu::RcuDefer;
use alloc::boxed::Box;
use ksync::LockFamily;
use lru::NodeId;
use lru::{Folio, LruvecLock, NodeStatItem, TailMode};
use memcg::{MemCgroup, MemCgroupPerNode, MemcgConfig, MemcgTree, PnPlacement, TreeLru};
use page_alloc::page_alloc::PageAlloc;

/// What a [`Vm`] is built with.
#[derive(Debug, Clone, Copy)]
pub struct VmConfig {
    /// CPUs (ids `0..nr_cpus`).
    pub nr_cpus: usize,
    /// MGLRU (true) or the classic active/inactive lists.
    pub mglru: bool,
    /// Seed 004: each lruvec's own lru_lock, or its node's.
    pub lru_lock: LruvecLock,
    /// Seed 002: the memcg FIFO's tail insertion.
    pub tail_mode: TailMode,
    /// Seed 001: where each `mem_cgroup_per_node` starts in its 128-byte pair.
    pub placement: PnPlacement,
    /// Most memcgs alive at once (root and zombies included).
    pub max_memcgs: usize,
    /// Seed 001 patch 2.
    pub stat_path: StatPath,
    /// `fail_page_alloc`.
    pub fail_page_alloc: FaultSpec,
    /// `fail_charge`.
    pub fail_charge: FaultSpec,
    /// Where the platform's CPU ids are its CPUs (the kernel): each CPU's folio batches
    /// and charge stock are then its own, behind Linux's `local_lock` (no atomic), and
    /// every call naming a CPU must run on it. `None` (host tests, the host benchmark):
    /// each CPU's batches and stock sit behind a lock, so one thread may act as any CPU.
    pub local_cpus: Option<ksync::local_lock::LocalCpus>,
}

impl VmConfig {
    /// MGLRU, own lru_locks, cached FIFO tails, pair-aligned per-node info, direct stats,
    /// no fault injection, room for 16384 memcgs.
    #[must_use]
    pub fn new(nr_cpus: usize) -> Self {
        VmConfig {
            nr_cpus,
            mglru: true,
            lru_lock: LruvecLock::Own,
            tail_mode: TailMode::Cached,
            placement: PnPlacement::PairStart,
            max_memcgs: 16384,
            stat_path: StatPath::Direct,
            fail_page_alloc: FaultSpec::Off,
            fail_charge: FaultSpec::Off,
            local_cpus: None,
        }
    }
}

/// Why a `Vm` could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmError {
    /// The memcg hierarchy refused the configuration.
    Memcg(memcg::MemcgError),
    /// The nodes' LRU state could not be built.
    Lru(lru::LruError),
    /// More CPUs than the page allocator serves.
    TooManyCpus,
}

/// The memory-management context; see the module documentation.
pub struct Vm<P: MemCgroupPerNode, M: Mmu> {
    pub(crate) alloc: &'static PageAlloc,
    /// The memcg hierarchy, holding the owner of the folios' frames.
    pub(crate) tree: MemcgTree<P, VmFolios>,
    pub(crate) batches: lru::LruBatches<P::Family>,
    pub(crate) mmu: &'static M,
    pub(crate) rcu: &'static dyn RcuDefer,
    pub(crate) fail_page_alloc: FaultAttr,
    pub(crate) fail_charge: FaultAttr,
    nr_cpus: usize,
}

impl<P: MemCgroupPerNode, M: Mmu> core::fmt::Debug for Vm<P, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Vm")
            .field("tree", &self.tree)
            .field("stat_path", &self.stat_path())
            .finish()
    }
}

impl<P: MemCgroupPerNode<Family = F>, F: LockFamily, M: Mmu> Vm<P, M> {
    /// Builds a context over `alloc`'s nodes, with memcgs freed after grace periods of
    /// `lru_rcu` (the one lru's FIFO readers and memcg use) and regions after grace periods
    /// of `rcu` (the platform's `call_rcu`; the same domain in the kernel).
    pub fn new(
        alloc: &'static PageAlloc,
        mmu: &'static M,
        lru_rcu: &'static ksync::Rcu<F>,
        rcu: &'static dyn RcuDefer,
        cfg: VmConfig,
    ) -> Result<Box<Self>, VmError> {
        if cfg.nr_cpus == 0 || cfg.nr_cpus > alloc.nr_cpus() {
            return Err(VmError::TooManyCpus);
        }
        let nr_nodes = alloc.nodes().len().max(1);
        let managed: u64 =
            alloc.zones().map(page_alloc::Zone::managed).sum::<u64>() / nr_nodes as u64;
        let nodes = lru::pgdat::alloc_nodes::<P>(
            nr_nodes,
            cfg.nr_cpus,
            managed.max(1),
            cfg.tail_mode,
            lru_rcu,
        )
        .map_err(VmError::Lru)?;
        // No swap device: reclaim takes file pages only (anonymous and shmem-like memory is
        // not reclaimable, as on a machine without swap).
        let owner = VmFolios::new(alloc, cfg.nr_cpus, cfg.stat_path);
        let tree_lru = TreeLru::with_owner(cfg.mglru, owner).with_swappiness(0);
        let mconf = MemcgConfig {
            nr_cpus: cfg.nr_cpus,
            nr_nodes,
            max_memcgs: cfg.max_memcgs,
            placement: cfg.placement,
            lru_lock: cfg.lru_lock,
            local_cpus: cfg.local_cpus,
        };
        let tree = MemcgTree::new(mconf, nodes, tree_lru).map_err(VmError::Memcg)?;
        let vm = Box::new(Vm {
            alloc,
            tree,
            batches: match cfg.local_cpus {
                Some(cpus) => lru::LruBatches::new_local(cfg.nr_cpus, cpus),
                None => lru::LruBatches::new(cfg.nr_cpus),
            },
            mmu,
            rcu,
            fail_page_alloc: FaultAttr::new("fail_page_alloc", cfg.fail_page_alloc),
            fail_charge: FaultAttr::new("fail_charge", cfg.fail_charge),
            nr_cpus: cfg.nr_cpus,
        });
        Ok(vm)
    }

    /// A new address space over `[base, base + len)` whose regions are freed after grace
    /// periods of this context's RCU.
    pub fn new_mm<V: crate::vma::VmArea>(
        &self,
        base: u64,
        len: u64,
    ) -> Result<Box<crate::mm_struct::MmStruct<V, M>>, crate::mm_struct::MmError> {
        crate::mm_struct::MmStruct::new(base, len, self.mmu, self.rcu)
    }

    /// The memcg hierarchy.
    #[must_use]
    pub fn tree(&self) -> &MemcgTree<P, VmFolios> {
        &self.tree
    }

    /// The owner of the folios' frames (held by the tree): the counters and the stat path.
    #[inline]
    #[must_use]
    pub fn folios(&self) -> &VmFolios {
        self.tree.lru().owner()
    }

    /// The page allocator.
    #[must_use]
    pub fn alloc(&self) -> &'static PageAlloc {
        self.alloc
    }

    /// The MMU.
    #[must_use]
    pub fn mmu(&self) -> &'static M {
        self.mmu
    }

    /// The per-CPU folio batches.
    #[must_use]
    pub fn batches(&self) -> &lru::LruBatches<F> {
        &self.batches
    }

    /// CPUs this context serves.
    #[must_use]
    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// The event counters. [`VmEvent::CssAtomicWrites`] is refreshed from the memcg tree
    /// first (it takes the tree lock: read between runs, not on a hot path).
    #[must_use]
    pub fn counters(&self) -> &VmCounters {
        let counters = &self.folios().counters;
        counters.set_total(VmEvent::CssAtomicWrites, self.tree.css_atomic_writes());
        counters
    }

    /// What failed TLB flushes have kept so far ([`crate::tlb_kept`]).
    #[must_use]
    pub fn tlb_kept(&self) -> crate::tlb_kept::TlbKeptStats {
        self.folios().tlb_kept.stats()
    }

    /// The fault-injection knobs `(fail_page_alloc, fail_charge)`.
    #[must_use]
    pub fn fault_attrs(&self) -> (&FaultAttr, &FaultAttr) {
        (&self.fail_page_alloc, &self.fail_charge)
    }

    /// The stat path folio statistics take now.
    #[must_use]
    pub fn stat_path(&self) -> StatPath {
        self.folios().stat_path()
    }

    /// Switches the stat path (between runs).
    pub fn set_stat_path(&self, p: StatPath) {
        self.folios().set_stat_path(p);
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
        self.folios().count(cpu, ev);
    }

    /// A folio statistic of `memcg` on `node`, by the current [`StatPath`]
    /// (`__lruvec_stat_mod_folio` / `mod_memcg_lruvec_state`).
    #[inline]
    pub(crate) fn mod_folio_stat(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        node: NodeId,
        item: NodeStatItem,
        delta: i64,
    ) {
        self.folios().mod_folio_stat(memcg, cpu, node, item, delta);
    }

    /// A folio statistic of the memcg `folio` is charged to (found under RCU).
    pub(crate) fn mod_folio_stat_of(
        &self,
        cpu: usize,
        folio: &Folio,
        item: NodeStatItem,
        delta: i64,
    ) {
        self.folios()
            .mod_folio_stat_of(&self.tree, cpu, folio, item, delta);
    }

    /// Moves every CPU's folio batches to the LRUs (`lru_add_drain_all`), from `cpu` (the
    /// caller's CPU: the moves run in its RCU read-side section).
    pub fn lru_add_drain_all(&self, cpu: usize) {
        ksync::warn_on_once!(
            lru::MoveStats::drain_all_failed(&self.batches.drain_all(self.cpu(cpu), &self.tree)),
            "lru_add_drain_all failed"
        );
    }
}
