//! MGLRU constants, sequence arithmetic and the `lru_gen_folio` interface.
//!
//! Models the multi-gen LRU definitions in include/linux/mmzone.h and mm_inline.h:
//! generations are numbered by ever-growing sequence numbers (`max_seq`, `min_seq[type]`)
//! and stored in `MAX_NR_GENS` slots (`lru_gen_from_seq`); tiers group folios of a
//! generation by how often they were accessed through file descriptors
//! (`lru_tier_from_refs`: `order_base_2` of the access count, the working set in the top
//! tier). [`LruGenFolio`] is the common interface of the two layouts of
//! `struct lru_gen_folio` in [`crate::lru_gen_folio`] (seed 000), so all MGLRU code runs on
//! either.
//!
//! Unsafe code here, and why: the generation lists are `folio_list()`s, intrusive lists
//! whose creator promises the exclusive-link discipline (`unsafe fn folio_list`).
#![allow(unsafe_code)]

use crate::folio::{ANON_AND_FILE, MAX_NR_ZONES};
use crate::hlist_nulls::HlistNullsNode;
use crate::layout::FieldDesc;
use crate::list::{FolioList, folio_list};
use crate::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64};
use core::cell::UnsafeCell;

/// Generations kept per lruvec (`MAX_NR_GENS`).
pub const MAX_NR_GENS: usize = 4;
/// Generations that must exist before eviction may run (`MIN_NR_GENS`).
pub const MIN_NR_GENS: u64 = 2;
/// Tiers per generation (`MAX_NR_TIERS`).
pub const MAX_NR_TIERS: usize = 4;
/// Generations of refault history (`NR_HIST_GENS`, 1 without `CONFIG_LRU_GEN_STATS`).
pub const NR_HIST_GENS: usize = 1;
/// Smallest count the tier PID controller trusts (`MIN_LRU_BATCH`).
pub const MIN_LRU_BATCH: u64 = 64;

/// The list slot of a sequence number (`lru_gen_from_seq`).
#[must_use]
pub const fn lru_gen_from_seq(seq: u64) -> usize {
    (seq % MAX_NR_GENS as u64) as usize
}

/// The history slot of a sequence number (`lru_hist_from_seq`).
#[must_use]
pub const fn lru_hist_from_seq(seq: u64) -> usize {
    (seq % NR_HIST_GENS as u64) as usize
}

/// `order_base_2(n)`: the smallest `k` with `2^k >= n` (0 for 0 and 1).
#[must_use]
pub const fn order_base_2(n: u32) -> u32 {
    if n > 1 {
        32 - (n - 1).leading_zeros()
    } else {
        0
    }
}

/// The tier of a folio accessed `refs` times through file descriptors, `REFERENCED`
/// included (`lru_tier_from_refs(refs, workingset)`): `order_base_2(refs)`, or the top tier
/// for the working set. refs 0 and 1 are tier 0, 2 is tier 1, 3 and 4 are tier 2.
#[must_use]
pub const fn lru_tier_from_refs(refs: u32, workingset: bool) -> usize {
    if workingset {
        return MAX_NR_TIERS - 1;
    }
    let t = order_base_2(refs) as usize;
    if t >= MAX_NR_TIERS {
        MAX_NR_TIERS - 1
    } else {
        t
    }
}

/// `folios[gen][type][zone]`: the generation lists, protected by lru_lock.
pub type GenFolioLists = [[[FolioList; MAX_NR_ZONES]; ANON_AND_FILE]; MAX_NR_GENS];

/// Empty generation lists (every one `LIST_HEAD_INIT`).
pub(crate) fn gen_folio_lists() -> GenFolioLists {
    core::array::from_fn(|_| {
        core::array::from_fn(|_| {
            core::array::from_fn(|_| {
                // SAFETY: as an lruvec's classic lists: the generation lists are changed
                // only under the lruvec's lru_lock, and a folio is linked onto them only by
                // the thread that owns it (a batch's new folio, one isolated with
                // `folio_test_clear_lru`, or one moved under the same lock).
                unsafe { folio_list() }
            })
        })
    })
}
/// `nr_pages[gen][type][zone]`: written under lru_lock, read locklessly.
pub type GenNrPages = [[[AtomicI64; MAX_NR_ZONES]; ANON_AND_FILE]; MAX_NR_GENS];
/// `avg_refaulted[type][tier]` / `avg_total[type][tier]`: PID controller history.
pub type TierAvg = [[AtomicU64; MAX_NR_TIERS]; ANON_AND_FILE];
/// `[hist][type][tier]` counters: `protected` (under lru_lock), `evicted` and
/// `refaulted` (lockless atomic adds).
pub type TierHist = [[[AtomicU64; MAX_NR_TIERS]; ANON_AND_FILE]; NR_HIST_GENS];

