//! The cacheline groups of `struct mem_cgroup_per_node`: `memcg_pn_read_mostly`,
//! `memcg_pn_cold` and `memcg_pn_write_hot` (include/linux/memcontrol.h, seed 001).
//!
//! `memcg_pn_cold` and `memcg_pn_write_hot` are `#[repr(C, align(64))]` structs, so each
//! starts a line and no other group shares its lines. `memcg_pn_read_mostly` is laid out at
//! its natural alignment: seed 001's layouts ([`super::MemCgroupPerNodeBase`],
//! [`super::MemCgroupPerNodePaired`]) wrap it in a line of its own, while Linux's mainline
//! struct ([`super::MemCgroupPerNodeV1`], seed 000's kernel) follows it directly with the
//! memcg-v1 soft-limit fields ([`PnSoftLimit`]). Which 128-byte pair a group falls in is
//! decided by the layout that orders them.
//!
//! Unsafe code here, and why: the read-mostly group holds the memcg's back pointer raw (as
//! Linux's `pn->memcg`) and declares itself `Send`/`Sync` on it.
#![allow(unsafe_code)]

use crate::error::MemcgId;
use crate::stats::{LruvecStats, LruvecStatsPercpu};
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use alloc::boxed::Box;
use core::ptr::NonNull;
use lru::NodeId;

/// Read by every stat update, written only at creation (`memcg_pn_read_mostly`).
#[repr(C)]
#[derive(Debug)]
pub struct PnReadMostly {
    /// Back pointer to the owning `struct mem_cgroup` (type-erased; see
    /// [`crate::MemCgroup`]).
    pub(crate) memcg: NonNull<()>,
    /// Per-CPU lruvec counters (`lruvec_stats_percpu`).
    pub(crate) lruvec_stats_percpu: LruvecStatsPercpu,
    /// Flushed lruvec totals (`lruvec_stats`).
    pub(crate) lruvec_stats: Box<LruvecStats>,
    /// The node this info belongs to.
    pub(crate) node: NodeId,
    /// The owning memcg's id.
    pub(crate) memcg_id: MemcgId,
}

// SAFETY: `memcg` is only turned back into `&MemCgroup`, which is Sync; every other field
// is Send + Sync.
unsafe impl Send for PnReadMostly {}
// SAFETY: as above.
unsafe impl Sync for PnReadMostly {}

impl PnReadMostly {
    pub(crate) fn new(memcg: NonNull<()>, memcg_id: MemcgId, node: NodeId, nr_cpus: usize) -> Self {
        Self {
            memcg,
            lruvec_stats_percpu: crate::stats::lruvec_stats_percpu(nr_cpus),
            lruvec_stats: Box::new(LruvecStats::new()),
            node,
            memcg_id,
        }
    }

    /// The flushed lruvec totals.
    pub fn lruvec_stats(&self) -> &LruvecStats {
        &self.lruvec_stats
    }

    /// The node id.
    pub fn node(&self) -> NodeId {
        self.node
    }
}

/// The memcg-v1 soft-limit fields of mainline's `mem_cgroup_per_node` (`tree_node`,
/// `usage_in_excess`, `on_tree`; CONFIG_MEMCG_V1, the distributions' default).
///
/// Linux keeps them between the read-mostly pointers and the lruvec "as buffer between read
/// mostly fields and update often fields to avoid false sharing". This kernel has no
/// cgroup-v1 soft limit, so nothing links the node into a tree and the fields stay zero;
/// they are here for their size, which decides where the lruvec (and so seed 000's
/// `refaulted[]` counters) falls in its cache lines.
#[repr(C)]
#[derive(Debug, Default)]
pub struct PnSoftLimit {
    /// `struct rb_node tree_node`: `__rb_parent_color`, `rb_right`, `rb_left`.
    pub(crate) tree_node: [AtomicU64; 3],
    /// `usage_in_excess`: pages by which usage exceeds the soft limit.
    pub(crate) usage_in_excess: AtomicU64,
    /// `on_tree`: whether `tree_node` is linked into the per-node soft-limit tree.
    pub(crate) on_tree: AtomicBool,
    /// Not Linux's: 16 bytes that stand for what seed 000's kernel has before its lruvec
    /// and this model lacks (its `mem_cgroup_per_node` is 2176 bytes, this one 1920). Seed
    /// 000 states that in its kernel "the file type counters share a cacheline with"
    /// `enabled`/`gen`/`seg`/`list`; with the lruvec at 80 only the top tiers would. The gap
    /// puts the lruvec at 96, where every file tier of `refaulted[]` shares the FIFO node's
    /// line in the base `lru_gen_folio` (asserted in `assert_pn_layouts`), and it is the
    /// same in both of seed 000's variants, which differ only in `lru_gen_folio`.
    pub(crate) seed000_gap: [u64; 2],
}

