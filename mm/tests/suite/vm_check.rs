//! The invariant checker against the corruptions it exists to find: each test breaks one
//! invariant of a small healthy world (anonymous pages mapped, file pages cached), checks
//! that the checker names it, undoes the damage and checks that everything holds again.
//! What it finds when nothing is wrong is pinned too (the census).

use crate::vm_common;

use lru::{Folio, FolioFlags};
use memcg::{MemcgRef, ROOT_ID};
use mm::check::VmCensus;
use mm::mm_struct::MmStruct;
use mm::mmap::MapRequest;
use mm::object::{Object, ObjectKind};
use mm::page_cache::Entry;
use mm::soft_mmu::SoftMmu;
use mm::vma::VmAreaA;
use vm_common::*;

const ANON: u64 = 8;
const FILE: u64 = 8;
const FRAMES: u64 = 2048;

struct Healthy {
    w: &'static World,
    mm: Box<MmStruct<VmAreaA, SoftMmu>>,
    obj: &'static Object,
    m: MemcgRef<'static, Pn, mm::folios::VmFolios>,
    other: MemcgRef<'static, Pn, mm::folios::VmFolios>,
}

/// `ANON` anonymous pages mapped and `FILE` file pages read (cached, not mapped), all
/// charged to one memcg; a second, empty memcg beside it. MGLRU lists.
fn healthy() -> Healthy {
    healthy_with(true)
}

fn healthy_with(mglru: bool) -> Healthy {
    let w: &'static World = Box::leak(Box::new(world(1, FRAMES, |c| c.mglru = mglru)));
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let other = root.create_child().unwrap();
    let mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    let req = MapRequest {
        start: VA,
        len: ANON * 4096,
        write: true,
        object: None,
        node: 0,
    };
    w.vm.mmap(&mm, &req, &m).unwrap();
    for p in 0..ANON {
        w.vm.touch(&mm, 0, VA + p * 4096, true).unwrap();
    }
    let obj: &'static Object = Box::leak(Box::new(Object::new(ObjectKind::File, FILE as usize)));
    for i in 0..FILE {
        w.vm.filemap_read(obj, &m, 0, 0, i, true).unwrap();
    }
    // Onto the LRU lists (the checker would drain the batches itself).
    w.vm.lru_add_drain_all(0);
    Healthy {
        w,
        mm,
        obj,
        m,
        other,
    }
}

impl Healthy {
    fn check(&self) -> Result<VmCensus, String> {
        self.w
            .vm
            .check(0, &[&*self.mm], &[self.obj])
            .map_err(|e| e.to_string())
    }

    /// The checker's complaint, which must contain `what`.
    fn fails_with(&self, what: &str) {
        match self.check() {
            Ok(c) => panic!("the checker missed it ({what}): {c:?}"),
            Err(e) => assert!(e.contains(what), "expected {what:?}, got {e:?}"),
        }
    }

    /// A folio on an LRU list: anonymous (mapped) or not (cached).
    fn lru_folio(&self, anon: bool) -> &'static Folio {
        (BASE_PFN..BASE_PFN + FRAMES)
            .filter_map(|p| self.w.pa.pfn_to_folio(p))
            .find(|f| f.test_lru() && (f.mapcount() > 0) == anon)
            .expect("an LRU folio of that kind")
    }

    /// Takes `f` off its LRU list and uncharges it (so the charge books still agree), checks
    /// that the checker says `what`, and puts everything back.
    fn off_lru_fails_with(&self, f: &'static Folio, what: &str) {
        let lv = self.m.lruvec(0).unwrap();
        lv.isolate_folio(f).unwrap();
        self.m.uncharge(1).unwrap();
        self.fails_with(what);
        self.m.try_charge(0, 1).unwrap();
        lv.putback_folio(f).unwrap();
        self.check().unwrap();
    }

    /// A free frame (on a buddy list).
    fn free_frame(&self) -> &'static Folio {
        self.w.pa.drain_all();
        (BASE_PFN..BASE_PFN + FRAMES)
            .filter_map(|p| self.w.pa.pfn_to_folio(p))
            .find(|f| f.test(FolioFlags::BUDDY))
            .expect("a free frame")
    }
}

