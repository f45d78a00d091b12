//! `SWAP_CLUSTER_MAX` (include/linux/swap.h): the reclaim batch, a leaf both layers read.
//!
//! Reclaim ([`crate::vmscan`], [`crate::vmscan_classic`]) isolates and moves folios in
//! batches of this many per lock hold, and the lruvec's cost accounting
//! ([`crate::lruvec::Lruvec::lru_note_cost`]) weighs one I/O as this many
//! rotations. The constant lives below both, as in Linux, where it sits in a header that
//! mm/swap.c and mm/vmscan.c include; defining it in vmscan made the lruvec import the
//! reclaim layer above it.

/// Folios moved or isolated per lock hold, and the I/O weight of `lru_note_cost()`
/// (`SWAP_CLUSTER_MAX`).
pub const SWAP_CLUSTER_MAX: usize = 32;