/// Touched only when the memcg is reparented or freed (`memcg_pn_cold`; Linux keeps
/// `orig_objcg` and `objcg_list` here).
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct PnCold {
    /// Folios moved from this lruvec to the parent's when the memcg went offline.
    pub(crate) reparented_folios: AtomicU64,
    /// Pages of charge handed to the parent with them.
    pub(crate) reparented_pages: AtomicU64,
    /// How many reparent passes ran (offline, then the reaper's final pass).
    pub(crate) reparent_passes: AtomicU32,
}

impl PnCold {
    /// Folios moved to the parent at reparenting.
    pub fn reparented_folios(&self) -> u64 {
        self.reparented_folios.load(Ordering::Relaxed)
    }

    /// Pages of charge moved to the parent at reparenting.
    pub fn reparented_pages(&self) -> u64 {
        self.reparented_pages.load(Ordering::Relaxed)
    }

    /// Reparent passes run.
    pub fn reparent_passes(&self) -> u32 {
        self.reparent_passes.load(Ordering::Relaxed)
    }
}

/// The reclaim iterator state (`struct mem_cgroup_reclaim_iter`).
#[derive(Debug, Default)]
pub struct ReclaimIter {
    /// Id of the memcg the last walk stopped at (`position`).
    pub(crate) position: AtomicU32,
    /// Bumped when a walk completes the hierarchy (`generation`).
    pub(crate) generation: AtomicU32,
}

/// Written on every LRU add and delete and by reclaim (`memcg_pn_write_hot`):
/// `lru_zone_size[][]` (the lruvec's per-zone list sizes, updated by the lru_lock holder
/// through [`lru::LruvecHost`]), the reclaim iterator and what reclaim did here.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct PnWriteHot {
    /// `lru_zone_size[MAX_NR_ZONES][NR_LRU_LISTS]`.
    pub(crate) lru_zone_size: lru::lruvec::LruZoneSize,
    /// Reclaim iterator (`iter`).
    pub(crate) iter: ReclaimIter,
    /// Folios scanned by memcg reclaim on this node.
    pub(crate) nr_scanned: AtomicU64,
    /// Folios reclaimed by memcg reclaim on this node.
    pub(crate) nr_reclaimed: AtomicU64,
}

impl Default for PnWriteHot {
    fn default() -> Self {
        Self {
            lru_zone_size: lru::lruvec::new_lru_zone_size(),
            iter: ReclaimIter::default(),
            nr_scanned: AtomicU64::new(0),
            nr_reclaimed: AtomicU64::new(0),
        }
    }
}

impl PnWriteHot {
    /// The reclaim iterator's generation (bumped by every full walk of the subtree).
    pub fn iter_generation(&self) -> u32 {
        self.iter.generation.load(Ordering::Relaxed)
    }

    /// Folios scanned by memcg reclaim here.
    pub fn nr_scanned(&self) -> u64 {
        self.nr_scanned.load(Ordering::Relaxed)
    }

    /// Folios reclaimed by memcg reclaim here.
    pub fn nr_reclaimed(&self) -> u64 {
        self.nr_reclaimed.load(Ordering::Relaxed)
    }
}
