//! The layout report for `mem_cgroup_per_node` (both layouts, the lruvec and its lrugen
//! expanded in place) and `page_counter`, in the pahole style of `lru`'s report
//! (`lru::layout`), plus which line each hot line is fetched with at both placements.
//!
//! The runner's `layout` subcommand and the kernel's console print the same text, for the
//! types the kernel instantiates (ksync's ticket lock). It is how a reader checks seed
//! 001's claim without a disassembler: in the base layout at +0 the read-mostly line pairs
//! with the LRU list heads, in the paired layout with the cold line; at +64 the read-mostly
//! line pairs with the last line of the previous `mem_cgroup_per_node` of the slab (its
//! write-hot or cold group: objects are carved back to back, [`super::PnCache`]).

use super::{MemCgroupPerNode, PnCold, PnReadMostly, PnSoftLimit, PnWriteHot};
use crate::cacheline::{CACHELINE, CACHELINE_PAIR};
use crate::page_counter::PageCounter;
use alloc::vec::Vec;
use core::fmt::{self, Write};
use core::mem::{offset_of, size_of};
use lru::Lruvec;
use lru::layout::{FieldDesc, StructLayout};

fn group_fields(
    base: usize,
    group: &'static str,
    fields: &[(&'static str, usize, usize)],
) -> impl Iterator<Item = FieldDesc> {
    fields.iter().map(move |&(name, offset, size)| FieldDesc {
        name,
        offset: base + offset,
        size,
        group,
    })
}

fn read_mostly_fields(base: usize) -> impl Iterator<Item = FieldDesc> {
    type T = PnReadMostly;
    group_fields(
        base,
        "read_mostly",
        &[
            ("memcg", offset_of!(T, memcg), size_of::<usize>()),
            (
                "lruvec_stats_percpu",
                offset_of!(T, lruvec_stats_percpu),
                size_of::<crate::stats::LruvecStatsPercpu>(),
            ),
            (
                "lruvec_stats",
                offset_of!(T, lruvec_stats),
                size_of::<usize>(),
            ),
        ],
    )
}

fn cold_fields(base: usize) -> impl Iterator<Item = FieldDesc> {
    type T = PnCold;
    group_fields(
        base,
        "cold",
        &[
            ("reparented_folios", offset_of!(T, reparented_folios), 8),
            ("reparented_pages", offset_of!(T, reparented_pages), 8),
            ("reparent_passes", offset_of!(T, reparent_passes), 4),
        ],
    )
}

fn soft_limit_fields(base: usize) -> impl Iterator<Item = FieldDesc> {
    type T = PnSoftLimit;
    group_fields(
        base,
        "memcg_v1",
        &[
            ("tree_node", offset_of!(T, tree_node), 24),
            ("usage_in_excess", offset_of!(T, usage_in_excess), 8),
            ("on_tree", offset_of!(T, on_tree), 1),
            (
                "seed000_shift",
                offset_of!(T, seed000_shift),
                super::SEED000_SHIFT,
            ),
        ],
    )
}

fn write_hot_fields(base: usize) -> impl Iterator<Item = FieldDesc> {
    type T = PnWriteHot;
    group_fields(
        base,
        "write_hot",
        &[
            (
                "lru_zone_size",
                offset_of!(T, lru_zone_size),
                size_of::<lru::lruvec::LruZoneSize>(),
            ),
            ("iter", offset_of!(T, iter), size_of::<super::ReclaimIter>()),
            ("nr_scanned", offset_of!(T, nr_scanned), 8),
            ("nr_reclaimed", offset_of!(T, nr_reclaimed), 8),
        ],
    )
}

/// The fields of `mem_cgroup_per_node` layout `P` in offset order, the lruvec and its
/// lrugen expanded (each lrugen field keeps its seed-000 group; the other lruvec fields
/// are group `lruvec`).
pub fn pn_fields<P: MemCgroupPerNode>() -> Vec<FieldDesc> {
    let mut v = Vec::new();
    v.extend(read_mostly_fields(P::READ_MOSTLY_OFFSET));
    v.extend(cold_fields(P::COLD_OFFSET));
    if let Some(soft_limit) = P::SOFT_LIMIT_OFFSET {
        v.extend(soft_limit_fields(soft_limit));
    }
    let lv = P::LRUVEC_OFFSET;
    v.extend(
        lru::lruvec::lruvec_fields_expanded::<P>()
            .into_iter()
            .map(|f| FieldDesc {
                offset: lv + f.offset,
                group: if matches!(
                    f.group,
                    "lists" | "cost" | "nonresident" | "identity" | "pgdat"
                ) {
                    "lruvec"
                } else {
                    f.group
                },
                ..f
            }),
    );
    v.extend(write_hot_fields(P::WRITE_HOT_OFFSET));
    v.sort_by_key(|f| f.offset);
    v
}

/// The fields on line `line` of a struct with `fields`, as "name (group)" for one field or
/// "first (group) .. last (group)" for several; "(padding)" for none.
fn describe_line(fields: &[FieldDesc], line: usize) -> alloc::string::String {
    use alloc::format;
    let (lo, hi) = (line * CACHELINE, (line + 1) * CACHELINE);
    let mut on = fields
        .iter()
        .filter(|f| f.offset < hi && f.offset + f.size > lo);
    match (on.next(), on.next_back()) {
        (None, _) => alloc::string::String::from("(padding)"),
        (Some(f), None) => format!("{} ({})", f.name, f.group),
        (Some(f), Some(l)) => format!("{} ({}) .. {} ({})", f.name, f.group, l.name, l.group),
    }
}

/// What the line holding byte `offset` of the struct is fetched together with (its
/// 128-byte pair partner) when the struct starts `placement` bytes (0 or 64) into a pair
/// and its neighbours are objects of the same type in a slab of `size`-byte objects (a
/// multiple of 64), each padded to the next whole pair ([`super::PnCache::stride`]): a
/// description of the partner line.
pub fn pair_partner(
    fields: &[FieldDesc],
    size: usize,
    offset: usize,
    placement: usize,
) -> alloc::string::String {
    use alloc::format;
    let stride = size.next_multiple_of(CACHELINE_PAIR);
    let abs = placement % CACHELINE_PAIR + offset;
    let line = abs / CACHELINE;
    let partner_abs_line = line ^ 1;
    // Back to struct-relative lines; a partner before the struct is the previous slot's.
    let start_line = (placement % CACHELINE_PAIR) / CACHELINE;
    if partner_abs_line < start_line {
        let prev_line = stride / CACHELINE - 1;
        if prev_line * CACHELINE >= size {
            "the slab's padding after the previous object".into()
        } else {
            format!(
                "the previous object's line {prev_line}: {}",
                describe_line(fields, prev_line)
            )
        }
    } else {
        let rel = partner_abs_line - start_line;
        if rel * CACHELINE >= stride {
            format!("the next object's line 0: {}", describe_line(fields, 0))
        } else if rel * CACHELINE >= size {
            "the slab's padding after this object".into()
        } else {
            format!("line {rel}: {}", describe_line(fields, rel))
        }
    }
}

fn print_pn<P: MemCgroupPerNode>(w: &mut dyn Write, name: &str) -> fmt::Result {
    let fields = pn_fields::<P>();
    let size = size_of::<P>();
    StructLayout {
        name,
        size,
        align: core::mem::align_of::<P>(),
        fields: &fields,
    }
    .print(w)?;
    let lv = P::LRUVEC_OFFSET;
    let lrugen = lv + Lruvec::<P>::LRUGEN_OFFSET;
    let hot = [
        ("read_mostly", P::READ_MOSTLY_OFFSET),
        ("lru_lock", lv + Lruvec::<P>::LRU_LOCK_OFFSET),
        (
            "refaulted",
            lrugen + <P::Gen as lru::LruGenFolio>::REFAULTED_OFFSET,
        ),
        (
            "lrugen node",
            lrugen + <P::Gen as lru::LruGenFolio>::MEMCG_NODE_OFFSET,
        ),
        ("pgdat", lv + Lruvec::<P>::PGDAT_OFFSET),
        ("lru_zone_size", P::WRITE_HOT_OFFSET),
    ];
    // Seed 000: which of the file type's refault counters share the FIFO node's line.
    let refaulted = lrugen + <P::Gen as lru::LruGenFolio>::REFAULTED_OFFSET;
    let node_line = (lrugen + <P::Gen as lru::LruGenFolio>::MEMCG_NODE_OFFSET) / CACHELINE;
    write!(w, "    refaulted[0][file][tier] lines:")?;
    let mut shared = Vec::new();
    for tier in 0..lru::lru_gen::MAX_NR_TIERS {
        let line = (refaulted + super::refaulted_index(lru::folio::LRU_GEN_FILE, tier)) / CACHELINE;
        write!(w, " {line}")?;
        if line == node_line {
            shared.push(tier);
        }
    }
    writeln!(
        w,
        "; lrugen node line {node_line}: tiers sharing its line: {}",
        if shared.is_empty() {
            "none".into()
        } else {
            alloc::format!("{shared:?}")
        }
    )?;
    if matches!(P::KIND, super::PnLayoutKind::V1) {
        print_declared::<P>(w, lrugen)?;
    }
    for placement in [0, CACHELINE] {
        for (what, offset) in hot {
            writeln!(
                w,
                "    at +{placement:<2}: {what} (line {}) pairs with {}",
                offset / CACHELINE,
                pair_partner(&fields, size, offset, placement)
            )?;
        }
    }
    Ok(())
}

/// Mainline's layout beside Linux's declarations ([`super::mainline`]): where the
/// declared struct puts `lrugen`, its size, and which file tiers of `refaulted[]` share the
/// FIFO node's line there.
fn print_declared<P: MemCgroupPerNode>(w: &mut dyn Write, lrugen: usize) -> fmt::Result {
    use super::mainline;
    let grouped = <P::Gen as lru::LruGenFolio>::STATS_GROUPED;
    let declared = mainline::lrugen_offset(grouped);
    let size = if grouped {
        mainline::PN_PATCHED.size
    } else {
        mainline::PN_BASE.size
    };
    let tiers: Vec<usize> = (0..lru::lru_gen::MAX_NR_TIERS)
        .filter(|&t| {
            mainline::counter_shares_node_line(grouped, 0, false, lru::folio::LRU_GEN_FILE, t)
        })
        .collect();
    writeln!(
        w,
        "    Linux 6.14+ as declared (seed 000's config): size {size}, lrugen at {declared} \
         (here {lrugen}, {} bytes later), file tiers sharing the node's line: {}",
        lrugen - declared,
        if tiers.is_empty() {
            "none".into()
        } else {
            alloc::format!("{tiers:?}")
        }
    )
}

/// `struct page_counter`'s fields, in its three groups.
pub fn page_counter_fields() -> Vec<FieldDesc> {
    let mut v: Vec<FieldDesc> = PageCounter::layout_fields().to_vec();
    v.sort_by_key(|f| f.offset);
    v
}

/// Prints `page_counter` (today's, then v5.11's and 802f1d522d5f's: the
/// `page-counter-802f1d` scenario's two layouts) and both `mem_cgroup_per_node` layouts `Base` and `Paired` (with
/// the default grouped `lru_gen_folio`), then both layouts with the base `lru_gen_folio`,
/// then mainline's layout (`V1`) with the base `lru_gen_folio` and the grouped one: seed
/// 000's "before" and patch, as embedded in the struct.
pub fn report_with<BaseG, PairedG, BaseB, PairedB, V1B, V1G>(w: &mut dyn Write) -> fmt::Result
where
    BaseG: MemCgroupPerNode,
    PairedG: MemCgroupPerNode,
    BaseB: MemCgroupPerNode,
    PairedB: MemCgroupPerNode,
    V1B: MemCgroupPerNode,
    V1G: MemCgroupPerNode,
{
    let pc = page_counter_fields();
    StructLayout {
        name: "page_counter",
        size: size_of::<PageCounter>(),
        align: core::mem::align_of::<PageCounter>(),
        fields: &pc,
    }
    .print(w)?;
    crate::page_counter_802f1d::report(w)?;
    print_pn::<BaseG>(w, "mem_cgroup_per_node (base)")?;
    print_pn::<PairedG>(w, "mem_cgroup_per_node (paired)")?;
    print_pn::<BaseB>(w, "mem_cgroup_per_node (base, base lrugen)")?;
    print_pn::<PairedB>(w, "mem_cgroup_per_node (paired, base lrugen)")?;
    print_pn::<V1B>(w, "mem_cgroup_per_node (v1, base lrugen)")?;
    print_pn::<V1G>(w, "mem_cgroup_per_node (v1)")
}

/// [`report_with`] for the types the kernel instantiates (ksync's ticket lock).
#[cfg(not(loom))]
pub fn report(w: &mut dyn Write) -> fmt::Result {
    use super::kernel_types::*;
    report_with::<BaseGrouped, PairedGrouped, BaseBase, PairedBase, V1Base, V1Grouped>(w)
}