/// The fields of `lru_gen_folio` that the memcg FIFO reads and writes: `enabled`, `gen`,
/// `seg`, `bin` (seed 002) and the hlist_nulls `list` node. Kept together in Linux's order
/// (24 bytes), because seed 000 moves them as a unit.
#[derive(Debug, Default)]
#[repr(C)]
pub struct LruGenMemcgNode {
    /// Whether the multi-gen LRU is enabled for this lruvec.
    pub enabled: AtomicBool,
    /// The memcg generation this lruvec sits in (under the FIFO lock).
    pub r#gen: AtomicU8,
    /// The list segment: 0, head or tail (under the FIFO lock).
    pub seg: AtomicU8,
    /// The FIFO bin this lruvec sits in (seed 002, under the FIFO lock).
    pub bin: AtomicU8,
    /// Id of the FIFO this node is on (0 = none). Not in Linux (where the FIFO is implied
    /// by the node); fills the 4-byte hole before `list`, so the size is Linux's. It lets
    /// a FIFO refuse a node that sits on another FIFO instead of unlinking it unlocked.
    pub fifo_id: AtomicU32,
    /// Per-node `lru_gen_folio` list for global reclaim.
    pub list: HlistNullsNode,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<LruGenMemcgNode>() == 24);

mod sealed {
    pub trait Sealed {}
}
pub(crate) use sealed::Sealed;

/// The common interface of both `lru_gen_folio` layouts.
///
/// Sealed: the lruvec relies on `folios()` being a cell that only it touches, under its
/// lru_lock.
pub trait LruGenFolio: Sealed + Send + Sync + Sized + 'static {
    /// Name of the layout in reports ("base" or "grouped").
    const LAYOUT: &'static str;
    /// A fresh, empty `lru_gen_folio` (`lru_gen_init_lruvec`).
    fn new(enabled: bool, now: u64) -> Self;
    /// `max_seq`: the youngest generation.
    fn max_seq(&self) -> &AtomicU64;
    /// `min_seq[type]`: the oldest generation per type.
    fn min_seq(&self) -> &[AtomicU64; ANON_AND_FILE];
    /// `timestamps[gen]`: birth time of each generation.
    fn timestamps(&self) -> &[AtomicU64; MAX_NR_GENS];
    /// The generation lists.
    fn folios(&self) -> &UnsafeCell<GenFolioLists>;
    /// The generation sizes.
    fn nr_pages(&self) -> &GenNrPages;
    /// `avg_refaulted[type][tier]`.
    fn avg_refaulted(&self) -> &TierAvg;
    /// `avg_total[type][tier]`.
    fn avg_total(&self) -> &TierAvg;
    /// `protected[hist][type][tier]`.
    fn protected(&self) -> &TierHist;
    /// `evicted[hist][type][tier]`: lockless.
    fn evicted(&self) -> &TierHist;
    /// `refaulted[hist][type][tier]`: lockless.
    fn refaulted(&self) -> &TierHist;
    /// `enabled`, `gen`, `seg`, `bin`, `list`.
    fn memcg_node(&self) -> &LruGenMemcgNode;
    /// Byte offset of [`LruGenFolio::memcg_node`] inside the struct.
    const MEMCG_NODE_OFFSET: usize;
    /// Byte offset of [`LruGenFolio::evicted`] inside the struct.
    const EVICTED_OFFSET: usize;
    /// Byte offset of [`LruGenFolio::refaulted`] inside the struct.
    const REFAULTED_OFFSET: usize;
    /// Whether the lockless counters sit in their own aligned group (seed 000's patch).
    const STATS_GROUPED: bool;
    /// The pahole-style field table for [`crate::layout`].
    fn layout_fields() -> &'static [FieldDesc];
}

pub(crate) fn atomic_array<T, const N: usize>(f: impl Fn() -> T) -> [T; N] {
    core::array::from_fn(|_| f())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_helpers() {
        assert_eq!(lru_gen_from_seq(0), 0);
        assert_eq!(lru_gen_from_seq(5), 1);
        assert_eq!(lru_hist_from_seq(7), 0);
        let tiers: [usize; 5] = core::array::from_fn(|r| lru_tier_from_refs(r as u32, false));
        assert_eq!(tiers, [0, 0, 1, 2, 2]);
        assert_eq!(lru_tier_from_refs(0, true), MAX_NR_TIERS - 1);
        // Counts beyond the top tier stay in it.
        for refs in [8, 9, 1000, u32::MAX] {
            assert_eq!(
                lru_tier_from_refs(refs, false),
                MAX_NR_TIERS - 1,
                "refs {refs}"
            );
        }
        assert_eq!(order_base_2(4), 2);
        assert_eq!(order_base_2(5), 3);
    }
}
