//! The host of a lruvec that belongs to no memcg: the lruvec followed by its zone sizes.
//!
//! The tests and benchmarks of this crate build lruvecs outside any
//! `mem_cgroup_per_node`; [`LruvecStandalone`] lays them out as memcg does (the lruvec,
//! then `lru_zone_size`) and points them at a [`PgData`] of its own type. It sits above
//! both the lruvec and the node, as a user of the two: the lruvec itself names its node
//! only through [`LruvecNode`](super::LruvecNode).
//!
//! Unsafe code here, and why: it implements `unsafe trait LruvecHost` (every lruvec of this
//! host is the `lruvec` field of a `LruvecStandalone`, found by offset) and builds that
//! field in place with `Lruvec::new`.
#![allow(unsafe_code)]

use super::{LruZoneSize, Lruvec, LruvecHost, LruvecLock, new_lru_zone_size};
use crate::LruMode;
use crate::lru_gen::LruGenFolio;
use crate::lru_gen_folio::LruGenFolioGrouped;
use crate::pgdat::PgData;
use ksync::LockFamily;

/// The host of a lruvec that belongs to no `mem_cgroup_per_node`: the lruvec followed by its
/// zone sizes, as memcg lays them out.
#[repr(C)]
pub struct LruvecStandalone<F: LockFamily, G: LruGenFolio = LruGenFolioGrouped> {
    lruvec: Lruvec<LruvecStandalone<F, G>>,
    lru_zone_size: LruZoneSize,
}

// SAFETY: `lruvec` is private and only built in place by `new` below, so every
// `Lruvec<LruvecStandalone<F, G>>` is the `lruvec` field of a `LruvecStandalone`; the offset
// is computed by `offset_of!`.
unsafe impl<F: LockFamily, G: LruGenFolio> LruvecHost for LruvecStandalone<F, G> {
    type Family = F;
    type Gen = G;
    type Node = PgData<Self>;
    const LRUVEC_OFFSET: usize = core::mem::offset_of!(LruvecStandalone<F, G>, lruvec);

    fn lru_zone_size(&self) -> &LruZoneSize {
        &self.lru_zone_size
    }
}

impl<F: LockFamily, G: LruGenFolio> LruvecStandalone<F, G> {
    /// An empty lruvec for memcg `memcg_id` on `pgdat`'s node, owning its lru_lock or
    /// sharing the node's (`lock`); `now` stamps the first generations.
    pub fn new(
        memcg_id: u16,
        pgdat: &'static PgData<Self>,
        mode: LruMode,
        lock: LruvecLock,
        now: u64,
    ) -> Self {
        LruvecStandalone {
            // SAFETY: the lruvec is built in place as the `lruvec` field of the returned
            // value, which is the contract of `Lruvec::new` and of `LruvecHost`.
            lruvec: unsafe { Lruvec::new(memcg_id, pgdat, mode, lock, now) },
            lru_zone_size: new_lru_zone_size(),
        }
    }
}

impl<F: LockFamily, G: LruGenFolio> core::ops::Deref for LruvecStandalone<F, G> {
    type Target = Lruvec<LruvecStandalone<F, G>>;

    fn deref(&self) -> &Self::Target {
        &self.lruvec
    }
}

impl<F: LockFamily, G: LruGenFolio> core::fmt::Debug for LruvecStandalone<F, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.lruvec, f)
    }
}
