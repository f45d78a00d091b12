//! Each `mem_cgroup_per_node` layout as the [`lru::LruvecHost`] of its lruvec, above both
//! the struct and the memcg.
//!
//! The host impl is where the lruvec's list code calls back into memcg: the per-zone sizes
//! are the struct's own (`lru_zone_size`, in its write-hot group), but a size change is
//! also a stat update through the lruvec (`__mod_lruvec_state()`, in
//! [`crate::memcontrol`]) and `parent_lruvec()` follows the `pn->memcg` back pointer to the
//! parent memcg. That is the one place the per-node struct needs the memcg that owns it, so
//! it sits in this child module of [`super`] (which can name the private `lruvec` and
//! `write_hot` fields, keeping the in-place construction argument of the safety comment
//! below): the struct and its layouts ([`super`]) stay below the memcg
//! ([`crate::memcontrol`]), which embeds them.
//!
//! Unsafe code here, and why: it implements `unsafe trait LruvecHost` for each
//! `mem_cgroup_per_node` layout (every lruvec is that struct's `lruvec` field, found by
//! offset) and turns that offset back into the memcg.
#![allow(unsafe_code)]

use super::{MemCgroupPerNodeBase, MemCgroupPerNodePaired, MemCgroupPerNodeV1};
use core::mem::offset_of;
use ksync::LockFamily;
use lru::lruvec::LruZoneSize;
use lru::{LruGenFolio, Lruvec, LruvecHost, PgData};

macro_rules! impl_lruvec_host {
    ($ty:ident) => {
        // SAFETY: `lruvec` is private to the pn module (this file is its child) and built
        // only in place in `MemCgroupPerNode::new` (as a field of the struct literal), so
        // every `Lruvec<$ty<F, G>>` is the `lruvec` field of a `$ty<F, G>`; `CacheAligned` is `repr(C)` and `Natural` is
        // `repr(transparent)`, both with the value at offset 0, so the lruvec is at
        // `offset_of!($ty<F, G>, lruvec)`.
        unsafe impl<F: LockFamily, G: LruGenFolio> LruvecHost for $ty<F, G> {
            type Family = F;
            type Gen = G;
            type Node = PgData<Self>;
            const LRUVEC_OFFSET: usize = offset_of!($ty<F, G>, lruvec);

            #[inline]
            fn lru_zone_size(&self) -> &LruZoneSize {
                &self.write_hot.lru_zone_size
            }

            /// `__update_lru_size()`'s `__mod_lruvec_state(lruvec, NR_LRU_BASE + lru, nr)`:
            /// the lruvec, memcg and node counters, through the lruvec (stat path A: this
            /// runs under lru_lock, where Linux always goes through the lruvec). On the
            /// running CPU, folded into the tree's CPU range.
            #[inline(always)]
            fn lru_size_changed(
                lruvec: &Lruvec<Self>,
                lru: lru::LruList,
                _zone: usize,
                delta: isize,
            ) {
                let _ = crate::memcontrol::mod_lruvec_state_this_cpu(
                    lruvec,
                    crate::stats::NodeStatItem::lru(lru),
                    delta as i64,
                );
            }

            /// The parent memcg's lruvec on this node (`parent_lruvec()`).
            fn parent_lruvec(&self) -> Option<&Lruvec<Self>> {
                // SAFETY: `memcg` is the back pointer set at allocation to the memcg that
                // owns this `mem_cgroup_per_node`, which outlives it; a memcg holds a
                // reference on its parent, so the parent outlives it too.
                let memcg = unsafe {
                    self.read_mostly
                        .0
                        .memcg
                        .cast::<crate::MemCgroup<Self>>()
                        .as_ref()
                };
                memcg.parent()?.lruvec(self.lruvec.0.node()).ok()
            }
        }
    };
}

impl_lruvec_host!(MemCgroupPerNodeBase);
impl_lruvec_host!(MemCgroupPerNodePaired);
impl_lruvec_host!(MemCgroupPerNodeV1);