/// With MGLRU generations and with the classic lists.
#[test]
fn a_healthy_world_passes_with_an_exact_census() {
    for mglru in [true, false] {
        let h = healthy_with(mglru);
        // A frame on CPU 0's per-CPU list: free, though not on a buddy list.
        let f = h.w.pa.alloc_page(0, 0).unwrap();
        assert!(h.w.pa.free_page(0, f).unwrap());
        assert!(h.w.pa.pcp_pages(h.w.pa.zones().next().unwrap()) > 0);
        let c = h.check().unwrap();
        let free = h.w.free_frames();
        assert_eq!(
            c,
            VmCensus {
                lru_folios: ANON + FILE,
                mapped_ptes: ANON,
                pte_tables: 1,
                cached_folios: FILE,
                shadows: 0,
                charged: ANON + FILE,
                free_frames: free,
            },
            "mglru: {mglru}"
        );
        // Evicted file pages leave shadows in their slots.
        let reclaimed = h.m.memory_reclaim_write(0, "8K").unwrap();
        assert!(reclaimed > 0);
        let c = h.check().unwrap();
        assert_eq!(
            (c.cached_folios, c.shadows, c.lru_folios, c.charged),
            (
                FILE - reclaimed,
                reclaimed,
                ANON + FILE - reclaimed,
                ANON + FILE - reclaimed
            ),
            "mglru: {mglru}"
        );
    }
}

#[test]
fn a_folio_on_another_memcgs_lruvec_is_found() {
    let h = healthy();
    let f = h.lru_folio(true);
    assert!(f.test_clear_lru());
    f.set_memcg_id(h.other.id()).unwrap();
    f.set(FolioFlags::LRU);
    h.fails_with(&format!(
        "of memcg {} node 0 on the lruvec of memcg {}",
        h.other.id(),
        h.m.id()
    ));
    assert!(f.test_clear_lru());
    f.set_memcg_id(h.m.id()).unwrap();
    f.set(FolioFlags::LRU);
    h.check().unwrap();
}

#[test]
fn a_listed_folio_without_its_lru_flag_is_found() {
    let h = healthy();
    let f = h.lru_folio(false);
    assert!(f.test_clear_lru());
    h.fails_with("without its LRU flag");
    f.set(FolioFlags::LRU);
    h.check().unwrap();
}

#[test]
fn a_charge_without_a_folio_is_found() {
    let h = healthy();
    h.m.try_charge(0, 1).unwrap();
    // The root, checked first, is the first found wrong (the charge went up the tree).
    h.fails_with(&format!(
        "memcg {ROOT_ID}: memory.current is {} pages, but {} folios",
        ANON + FILE + 1,
        ANON + FILE
    ));
    h.m.uncharge(1).unwrap();
    h.check().unwrap();
}

#[test]
fn a_mapcount_that_disagrees_with_the_ptes_is_found() {
    let h = healthy();
    let f = h.lru_folio(true);
    assert!(!f.inc_mapcount(), "a second mapping");
    h.fails_with("mapcount 2 but 1 PTEs map it");
    f.dec_mapcount().unwrap();
    h.check().unwrap();
}

#[test]
fn a_stray_reference_on_an_anonymous_folio_is_found() {
    let h = healthy();
    let f = h.lru_folio(true);
    f.get();
    h.fails_with("refcount 2 for 1 mappings");
    f.put().unwrap();
    h.check().unwrap();
}

#[test]
fn a_stray_reference_on_a_cached_folio_is_found() {
    let h = healthy();
    // The lookup pins the folio; keeping the pin is the stray reference.
    let Some(Entry::Folio(f)) = h.obj.cache().lookup(3, 0, h.w.vm.tree()) else {
        panic!("page 3 is cached");
    };
    h.fails_with(&format!(
        "object {} slot 3: refcount 2 for the cache and 0 mappings",
        h.obj.id()
    ));
    f.put().unwrap();
    h.check().unwrap();
}

#[test]
fn a_leaked_anonymous_folio_is_found() {
    let h = healthy();
    let f = h.lru_folio(true);
    // Its PTE stays, so the PTE walk counts a mapping the folio no longer has.
    f.dec_mapcount().unwrap();
    h.fails_with("mapcount 0 but 1 PTEs map it");
    assert!(f.inc_mapcount());
    h.check().unwrap();
}

