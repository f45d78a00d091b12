//! The lruvec's pahole table for [`crate::layout`] and its compile-time placement checks.
//!
//! Generic over the lock and the `lru_gen_folio` layout, so the kernel can print the
//! struct with its own lock type; `lrugen` can be expanded in place to show which lruvec
//! line each MGLRU field lands on.

use super::Lruvec;
use crate::layout::{FieldDesc, StructLayout};
use crate::lru_gen::LruGenFolio;
use lock_api::RawMutex;

/// The pahole table of `Lruvec<R, G>`.
pub fn lruvec_fields<R: RawMutex, G: LruGenFolio>() -> [FieldDesc; 8] {
    type L<R, G> = Lruvec<R, G>;
    [
        crate::layout_field!(L<R, G>, "lists", lists),
        crate::layout_field!(L<R, G>, "lists", lru_lock),
        crate::layout_field!(L<R, G>, "lists", id),
        crate::layout_field!(L<R, G>, "lists", memcg_id),
        crate::layout_field!(L<R, G>, "lists", node),
        crate::layout_field!(L<R, G>, "lists", lru_zone_size),
        crate::layout_field!(L<R, G>, "lists", nonresident_age),
        crate::layout_field!(L<R, G>, G::LAYOUT, lrugen),
    ]
}

/// [`lruvec_fields`] with `lrugen` expanded into its own fields at their offsets inside
/// the lruvec, so the report shows which lruvec line each MGLRU field lands on.
pub fn lruvec_fields_expanded<R: RawMutex, G: LruGenFolio>() -> alloc::vec::Vec<FieldDesc> {
    let mut v = alloc::vec::Vec::new();
    for f in lruvec_fields::<R, G>() {
        if f.name == "lrugen" {
            v.extend(G::layout_fields().iter().map(|g| FieldDesc {
                offset: f.offset + g.offset,
                ..*g
            }));
        } else {
            v.push(f);
        }
    }
    v
}

/// Wrap [`lruvec_fields`] as a [`StructLayout`].
pub fn lruvec_layout<'a, R: RawMutex, G: LruGenFolio>(
    name: &'a str,
    fields: &'a [FieldDesc],
) -> StructLayout<'a> {
    StructLayout {
        name,
        size: core::mem::size_of::<Lruvec<R, G>>(),
        align: core::mem::align_of::<Lruvec<R, G>>(),
        fields,
    }
}

impl<R: RawMutex, G: LruGenFolio> Lruvec<R, G> {
    /// Byte offset of the memcg FIFO node inside `Lruvec<R, G>`.
    pub const MEMCG_NODE_OFFSET: usize = core::mem::offset_of!(Self, lrugen) + G::MEMCG_NODE_OFFSET;
}

// Placement checks with the host lock (the kernel's lock changes only `lru_lock`'s size):
// the list heads, lock and identity share the first lines; the grouped lrugen starts on
// its own line and its lockless counters stay off every line of the lock group.
#[cfg(not(loom))]
mod layout_asserts {
    use super::Lruvec;
    use crate::lru_gen_folio::{LruGenFolioBase, LruGenFolioGrouped};
    use crate::sync::RawSpinlock;
    use core::mem::offset_of;

    type Grouped = Lruvec<RawSpinlock, LruGenFolioGrouped>;
    type Base = Lruvec<RawSpinlock, LruGenFolioBase>;

    crate::cacheline_assert_pair!(Grouped, lists, 0);
    crate::cacheline_assert_pair!(Grouped, lru_lock, 0);
    crate::cacheline_assert_pair!(Grouped, id, 0);
    crate::cacheline_assert_pair!(Base, lists, 0);
    crate::cacheline_assert_pair!(Base, memcg_id, 0);
    const _: () = assert!(offset_of!(Grouped, lrugen) % crate::cacheline::CACHELINE == 0);
    crate::cacheline_assert_apart!(Grouped, lrugen; lru_zone_size);
    crate::cacheline_assert_apart!(Grouped, lru_lock; lrugen);
}
