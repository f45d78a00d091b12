//! The struct a lruvec is embedded in, and the per-zone LRU sizes it keeps for it.
//!
//! In Linux a memcg's lruvec sits inside `struct mem_cgroup_per_node`, and its per-zone
//! list sizes are not in the lruvec but after it, in `mem_cgroup_per_node::lru_zone_size`
//! (the write-hot group the lru_lock holder updates on every add and delete):
//! `mem_cgroup_update_lru_size()` reaches them with `container_of(lruvec, struct
//! mem_cgroup_per_node, lruvec)`. [`LruvecHost`] is that container, as a type parameter of
//! [`Lruvec`]: the list code in this crate updates the host's [`LruZoneSize`], wherever the
//! host keeps it. memcg implements it for both `mem_cgroup_per_node` layouts;
//! [`LruvecStandalone`](super::LruvecStandalone) is the host of a lruvec that belongs to
//! no memcg (the tests and benchmarks of this crate), with its sizes right after the
//! lruvec as memcg's are.
//!
//! The host also names the lruvec's lock family, `lru_gen_folio` layout and node type
//! ([`LruvecNode`]), so a lruvec type is `Lruvec<H>` with a single parameter.

use super::{LruList, Lruvec, LruvecNode, NR_LRU_LISTS};
use crate::folio::MAX_NR_ZONES;
use crate::lru_gen::LruGenFolio;
use crate::sync::atomic::{AtomicUsize, Ordering};
use ksync::LockFamily;

/// `lru_zone_size[MAX_NR_ZONES][NR_LRU_LISTS]`: folios per zone and list, written under
/// lru_lock, read locklessly.
pub type LruZoneSize = [[AtomicUsize; NR_LRU_LISTS]; MAX_NR_ZONES];

/// Zeroed [`LruZoneSize`].
#[must_use]
pub fn new_lru_zone_size() -> LruZoneSize {
    core::array::from_fn(|_| core::array::from_fn(|_| AtomicUsize::new(0)))
}

/// Reads `lru_zone_size[zone][lru]`.
#[must_use]
pub fn zone_size(sizes: &LruZoneSize, lru: LruList, zone: usize) -> usize {
    sizes[zone % MAX_NR_ZONES][lru.idx()].load(Ordering::Relaxed)
}

/// The container of a [`Lruvec`]: where its per-zone sizes live, which lock family and
/// `lru_gen_folio` layout it uses.
///
/// # Safety
///
/// Every `Lruvec<Self>` that is used (any `&self` method called on it) is the field at
/// byte offset [`LruvecHost::LRUVEC_OFFSET`] of a live `Self`, for as long as it is used:
/// the lruvec code recovers `&Self` from `&Lruvec<Self>` by subtracting the offset
/// (`container_of`). Implementors make that true by keeping the lruvec field private and
/// building it only in place ([`Lruvec::new`] is `unsafe` with the same contract).
pub unsafe trait LruvecHost: Sized + Send + Sync + 'static {
    /// The lock family of the lruvec's lru_lock (and of its node's locks).
    type Family: LockFamily;
    /// The `lru_gen_folio` layout (seed 000's base or grouped).
    type Gen: LruGenFolio;
    /// The node type the lruvec points at (`lruvec->pgdat`): [`crate::pgdat::PgData`]
    /// of this host, for every host in the workspace.
    type Node: LruvecNode<Self::Family>;
    /// Byte offset of the `Lruvec<Self>` field inside `Self`.
    const LRUVEC_OFFSET: usize;
    /// The lruvec's per-zone list sizes (`mem_cgroup_per_node::lru_zone_size`).
    fn lru_zone_size(&self) -> &LruZoneSize;

    /// `__update_lru_size()`'s statistics: `lruvec`'s list `lru` in zone `zone` changed by
    /// `delta` folios, under its lru_lock (Linux updates `NR_LRU_BASE + lru` through
    /// `__mod_lruvec_state(lruvec, ...)` there, for classic lists and for MGLRU's
    /// active/inactive view alike). Nothing by default.
    fn lru_size_changed(_lruvec: &Lruvec<Self>, _lru: LruList, _zone: usize, _delta: isize) {}

    /// `parent_lruvec()`: the lruvec of the parent memcg on the same node, if any (costs
    /// noted by [`Lruvec::lru_note_cost`] go up the hierarchy). None by default.
    fn parent_lruvec(&self) -> Option<&Lruvec<Self>> {
        None
    }
}
