//! `struct mem_cgroup_per_node` in the two layouts of seed 001, and their placement.
//!
//! Linux groups the struct into cachelines: `memcg_pn_read_mostly` (memcg back pointer and
//! the lruvec stats pointers, read by every stat update), the `lruvec` (LRU list heads and
//! lru_lock, written constantly under the lock), `memcg_pn_write_hot` (lru_zone_size[] and
//! the reclaim iterator) and `memcg_pn_cold` (touched only at reparent/free).
//!
//! - [`MemCgroupPerNodeBase`] is the layout before seed 001: read_mostly, lruvec, write_hot,
//!   cold. When the struct starts on a 128-byte boundary the read-mostly line and the
//!   lruvec's first line (its list heads) form one 128-byte pair, so the adjacent-line
//!   prefetcher drags the lock holder's line into every stat update.
//! - [`MemCgroupPerNodePaired`] is seed 001 patch 1: cold moves right after read_mostly, so
//!   the read-mostly line is paired with the cold line instead.
//!
//! Both are compiled into every build; [`PnPlacement`] puts a struct at +0 or +64 within a
//! 128-byte pair so benchmarks show both pairings instead of leaving them to the allocator
//! ("depending on where struct mem_cgroup_per_node lands in its slab"). The compile-time
//! assertions below (and, per lruvec type, in [`assert_pn_layouts`]) prove each pairing.

mod alloc_box;
mod groups;
pub mod layout;

pub use alloc_box::{PnBox, PnPlacement};
pub use groups::{PnCold, PnReadMostly, PnWriteHot, ReclaimIter};

use crate::cacheline::{CACHELINE, CacheAligned, member_in_group, pair_of};
use crate::error::{MemcgError, MemcgId};
use crate::lru_glue::{Isolated, Moved};
use crate::stats::NodeStatItem;
use alloc::vec::Vec;
use core::mem::{offset_of, size_of};
use core::ptr::NonNull;

/// What `mem_cgroup_per_node` and memcg reclaim need from the lruvec they embed;
/// implemented for `lru::Lruvec` in [`crate::lru_glue`].
pub trait PnLruvec: lru::MemcgFifoEntry + Send + Sync + Sized + 'static {
    /// A new, empty lruvec for `node`, owned by memcg `memcg_id`, running MGLRU if `mglru`.
    fn new_for_memcg(node: usize, memcg_id: MemcgId, mglru: bool) -> Result<Self, MemcgError>;
    /// The node of this lruvec (`lruvec_pgdat(lruvec)->node_id`). This reads the lruvec's
    /// own line, next to lru_lock: the access seed 001 patch 2 removes from stat updates.
    fn node_id(&self) -> usize;
    /// Takes up to `nr` of the coldest evictable folios off the lruvec for reclaim
    /// (TestClearLRU, then unlink under lru_lock); MGLRU ages first if it must.
    fn reclaim(&self, nr: usize, swappiness: u8, now: u64) -> Isolated;
    /// Moves every folio to `dst`, relabelled with `dst_memcg` (reparenting).
    fn splice_to(&self, dst: &Self, dst_memcg: MemcgId) -> Vec<Moved>;
    /// Adds a folio that is on no list; returns the stat item it is counted under.
    fn add_folio(&self, folio: &'static lru::Folio) -> Result<NodeStatItem, MemcgError>;
    /// Isolates and unlinks a folio; returns the stat item it was counted under.
    fn del_folio(&self, folio: &'static lru::Folio) -> Result<NodeStatItem, MemcgError>;
}

/// Which order the groups are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PnLayoutKind {
    /// Before seed 001: read_mostly, lruvec, write_hot, cold.
    Base,
    /// After seed 001 patch 1: read_mostly, cold, lruvec, write_hot.
    Paired,
}

/// A `mem_cgroup_per_node` layout.
pub trait MemCgroupPerNode: Send + Sync + Sized + 'static {
    /// The embedded lruvec type.
    type Lruvec: PnLruvec;
    /// Which layout this is.
    const KIND: PnLayoutKind;
    /// Byte offset of the lruvec inside the struct (for `container_of`).
    const LRUVEC_OFFSET: usize;

    /// A new per-node info for `node` of the memcg at `memcg` (type-erased back pointer).
    fn new(
        memcg: NonNull<()>,
        memcg_id: MemcgId,
        node: usize,
        nr_cpus: usize,
        mglru: bool,
    ) -> Result<Self, MemcgError>;
    /// `memcg_pn_read_mostly`.
    fn read_mostly(&self) -> &PnReadMostly;
    /// `memcg_pn_cold`.
    fn cold(&self) -> &PnCold;
    /// The lruvec.
    fn lruvec(&self) -> &Self::Lruvec;
    /// `memcg_pn_write_hot`.
    fn write_hot(&self) -> &PnWriteHot;

    /// `container_of(lruvec, struct mem_cgroup_per_node, lruvec)`.
    ///
    /// # Safety
    ///
    /// `lruvec` must be the `lruvec` field of a live `Self`.
    unsafe fn from_lruvec(lruvec: &Self::Lruvec) -> &Self {
        let p = (lruvec as *const Self::Lruvec).cast::<u8>();
        // SAFETY: the caller guarantees `lruvec` sits LRUVEC_OFFSET bytes into a live
        // `Self`, so stepping back lands on that `Self`, valid for the same lifetime.
        unsafe { &*p.sub(Self::LRUVEC_OFFSET).cast::<Self>() }
    }
}

/// The layout before seed 001: the read-mostly line can pair with the LRU list heads.
#[repr(C)]
#[derive(Debug)]
pub struct MemCgroupPerNodeBase<V> {
    read_mostly: PnReadMostly,
    lruvec: CacheAligned<V>,
    write_hot: PnWriteHot,
    cold: PnCold,
}

