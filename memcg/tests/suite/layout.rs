//! Layout of both `mem_cgroup_per_node` variants as the kernel instantiates them: the
//! pairing the compile-time assertions prove, the report that prints it, slab placement of
//! real memcgs at +0 and +64 (objects back to back), and `page_counter`'s three groups.
#![cfg(not(loom))]

use crate::common;

use memcg::cacheline::{line_of, pair_of};
use memcg::pn::kernel_types::{
    BaseBase, BaseGrouped, PairedBase, PairedGrouped, V1Base, V1Grouped,
};
use memcg::pn::layout::{pair_partner, pn_fields, report};
use memcg::pn::{PnPlacement, assert_pn_layouts};
use memcg::{MemCgroupPerNode, MemcgConfig, PageCounter};

fn report_text() -> String {
    let mut out = String::new();
    report(&mut out).unwrap();
    out
}

fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let start = out.find(&format!("struct {name} ")).expect(name);
    let rest = &out[start..];
    let end = rest[1..].find("struct ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

#[test]
fn report_prints_both_layouts_and_their_pairing() {
    let out = report_text();
    for name in [
        "struct page_counter ",
        "struct mem_cgroup_per_node (base) ",
        "struct mem_cgroup_per_node (paired) ",
        "struct mem_cgroup_per_node (base, base lrugen) ",
        "struct mem_cgroup_per_node (paired, base lrugen) ",
        "struct mem_cgroup_per_node (v1, base lrugen) ",
        "struct mem_cgroup_per_node (v1) ",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{out}"
        );
    }
    let base = section(&out, "mem_cgroup_per_node (base)");
    let paired = section(&out, "mem_cgroup_per_node (paired)");
    // Seed 001: at +0 the base layout's read-mostly line pairs with the LRU list heads, the
    // paired layout's with the cold group; at +64 both pair with the slab's padding after
    // the previous object (both are an odd number of lines, as Linux's).
    assert!(
        base.contains("at +0 : read_mostly (line 0) pairs with line 1: lists (lruvec)"),
        "{base}"
    );
    assert!(
        paired.contains("at +0 : read_mostly (line 0) pairs with line 1: reparented_folios (cold)"),
        "{paired}"
    );
    for layout in [base, paired] {
        assert!(
            layout.contains(
                "at +64: read_mostly (line 0) pairs with the slab's padding after the previous \
                 object"
            ),
            "{layout}"
        );
    }
    assert!(paired.contains("(write_hot)"), "{paired}");
    for f in [
        "memcg",
        "lruvec_stats_percpu",
        "lru_lock",
        "lru_zone_size",
        "pgdat",
        "evicted",
        "refaulted",
        "reparent_passes",
    ] {
        assert!(base.contains(f), "{f} missing from the base report");
    }
    println!("{out}");
}

#[test]
fn field_tables_match_the_assertions() {
    // The compile-time pairing, for every type the kernel instantiates (a failure is a
    // compile error).
    const _: () = assert_pn_layouts::<BaseGrouped>();
    const _: () = assert_pn_layouts::<PairedGrouped>();
    const _: () = assert_pn_layouts::<BaseBase>();
    const _: () = assert_pn_layouts::<PairedBase>();
    const _: () = assert_pn_layouts::<V1Base>();
    const _: () = assert_pn_layouts::<V1Grouped>();
    fn check<P: MemCgroupPerNode>() -> Vec<lru::layout::FieldDesc> {
        let fields = pn_fields::<P>();
        let rm: Vec<_> = fields.iter().filter(|f| f.group == "read_mostly").collect();
        assert_eq!(rm.len(), 3);
        assert!(
            rm.iter().all(|f| f.offset + f.size <= 64),
            "read_mostly is line 0"
        );
        assert!(
            fields
                .windows(2)
                .all(|w| w[0].offset + w[0].size <= w[1].offset),
            "fields overlap"
        );
        let find = |n: &str| fields.iter().find(|f| f.name == n).copied().unwrap();
        // lru_zone_size right after the lruvec, pgdat on the line before it.
        assert_eq!(find("lru_zone_size").group, "write_hot");
        assert_eq!(
            line_of(find("pgdat").offset) + 1,
            line_of(find("lru_zone_size").offset)
        );
        fields
    }
    let base = check::<BaseGrouped>();
    let paired = check::<PairedGrouped>();
    check::<BaseBase>();
    check::<PairedBase>();
    check::<V1Base>();
    check::<V1Grouped>();
    assert_eq!(<BaseGrouped as lru::LruvecHost>::LRUVEC_OFFSET, 64);
    assert_eq!(<PairedGrouped as lru::LruvecHost>::LRUVEC_OFFSET, 128);
    // Base at +0: the list heads (and lru_lock, 80 bytes in) are in pair 0 with line 0.
    let lists = base.iter().find(|f| f.name == "lists").unwrap();
    assert_eq!(pair_of(lists.offset), 0);
    assert_eq!(
        pair_of(paired.iter().find(|f| f.name == "lists").unwrap().offset),
        1
    );
}

