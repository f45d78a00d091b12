//! The layout report for `mem_cgroup_per_node` (both layouts) and `page_counter`, in the
//! pahole style of `lru`'s report (`lru::layout`), plus the pairing each layout gets at
//! both placements within a 128-byte pair.
//!
//! The runner's `layout` subcommand and the kernel's console print the same text; it is
//! how a reader checks seed 001's claim without a disassembler: in the base layout at +0
//! the read-mostly line pairs with the LRU list heads, in the paired layout with the cold
//! line.

use super::{MemCgroupPerNodeBase, MemCgroupPerNodePaired, PnCold, PnReadMostly, PnWriteHot};
use crate::cacheline::{CACHELINE, CACHELINE_PAIR};
use crate::page_counter::PageCounter;
use alloc::vec::Vec;
use core::fmt::{self, Write};
use core::mem::{offset_of, size_of};
use ksync::LockFamily;
use lru::layout::{FieldDesc, StructLayout};
use lru::{LruGenFolio, Lruvec};

fn read_mostly_fields(base: usize) -> [FieldDesc; 5] {
    type T = PnReadMostly;
    let f = |name, offset, size| FieldDesc {
        name,
        offset: base + offset,
        size,
        group: "read_mostly",
    };
    [
        f("memcg", offset_of!(T, memcg), size_of::<usize>()),
        f(
            "lruvec_stats_percpu",
            offset_of!(T, lruvec_stats_percpu),
            size_of::<crate::stats::LruvecStatsPercpu>(),
        ),
        f(
            "lruvec_stats",
            offset_of!(T, lruvec_stats),
            size_of::<usize>(),
        ),
        f("node", offset_of!(T, node), size_of::<u32>()),
        f(
            "memcg_id",
            offset_of!(T, memcg_id),
            size_of::<crate::MemcgId>(),
        ),
    ]
}

fn cold_fields(base: usize) -> [FieldDesc; 3] {
    type T = PnCold;
    let f = |name, offset, size| FieldDesc {
        name,
        offset: base + offset,
        size,
        group: "cold",
    };
    [
        f("reparented_folios", offset_of!(T, reparented_folios), 8),
        f("reparented_pages", offset_of!(T, reparented_pages), 8),
        f("reparent_passes", offset_of!(T, reparent_passes), 4),
    ]
}

fn write_hot_fields(base: usize) -> [FieldDesc; 3] {
    type T = PnWriteHot;
    let f = |name, offset, size| FieldDesc {
        name,
        offset: base + offset,
        size,
        group: "write_hot",
    };
    [
        f("iter", offset_of!(T, iter), size_of::<super::ReclaimIter>()),
        f("nr_scanned", offset_of!(T, nr_scanned), 8),
        f("nr_reclaimed", offset_of!(T, nr_reclaimed), 8),
    ]
}

fn lruvec_fields<F: LockFamily, G: LruGenFolio>(base: usize) -> impl Iterator<Item = FieldDesc> {
    lru::lruvec::lruvec_fields::<F, G>()
        .into_iter()
        .map(move |f| FieldDesc {
            name: f.name,
            offset: base + f.offset,
            size: f.size,
            group: "lruvec",
        })
}

/// The fields of `mem_cgroup_per_node` (base layout) with lruvec `Lruvec<F, G>`, in offset
/// order.
pub fn pn_base_fields<F: LockFamily, G: LruGenFolio>() -> Vec<FieldDesc> {
    type T<F, G> = MemCgroupPerNodeBase<Lruvec<F, G>>;
    let mut v = Vec::new();
    v.extend(read_mostly_fields(offset_of!(T<F, G>, read_mostly)));
    v.extend(lruvec_fields::<F, G>(offset_of!(T<F, G>, lruvec)));
    v.extend(write_hot_fields(offset_of!(T<F, G>, write_hot)));
    v.extend(cold_fields(offset_of!(T<F, G>, cold)));
    v.sort_by_key(|f| f.offset);
    v
}

