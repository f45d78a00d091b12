//! The cacheline groups of `struct mem_cgroup_per_node`: `memcg_pn_read_mostly`,
//! `memcg_pn_cold` and `memcg_pn_write_hot` (include/linux/memcontrol.h, seed 001).
//!
//! Each group is a `#[repr(C, align(64))]` struct, so it starts a line and no other group
//! shares its lines; which 128-byte pair a group falls in is decided by the layout that
//! orders them ([`super::MemCgroupPerNodeBase`] or [`super::MemCgroupPerNodePaired`]).

use crate::error::MemcgId;
use crate::stats::{LruvecStats, LruvecStatsPercpu};
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use alloc::boxed::Box;
use core::ptr::NonNull;

/// Read by every stat update, written only at creation (`memcg_pn_read_mostly`).
#[repr(C, align(64))]
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
    pub(crate) node: u32,
    /// The owning memcg's id.
    pub(crate) memcg_id: MemcgId,
}

// SAFETY: `memcg` is only turned back into `&MemCgroup`, which is Sync; every other field
// is Send + Sync.
unsafe impl Send for PnReadMostly {}
// SAFETY: as above.
unsafe impl Sync for PnReadMostly {}

impl PnReadMostly {
    pub(crate) fn new(memcg: NonNull<()>, memcg_id: MemcgId, node: usize, nr_cpus: usize) -> Self {
        Self {
            memcg,
            lruvec_stats_percpu: crate::stats::lruvec_stats_percpu(nr_cpus),
            lruvec_stats: Box::new(LruvecStats::new()),
            node: node as u32,
            memcg_id,
        }
    }

    /// The flushed lruvec totals.
    pub fn lruvec_stats(&self) -> &LruvecStats {
        &self.lruvec_stats
    }

    /// The node id.
    pub fn node(&self) -> usize {
        self.node as usize
    }
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
