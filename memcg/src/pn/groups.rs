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

use crate::stats::{LruvecStats, LruvecStatsPercpu};
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use alloc::boxed::Box;
use core::ptr::NonNull;

/// Read by every stat update, written only at creation (`memcg_pn_read_mostly`).
///
/// 32 bytes, as Linux's four pointers (`memcg`, `lruvec_stats_percpu`, `lruvec_stats`,
/// `shrinker_info`): this model has no shrinker, and its per-CPU counters' handle is two
/// words where Linux's `__percpu` pointer is one. The node and the memcg id are the
/// lruvec's (`lruvec->pgdat`, `lruvec_memcg()`), as in Linux. The size matters to
/// mainline's layout ([`super::MemCgroupPerNodeV1`]), where the memcg-v1 fields and then
/// the lruvec follow these fields directly ([`super::mainline`]).
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
}

// SAFETY: `memcg` is only turned back into `&MemCgroup`, which is Sync; every other field
// is Send + Sync.
unsafe impl Send for PnReadMostly {}
// SAFETY: as above.
unsafe impl Sync for PnReadMostly {}

impl PnReadMostly {
    pub(crate) fn new(memcg: NonNull<()>, nr_cpus: usize) -> Self {
        Self {
            memcg,
            lruvec_stats_percpu: crate::stats::lruvec_stats_percpu(nr_cpus),
            lruvec_stats: Box::new(LruvecStats::new()),
        }
    }

    /// The flushed lruvec totals.
    pub fn lruvec_stats(&self) -> &LruvecStats {
        &self.lruvec_stats
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
///
/// [`SEED000_SHIFT`] is the one difference between this model's mainline layout and
/// Linux's declared one up to the lruvec, asserted in [`super::assert_pn_layouts`].
#[repr(C)]
#[derive(Debug, Default)]
pub struct PnSoftLimit {
    /// `struct rb_node tree_node`: `__rb_parent_color`, `rb_right`, `rb_left`.
    pub(crate) tree_node: [AtomicU64; 3],
    /// `usage_in_excess`: pages by which usage exceeds the soft limit.
    pub(crate) usage_in_excess: AtomicU64,
    /// `on_tree`: whether `tree_node` is linked into the per-node soft-limit tree.
    pub(crate) on_tree: AtomicBool,
    /// Not Linux's: 24 bytes that move the lruvec from 72, where mainline's declarations
    /// put it ([`super::mainline`]), to 96. Seed 000 says of its kernel that "the file
    /// type counters share a cacheline with" `enabled`/`gen`/`seg`/`list`; in the declared
    /// layout only `refaulted[0][file][3]` does (`lrugen` 16 bytes into its line), and the
    /// seed's struct is 192 bytes larger than the declared one in a way no whole field
    /// reproduces, so its offsets cannot be computed. 24 is the smallest move that
    /// satisfies the seed's statement (`lrugen` 40 bytes into its line). It is the same in
    /// both of seed 000's variants; with the grouped `lru_gen_folio` the lruvec is
    /// line-aligned and lands at 128, exactly where the declarations put it.
    pub(crate) seed000_shift: [u64; 3],
}

/// Bytes the `seed000_shift` field of [`PnSoftLimit`] adds before the lruvec of mainline's
/// layout.
pub const SEED000_SHIFT: usize = core::mem::size_of::<[u64; 3]>();

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
