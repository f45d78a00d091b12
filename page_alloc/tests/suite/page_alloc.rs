//! The page allocator on made-up physical memory: the sparse memmap, splitting and
//! merging, zonelist fallback, the per-CPU lists and their counters, the handover, and
//! every refused free.

use crate::common;

use common::{GIB4, allocator, single};
use page::{Folio, FolioFlags, Zone as ZoneType};
use page_alloc::memmap::{FOLIO_BYTES, PAGES_PER_SECTION};
use page_alloc::{
    AllocError, FreeError, HandoverError, HeapStorage, MAX_ORDER, NumaBuilder, PageAlloc,
    PcpConfig, PfnRange,
};

fn r(a: u64, b: u64) -> PfnRange {
    PfnRange::new(a, b)
}

/// Node 0: the first 640 KiB and 1 MiB..128 MiB (the legacy hole between), node 1: 128 MiB
/// above 4 GiB (the PCI hole and more between). Two arrays, none across a hole.
#[test]
fn memmap_is_sparse_per_section() {
    let ranges = [
        (0, r(0, 0x9f)),
        (0, r(0x100, 0x8000)),
        (1, r(GIB4, GIB4 + 0x8000)),
    ];
    let pa = allocator(2, 2, &ranges, PcpConfig::default());
    let mm = pa.memmap();
    let secs: Vec<_> = mm
        .sections()
        .map(|s| (s.nr(), s.span(), s.map_node()))
        .collect();
    assert_eq!(
        secs,
        [
            (0, r(0, 0x8000), 0),
            (GIB4 / PAGES_PER_SECTION, r(GIB4, GIB4 + 0x8000), 1)
        ]
    );
    assert_eq!(mm.bytes(), 2 * 0x8000 * FOLIO_BYTES);
    assert_eq!(mm.bytes_on_node(1), 0x8000 * FOLIO_BYTES);
    assert_eq!(mm.bytes_in(r(0, GIB4)), 0x8000 * FOLIO_BYTES);
    // pfn -> folio -> pfn, node and zone from the description.
    for pfn in [0, 0x9e, 0x100, 0x7fff, GIB4, GIB4 + 0x7fff] {
        let f = pa.pfn_to_folio(pfn).unwrap();
        assert_eq!(pa.folio_to_pfn(f), pfn);
        assert!(mm.is_present(pfn) && mm.owns(f));
    }
    assert_eq!(pa.pfn_to_folio(GIB4).unwrap().node(), 1);
    assert_eq!(pa.pfn_to_folio(GIB4).unwrap().zone(), ZoneType::Normal);
    assert_eq!(pa.pfn_to_folio(5).unwrap().zone(), ZoneType::Dma32);
    // The free paths' one-lookup check agrees with its two parts on every described frame,
    // in the section with holes (0) and the one without (GIB4).
    let mut holes = 0;
    for s in mm.sections() {
        for pfn in s.span().start..s.span().end {
            let f = pa.pfn_to_folio(pfn).unwrap();
            assert_eq!(mm.owns_ram(f), mm.owns(f) && mm.is_present(pfn), "{pfn:#x}");
            holes += u64::from(!mm.is_present(pfn));
        }
    }
    assert!(holes > 0, "the layout has a hole for the check to see");
    // The legacy hole has descriptors (same section) but is not RAM and never free.
    assert!(pa.pfn_to_folio(0xa0).is_some() && !mm.is_present(0xa0));
    assert!(!mm.owns_ram(pa.pfn_to_folio(0xa0).unwrap()));
    // ... so no path frees it.
    let hole = pa.pfn_to_folio(0xa0).unwrap();
    assert_eq!(pa.free_page(0, hole), Err(FreeError::Foreign(0xa0)));
    assert_eq!(pa.free_frozen_page(0, hole), Err(FreeError::Foreign(0xa0)));
    assert!(
        !pa.free_blocks(pa.zone(0, ZoneType::Dma32).unwrap())
            .iter()
            .any(|&(p, o)| { (p..p + (1 << o)).contains(&0xa0) })
    );
    // Between the arrays there is nothing.
    for pfn in [0x8000, GIB4 - 1, GIB4 + 0x8000, u64::MAX >> 8] {
        assert!(pa.pfn_to_folio(pfn).is_none(), "{pfn:#x}");
    }
    let z0 = pa.zone(0, ZoneType::Dma32).unwrap();
    assert_eq!(
        (z0.span(), z0.present_pages()),
        (r(0, 0x8000), 0x9f + 0x7f00)
    );
    assert_eq!((z0.managed(), z0.reserved()), (z0.present_pages(), 0));
    assert!(pa.zone(0, ZoneType::Normal).is_none());
    pa.check().unwrap();
}

