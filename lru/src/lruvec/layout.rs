//! The lruvec's pahole table for [`crate::layout`] and its compile-time placement checks.
//!
//! Generic over the host, so memcg can print the lruvec at its offsets inside
//! `mem_cgroup_per_node`; `lrugen` can be expanded in place to show which line each MGLRU
//! field lands on. Groups follow the writers: `lists` (list heads and `lru_lock`, written
//! under the lock), `cost` (`anon_cost`, `file_cost`, `refaults`: reclaim, under the lock),
//! `nonresident` (the classic workingset clock, lockless atomic adds), `identity` (the
//! flags word, immutable), `mm_walk` (`mm_state`, unused here), `pgdat` (the node pointer,
//! immutable, read by every path-A stat update) and `zswap` (`zswap_lruvec_state`, unused
//! here).
//!
//! Unsafe code here, and why: it implements the memcg FIFO's `unsafe trait MemcgFifoEntry`,
//! whose contract (the FIFO node is the field at `MEMCG_NODE_OFFSET` of the lruvec) only
//! this file, which computes that offset, can promise.
#![allow(unsafe_code)]

use super::{Lruvec, LruvecHost};
use crate::layout::{FieldDesc, StructLayout};
use crate::lru_gen::{LruGenFolio, LruGenMemcgNode};
use crate::memcg_lru::MemcgFifoEntry;

/// The pahole table of `Lruvec<H>`.
pub fn lruvec_fields<H: LruvecHost>() -> [FieldDesc; 13] {
    type L<H> = Lruvec<H>;
    [
        crate::layout_field!(L<H>, "lists", lists),
        crate::layout_field!(L<H>, "lists", lru_lock),
        crate::layout_field!(L<H>, "cost", anon_cost),
        crate::layout_field!(L<H>, "cost", file_cost),
        crate::layout_field!(L<H>, "nonresident", nonresident_age),
        crate::layout_field!(L<H>, "cost", refaults),
        crate::layout_field!(L<H>, "identity", "flags" => flags),
        crate::layout_field!(L<H>, "identity", "flags:memcg_id" => memcg_id),
        crate::layout_field!(L<H>, "identity", "flags:id" => id),
        crate::layout_field!(L<H>, <H::Gen as LruGenFolio>::LAYOUT, lrugen),
        crate::layout_field!(L<H>, "mm_walk", mm_state),
        crate::layout_field!(L<H>, "pgdat", pgdat),
        crate::layout_field!(L<H>, "zswap", zswap_lruvec_state),
    ]
}

/// [`lruvec_fields`] with `lrugen` expanded into its own fields at their offsets inside
/// the lruvec, so the report shows which lruvec line each MGLRU field lands on.
pub fn lruvec_fields_expanded<H: LruvecHost>() -> alloc::vec::Vec<FieldDesc> {
    let mut v = alloc::vec::Vec::new();
    for f in lruvec_fields::<H>() {
        if f.name == "lrugen" {
            v.extend(
                <H::Gen as LruGenFolio>::layout_fields()
                    .iter()
                    .map(|g| FieldDesc {
                        offset: f.offset + g.offset,
                        ..*g
                    }),
            );
        } else {
            v.push(f);
        }
    }
    v
}

/// Wrap [`lruvec_fields`] as a [`StructLayout`].
pub fn lruvec_layout<'a, H: LruvecHost>(
    name: &'a str,
    fields: &'a [FieldDesc],
) -> StructLayout<'a> {
    StructLayout {
        name,
        size: core::mem::size_of::<Lruvec<H>>(),
        align: core::mem::align_of::<Lruvec<H>>(),
        fields,
    }
}

