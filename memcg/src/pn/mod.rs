//! `struct mem_cgroup_per_node` in the layouts of seeds 001 and 000, and their placement.
//!
//! Linux groups the struct into cachelines: `memcg_pn_read_mostly` (memcg back pointer and
//! the lruvec stats pointers, read by every stat update), the `lruvec` (LRU list heads and
//! lru_lock, written constantly under the lock), `memcg_pn_write_hot` (`lru_zone_size[][]`
//! and the reclaim iterator; the lock holder writes `lru_zone_size` on every LRU add and
//! delete) and `memcg_pn_cold` (touched only at reparent/free).
//!
//! - [`MemCgroupPerNodeBase`] is the layout before seed 001: read_mostly, lruvec, write_hot,
//!   cold. When the struct starts on a 128-byte boundary the read-mostly line and the
//!   lruvec's first line (its list heads) form one 128-byte pair, so the adjacent-line
//!   prefetcher drags the lock holder's line into every stat update.
//! - [`MemCgroupPerNodePaired`] is seed 001 patch 1: cold moves right after read_mostly, so
//!   the read-mostly line is paired with the cold line instead.
//! - [`MemCgroupPerNodeV1`] is the struct as mainline builds it with CONFIG_MEMCG_V1, the
//!   kernel seed 000 measured: the read-mostly fields, then the memcg-v1 soft-limit fields
//!   as a buffer ([`PnSoftLimit`]), then the lruvec at its natural alignment (Linux's
//!   `struct lruvec` is not cacheline aligned), then `lru_zone_size` on a new line. Linux
//!   declares the lruvec at 72 ([`mainline`]), where only the working-set tier of the
//!   base `lru_gen_folio`'s file `refaulted[]` shares the line of
//!   `enabled`/`gen`/`seg`/`list`; [`SEED000_SHIFT`] moves it to 96, 32 bytes into line 1,
//!   where the whole file half does, as seed 000 says of its kernel: the sharing the patch
//!   removes. With the grouped `lru_gen_folio` (the patch) the lruvec becomes 64-byte
//!   aligned, as in Linux, and the struct grows.
//!
//! All three are compiled into every build. Each is the [`lru::LruvecHost`] of its lruvec
//! (the impls are in the child module `host`, the one part that calls up into the memcg):
//! the lruvec's list code updates `lru_zone_size` here, in the write-hot group after the
//! lruvec, as `mem_cgroup_update_lru_size()` does through `container_of`. The compile-time
//! assertions below are written against the embedded offsets (lrugen inside the lruvec
//! inside `mem_cgroup_per_node`) with the kernel's lock ([`ksync::Ticket`]), so each
//! pairing they state holds for the kernel's build. [`PnPlacement`] puts the structs at +0
//! or +64 of a 128-byte pair, so benchmarks show both pairings.
//!
//! Unsafe code here, and why: the layouts build their lruvec in place with `Lruvec::new`,
//! whose contract the `LruvecHost` impl in host.rs relies on.
#![allow(unsafe_code)]

mod groups;
mod host;
pub mod layout;
pub mod mainline;
mod slab;

pub use groups::{PnCold, PnReadMostly, PnSoftLimit, PnWriteHot, ReclaimIter, SEED000_SHIFT};
pub use slab::{PN_PER_CHUNK, PnCache, PnPlacement};

#[cfg(not(loom))]
use crate::cacheline::member_in_group;
use crate::cacheline::{CACHELINE, CacheAligned, pair_of};
use crate::error::MemcgId;
use core::mem::{offset_of, size_of};
use core::ptr::NonNull;
use ksync::LockFamily;
#[cfg(not(loom))]
use lru::lruvec::LruZoneSize;
use lru::{LruGenFolio, LruMode, Lruvec, LruvecHost, LruvecLock, PgData};

/// Which order the groups are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PnLayoutKind {
    /// Before seed 001: read_mostly, lruvec, write_hot, cold.
    Base,
    /// After seed 001 patch 1: read_mostly, cold, lruvec, write_hot.
    Paired,
    /// Mainline with CONFIG_MEMCG_V1 (seed 000's kernel): read_mostly, the v1 soft-limit
    /// fields, the lruvec at its natural alignment, write_hot, cold.
    V1,
}