/// The fields of `mem_cgroup_per_node` (paired layout) with lruvec `Lruvec<F, G>`, in
/// offset order.
pub fn pn_paired_fields<F: LockFamily, G: LruGenFolio>() -> Vec<FieldDesc> {
    type T<F, G> = MemCgroupPerNodePaired<Lruvec<F, G>>;
    let mut v = Vec::new();
    v.extend(read_mostly_fields(offset_of!(T<F, G>, read_mostly)));
    v.extend(cold_fields(offset_of!(T<F, G>, cold)));
    v.extend(lruvec_fields::<F, G>(offset_of!(T<F, G>, lruvec)));
    v.extend(write_hot_fields(offset_of!(T<F, G>, write_hot)));
    v.sort_by_key(|f| f.offset);
    v
}

/// What the read-mostly line (line 0 of the struct) is fetched together with when the
/// struct starts `placement` bytes (0 or 64) into a 128-byte pair: the name and group of
/// the first field on the partner line, or "the preceding object".
pub fn read_mostly_partner(fields: &[FieldDesc], placement: usize) -> (&'static str, &'static str) {
    if placement % CACHELINE_PAIR >= CACHELINE {
        return ("(the preceding object)", "outside");
    }
    fields
        .iter()
        .find(|f| f.offset >= CACHELINE && f.offset < 2 * CACHELINE)
        .map_or(("(padding)", "none"), |f| (f.name, f.group))
}

fn print_pn(
    w: &mut dyn Write,
    name: &str,
    size: usize,
    align: usize,
    fields: &[FieldDesc],
) -> fmt::Result {
    StructLayout {
        name,
        size,
        align,
        fields,
    }
    .print(w)?;
    for placement in [0, 64] {
        let (field, group) = read_mostly_partner(fields, placement);
        writeln!(
            w,
            "    at +{placement:<2}: read_mostly line pairs with {field} ({group})"
        )?;
    }
    Ok(())
}

/// `struct page_counter`'s fields.
pub fn page_counter_fields() -> [FieldDesc; 5] {
    let f = |name, offset, size, group| FieldDesc {
        name,
        offset,
        size,
        group,
    };
    let limits = PageCounter::LIMITS_OFFSET;
    [
        f("usage", 0, 8, "usage"),
        f("max", limits, 8, "limits"),
        f("watermark", limits + 8, 8, "limits"),
        f("failcnt", limits + 16, 8, "limits"),
        f("parent", limits + 24, 8, "limits"),
    ]
}

/// Prints `page_counter` and both `mem_cgroup_per_node` layouts with `Lruvec<F, G>`.
pub fn report_with<F: LockFamily, G: LruGenFolio>(w: &mut dyn Write) -> fmt::Result {
    let pc = page_counter_fields();
    StructLayout {
        name: "page_counter",
        size: size_of::<PageCounter>(),
        align: core::mem::align_of::<PageCounter>(),
        fields: &pc,
    }
    .print(w)?;
    let base = pn_base_fields::<F, G>();
    print_pn(
        w,
        "mem_cgroup_per_node (base)",
        size_of::<MemCgroupPerNodeBase<Lruvec<F, G>>>(),
        core::mem::align_of::<MemCgroupPerNodeBase<Lruvec<F, G>>>(),
        &base,
    )?;
    let paired = pn_paired_fields::<F, G>();
    print_pn(
        w,
        "mem_cgroup_per_node (paired)",
        size_of::<MemCgroupPerNodePaired<Lruvec<F, G>>>(),
        core::mem::align_of::<MemCgroupPerNodePaired<Lruvec<F, G>>>(),
        &paired,
    )
}

/// [`report_with`] for the kernel's locks ([`ksync::Ticket`]) and the grouped
/// `lru_gen_folio` (the default).
#[cfg(not(loom))]
pub fn report(w: &mut dyn Write) -> fmt::Result {
    report_with::<ksync::Ticket, lru::LruGenFolioGrouped>(w)
}