impl<H: LruvecHost> Lruvec<H> {
    /// Byte offset of the memcg FIFO node inside `Lruvec<H>`.
    pub const MEMCG_NODE_OFFSET: usize =
        core::mem::offset_of!(Self, lrugen) + <H::Gen as LruGenFolio>::MEMCG_NODE_OFFSET;
    /// Byte offset of `lru_lock` inside `Lruvec<H>`.
    pub const LRU_LOCK_OFFSET: usize = core::mem::offset_of!(Self, lru_lock);
    /// Byte offset of `lrugen` inside `Lruvec<H>`.
    pub const LRUGEN_OFFSET: usize = core::mem::offset_of!(Self, lrugen);
    /// Byte offset of `pgdat` (the last word but one, before `zswap_lruvec_state`) inside
    /// `Lruvec<H>`.
    pub const PGDAT_OFFSET: usize = core::mem::offset_of!(Self, pgdat);
}

// SAFETY: `LruGenFolio::memcg_node` returns the field at `G::MEMCG_NODE_OFFSET` (computed
// by `offset_of!` in lru_gen_folio.rs), and `Lruvec::MEMCG_NODE_OFFSET` adds the offset of
// `lrugen` within the lruvec. The impl sits here, with the offset, so that the FIFO
// (memcg_lru.rs) stays generic over its entries and below the lruvec.
unsafe impl<H: LruvecHost> MemcgFifoEntry for Lruvec<H> {
    const MEMCG_NODE_OFFSET: usize = Lruvec::<H>::MEMCG_NODE_OFFSET;
    fn memcg_node(&self) -> &LruGenMemcgNode {
        self.lrugen().memcg_node()
    }
}

// Placement checks with the kernel's lock (ksync's ticket lock, used on the host too), for
// the lruvec on its own (the embedded offsets inside `mem_cgroup_per_node` are asserted by
// memcg, which also checks them against Linux's declarations): Linux's order, the lock word
// in the list heads' second line, `mm_state`, `pgdat` and `zswap_lruvec_state` last.
#[cfg(not(loom))]
mod layout_asserts {
    use super::Lruvec;
    use crate::lru_gen_folio::{LruGenFolioBase, LruGenFolioGrouped};
    use crate::lruvec::LruvecStandalone;
    use core::mem::{offset_of, size_of};
    use ksync::Ticket;

    type Grouped = Lruvec<LruvecStandalone<Ticket, LruGenFolioGrouped>>;
    type Base = Lruvec<LruvecStandalone<Ticket, LruGenFolioBase>>;

    macro_rules! linux_order {
        ($t:ty, $gen:ty) => {
            const _: () = {
                assert!(offset_of!($t, lists) == 0);
                // spinlock_t without debugging: 4 bytes right after the 80 bytes of heads.
                assert!(offset_of!($t, lru_lock) == 80);
                assert!(size_of::<ksync::TicketLock<crate::lock_classes::LruLock>>() == 4);
                assert!(offset_of!($t, anon_cost) == 88);
                assert!(offset_of!($t, file_cost) == 96);
                assert!(offset_of!($t, nonresident_age) == 104);
                assert!(offset_of!($t, refaults) == 112);
                assert!(offset_of!($t, flags) == 128);
                assert!(offset_of!($t, lrugen) > offset_of!($t, id));
                assert!(offset_of!($t, mm_state) == offset_of!($t, lrugen) + size_of::<$gen>());
                assert!(offset_of!($t, pgdat) == offset_of!($t, mm_state) + 88);
                assert!(offset_of!($t, zswap_lruvec_state) == offset_of!($t, pgdat) + 8);
                assert!(offset_of!($t, zswap_lruvec_state) + 8 + 63 >= size_of::<$t>());
            };
        };
    }
    linux_order!(Grouped, LruGenFolioGrouped);
    linux_order!(Base, LruGenFolioBase);
    crate::cacheline_assert_pair!(Grouped, lru_lock, 0);
    crate::cacheline_assert_pair!(Grouped, lists, 0);
    // The grouped lrugen starts on its own line (its stats group is line-aligned).
    const _: () = assert!(offset_of!(Grouped, lrugen) % crate::cacheline::CACHELINE == 0);
    crate::cacheline_assert_apart!(Grouped, lru_lock; lrugen);
}