/// What a new `mem_cgroup_per_node` is built from.
#[derive(Debug)]
pub struct PnInit<'a, P: LruvecHost> {
    /// Back pointer to the owning `struct mem_cgroup` (type-erased).
    pub memcg: NonNull<()>,
    /// The memcg's id.
    pub memcg_id: MemcgId,
    /// The node (its `pglist_data`).
    pub pgdat: &'static PgData<P>,
    /// CPUs the per-CPU stats are built for.
    pub nr_cpus: usize,
    /// Classic or MGLRU lruvec.
    pub mode: LruMode,
    /// Own or node lru_lock (seed 004).
    pub lock: LruvecLock,
    /// Aging clock at creation.
    pub now: u64,
    /// Ties the init to the caller's borrow.
    pub _marker: core::marker::PhantomData<&'a ()>,
}

/// A `mem_cgroup_per_node` layout: the host of its lruvec, which points at a [`PgData`]
/// (`lruvec->pgdat`).
pub trait MemCgroupPerNode: LruvecHost<Node = PgData<Self>> {
    /// Which layout this is.
    const KIND: PnLayoutKind;
    /// Byte offset of `memcg_pn_read_mostly`.
    const READ_MOSTLY_OFFSET: usize;
    /// Byte offset of `memcg_pn_cold`.
    const COLD_OFFSET: usize;
    /// Byte offset of `memcg_pn_write_hot` (and so of `lru_zone_size`).
    const WRITE_HOT_OFFSET: usize;
    /// Byte offset of the memcg-v1 soft-limit fields, in the layout that has them.
    const SOFT_LIMIT_OFFSET: Option<usize>;

    /// A new per-node info (built in place: the lruvec is created inside it).
    fn new(init: PnInit<'_, Self>) -> Self;
    /// `memcg_pn_read_mostly`.
    fn read_mostly(&self) -> &PnReadMostly;
    /// `memcg_pn_cold`.
    fn cold(&self) -> &PnCold;
    /// The lruvec.
    fn lruvec(&self) -> &Lruvec<Self>;
    /// `memcg_pn_write_hot`.
    fn write_hot(&self) -> &PnWriteHot;

    /// `container_of(lruvec, struct mem_cgroup_per_node, lruvec)`.
    #[inline]
    fn from_lruvec(lruvec: &Lruvec<Self>) -> &Self {
        lruvec.host()
    }
}

/// A field at its natural alignment: the counterpart of [`CacheAligned`] for the layout
/// that keeps Linux's unaligned `struct lruvec` and read-mostly fields.
#[repr(transparent)]
#[derive(Debug)]
struct Natural<T>(T);

/// The layout before seed 001: the read-mostly line can pair with the LRU list heads.
#[repr(C)]
pub struct MemCgroupPerNodeBase<F: LockFamily, G: LruGenFolio> {
    read_mostly: CacheAligned<PnReadMostly>,
    lruvec: CacheAligned<Lruvec<MemCgroupPerNodeBase<F, G>>>,
    write_hot: PnWriteHot,
    cold: PnCold,
}

/// Seed 001 patch 1: the read-mostly line is paired with the cold line.
#[repr(C)]
pub struct MemCgroupPerNodePaired<F: LockFamily, G: LruGenFolio> {
    read_mostly: CacheAligned<PnReadMostly>,
    cold: PnCold,
    lruvec: CacheAligned<Lruvec<MemCgroupPerNodePaired<F, G>>>,
    write_hot: PnWriteHot,
}

/// Mainline's struct with CONFIG_MEMCG_V1 (seed 000's kernel): the soft-limit fields
/// between the read-mostly fields and the lruvec, the lruvec unaligned.
#[repr(C)]
pub struct MemCgroupPerNodeV1<F: LockFamily, G: LruGenFolio> {
    read_mostly: Natural<PnReadMostly>,
    soft_limit: PnSoftLimit,
    lruvec: Natural<Lruvec<MemCgroupPerNodeV1<F, G>>>,
    write_hot: PnWriteHot,
    cold: PnCold,
}

macro_rules! impl_pn {
    ($ty:ident, $kind:expr, $wrap:ident, { $($extra:ident: $init:expr),* }) => {
        impl_pn!($ty, $kind, $wrap, { $($extra: $init),* }, None);
    };
    ($ty:ident, $kind:expr, $wrap:ident, { $($extra:ident: $init:expr),* }, $soft:expr) => {
        impl<F: LockFamily, G: LruGenFolio> MemCgroupPerNode for $ty<F, G> {
            const KIND: PnLayoutKind = $kind;
            const READ_MOSTLY_OFFSET: usize = offset_of!($ty<F, G>, read_mostly);
            const COLD_OFFSET: usize = offset_of!($ty<F, G>, cold);
            const WRITE_HOT_OFFSET: usize = offset_of!($ty<F, G>, write_hot);
            const SOFT_LIMIT_OFFSET: Option<usize> = $soft;

            fn new(init: PnInit<'_, Self>) -> Self {
                const { assert_pn_layouts::<$ty<F, G>>() };
                Self {
                    read_mostly: $wrap(PnReadMostly::new(init.memcg, init.nr_cpus)),
                    $($extra: $init,)*
                    // SAFETY: built in place as the `lruvec` field of `Self` (see the
                    // `LruvecHost` impl in host.rs).
                    lruvec: $wrap(unsafe {
                        Lruvec::new(init.memcg_id, init.pgdat, init.mode, init.lock, init.now)
                    }),
                    write_hot: PnWriteHot::default(),
                    cold: PnCold::default(),
                }
            }

            #[inline]
            fn read_mostly(&self) -> &PnReadMostly {
                &self.read_mostly.0
            }

            #[inline]
            fn cold(&self) -> &PnCold {
                &self.cold
            }

            #[inline]
            fn lruvec(&self) -> &Lruvec<Self> {
                &self.lruvec.0
            }

            #[inline]
            fn write_hot(&self) -> &PnWriteHot {
                &self.write_hot
            }
        }

        impl<F: LockFamily, G: LruGenFolio> core::fmt::Debug for $ty<F, G> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("read_mostly", &self.read_mostly.0)
                    .field("lruvec", &self.lruvec.0)
                    .finish_non_exhaustive()
            }
        }
    };
}

