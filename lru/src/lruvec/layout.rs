//! The lruvec's pahole table for [`crate::layout`] and its compile-time placement checks.
//!
//! Generic over the lock and the `lru_gen_folio` layout, so the kernel can print the
//! struct with its own lock type; `lrugen` can be expanded in place to show which lruvec
//! line each MGLRU field lands on.

use super::Lruvec;
use crate::layout::{FieldDesc, StructLayout};
use crate::lru_gen::LruGenFolio;
use ksync::LockFamily;

/// The pahole table of `Lruvec<F, G>`.
pub fn lruvec_fields<F: LockFamily, G: LruGenFolio>() -> [FieldDesc; 8] {
    type L<F, G> = Lruvec<F, G>;
    [
        crate::layout_field!(L<F, G>, "lists", lists),
        crate::layout_field!(L<F, G>, "lists", lru_lock),
        crate::layout_field!(L<F, G>, "lists", id),
        crate::layout_field!(L<F, G>, "lists", memcg_id),
        crate::layout_field!(L<F, G>, "lists", node),
        crate::layout_field!(L<F, G>, "lists", lru_zone_size),
        crate::layout_field!(L<F, G>, "lists", nonresident_age),
        crate::layout_field!(L<F, G>, G::LAYOUT, lrugen),
    ]
}

/// [`lruvec_fields`] with `lrugen` expanded into its own fields at their offsets inside
/// the lruvec, so the report shows which lruvec line each MGLRU field lands on.
pub fn lruvec_fields_expanded<F: LockFamily, G: LruGenFolio>() -> alloc::vec::Vec<FieldDesc> {
    let mut v = alloc::vec::Vec::new();
    for f in lruvec_fields::<F, G>() {
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
pub fn lruvec_layout<'a, F: LockFamily, G: LruGenFolio>(
    name: &'a str,
    fields: &'a [FieldDesc],
) -> StructLayout<'a> {
    StructLayout {
        name,
        size: core::mem::size_of::<Lruvec<F, G>>(),
        align: core::mem::align_of::<Lruvec<F, G>>(),
        fields,
    }
}

impl<F: LockFamily, G: LruGenFolio> Lruvec<F, G> {
    /// Byte offset of the memcg FIFO node inside `Lruvec<F, G>`.
    pub const MEMCG_NODE_OFFSET: usize = core::mem::offset_of!(Self, lrugen) + G::MEMCG_NODE_OFFSET;
}

// Placement checks with the kernel's lock (ksync's ticket lock, used on the host too):
// the list heads, lock and identity share the first lines; the grouped lrugen starts on
// its own line and its lockless counters stay off every line of the lock group.
#[cfg(not(loom))]
mod layout_asserts {
    use super::Lruvec;
    use crate::lru_gen_folio::{LruGenFolioBase, LruGenFolioGrouped};
    use core::mem::offset_of;
    use ksync::Ticket;

    type Grouped = Lruvec<Ticket, LruGenFolioGrouped>;
    type Base = Lruvec<Ticket, LruGenFolioBase>;

    crate::cacheline_assert_pair!(Grouped, lists, 0);
    crate::cacheline_assert_pair!(Grouped, lru_lock, 0);
    crate::cacheline_assert_pair!(Grouped, id, 0);
    crate::cacheline_assert_pair!(Base, lists, 0);
    crate::cacheline_assert_pair!(Base, memcg_id, 0);
    const _: () = assert!(offset_of!(Grouped, lrugen) % crate::cacheline::CACHELINE == 0);
    crate::cacheline_assert_apart!(Grouped, lrugen; lru_zone_size);
    crate::cacheline_assert_apart!(Grouped, lru_lock; lrugen);
}