#[test]
fn a_corrupted_free_frame_is_found() {
    let h = healthy();
    let f = h.free_frame();
    f.get();
    h.fails_with("page allocator:");
    f.put().unwrap();
    h.check().unwrap();
}

/// A mapped folio taken off its LRU list (and uncharged, so the charge books still
/// agree): the PTE walk finds a mapping of a folio on no list.
#[test]
fn a_mapped_folio_off_every_lru_is_found() {
    let h = healthy();
    let va = VA + 3 * 4096;
    let pfn = h.mm.pgtable().table(va).unwrap().lock().pfn(3).unwrap();
    let f = h.w.pa.pfn_to_folio(pfn.as_u64()).unwrap();
    h.off_lru_fails_with(
        f,
        &format!("PTE {va:#x} maps pfn {pfn:#x}, which is on no LRU"),
    );
}

/// The same for a cached folio: the page-cache walk finds it.
#[test]
fn a_cached_folio_off_every_lru_is_found() {
    let h = healthy();
    let f = h.lru_folio(false);
    h.off_lru_fails_with(f, &format!("cached pfn {:#x} is on no LRU", f.pfn()));
}

/// A listed folio that is unreferenced, or marked free in the buddy allocator.
#[test]
fn a_listed_folio_that_is_unreferenced_or_free_is_found() {
    let h = healthy();
    let f = h.lru_folio(false);
    assert_eq!(f.refcount(), 1, "the page cache's reference");
    assert_eq!(f.put(), Ok(true));
    h.fails_with("unreferenced or free");
    f.get();
    h.check().unwrap();
    f.set(FolioFlags::BUDDY);
    h.fails_with("unreferenced or free");
    f.clear(FolioFlags::BUDDY);
    h.check().unwrap();
}

/// A PTE that maps a free frame (a use after free through a stale translation).
#[test]
fn a_pte_mapping_a_free_frame_is_found() {
    let h = healthy();
    let free = h.free_frame();
    let idx = ANON as usize + 5;
    let va = VA + idx as u64 * 4096;
    h.mm.pgtable()
        .table(VA)
        .unwrap()
        .lock()
        .set(idx, page_alloc::Pfn::of(free), true);
    h.fails_with(&format!(
        "PTE {va:#x} maps pfn {:#x}, which is on no LRU (free or lost)",
        free.pfn()
    ));
    let _ = h.mm.pgtable().table(VA).unwrap().lock().clear(idx);
    h.check().unwrap();
}

/// A PTE table whose frame was freed under it, or is unreferenced.
#[test]
fn a_pte_table_in_a_free_frame_is_found() {
    let h = healthy();
    let table = h.mm.pgtable().table(VA).unwrap().folio();
    let want = format!("PTE table at {VA:#x} sits in a free frame");
    table.set(FolioFlags::BUDDY);
    h.fails_with(&want);
    table.clear(FolioFlags::BUDDY);
    h.check().unwrap();
    let refs = table.refcount();
    for _ in 0..refs {
        table.put().unwrap();
    }
    h.fails_with(&want);
    for _ in 0..refs {
        table.get();
    }
    h.check().unwrap();
}

/// A cached folio that names another index, or another object, than the slot it is in.
#[test]
fn a_cached_folio_naming_another_slot_is_found() {
    let h = healthy();
    let Some(Entry::Folio(f)) = h.obj.cache().lookup(2, 0, h.w.vm.tree()) else {
        panic!("page 2 is cached");
    };
    f.put().unwrap();
    let (mapping, index) = (f.mapping(), f.index());
    let want = format!("object {} slot 2: its folio names mapping", h.obj.id());
    f.set_mapping(mapping, 5);
    h.fails_with(&want);
    let other = Object::new(ObjectKind::File, 1);
    let Some(Entry::Folio(g)) = ({
        h.w.vm.filemap_read(&other, &h.m, 0, 0, 0, true).unwrap();
        other.cache().lookup(0, 0, h.w.vm.tree())
    }) else {
        panic!("the other object's page is cached");
    };
    g.put().unwrap();
    f.set_mapping(g.mapping(), index);
    h.fails_with(&want);
    f.set_mapping(mapping, index);
    h.w.vm.truncate(&other, 0);
    h.check().unwrap();
}
