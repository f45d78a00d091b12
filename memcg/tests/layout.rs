//! Layout of both `mem_cgroup_per_node` variants: the pairing the compile-time assertions
//! prove, the report that prints it, and the placement of real memcgs at +0 and +64.
#![cfg(not(loom))]

mod common;

use ksync::Ticket;
use lru::{LruGenFolioBase, LruGenFolioGrouped, Lruvec};
use memcg::pn::layout::{pn_base_fields, pn_paired_fields, read_mostly_partner, report};
use memcg::pn::{PnPlacement, assert_pn_layouts};
use memcg::{ManualRcu, MemCgroupPerNode, MemCgroupPerNodeBase, MemcgConfig, MemcgTree, TreeLru};

#[test]
fn report_prints_both_layouts_and_their_pairing() {
    let mut out = String::new();
    report(&mut out).unwrap();
    assert!(out.contains("struct page_counter"));
    assert!(out.contains("struct mem_cgroup_per_node (base)"));
    assert!(out.contains("struct mem_cgroup_per_node (paired)"));
    let base = out.split("(paired)").next().unwrap();
    let paired = out.split("(paired)").nth(1).unwrap();
    assert!(
        base.contains("at +0 : read_mostly line pairs with lists (lruvec)"),
        "{out}"
    );
    assert!(
        paired.contains("at +0 : read_mostly line pairs with reparented_folios (cold)"),
        "{out}"
    );
    assert!(out.contains("at +64: read_mostly line pairs with (the preceding object)"));
    for f in [
        "memcg",
        "lruvec_stats_percpu",
        "lru_lock",
        "iter",
        "reparent_passes",
    ] {
        assert!(out.contains(f), "{f} missing from the report");
    }
    println!("{out}");
}

#[test]
fn field_tables_match_the_assertions() {
    // Compiled for both lru_gen_folio layouts (a failing pairing is a compile error).
    const _: () = assert_pn_layouts::<Lruvec<Ticket, LruGenFolioGrouped>>();
    const _: () = assert_pn_layouts::<Lruvec<Ticket, LruGenFolioBase>>();
    let base = pn_base_fields::<Ticket, LruGenFolioGrouped>();
    let paired = pn_paired_fields::<Ticket, LruGenFolioGrouped>();
    for fields in [&base, &paired] {
        let rm: Vec<_> = fields.iter().filter(|f| f.group == "read_mostly").collect();
        assert_eq!(rm.len(), 5);
        assert!(
            rm.iter().all(|f| f.offset + f.size <= 64),
            "read_mostly is line 0"
        );
        assert!(
            fields
                .windows(2)
                .all(|w| w[0].offset + w[0].size <= w[1].offset)
        );
    }
    assert_eq!(read_mostly_partner(&base, 0).1, "lruvec");
    assert_eq!(read_mostly_partner(&paired, 0).1, "cold");
    assert_eq!(read_mostly_partner(&paired, 64).1, "outside");
    type PnBase = MemCgroupPerNodeBase<Lruvec<Ticket, LruGenFolioGrouped>>;
    assert_eq!(<PnBase as MemCgroupPerNode>::LRUVEC_OFFSET, 64);
    assert_eq!(
        <common::Pn as MemCgroupPerNode>::LRUVEC_OFFSET,
        128,
        "paired: lruvec starts the second pair"
    );
}

#[test]
fn memcgs_place_their_per_node_info_as_configured() {
    for placement in [PnPlacement::PairStart, PnPlacement::PairMiddle] {
        let mut cfg = MemcgConfig::new(1, 2);
        cfg.placement = placement;
        let lru = TreeLru::new(2, lru::TailMode::Cached, true, Box::new(|_, _, _| {}));
        let tree =
            MemcgTree::<common::Lock, common::Pn, _>::new(cfg, ManualRcu::new(), lru).unwrap();
        let a = tree.root().create_child().unwrap();
        for node in 0..2 {
            let pn = a.nodeinfo(node).unwrap();
            assert_eq!(pn as *const _ as usize % 128, placement.offset());
            assert_eq!(pn.read_mostly().node(), node);
            // SAFETY: `pn.lruvec()` is the lruvec field of the live `pn`.
            let back = unsafe { common::Pn::from_lruvec(pn.lruvec()) };
            assert!(std::ptr::eq(back, pn));
        }
    }
}