/// `pfn_to_folio` refuses every frame outside the arrays: below the first section (whose
/// number the lookup subtracts), in the first section below its first frame of RAM (an
/// array trimmed at the front), in it past its last frame (trimmed at the back), and past
/// the last section.
#[test]
fn memmap_refuses_frames_below_and_past_its_arrays() {
    let (start, end) = (GIB4 + 0x100, GIB4 + 0x7000);
    let ranges = [(0, r(start, end))];
    let pa = allocator(1, 1, &ranges, PcpConfig::default());
    let mm = pa.memmap();
    for pfn in [
        0,
        1,
        GIB4 - 1,
        GIB4,
        start - 1,
        end,
        GIB4 + 0x7fff,
        GIB4 + 0x8000,
    ] {
        assert!(pa.pfn_to_folio(pfn).is_none(), "{pfn:#x}");
    }
    for pfn in [start, end - 1] {
        let f = pa.pfn_to_folio(pfn).unwrap();
        assert_eq!(pa.folio_to_pfn(f), pfn);
        assert!(mm.owns_ram(f), "{pfn:#x}");
    }
}

/// A cursor answers as the memmap itself for any sequence of frames: it keeps the last
/// section it found, so a walk that leaves a section (to a hole, below an array trimmed at
/// the front, to another section, back) must not take the next frame from the old one.
/// Node 0 has a section with the legacy hole and a second one trimmed at both ends; node 1
/// a section above 4 GiB.
#[test]
fn memmap_cursor_agrees_with_the_memmap_on_any_walk() {
    use proptest::prelude::*;
    let sec = PAGES_PER_SECTION;
    let ranges = [
        (0, r(0, 0x9f)),
        (0, r(0x100, sec)),
        (0, r(sec + 0x10, 2 * sec - 0x10)),
        (1, r(GIB4, GIB4 + sec)),
    ];
    let pa = allocator(2, 2, &ranges, PcpConfig::default());
    let mm = pa.memmap();
    // Frames at every edge: described, holes, trimmed ends, between and past the arrays.
    let edges = [
        0,
        0x9e,
        0x9f,
        0xa0,
        0xff,
        0x100,
        sec - 1,
        sec,
        sec + 0xf,
        sec + 0x10,
        2 * sec - 0x11,
        2 * sec - 0x10,
        2 * sec,
        GIB4 - 1,
        GIB4,
        GIB4 + sec - 1,
        GIB4 + sec,
        u64::MAX,
    ];
    let check = |walk: &[u64]| -> Result<(), TestCaseError> {
        let mut cur = mm.cursor();
        for &pfn in walk {
            let want = mm.pfn_to_folio(pfn);
            let got = cur.pfn_to_folio(pfn);
            prop_assert_eq!(
                got.map(|f| f as *const Folio),
                want.map(|f| f as *const Folio)
            );
            if let Some(f) = want {
                prop_assert_eq!(cur.owns_ram(f), mm.owns_ram(f), "{:#x}", pfn);
            }
        }
        Ok(())
    };
    // Every described frame in order, then backwards: the unmap's and the free's walks.
    let all: Vec<u64> = mm
        .sections()
        .flat_map(|s| s.span().start..s.span().end)
        .collect();
    check(&all).unwrap();
    check(&all.iter().rev().copied().collect::<Vec<_>>()).unwrap();
    // A foreign folio (a copy of a described one) is never owned, whichever section the
    // cursor holds.
    let copy = Folio::new(0x100, 0, ZoneType::Dma32).unwrap();
    let mut cur = mm.cursor();
    assert!(cur.pfn_to_folio(0x100).is_some() && !cur.owns_ram(&copy));
    // Random walks mixing edges and frames near them.
    let frame = prop_oneof![
        proptest::sample::select(edges.to_vec()),
        (proptest::sample::select(edges.to_vec()), -3i64..=3)
            .prop_map(|(e, d)| e.wrapping_add_signed(d)),
        0..GIB4 + 2 * sec,
    ];
    proptest::test_runner::TestRunner::default()
        .run(&proptest::collection::vec(frame, 1..64), |w| check(&w))
        .unwrap();
}