/// The byte range of `refaulted[0][file][*]` and the FIFO node (`enabled` .. `list`) in
/// layout `P`, from the report's field table.
fn refaulted_file_and_node<P: MemCgroupPerNode>() -> ((usize, usize), (usize, usize)) {
    let fields = pn_fields::<P>();
    let find = |n: &str| fields.iter().find(|f| f.name == n).copied().unwrap();
    let refaulted = find("refaulted");
    // [NR_HIST_GENS = 1][ANON_AND_FILE][MAX_NR_TIERS] of 8 bytes: the file half is the
    // second half.
    let file = (
        refaulted.offset + refaulted.size / 2,
        refaulted.offset + refaulted.size,
    );
    let (enabled, list) = (find("enabled"), find("list"));
    (file, (enabled.offset, list.offset + list.size))
}

#[test]
fn seed000_before_shares_the_fifo_nodes_line_with_file_refaults() {
    // Mainline's layout (the lruvec after the v1 soft-limit fields, unaligned): every file
    // tier's counter sits on the node's line, in the kernel's build, as the seed says of
    // its kernel.
    let ((file_lo, file_hi), (node_lo, node_hi)) = refaulted_file_and_node::<V1Base>();
    let lv = <V1Base as lru::LruvecHost>::LRUVEC_OFFSET;
    assert_ne!(lv % 64, 0, "mainline's lruvec is not cacheline aligned");
    assert_eq!(
        line_of(file_hi - 1),
        line_of(node_lo),
        "last file tier on the node's line"
    );
    assert_eq!(line_of(node_lo), line_of(node_hi - 1));
    assert_eq!(
        line_of(file_lo),
        line_of(node_lo),
        "first file tier on the node's line"
    );
    // The patch: the stats group starts a line and shares none with the node.
    let ((_, file_hi), (node_lo, node_hi)) = refaulted_file_and_node::<V1Grouped>();
    assert!(
        line_of(file_hi - 1) != line_of(node_lo) && line_of(file_hi - 1) != line_of(node_hi - 1)
    );
    assert_eq!(<V1Grouped as lru::LruvecHost>::LRUVEC_OFFSET % 64, 0);
    // Larger after the patch (the seed: 2176 -> 2240 bytes; declared: 1984 -> 2112).
    assert!(core::mem::size_of::<V1Grouped>() > core::mem::size_of::<V1Base>());
    // seed 001's layouts keep the lruvec line-aligned: no sharing there (this is why seed
    // 000 measures on mainline's layout).
    let ((_, file_hi), (node_lo, _)) = refaulted_file_and_node::<PairedBase>();
    assert_ne!(line_of(file_hi - 1), line_of(node_lo));
    let out = report_text();
    let v1 = section(&out, "mem_cgroup_per_node (v1, base lrugen)");
    assert!(v1.contains("tiers sharing its line: [0, 1, 2, 3]"), "{v1}");
    assert!(v1.contains("seed000_shift"), "{v1}");
    assert!(
        v1.contains(
            "Linux 6.14+ as declared (seed 000's config): size 1984, lrugen at 208 (here 232, \
             24 bytes later), file tiers sharing the node's line: [3]"
        ),
        "{v1}"
    );
    assert!(v1.contains("tree_node") && v1.contains("on_tree"), "{v1}");
    let v1g = section(&out, "mem_cgroup_per_node (v1)");
    assert!(v1g.contains("tiers sharing its line: none"), "{v1g}");
    assert!(
        v1g.contains("size 2112, lrugen at 320 (here 320, 0 bytes later)"),
        "{v1g}"
    );
}