impl_pn!(MemCgroupPerNodeBase, PnLayoutKind::Base, CacheAligned, {});
impl_pn!(
    MemCgroupPerNodePaired,
    PnLayoutKind::Paired,
    CacheAligned,
    {}
);
impl_pn!(
    MemCgroupPerNodeV1,
    PnLayoutKind::V1,
    Natural,
    { soft_limit: PnSoftLimit::default() },
    Some(offset_of!(MemCgroupPerNodeV1<F, G>, soft_limit))
);

/// The layouts the kernel and the reports instantiate: ksync's ticket lock, both
/// `lru_gen_folio` layouts.
#[cfg(not(loom))]
pub mod kernel_types {
    /// Base layout, grouped `lru_gen_folio`.
    pub type BaseGrouped = super::MemCgroupPerNodeBase<ksync::Ticket, lru::LruGenFolioGrouped>;
    /// Paired layout, grouped `lru_gen_folio`.
    pub type PairedGrouped = super::MemCgroupPerNodePaired<ksync::Ticket, lru::LruGenFolioGrouped>;
    /// Base layout, base `lru_gen_folio`.
    pub type BaseBase = super::MemCgroupPerNodeBase<ksync::Ticket, lru::LruGenFolioBase>;
    /// Paired layout, base `lru_gen_folio`.
    pub type PairedBase = super::MemCgroupPerNodePaired<ksync::Ticket, lru::LruGenFolioBase>;
    /// Mainline (CONFIG_MEMCG_V1), base `lru_gen_folio`: seed 000's "before".
    pub type V1Base = super::MemCgroupPerNodeV1<ksync::Ticket, lru::LruGenFolioBase>;
    /// Mainline (CONFIG_MEMCG_V1), grouped `lru_gen_folio`: seed 000's patch.
    pub type V1Grouped = super::MemCgroupPerNodeV1<ksync::Ticket, lru::LruGenFolioGrouped>;
}

// The pairings, for the types the kernel instantiates (a failure is a compile error).
#[cfg(not(loom))]
const _: () = {
    use kernel_types::*;
    assert_pn_layouts::<BaseGrouped>();
    assert_pn_layouts::<PairedGrouped>();
    assert_pn_layouts::<BaseBase>();
    assert_pn_layouts::<PairedBase>();
    assert_pn_layouts::<V1Base>();
    assert_pn_layouts::<V1Grouped>();
};