/// One order-0 allocation splits an order-10 block into one free block of every lower
/// order; freeing it merges them back.
#[test]
fn split_and_merge() {
    let pa = single(1, 4096, 2048, PcpConfig::default());
    let zone = pa.zone(0, ZoneType::Dma32).unwrap();
    let before = pa.free_blocks(zone);
    assert_eq!(before, [(4096, 10), (4096 + 1024, 10)]);
    let f = pa.alloc_pages_buddy(0, 0, 0).unwrap();
    assert_eq!(f.refcount(), 1);
    assert!(!f.test(FolioFlags::BUDDY));
    let after = pa.free_blocks(zone);
    assert_eq!(after.len(), 11, "{after:?}");
    let mut orders: Vec<u32> = after.iter().map(|&(_, o)| o).collect();
    orders.sort_unstable();
    assert_eq!(orders, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert_eq!(zone.nr_free(), 2047);
    assert!(pa.free_pages_buddy(0, f, 0).unwrap());
    assert_eq!(pa.free_blocks(zone), before);
    pa.check().unwrap();
}

/// The release free path leaves `free_page_is_bad()`'s mapping check to debug builds, as
/// Linux leaves it to `check_pages_enabled`; the invariant checker still finds a mapped
/// frame on a free list, per-CPU or buddy.
#[test]
fn the_checker_finds_a_mapped_frame_on_a_free_list() {
    let pa = single(1, 4096, 2048, PcpConfig::default());
    let f = pa.alloc_page(0, 0).unwrap();
    pa.free_page(0, f).unwrap();
    pa.check().unwrap();
    assert!(f.inc_mapcount());
    let e = pa.check().unwrap_err();
    assert_eq!((e.pfn, e.what), (f.pfn(), "per-CPU list frame is mapped"));
    f.dec_mapcount().unwrap();
    let g = pa.alloc_pages_buddy(0, 0, 0).unwrap();
    assert!(pa.free_pages_buddy(0, g, 0).unwrap());
    pa.check().unwrap();
    assert!(g.inc_mapcount());
    let e = pa.check().unwrap_err();
    assert_eq!((e.pfn, e.what), (g.pfn(), "free frame is mapped"));
}

/// Free every other frame: only order-0 blocks exist and nothing larger can be had; free
/// the rest and an order-10 block is there again.
#[test]
fn order_10_after_fragmentation() {
    let pa = single(2, 0, 4096, PcpConfig::default());
    let mut got = Vec::new();
    while let Some(f) = pa.alloc_page(0, 0) {
        got.push(f);
    }
    assert_eq!(got.len(), 4096);
    got.sort_by_key(|f| f.pfn());
    let (odd, even): (Vec<&'static Folio>, Vec<&'static Folio>) =
        got.iter().partition(|f| f.pfn() % 2 == 1);
    for f in &odd {
        assert!(pa.free_page(1, f).unwrap());
    }
    pa.drain_all();
    assert!(
        pa.alloc_pages(0, 0, 1).is_none(),
        "no two free buddies anywhere"
    );
    assert!(pa.alloc_pages(0, 0, MAX_ORDER).is_none());
    for f in &even {
        assert!(pa.free_page(0, f).unwrap());
    }
    pa.drain_all();
    let big = pa
        .alloc_pages(1, 0, MAX_ORDER)
        .expect("merged back to order 10");
    assert_eq!(big.pfn() % 1024, 0);
    assert!(pa.free_pages(1, big, MAX_ORDER).unwrap());
    assert_eq!(pa.nr_free_pages(), 4096);
    pa.check().unwrap();
}

/// Node 0 straddles 4 GiB (Normal and DMA32), node 1 has Normal only: node 0's CPU gets
/// node 0 Normal, then node 0 DMA32, then node 1; node 1's CPU the reverse node order.
#[test]
fn zonelist_falls_back_by_zone_then_node() {
    let ranges = [
        (0, r(GIB4 - 256, GIB4 + 256)),
        (1, r(GIB4 + 4096, GIB4 + 4096 + 512)),
    ];
    let pa = allocator(2, 2, &ranges, PcpConfig::default());
    let nodes: Vec<(u32, Vec<ZoneType>)> = pa
        .nodes()
        .iter()
        .map(|n| (n.id(), n.zones().map(|z| z.kind()).collect()))
        .collect();
    assert_eq!(
        nodes,
        [
            (0, vec![ZoneType::Dma32, ZoneType::Normal]),
            (1, vec![ZoneType::Normal])
        ],
        "the nodes, their ids and populated zones, lowest first"
    );
    assert_eq!(
        (pa.nr_free_node(0), pa.nr_free_node(1), pa.nr_free_node(2)),
        (512, 512, 0),
        "free frames per node; none on a node that does not exist"
    );
    let mut seq: Vec<(u32, ZoneType)> = Vec::new();
    let mut got = Vec::new();
    while let Some(f) = pa.alloc_page(0, 0) {
        if seq.last() != Some(&(f.node(), f.zone())) {
            seq.push((f.node(), f.zone()));
        }
        got.push(f);
    }
    assert_eq!(
        seq,
        [
            (0, ZoneType::Normal),
            (0, ZoneType::Dma32),
            (1, ZoneType::Normal)
        ]
    );
    assert_eq!(got.len(), 1024);
    for f in got {
        assert!(pa.free_page(0, f).unwrap());
    }
    pa.drain_all();
    let f = pa.alloc_page(1, 1).unwrap();
    assert_eq!((f.node(), f.zone()), (1, ZoneType::Normal));
    assert!(pa.free_page(1, f).unwrap());
    let zl = pa.zonelist(1).unwrap();
    assert_eq!(zl.zones().len(), 3);
    assert_eq!(zl.zones()[2].kind, ZoneType::Dma32);
}

/// Exhaustion is `None` at every order, counted as a failure, never a panic.
#[test]
fn exhaustion_returns_none() {
    let pa = single(1, 0, 64, PcpConfig::default());
    let mut got = Vec::new();
    while let Some(f) = pa.alloc_pages(0, 0, 2) {
        got.push(f);
    }
    assert_eq!(got.len(), 16);
    for order in 0..=MAX_ORDER {
        assert!(pa.alloc_pages(0, 0, order).is_none());
        assert!(pa.alloc_pages_buddy(0, 0, order).is_none());
    }
    assert_eq!(
        pa.try_alloc_pages(0, 0, 0).err(),
        Some(AllocError::NoMemory)
    );
    assert_eq!(
        pa.cpu_stats(0).alloc_fail,
        2 * (u64::from(MAX_ORDER) + 1) + 2
    );
    assert_eq!(
        pa.try_alloc_pages(0, 0, MAX_ORDER + 1).err(),
        Some(AllocError::BadOrder(11))
    );
    assert_eq!(
        pa.try_alloc_pages(1, 0, 0).err(),
        Some(AllocError::BadCpu(1))
    );
    assert_eq!(
        pa.try_alloc_pages(0, 1, 0).err(),
        Some(AllocError::BadNode(1))
    );
    for f in got {
        assert!(pa.free_pages(0, f, 2).unwrap());
    }
    assert_eq!(pa.nr_free_pages(), 64);
}

/// Every bad free is refused with its reason and leaves the lists intact.
#[test]
fn bad_frees_are_refused() {
    let pa = single(2, 0, 1024, PcpConfig::default());
    let other = single(1, 0, 16, PcpConfig::default());
    let f = pa.alloc_pages(0, 0, 1).unwrap();
    let pfn = f.pfn();
    assert_eq!(
        pa.free_pages(0, f, MAX_ORDER + 1),
        Err(FreeError::BadOrder(11))
    );
    assert_eq!(pa.free_pages(2, f, 1), Err(FreeError::BadCpu(2)));
    let tail = pa.pfn_to_folio(pfn + 1).unwrap();
    assert_eq!(
        pa.free_pages(0, tail, 1),
        Err(FreeError::Misaligned(pfn + 1, 1))
    );
    let alien = other.alloc_page(0, 0).unwrap();
    assert_eq!(pa.free_page(0, alien), Err(FreeError::Foreign(alien.pfn())));
    assert_eq!(
        pa.free_frozen_page(0, alien),
        Err(FreeError::Foreign(alien.pfn()))
    );
    // A second reference: the first free only drops it.
    f.get();
    assert_eq!(pa.free_pages(0, f, 1), Ok(false));
    assert_eq!(pa.free_pages(0, f, 1), Ok(true));
    assert_eq!(pa.free_pages(0, f, 1), Err(FreeError::NotAllocated(pfn)));
    // A mapped frame is leaked, not freed.
    let g = pa.alloc_page(1, 0).unwrap();
    assert!(g.inc_mapcount());
    assert_eq!(
        pa.free_page(1, g),
        Err(FreeError::BadState(g.pfn(), "still mapped"))
    );
    assert_eq!(pa.bad_pages(), 1);
    // A frame on an LRU list, one still charged, and one still linked on some list (a
    // list the allocator does not know, so no flag says so) are leaked too.
    let h = pa.alloc_page(1, 0).unwrap();
    h.set(FolioFlags::LRU);
    assert_eq!(
        pa.free_page(1, h),
        Err(FreeError::BadState(h.pfn(), "still on an LRU list"))
    );
    let c = pa.alloc_page(1, 0).unwrap();
    c.set_memcg_id(7).unwrap();
    assert_eq!(
        pa.free_page(1, c),
        Err(FreeError::BadState(c.pfn(), "still charged to a memcg"))
    );
    let l = pa.alloc_page(1, 0).unwrap();
    let mut list = page::list::checked_folio_list();
    list.push_back(l);
    assert_eq!(
        pa.free_page(1, l),
        Err(FreeError::BadState(l.pfn(), "still linked on a list"))
    );
    assert_eq!(pa.bad_pages(), 4);
    pa.drain_all();
    let census = pa.check().unwrap();
    assert_eq!(
        census.free_pages,
        1024 - 4,
        "the four leaked frames stay out"
    );
    drop(list);
}

/// A frame used after its free (a stray reference, mapping or page flag on a free frame)
/// is found when it comes off a list, leaked, and the allocation gets the next frame.
#[test]
fn corrupted_free_frame_is_skipped() {
    type Corruption = (&'static str, fn(&Folio));
    let corruptions: [Corruption; 3] = [
        ("a reference", |f| f.get()),
        ("a mapping", |f| assert!(f.inc_mapcount())),
        ("a flag", |f| f.set(FolioFlags::REFERENCED)),
    ];
    for (what, corrupt) in corruptions {
        let pa = single(
            1,
            0,
            8,
            PcpConfig {
                batch: Some(1),
                high: Some(0),
            },
        );
        let f = pa.alloc_page(0, 0).unwrap();
        assert!(pa.free_page(0, f).unwrap());
        // Use after free.
        let stray = pa.pfn_to_folio(f.pfn()).unwrap();
        corrupt(stray);
        let mut got = Vec::new();
        while let Some(g) = pa.alloc_page(0, 0) {
            assert_ne!(g.pfn(), stray.pfn(), "{what}");
            got.push(g);
        }
        assert_eq!((got.len(), pa.bad_pages()), (7, 1), "{what}");
    }
}

/// The handover refuses anything that is not reserved RAM, as a whole.
#[test]
fn handover_is_checked() {
    let mut b = NumaBuilder::new(1, 1);
    b.memory(0, r(0, 100)).memory(0, r(200, 300));
    let pa = PageAlloc::new(
        b.build().unwrap(),
        &mut HeapStorage::new(),
        PcpConfig::default(),
    )
    .unwrap();
    assert_eq!(pa.nr_free_pages(), 0);
    assert_eq!(
        pa.free_range(r(10, 10)),
        Err(HandoverError::Empty(r(10, 10)))
    );
    assert_eq!(pa.free_range(r(90, 210)), Err(HandoverError::NotRam(100)));
    assert_eq!(pa.free_range(r(0, 64)), Ok(64));
    assert_eq!(
        pa.free_range(r(60, 70)),
        Err(HandoverError::NotReserved(60))
    );
    assert_eq!(
        pa.nr_free_pages(),
        64,
        "nothing of a refused range was freed"
    );
    // A frame handed out since is not reserved either.
    let f = pa.alloc_pages_buddy(0, 0, 0).unwrap();
    assert_eq!(
        pa.free_range(r(f.pfn(), f.pfn() + 1)),
        Err(HandoverError::NotReserved(f.pfn()))
    );
    assert_eq!(pa.free_range(r(200, 300)), Ok(100));
    let z = pa.zone(0, ZoneType::Dma32).unwrap();
    assert_eq!(
        (z.present_pages(), z.managed(), z.reserved()),
        (200, 164, 36)
    );
    pa.check().unwrap();
}

/// Refill takes `batch` frames in one `zone->lock` section; reaching `high` spills; the
/// counters say so exactly.
#[test]
fn pcp_refill_spill_and_counters() {
    let pa = single(
        2,
        0,
        1024,
        PcpConfig {
            batch: Some(4),
            high: Some(8),
        },
    );
    let zone = pa.zone(0, ZoneType::Dma32).unwrap();
    let f = pa.alloc_page(0, 0).unwrap();
    let s = pa.cpu_stats(0);
    assert_eq!((s.alloc, s.refill, s.refill_pages), (1, 1, 4));
    assert_eq!(pa.pcp_pages(zone), 3);
    assert_eq!(
        zone.nr_free(),
        1020,
        "frames on a per-CPU list are not free"
    );
    // Free 8 frames on cpu 1: the 8th reaches high and spills batch << 0 = 4.
    let more: Vec<&'static Folio> = (0..7).map(|_| pa.alloc_page(0, 0).unwrap()).collect();
    assert!(pa.free_page(1, f).unwrap());
    for g in &more {
        assert!(pa.free_page(1, g).unwrap());
    }
    let s1 = pa.cpu_stats(1);
    assert_eq!((s1.free, s1.spill, s1.spill_pages), (8, 1, 4));
    assert_eq!(s1.pcp_pages(), 4);
    assert_eq!(pa.drain_cpu(1), 4);
    assert_eq!(pa.drain_cpu(1), 0);
    let total = pa.total_stats();
    assert_eq!(
        total.pcp_pages(),
        i64::try_from(pa.pcp_pages(zone)).unwrap()
    );
    let per_zone = pa.zone_stats(zone);
    assert_eq!(
        (
            per_zone.alloc,
            per_zone.free,
            per_zone.refill,
            per_zone.spill
        ),
        (8, 8, 2, 1),
        "the zone's counters, summed over both CPUs"
    );
    assert_eq!(pa.drain_all(), u64::try_from(total.pcp_pages()).unwrap());
    assert_eq!(pa.nr_free_pages(), 1024);
    assert_eq!(zone.pcp_batch_high(0), Some((4, 8)));
}

/// `batch` and `high` from the zone's size (see the formulas in `page_alloc::pcp`), and the
/// watermarks they derive from.
#[test]
fn pcp_sizes_follow_the_zone() {
    // 1 GiB on one node with 4 CPUs.
    let pa = single(4, 0, 262_144, PcpConfig::default());
    let z = pa.zone(0, ZoneType::Dma32).unwrap();
    // min_free_kbytes = int_sqrt(1 GiB in KiB * 16) = 4096 -> 1024 pages; low = 1024 +
    // max(256, 262) = 1286, high = 1548; pcp high = 1286 / 4 = 321.
    let w = z.watermarks();
    assert_eq!((w.min, w.low, w.high), (1024, 1286, 1548));
    assert_eq!(z.pcp_batch_high(3), Some((63, 321)));
    // An override of batch alone keeps the derived high (at least 4 * batch).
    let pa = single(
        4,
        0,
        262_144,
        PcpConfig {
            batch: Some(200),
            high: None,
        },
    );
    assert_eq!(
        pa.zone(0, ZoneType::Dma32).unwrap().pcp_batch_high(0),
        Some((200, 800))
    );
    assert!(matches!(
        PageAlloc::with_all_free(
            page_alloc::NumaTopology::single_node(1, &[r(0, 10)]).unwrap(),
            &mut HeapStorage::new(),
            PcpConfig {
                batch: Some(0),
                high: None
            }
        ),
        Err(page_alloc::InitError::BadBatch)
    ));
}

/// A free from any CPU goes to the freeing CPU's list.
#[test]
fn remote_free_goes_to_the_freeing_cpu() {
    let pa = single(2, 0, 512, PcpConfig::default());
    let zone = pa.zone(0, ZoneType::Dma32).unwrap();
    let f = pa.alloc_page(0, 0).unwrap();
    let before = zone.pcp_count(1);
    assert!(pa.free_page(1, f).unwrap());
    assert_eq!(zone.pcp_count(1), before.map(|c| c + 1));
    // cpu 1 now gets that very frame back first (hot end).
    let g = pa.alloc_page(1, 0).unwrap();
    assert_eq!(g.pfn(), f.pfn());
    assert!(pa.free_page(1, g).unwrap());
}

/// The slow path drains every CPU's per-CPU lists and retries
/// (`__alloc_pages_direct_reclaim()`'s `drain_all_pages()`): frames that only another
/// CPU's list holds are still allocated, and an allocation fails only after the drain.
#[test]
fn frames_on_another_cpus_list_are_found_by_the_slow_path() {
    let pa = single(2, 0, 64, PcpConfig::default());
    let zone = pa.zone(0, ZoneType::Dma32).unwrap();
    let mut got = Vec::new();
    while let Some(f) = pa.alloc_page(0, 0) {
        got.push(f);
    }
    assert_eq!(got.len(), 64);
    // Two frames go back to cpu 1's list: the buddy lists and cpu 0's list stay empty.
    let stranded: Vec<u64> = got.drain(..2).map(|f| f.pfn()).collect();
    for pfn in &stranded {
        let f = pa.memmap().pfn_to_folio(*pfn).unwrap();
        assert!(pa.free_page(1, f).unwrap());
    }
    assert_eq!(zone.pcp_count(1), Some(2));
    assert_eq!(zone.pcp_count(0), Some(0));
    let fails = pa.cpu_stats(0).alloc_fail;
    for _ in 0..2 {
        let f = pa.alloc_page(0, 0).expect("the drain finds cpu 1's frames");
        assert!(stranded.contains(&f.pfn()));
        got.push(f);
    }
    assert_eq!(zone.pcp_count(1), Some(0));
    assert_eq!(pa.cpu_stats(0).alloc_fail, fails);
    assert_eq!(
        pa.try_alloc_pages(0, 0, 0).err(),
        Some(AllocError::NoMemory)
    );
    assert_eq!(pa.cpu_stats(0).alloc_fail, fails + 1);
    for f in got {
        assert!(pa.free_page(0, f).unwrap());
    }
}

/// Memory too far apart for the memmap's root table is refused, not allocated.
#[test]
fn too_sparse_memory_is_refused() {
    let far = page_alloc::memmap::MAX_SECTION_SPAN * PAGES_PER_SECTION;
    let mut b = NumaBuilder::new(1, 1);
    b.memory(0, r(0, 16)).memory(0, r(far, far + 16));
    let err = PageAlloc::new(
        b.build().unwrap(),
        &mut HeapStorage::new(),
        PcpConfig::default(),
    )
    .err();
    assert_eq!(
        err,
        Some(page_alloc::InitError::Memmap(
            page_alloc::memmap::MemmapError::TooSparse(page_alloc::memmap::MAX_SECTION_SPAN + 1)
        ))
    );
}

/// `free_unref_folios`: a batch of frozen frames goes to the freeing CPU's lists with one
/// `pcp->lock` hold per run of one zone, spilling inside the hold when a list reaches
/// `high`; a frame that is still referenced is left alone.
#[test]
fn a_frozen_batch_is_freed_under_one_lock_hold_per_zone_run() {
    // Node 0 straddles 4 GiB: a DMA32 zone below, a Normal zone above.
    let ranges = [(0, r(GIB4 - 256, GIB4 + 256))];
    let pa = allocator(
        1,
        2,
        &ranges,
        PcpConfig {
            batch: Some(4),
            high: Some(8),
        },
    );
    let free0 = pa.nr_free_pages();
    let dma = pa.zone(0, ZoneType::Dma32).unwrap();
    let normal = pa.zone(0, ZoneType::Normal).unwrap();
    let take = |z: &page_alloc::Zone| loop {
        let f = pa.alloc_page(0, 0).unwrap();
        if std::ptr::eq(pa.folio_zone(f).unwrap(), z) {
            break f;
        }
        // The other zone's frame stays allocated, out of the way (freed at the end).
        let _ = f;
    };
    // Normal is allocated first (the zonelist's highest zone), DMA32 once it is empty, so
    // take the Normal frames first.
    let n: Vec<&'static Folio> = (0..2).map(|_| take(normal)).collect();
    let d: Vec<&'static Folio> = (0..14).map(|_| take(dma)).collect();
    let busy = d[13];
    let batch: Vec<&'static Folio> = [&d[0..2], &n[..], &d[2..14]].concat();
    for f in &batch {
        if !std::ptr::eq(*f, busy) {
            assert_eq!(f.put(), Ok(true), "frozen by its last put");
        }
    }
    let before = pa.cpu_stats(1);
    let out = pa.free_frozen_folios(1, &batch).unwrap();
    assert_eq!(
        (out.freed, out.failed, out.rounds),
        (15, 1, 3),
        "runs: 2 DMA32, 2 Normal, 12 DMA32 (the busy one refused)"
    );
    let s = pa.cpu_stats(1).since(&before);
    assert_eq!((s.free, s.free_rounds), (15, 3), "one lock hold per run");
    assert_eq!(
        (s.spill, s.spill_pages),
        (2, 8),
        "the 12-frame run reached high twice inside its hold (4 each: the second is clamped to high - batch)"
    );
    assert_eq!(busy.refcount(), 1, "the referenced frame was not touched");
    assert_eq!(
        pa.free_frozen_folios(2, &batch),
        Err(FreeError::BadCpu(2)),
        "a CPU without lists frees nothing"
    );
    assert!(pa.free_page(0, busy).unwrap());
    // Everything else taken on the way comes back too: every frame is accounted for.
    for pfn in (GIB4 - 256)..(GIB4 + 256) {
        let f = pa.pfn_to_folio(pfn).unwrap();
        if f.refcount() == 1 {
            assert!(pa.free_page(0, f).unwrap());
        }
    }
    pa.drain_all();
    assert_eq!(pa.nr_free_pages(), free0);
}