#[test]
fn pair_partners_across_objects() {
    let fields = pn_fields::<PairedGrouped>();
    let size = core::mem::size_of::<PairedGrouped>();
    // An odd number of lines, as Linux's: the slab pads each object to a whole pair.
    assert_eq!(size % 128, 64);
    assert!(pair_partner(&fields, size, 0, 0).starts_with("line 1: reparented_folios"));
    assert_eq!(
        pair_partner(&fields, size, 0, 64),
        "the slab's padding after the previous object"
    );
    // The last line pairs with the padding at +0 and with the line before it at +64.
    assert_eq!(
        pair_partner(&fields, size, size - 1, 0),
        "the slab's padding after this object"
    );
    let last = size / 64 - 1;
    assert!(pair_partner(&fields, size, size - 1, 64).starts_with(&format!("line {}", last - 1)));
    // A whole number of pairs has neighbours, not padding.
    let whole = size - 64;
    let prev = pair_partner(&fields, whole, 0, 64);
    assert!(
        prev.starts_with(&format!("the previous object's line {}", whole / 64 - 1)),
        "{prev}"
    );
    assert!(pair_partner(&fields, whole, whole - 1, 64).starts_with("the next object's line 0"));
}

#[test]
fn per_node_objects_sit_back_to_back_in_the_slab() {
    for placement in [PnPlacement::PairStart, PnPlacement::PairMiddle] {
        let mut cfg = MemcgConfig::new(1, 2);
        cfg.placement = placement;
        let s = common::setup_with(cfg, true);
        let a = s.tree.root().create_child().unwrap();
        let b = s.tree.root().create_child().unwrap();
        let size = memcg::pn::PnCache::<common::Pn>::stride();
        assert_eq!(
            size,
            core::mem::size_of::<common::Pn>().next_multiple_of(128)
        );
        let addr =
            |m: &common::Ref<'_>, n: lru::NodeId| m.nodeinfo(n).unwrap() as *const _ as usize;
        for m in [&a, &b] {
            for node in 0..2 {
                let pn = m.nodeinfo(node).unwrap();
                assert_eq!(addr(m, node) % 128, placement.offset());
                assert_eq!(pn.lruvec().node(), node);
                assert!(std::ptr::eq(common::Pn::from_lruvec(pn.lruvec()), pn));
            }
        }
        // The root took slots 0 and 1, a 2 and 3, b 4 and 5 of the first chunk, each a
        // whole number of pairs after the one before.
        assert_eq!(addr(&a, 1) - addr(&a, 0), size);
        assert_eq!(addr(&b, 0) - addr(&a, 1), size);
        assert_eq!(addr(&b, 1) - addr(&b, 0), size);
    }
}

#[test]
fn page_counter_groups_keep_the_read_mostly_line_clean() {
    let f = PageCounter::layout_fields();
    let find = |n: &str| f.iter().find(|x| x.name == n).copied().unwrap();
    // usage and failcnt alone on line 0.
    assert_eq!(line_of(find("usage").offset), 0);
    assert_eq!(line_of(find("failcnt").offset), 0);
    // watermark and the protection counters on line 1.
    for n in [
        "watermark",
        "local_watermark",
        "emin",
        "min_usage",
        "children_low_usage",
    ] {
        assert_eq!(line_of(find(n).offset), 1, "{n}");
    }
    // max, parent and the other read-mostly fields on line 2: a failed charge (failcnt)
    // or a new watermark never writes the line every charge reads.
    for n in [
        "max",
        "parent",
        "min",
        "low",
        "protection_support",
        "track_failcnt",
    ] {
        assert_eq!(line_of(find(n).offset), 2, "{n}");
    }
    assert_eq!(core::mem::size_of::<PageCounter>(), 192);
}