// Group membership and group sizes do not depend on the lruvec type.
#[cfg(not(loom))]
const _: () = {
    use crate::cacheline::within_one_line;
    // memcg_pn_read_mostly: the back pointer and both stats pointers in one line (seed 001's
    // layouts give it the whole line).
    assert!(size_of::<PnReadMostly>() <= CACHELINE);
    assert!(size_of::<CacheAligned<PnReadMostly>>() == CACHELINE);
    assert!(within_one_line(
        offset_of!(PnReadMostly, memcg),
        size_of::<NonNull<()>>()
    ));
    assert!(
        offset_of!(PnReadMostly, lruvec_stats_percpu)
            + size_of::<crate::stats::LruvecStatsPercpu>()
            <= CACHELINE
    );
    assert!(offset_of!(PnReadMostly, lruvec_stats) + size_of::<usize>() <= CACHELINE);
    // memcg_pn_cold: one line.
    assert!(size_of::<PnCold>() == CACHELINE);
    // memcg_pn_write_hot: lru_zone_size first (written by the lock holder), then the
    // reclaim iterator and counters; four lines (lru_zone_size is 5 x 5 words).
    assert!(offset_of!(PnWriteHot, lru_zone_size) == 0);
    assert!(size_of::<PnWriteHot>() == 4 * CACHELINE);
};

/// The pairing each layout promises for host `P` (a `mem_cgroup_per_node` type), checked
/// at compile time on the embedded offsets (lrugen inside the lruvec inside `P`), with the
/// lock type `P` is built with.
///
/// Offsets are from the start of the struct, which [`PnPlacement::PairStart`] puts on a
/// 128-byte boundary (at +64 every line moves to the other half of its pair):
/// - all: the struct is a whole number of lines (as Linux's: its lruvec ends in
///   `mm_state`, `pgdat` and `zswap_lruvec_state`, an odd number of lines), which the
///   slab cache pads to whole pairs ([`PnCache`]); `lru_zone_size` starts the first line
///   after the lruvec;
/// - base at +0 (seed 001's "before"): line 0 (read_mostly) and line 1, the first line of
///   the LRU list heads, are one pair;
/// - paired at +0 (seed 001 patch 1): line 1 is the cold group, the lruvec starts pair 1;
/// - v1 (mainline, seed 000's kernel): the soft-limit fields follow the read-mostly fields
///   directly and the lruvec follows them at its own alignment;
/// - all: `lruvec->pgdat`, near the end of the lruvec, which every path-A stat update
///   reads, is on the line right before `lru_zone_size` (written under the lock on every
///   LRU add and delete), so at one of the two placements they are one pair (the layout
///   report says which);
/// - seed 000: with the grouped `lru_gen_folio`, `evicted[]` and `refaulted[]` start a
///   line and share none with the FIFO node (`enabled`/`gen`/`seg`/`bin`/`list`); with the
///   base one, `refaulted[]` ends on the line right before the node or on the node's own
///   line (they are one pair at one of the two placements at least), and in the v1 layout
///   (the seed's "before" as measured) the file type's counters of every tier share the
///   node's line, as the seed says of its kernel.
pub const fn assert_pn_layouts<P: MemCgroupPerNode>() {
    use crate::cacheline::{line_of, share_line};
    let lv = P::LRUVEC_OFFSET;
    let lrugen = lv + Lruvec::<P>::LRUGEN_OFFSET;
    let pgdat = lv + Lruvec::<P>::PGDAT_OFFSET;
    // A whole number of lines, as Linux's (31 lines before seed 000's patch, 33 after):
    // the slab cache pads each object to the next pair, so every object of a cache keeps
    // the cache's placement ([`PnCache`]).
    assert!(size_of::<P>().is_multiple_of(CACHELINE));
    assert!(P::WRITE_HOT_OFFSET == (lv + size_of::<Lruvec<P>>()).next_multiple_of(CACHELINE));
    match P::KIND {
        PnLayoutKind::Base => {
            assert!(lv == CACHELINE);
            assert!(pair_of(lv) == 0);
        }
        PnLayoutKind::Paired => {
            assert!(P::COLD_OFFSET == CACHELINE);
            assert!(lv == 2 * CACHELINE);
            assert!(pair_of(lv) == 1);
        }
        PnLayoutKind::V1 => {
            let soft_limit_end = (size_of::<PnReadMostly>()
                .next_multiple_of(core::mem::align_of::<PnSoftLimit>())
                + size_of::<PnSoftLimit>())
            .next_multiple_of(core::mem::align_of::<Lruvec<P>>());
            assert!(P::READ_MOSTLY_OFFSET == 0);
            assert!(lv == soft_limit_end);
            assert!(P::COLD_OFFSET == P::WRITE_HOT_OFFSET + size_of::<PnWriteHot>());
            assert_v1_against_mainline::<P>();
        }
    }
    assert!(line_of(pgdat) + 1 == line_of(P::WRITE_HOT_OFFSET));
    let node = lrugen + <P::Gen as LruGenFolio>::MEMCG_NODE_OFFSET;
    let node_size = size_of::<lru::LruGenMemcgNode>();
    let tier_hist = size_of::<lru::lru_gen::TierHist>();
    let evicted = lrugen + <P::Gen as LruGenFolio>::EVICTED_OFFSET;
    let refaulted = lrugen + <P::Gen as LruGenFolio>::REFAULTED_OFFSET;
    if <P::Gen as LruGenFolio>::STATS_GROUPED {
        assert!(!share_line(evicted, tier_hist, node, node_size));
        assert!(!share_line(refaulted, tier_hist, node, node_size));
        assert!(evicted.is_multiple_of(CACHELINE));
    } else {
        let last = line_of(refaulted + tier_hist - 1);
        assert!(last == line_of(node) || last + 1 == line_of(node));
        if matches!(P::KIND, PnLayoutKind::V1) {
            // Seed 000's kernel: every file tier's counter on the node's line.
            let mut tier = 0;
            while tier < lru::lru_gen::MAX_NR_TIERS {
                let at = refaulted + refaulted_index(lru::folio::LRU_GEN_FILE, tier);
                assert!(share_line(at, 8, node, node_size));
                tier += 1;
            }
        }
    }
}

