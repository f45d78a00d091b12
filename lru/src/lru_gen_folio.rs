//! The two layouts of `struct lru_gen_folio` that run side by side (seed 000).
//!
//! [`LruGenFolioBase`] is Linux before the seed: the lockless `evicted[]`/`refaulted[]`
//! atomics sit at the end, right before the read-mostly `enabled`/`gen`/`seg`/`bin`/`list`
//! (so every refault invalidates the line that `lru_gen_add_folio()` and `shrink_many()`
//! read). [`LruGenFolioGrouped`] is the patch: the read-mostly fields follow
//! `max_seq`/`min_seq`/`timestamps`, and the atomics live in their own 64-byte aligned
//! group at the end (`__cacheline_group_begin_aligned(lrugen_stats)`). Both carry seed
//! 002's `bin`. Both implement [`LruGenFolio`], so every MGLRU operation works on either.
//!
//! Unsafe code here, and why: its layouts declare themselves `Send`/`Sync`: `folios` is an
//! `UnsafeCell` touched only under the owning lruvec's lock, the rest atomics.
#![allow(unsafe_code)]

use crate::cacheline::CacheAligned;
#[cfg(not(loom))]
use crate::cacheline::share_line;
use crate::folio::ANON_AND_FILE;
use crate::layout::FieldDesc;
use crate::lru_gen::{
    GenFolioLists, GenNrPages, LruGenFolio, LruGenMemcgNode, MAX_NR_GENS, Sealed, TierAvg,
    TierHist, atomic_array, gen_folio_lists,
};
use crate::sync::atomic::{AtomicBool, AtomicU64};
use core::cell::UnsafeCell;
use core::mem::offset_of;

/// `lru_gen_folio` as in Linux before seed 000 (with seed 002's `bin`).
#[repr(C)]
pub struct LruGenFolioBase {
    max_seq: AtomicU64,
    min_seq: [AtomicU64; ANON_AND_FILE],
    timestamps: [AtomicU64; MAX_NR_GENS],
    folios: UnsafeCell<GenFolioLists>,
    nr_pages: GenNrPages,
    avg_refaulted: TierAvg,
    avg_total: TierAvg,
    protected: TierHist,
    evicted: TierHist,
    refaulted: TierHist,
    memcg: LruGenMemcgNode,
}

/// The lockless counters of [`LruGenFolioGrouped`], in their own aligned group.
#[repr(C)]
pub struct LruGenStats {
    /// `evicted[hist][type][tier]`.
    pub evicted: TierHist,
    /// `refaulted[hist][type][tier]`.
    pub refaulted: TierHist,
}

/// `lru_gen_folio` as seed 000 rearranges it.
#[repr(C)]
pub struct LruGenFolioGrouped {
    max_seq: AtomicU64,
    min_seq: [AtomicU64; ANON_AND_FILE],
    timestamps: [AtomicU64; MAX_NR_GENS],
    memcg: LruGenMemcgNode,
    folios: UnsafeCell<GenFolioLists>,
    nr_pages: GenNrPages,
    avg_refaulted: TierAvg,
    avg_total: TierAvg,
    protected: TierHist,
    stats: CacheAligned<LruGenStats>,
}

// Seed 000's point, checked at compile time: in the base layout the refault counters share
// a line with the read-mostly node; in the grouped layout they do not, the group is aligned
// and holds exactly the two arrays. (Not under loom, whose model atomics are larger.)
#[cfg(not(loom))]
mod layout_asserts {
    use super::*;

    const _: () = assert!(share_line(
        offset_of!(LruGenFolioBase, refaulted),
        core::mem::size_of::<TierHist>(),
        offset_of!(LruGenFolioBase, memcg),
        core::mem::size_of::<LruGenMemcgNode>(),
    ));
    crate::cacheline_assert_apart!(LruGenFolioGrouped, stats; memcg);
    crate::cacheline_assert_apart!(LruGenFolioGrouped, stats; max_seq);
    crate::cacheline_assert_group_size!(LruGenFolioGrouped, stats, 128);
    crate::cacheline_assert_group_member!(LruGenFolioGrouped, stats, stats.0.evicted);
    crate::cacheline_assert_group_member!(LruGenFolioGrouped, stats, stats.0.refaulted);
    crate::cacheline_assert_pair!(LruGenFolioGrouped, memcg, 0);
}