/// Seed 001 patch 1: the read-mostly line is paired with the cold line.
#[repr(C)]
#[derive(Debug)]
pub struct MemCgroupPerNodePaired<V> {
    read_mostly: PnReadMostly,
    cold: PnCold,
    lruvec: CacheAligned<V>,
    write_hot: PnWriteHot,
}

macro_rules! impl_pn {
    ($ty:ident, $kind:expr) => {
        impl<V: PnLruvec> MemCgroupPerNode for $ty<V> {
            type Lruvec = V;
            const KIND: PnLayoutKind = $kind;
            const LRUVEC_OFFSET: usize = offset_of!($ty<V>, lruvec);

            fn new(
                memcg: NonNull<()>,
                memcg_id: MemcgId,
                node: usize,
                nr_cpus: usize,
                mglru: bool,
            ) -> Result<Self, MemcgError> {
                const { assert_pn_layouts::<V>() };
                Ok(Self {
                    read_mostly: PnReadMostly::new(memcg, memcg_id, node, nr_cpus),
                    lruvec: CacheAligned(V::new_for_memcg(node, memcg_id, mglru)?),
                    write_hot: PnWriteHot::default(),
                    cold: PnCold::default(),
                })
            }

            #[inline]
            fn read_mostly(&self) -> &PnReadMostly {
                &self.read_mostly
            }

            #[inline]
            fn cold(&self) -> &PnCold {
                &self.cold
            }

            #[inline]
            fn lruvec(&self) -> &V {
                &self.lruvec.0
            }

            #[inline]
            fn write_hot(&self) -> &PnWriteHot {
                &self.write_hot
            }
        }
    };
}

impl_pn!(MemCgroupPerNodeBase, PnLayoutKind::Base);
impl_pn!(MemCgroupPerNodePaired, PnLayoutKind::Paired);

// The pairing for the lruvec type the kernel and the report use.
#[cfg(not(loom))]
const _: () = {
    assert_pn_layouts::<lru::Lruvec<ksync::Ticket, lru::LruGenFolioGrouped>>();
    assert_pn_layouts::<lru::Lruvec<ksync::Ticket, lru::LruGenFolioBase>>();
};

// Group membership and group sizes do not depend on the lruvec type.
#[cfg(not(loom))]
const _: () = {
    use crate::cacheline::within_one_line;
    // memcg_pn_read_mostly: the back pointer and both stats pointers in one line.
    assert!(size_of::<PnReadMostly>() == CACHELINE);
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
    // memcg_pn_write_hot: the reclaim iterator and counters, one line.
    assert!(size_of::<PnWriteHot>() == CACHELINE);
};

/// The pairing each layout promises, for lruvec type `V`; a compile error if it fails.
///
/// Offsets are from the start of the struct, which [`PnPlacement::PairStart`] puts on a
/// 128-byte boundary:
/// - both: the memcg and stats pointers are members of read_mostly, read_mostly is line 0
///   and each group starts a line;
/// - base: read_mostly shares pair 0 with the lruvec's first line (the LRU list heads);
/// - paired: read_mostly shares pair 0 with cold, and the lruvec starts a later pair.
pub const fn assert_pn_layouts<V>() {
    macro_rules! member_in {
        ($ty:ty, $group:ident, $member:ident, $msize:expr, $gsize:expr) => {
            assert!(member_in_group(
                offset_of!($ty, $group.$member),
                $msize,
                offset_of!($ty, $group),
                $gsize
            ))
        };
    }
    macro_rules! members {
        ($ty:ty) => {
            let rm = size_of::<PnReadMostly>();
            member_in!($ty, read_mostly, memcg, size_of::<NonNull<()>>(), rm);
            member_in!(
                $ty,
                read_mostly,
                lruvec_stats_percpu,
                size_of::<crate::stats::LruvecStatsPercpu>(),
                rm
            );
            member_in!($ty, read_mostly, lruvec_stats, size_of::<usize>(), rm);
            member_in!($ty, cold, reparented_folios, 8, size_of::<PnCold>());
            member_in!(
                $ty,
                write_hot,
                iter,
                size_of::<ReclaimIter>(),
                size_of::<PnWriteHot>()
            );
        };
    }
    members!(MemCgroupPerNodeBase<V>);
    members!(MemCgroupPerNodePaired<V>);
    // base
    assert!(offset_of!(MemCgroupPerNodeBase<V>, read_mostly) == 0);
    assert!(offset_of!(MemCgroupPerNodeBase<V>, lruvec) == CACHELINE);
    assert!(pair_of(offset_of!(MemCgroupPerNodeBase<V>, lruvec)) == 0);
    assert!(offset_of!(MemCgroupPerNodeBase<V>, write_hot) % CACHELINE == 0);
    assert!(offset_of!(MemCgroupPerNodeBase<V>, cold) % CACHELINE == 0);
    assert!(
        offset_of!(MemCgroupPerNodeBase<V>, cold)
            == offset_of!(MemCgroupPerNodeBase<V>, write_hot) + size_of::<PnWriteHot>()
    );
    // paired
    assert!(offset_of!(MemCgroupPerNodePaired<V>, read_mostly) == 0);
    assert!(offset_of!(MemCgroupPerNodePaired<V>, cold) == CACHELINE);
    assert!(pair_of(offset_of!(MemCgroupPerNodePaired<V>, cold)) == 0);
    assert!(offset_of!(MemCgroupPerNodePaired<V>, lruvec) == 2 * CACHELINE);
    assert!(pair_of(offset_of!(MemCgroupPerNodePaired<V>, lruvec)) == 1);
    assert!(offset_of!(MemCgroupPerNodePaired<V>, write_hot) % CACHELINE == 0);
}