/// Mainline's layout against Linux's declarations ([`mainline`]): the lruvec and
/// `lrugen` where the declarations put them, but for [`SEED000_SHIFT`] before a base
/// `lru_gen_folio` (none remains before the line-aligned grouped one); the counters and
/// the FIFO node at the declared offsets in `lru_gen_folio`; and so every counter of
/// `evicted[]` and `refaulted[]` on the node's line exactly when it is there in the
/// declared layout moved by the same shift.
const fn assert_v1_against_mainline<P: MemCgroupPerNode>() {
    let grouped = <P::Gen as LruGenFolio>::STATS_GROUPED;
    let (pn, lruvec) = if grouped {
        (mainline::PN_PATCHED, mainline::LRUVEC_PATCHED)
    } else {
        (mainline::PN_BASE, mainline::LRUVEC_BASE)
    };
    let shift = if grouped { 0 } else { SEED000_SHIFT };
    assert!(P::LRUVEC_OFFSET == pn.offset("lruvec") + shift);
    assert!(Lruvec::<P>::LRUGEN_OFFSET == lruvec.offset("lrugen"));
    assert!(Lruvec::<P>::PGDAT_OFFSET == lruvec.offset("pgdat"));
    assert!(size_of::<Lruvec<P>>() == lruvec.size);
    let lrugen = mainline::lrugen_offset(grouped);
    assert!(P::LRUVEC_OFFSET + Lruvec::<P>::LRUGEN_OFFSET == lrugen + shift);
    assert!(
        lrugen + <P::Gen as LruGenFolio>::EVICTED_OFFSET
            == mainline::lrugen_member(grouped, "evicted")
    );
    assert!(
        lrugen + <P::Gen as LruGenFolio>::REFAULTED_OFFSET
            == mainline::lrugen_member(grouped, "refaulted")
    );
    assert!(
        lrugen + <P::Gen as LruGenFolio>::MEMCG_NODE_OFFSET
            == mainline::lrugen_member(grouped, "enabled")
    );
    let mut ty = 0;
    while ty < lru::folio::ANON_AND_FILE {
        let mut tier = 0;
        while tier < lru::lru_gen::MAX_NR_TIERS {
            let mut evicted = 0;
            while evicted < 2 {
                let declared =
                    mainline::counter_shares_node_line(grouped, shift, evicted == 1, ty, tier);
                assert!(tier_shares_node_line::<P>(evicted == 1, ty, tier) == declared);
                evicted += 1;
            }
            tier += 1;
        }
        ty += 1;
    }
}