const BASE_FIELDS: &[FieldDesc] = &[
    crate::layout_field!(LruGenFolioBase, "seq", "max_seq" => max_seq),
    crate::layout_field!(LruGenFolioBase, "seq", "min_seq" => min_seq),
    crate::layout_field!(LruGenFolioBase, "seq", "timestamps" => timestamps),
    crate::layout_field!(LruGenFolioBase, "lists", "folios" => folios),
    crate::layout_field!(LruGenFolioBase, "lists", "nr_pages" => nr_pages),
    crate::layout_field!(LruGenFolioBase, "ctrl", "avg_refaulted" => avg_refaulted),
    crate::layout_field!(LruGenFolioBase, "ctrl", "avg_total" => avg_total),
    crate::layout_field!(LruGenFolioBase, "ctrl", "protected" => protected),
    crate::layout_field!(LruGenFolioBase, "stats", "evicted" => evicted),
    crate::layout_field!(LruGenFolioBase, "stats", "refaulted" => refaulted),
    crate::layout_field!(LruGenFolioBase, "memcg_lru", "enabled" => memcg.enabled),
    crate::layout_field!(LruGenFolioBase, "memcg_lru", "gen" => memcg.r#gen),
    crate::layout_field!(LruGenFolioBase, "memcg_lru", "seg" => memcg.seg),
    crate::layout_field!(LruGenFolioBase, "memcg_lru", "bin" => memcg.bin),
    crate::layout_field!(LruGenFolioBase, "memcg_lru", "fifo_id" => memcg.fifo_id),
    crate::layout_field!(LruGenFolioBase, "memcg_lru", "list" => memcg.list),
];

const GROUPED_FIELDS: &[FieldDesc] = &[
    crate::layout_field!(LruGenFolioGrouped, "seq", "max_seq" => max_seq),
    crate::layout_field!(LruGenFolioGrouped, "seq", "min_seq" => min_seq),
    crate::layout_field!(LruGenFolioGrouped, "seq", "timestamps" => timestamps),
    crate::layout_field!(LruGenFolioGrouped, "memcg_lru", "enabled" => memcg.enabled),
    crate::layout_field!(LruGenFolioGrouped, "memcg_lru", "gen" => memcg.r#gen),
    crate::layout_field!(LruGenFolioGrouped, "memcg_lru", "seg" => memcg.seg),
    crate::layout_field!(LruGenFolioGrouped, "memcg_lru", "bin" => memcg.bin),
    crate::layout_field!(LruGenFolioGrouped, "memcg_lru", "fifo_id" => memcg.fifo_id),
    crate::layout_field!(LruGenFolioGrouped, "memcg_lru", "list" => memcg.list),
    crate::layout_field!(LruGenFolioGrouped, "lists", "folios" => folios),
    crate::layout_field!(LruGenFolioGrouped, "lists", "nr_pages" => nr_pages),
    crate::layout_field!(LruGenFolioGrouped, "ctrl", "avg_refaulted" => avg_refaulted),
    crate::layout_field!(LruGenFolioGrouped, "ctrl", "avg_total" => avg_total),
    crate::layout_field!(LruGenFolioGrouped, "ctrl", "protected" => protected),
    crate::layout_field!(LruGenFolioGrouped, "lrugen_stats", "evicted" => stats.0.evicted),
    crate::layout_field!(LruGenFolioGrouped, "lrugen_stats", "refaulted" => stats.0.refaulted),
];

fn new_seq(
    now: u64,
) -> (
    AtomicU64,
    [AtomicU64; ANON_AND_FILE],
    [AtomicU64; MAX_NR_GENS],
) {
    // lru_gen_init_lruvec: max_seq = MIN_NR_GENS + 1, so generations 0..=3 exist.
    (
        AtomicU64::new(crate::lru_gen::MIN_NR_GENS + 1),
        atomic_array(|| AtomicU64::new(0)),
        atomic_array(|| AtomicU64::new(now)),
    )
}

fn new_node(enabled: bool) -> LruGenMemcgNode {
    LruGenMemcgNode {
        enabled: AtomicBool::new(enabled),
        ..LruGenMemcgNode::default()
    }
}

macro_rules! impl_common {
    ($ty:ty, $layout:expr, $grouped:expr, $fields:expr, $($evicted:tt).+, $($refaulted:tt).+) => {
        impl Sealed for $ty {}

        // SAFETY: `folios` is an UnsafeCell only accessed by the owning lruvec while it
        // holds lru_lock (see `lruvec.rs`); all other fields are atomics.
        unsafe impl Sync for $ty {}
        // SAFETY: as above; the lists hold `&'static Folio`, which are Send.
        unsafe impl Send for $ty {}

        impl LruGenFolio for $ty {
            const LAYOUT: &'static str = $layout;
            const MEMCG_NODE_OFFSET: usize = offset_of!($ty, memcg);
            const EVICTED_OFFSET: usize = offset_of!($ty, $($evicted).+);
            const REFAULTED_OFFSET: usize = offset_of!($ty, $($refaulted).+);
            const STATS_GROUPED: bool = $grouped;

            fn max_seq(&self) -> &AtomicU64 {
                &self.max_seq
            }
            fn min_seq(&self) -> &[AtomicU64; ANON_AND_FILE] {
                &self.min_seq
            }
            fn timestamps(&self) -> &[AtomicU64; MAX_NR_GENS] {
                &self.timestamps
            }
            fn folios(&self) -> &UnsafeCell<GenFolioLists> {
                &self.folios
            }
            fn nr_pages(&self) -> &GenNrPages {
                &self.nr_pages
            }
            fn avg_refaulted(&self) -> &TierAvg {
                &self.avg_refaulted
            }
            fn avg_total(&self) -> &TierAvg {
                &self.avg_total
            }
            fn protected(&self) -> &TierHist {
                &self.protected
            }
            fn evicted(&self) -> &TierHist {
                &self.$($evicted).+
            }
            fn refaulted(&self) -> &TierHist {
                &self.$($refaulted).+
            }
            fn memcg_node(&self) -> &LruGenMemcgNode {
                &self.memcg
            }
            fn layout_fields() -> &'static [FieldDesc] {
                $fields
            }
            fn new(enabled: bool, now: u64) -> Self {
                let (max_seq, min_seq, timestamps) = new_seq(now);
                Self::build(max_seq, min_seq, timestamps, new_node(enabled))
            }
        }
    };
}

impl LruGenFolioBase {
    fn build(
        max_seq: AtomicU64,
        min_seq: [AtomicU64; ANON_AND_FILE],
        timestamps: [AtomicU64; MAX_NR_GENS],
        memcg: LruGenMemcgNode,
    ) -> Self {
        LruGenFolioBase {
            max_seq,
            min_seq,
            timestamps,
            folios: UnsafeCell::new(gen_folio_lists()),
            nr_pages: Default::default(),
            avg_refaulted: Default::default(),
            avg_total: Default::default(),
            protected: Default::default(),
            evicted: Default::default(),
            refaulted: Default::default(),
            memcg,
        }
    }
}

impl LruGenFolioGrouped {
    fn build(
        max_seq: AtomicU64,
        min_seq: [AtomicU64; ANON_AND_FILE],
        timestamps: [AtomicU64; MAX_NR_GENS],
        memcg: LruGenMemcgNode,
    ) -> Self {
        LruGenFolioGrouped {
            max_seq,
            min_seq,
            timestamps,
            memcg,
            folios: UnsafeCell::new(gen_folio_lists()),
            nr_pages: Default::default(),
            avg_refaulted: Default::default(),
            avg_total: Default::default(),
            protected: Default::default(),
            stats: CacheAligned(LruGenStats {
                evicted: Default::default(),
                refaulted: Default::default(),
            }),
        }
    }
}

impl_common!(
    LruGenFolioBase,
    "base",
    false,
    BASE_FIELDS,
    evicted,
    refaulted
);
impl_common!(
    LruGenFolioGrouped,
    "grouped",
    true,
    GROUPED_FIELDS,
    stats.0.evicted,
    stats.0.refaulted
);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::cacheline::line_of;
    use core::sync::atomic::Ordering;

    fn check<G: LruGenFolio>() {
        let g = G::new(true, 5);
        assert_eq!(g.max_seq().load(Ordering::Relaxed), 3);
        assert!(g.min_seq().iter().all(|s| s.load(Ordering::Relaxed) == 0));
        assert!(
            g.timestamps()
                .iter()
                .all(|t| t.load(Ordering::Relaxed) == 5)
        );
        assert!(g.memcg_node().enabled.load(Ordering::Relaxed));
        assert!(g.memcg_node().list.is_unhashed());
        let node_addr = core::ptr::from_ref(g.memcg_node()) as usize;
        assert_eq!(
            node_addr - core::ptr::from_ref(&g) as usize,
            G::MEMCG_NODE_OFFSET
        );
        let fields = G::layout_fields();
        assert_eq!(fields.len(), 16);
        for w in fields.windows(2) {
            assert!(
                w[0].offset + w[0].size <= w[1].offset,
                "{} overlaps",
                w[0].name
            );
        }
        assert!(fields.last().map(|f| f.offset + f.size).unwrap() <= core::mem::size_of::<G>());
    }

    #[test]
    fn both_layouts_construct() {
        check::<LruGenFolioBase>();
        check::<LruGenFolioGrouped>();
    }

    #[test]
    fn grouped_moves_stats_off_the_node_line() {
        let f = |fs: &[FieldDesc], n: &str| fs.iter().find(|d| d.name == n).copied().unwrap();
        let b = LruGenFolioBase::layout_fields();
        let g = LruGenFolioGrouped::layout_fields();
        assert_eq!(
            line_of(f(b, "refaulted").end() - 1),
            line_of(f(b, "enabled").offset)
        );
        assert_ne!(
            line_of(f(g, "refaulted").offset),
            line_of(f(g, "enabled").offset)
        );
        assert_eq!(f(g, "evicted").offset % 64, 0);
        assert!(
            core::mem::size_of::<LruGenFolioGrouped>() >= core::mem::size_of::<LruGenFolioBase>()
        );
    }
}