/// Whether counter `refaulted[0][ty][tier]` (`evicted[0][ty][tier]` when `evicted`) of
/// layout `P`'s lruvec shares a 64-byte line with its `lru_gen_folio`'s FIFO node
/// (`enabled`/`gen`/`seg`/`list`): seed 000's sharing, per counter. The struct is at least
/// 64-byte aligned, so a line boundary of the struct is one of memory.
#[must_use]
pub const fn tier_shares_node_line<P: MemCgroupPerNode>(
    evicted: bool,
    ty: usize,
    tier: usize,
) -> bool {
    let lrugen = P::LRUVEC_OFFSET + Lruvec::<P>::LRUGEN_OFFSET;
    let array = if evicted {
        <P::Gen as LruGenFolio>::EVICTED_OFFSET
    } else {
        <P::Gen as LruGenFolio>::REFAULTED_OFFSET
    };
    let node = lrugen + <P::Gen as LruGenFolio>::MEMCG_NODE_OFFSET;
    crate::cacheline::share_line(
        lrugen + array + refaulted_index(ty, tier),
        size_of::<u64>(),
        node,
        size_of::<lru::LruGenMemcgNode>(),
    )
}

/// Byte offset of `refaulted[0][type][tier]` (`evicted[]` alike) inside its array: the
/// history generation, then the type, then the tier, eight bytes each.
pub const fn refaulted_index(ty: usize, tier: usize) -> usize {
    (ty * lru::lru_gen::MAX_NR_TIERS + tier) * size_of::<u64>()
}

/// Compile-time checks that need the concrete structs (field offsets).
#[cfg(not(loom))]
macro_rules! assert_pn_fields {
    ($ty:ty, $kind:ident) => {
        const _: () = {
            type T = $ty;
            let rm = size_of::<PnReadMostly>();
            assert!(member_in_group(
                offset_of!(T, read_mostly.0.memcg),
                size_of::<NonNull<()>>(),
                offset_of!(T, read_mostly),
                rm
            ));
            assert!(offset_of!(T, read_mostly) == 0);
            assert!(offset_of!(T, cold) % CACHELINE == 0);
            assert!(offset_of!(T, write_hot) % CACHELINE == 0);
            // lru_zone_size follows the lruvec, in write_hot, on the next line.
            assert!(
                offset_of!(T, write_hot)
                    == (offset_of!(T, lruvec) + size_of::<Lruvec<T>>()).next_multiple_of(CACHELINE)
            );
            assert!(member_in_group(
                offset_of!(T, write_hot.lru_zone_size),
                size_of::<LruZoneSize>(),
                offset_of!(T, write_hot),
                size_of::<PnWriteHot>()
            ));
    assert_pn_fields!(@$kind T);
        };
    };
    (@Base $t:ty) => {
        assert!(offset_of!($t, cold) == offset_of!($t, write_hot) + size_of::<PnWriteHot>());
        assert!(pair_of(offset_of!($t, lruvec)) == 0);
    };
    (@Paired $t:ty) => {
        assert!(offset_of!($t, cold) == CACHELINE);
        assert!(pair_of(offset_of!($t, cold)) == 0);
        assert!(pair_of(offset_of!($t, lruvec)) == 1);
    };
    (@V1 $t:ty) => {
        // Linux's order: read-mostly fields, the soft-limit buffer, the lruvec.
        assert!(offset_of!($t, soft_limit) == size_of::<PnReadMostly>());
        assert!(offset_of!($t, lruvec) >= offset_of!($t, soft_limit) + size_of::<PnSoftLimit>());
        assert!(offset_of!($t, cold) == offset_of!($t, write_hot) + size_of::<PnWriteHot>());
    };
}

#[cfg(not(loom))]
assert_pn_fields!(kernel_types::BaseGrouped, Base);
#[cfg(not(loom))]
assert_pn_fields!(kernel_types::BaseBase, Base);
#[cfg(not(loom))]
assert_pn_fields!(kernel_types::PairedGrouped, Paired);
#[cfg(not(loom))]
assert_pn_fields!(kernel_types::PairedBase, Paired);
#[cfg(not(loom))]
assert_pn_fields!(kernel_types::V1Base, V1);
#[cfg(not(loom))]
assert_pn_fields!(kernel_types::V1Grouped, V1);
