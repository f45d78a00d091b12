//! The fault path on the host: anonymous fault-in and unmap with every frame back, many
//! threads faulting slices of ONE region in both `vm_area_struct` layouts, memory.max with
//! file-like pages (reclaim through the reverse map, refaults, contents checked), readtwice
//! activation, truncation unmapping each mapping in one batch, a memcg full of anonymous
//! pages failing cleanly, fault injection, and a soak mixing everything, each ending with
//! the invariant checker.

use crate::vm_common;

use mm::counters::VmEvent;
use mm::fault::{FaultError, MAPPING_ANON, anon_mapping};
use mm::fault_inject::FaultSpec;
use mm::mmap::MapRequest;
use mm::object::{Object, ObjectKind};
use mm::pgtable::pte_index;
use mm::vma::{VmArea, VmAreaA, VmAreaB};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use vm_common::*;

fn anon(start: u64, pages: u64) -> MapRequest<'static> {
    MapRequest {
        start,
        len: pages * 4096,
        write: true,
        object: None,
        node: 0,
    }
}

/// A read-only mapping of `pages` pages of `obj` from its first page, at `start`.
fn file(start: u64, pages: u64, obj: &'static Object) -> MapRequest<'static> {
    MapRequest {
        start,
        len: pages * 4096,
        write: false,
        object: Some((obj, 0)),
        node: 0,
    }
}

#[test]
fn anonymous_fault_in_and_unmap_give_every_frame_back() {
    let w = world(1, 4096, |_| {});
    let free0 = w.free_frames();
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, 600), &m).unwrap();
    for p in 0..600 {
        w.vm.touch(&mm, 0, VA + p * 4096, true).unwrap();
        assert!(w.vm.pte_present(&mm, VA + p * 4096));
    }
    // Each folio names its address space (the id with PAGE_MAPPING_ANON) and page.
    let mut other = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    assert_ne!(mm.id(), other.id());
    for p in [0, 7, 599] {
        let va = VA + p * 4096;
        let pfn = mm
            .pgtable()
            .table(va)
            .unwrap()
            .lock()
            .pfn(pte_index(va))
            .unwrap();
        let f = w.pa.pfn_to_folio(pfn.as_u64()).unwrap();
        assert_eq!(
            (f.mapping() >> 1, f.mapping() & MAPPING_ANON, f.index()),
            (mm.id(), MAPPING_ANON, va >> 12)
        );
        assert_eq!(f.mapping(), anon_mapping(mm.id()));
        assert_ne!(f.mapping(), anon_mapping(other.id()));
    }
    w.vm.destroy_mm(&mut other, 0);
    // A second touch is a hit.
    w.vm.touch(&mm, 0, VA, true).unwrap();
    assert_eq!(w.vm.counters().total(VmEvent::Fault), 600);
    let c = w.vm.check(0, &[&*mm], &[]).unwrap();
    assert_eq!((c.lru_folios, c.mapped_ptes, c.charged), (600, 600, 600));
    m.flush_stats();
    assert_eq!(m.memory_stat(lru::NodeStatItem::NrAnonMapped), 600);
    assert_eq!(c.pte_tables, 2, "600 pages span two 2 MiB tables");
    assert_eq!(m.usage(), 600);
    assert!(w.free_frames() <= free0 - 600 - 2);
    // Outside the region: no fault is resolved.
    assert_eq!(
        w.vm.touch(&mm, 0, VA + 600 * 4096, true),
        Err(FaultError::NoRegion)
    );
    w.vm.munmap(&mm, 0, VA, 600 * 4096).unwrap();
    w.grace_period();
    let c = w.vm.check(0, &[&*mm], &[]).unwrap();
    assert_eq!((c.lru_folios, c.mapped_ptes, c.charged), (0, 0, 0));
    assert_eq!(w.vm.counters().total(VmEvent::Released), 600);
    m.flush_stats();
    assert_eq!(m.memory_stat(lru::NodeStatItem::NrAnonMapped), 0);
    assert_eq!(
        w.vm.counters().total(VmEvent::Shootdown),
        0,
        "one CPU: local flushes only"
    );
    w.vm.destroy_mm(&mut mm, 0);
    assert_eq!(
        w.free_frames(),
        free0,
        "every frame is back, page tables too"
    );
    assert!(
        w.mmu.local_flushes() >= 600,
        "unmapped translations were flushed"
    );
}

/// A zap of a range reaching past the address space is clipped to it: it clears what is
/// mapped inside and returns (it does not walk the 2 MiB spans up to the end of the range).
/// `folios_put_refs` for an unmap (issue 19): the 64 pages of one memcg are uncharged with
/// one page-counter update (`uncharge_batch`) and freed under one `pcp->lock` hold
/// (`free_unref_folios`), and their `NR_ANON_MAPPED` decrements arrive folded.
#[test]
fn an_unmap_of_64_pages_of_one_memcg_uncharges_and_frees_in_one_round() {
    let w = world(1, 4096, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, 64), &m).unwrap();
    for p in 0..64 {
        w.vm.touch(&mm, 0, VA + p * 4096, true).unwrap();
    }
    m.flush_stats();
    assert_eq!(m.memory_stat(lru::NodeStatItem::NrAnonMapped), 64);
    let usage = m.usage();
    let c = |e| w.vm.counters().total(e);
    let before = (
        c(VmEvent::UnchargeBatches),
        c(VmEvent::PcpFreeRounds),
        c(VmEvent::Released),
    );
    let pcp = w.pa.cpu_stats(0);
    w.vm.munmap(&mm, 0, VA, 64 * 4096).unwrap();
    let after = (
        c(VmEvent::UnchargeBatches),
        c(VmEvent::PcpFreeRounds),
        c(VmEvent::Released),
    );
    assert_eq!(
        (after.0 - before.0, after.1 - before.1, after.2 - before.2),
        (1, 1, 64),
        "one page-counter update, one pcp->lock round, 64 frames released"
    );
    let s = w.pa.cpu_stats(0).since(&pcp);
    assert_eq!(
        (s.free, s.free_rounds),
        (64, 1),
        "the allocator saw one lock hold"
    );
    assert_eq!(m.usage(), usage - 64);
    m.flush_stats();
    assert_eq!(m.memory_stat(lru::NodeStatItem::NrAnonMapped), 0);
    w.grace_period();
    let c = w.vm.check(0, &[&*mm], &[]).unwrap();
    assert_eq!((c.lru_folios, c.mapped_ptes, c.charged), (0, 0, 0));
    w.vm.destroy_mm(&mut mm, 0);
}

/// Issue 19: while a memcg is online its css count is per CPU, so two CPUs faulting and
/// freeing pages of one memcg (each charge takes a css reference, each uncharge drops one,
/// and the stocks take theirs) never write the count's shared atomic.
#[test]
fn two_cpus_faulting_and_freeing_in_one_memcg_write_no_shared_css_count() {
    const PER: u64 = 300;
    let w = world(2, 4096, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, 2 * PER), &m).unwrap();
    let (writes, refs) = (m.css_atomic_writes(), m.css_refcnt());
    let counted = w.vm.counters().total(VmEvent::CssAtomicWrites);
    let faults = w.vm.counters().total(VmEvent::Fault);
    for _round in 0..2 {
        std::thread::scope(|s| {
            for cpu in 0..2 {
                let (vm, mm) = (&w.vm, &mm);
                s.spawn(move || {
                    ksync::cpu::set_this_thread_cpu(cpu);
                    let lo = VA + cpu as u64 * PER * 4096;
                    for p in 0..PER {
                        vm.touch(mm, cpu, lo + p * 4096, true).unwrap();
                    }
                    vm.zap_page_range(mm, cpu, lo, lo + PER * 4096);
                });
            }
        });
    }
    assert_eq!(w.vm.counters().total(VmEvent::Fault) - faults, 4 * PER);
    assert_eq!(
        m.css_atomic_writes(),
        writes,
        "no fault, uncharge or stock refill wrote the shared count"
    );
    assert_eq!(
        w.vm.counters().total(VmEvent::CssAtomicWrites),
        counted,
        "nor any other memcg's"
    );
    assert!(m.css_is_percpu());
    // The per-CPU count is exact: with the stocks drained, only the handles remain.
    w.vm.tree().stocks().drain(0).unwrap();
    w.vm.tree().stocks().drain(1).unwrap();
    assert_eq!(m.css_refcnt(), refs);
    // A reference taken without a CPU (a handle) does write it, and is counted.
    drop(m.clone());
    assert_eq!(m.css_atomic_writes(), writes + 2);
    w.vm.munmap(&mm, 0, VA, 2 * PER * 4096).unwrap();
    w.vm.destroy_mm(&mut mm, 0);
}

#[test]
fn a_zap_past_the_address_space_is_clipped() {
    let w = world(1, 1024, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA + VA_LEN - 4 * 4096, 4), &m)
        .unwrap();
    for p in 0..4 {
        w.vm.touch(&mm, 0, VA + VA_LEN - (p + 1) * 4096, true)
            .unwrap();
    }
    w.vm.zap_page_range(&mm, 0, 0, u64::MAX);
    let c = w.vm.check(0, &[&*mm], &[]).unwrap();
    assert_eq!((c.mapped_ptes, c.lru_folios, c.charged), (0, 0, 0));
    w.vm.destroy_mm(&mut mm, 0);
}

/// A zap of pages in the middle of a PTE table's span clears exactly those pages.
#[test]
fn a_partial_zap_clears_exactly_its_pages() {
    let w = world(1, 1024, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, 32), &m).unwrap();
    for p in 0..32 {
        w.vm.touch(&mm, 0, VA + p * 4096, true).unwrap();
    }
    w.vm.zap_page_range(&mm, 0, VA + 12 * 4096, VA + 20 * 4096);
    let present: Vec<u64> = (0..32)
        .filter(|&p| w.vm.pte_present(&mm, VA + p * 4096))
        .collect();
    let want: Vec<u64> = (0..12).chain(20..32).collect();
    assert_eq!(present, want);
    let c = w.vm.check(0, &[&*mm], &[]).unwrap();
    assert_eq!((c.mapped_ptes, c.lru_folios), (24, 24));
    w.vm.destroy_mm(&mut mm, 0);
}

/// mmtests pft: every thread faults its own slice of ONE region, concurrently.
fn pft<V: VmArea>() {
    const CPUS: usize = 4;
    const PER: u64 = 700;
    let w = world(CPUS, 8192, |_| {});
    let free0 = w.free_frames();
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<V>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, PER * CPUS as u64), &m).unwrap();
    for round in 0..3 {
        std::thread::scope(|s| {
            for cpu in 0..CPUS {
                let (vm, mm) = (&w.vm, &mm);
                s.spawn(move || {
                    ksync::cpu::set_this_thread_cpu(cpu);
                    for p in 0..PER {
                        let va = VA + (cpu as u64 * PER + p) * 4096;
                        vm.touch(mm, cpu, va, true).unwrap();
                    }
                });
            }
        });
        let c = w.vm.check(0, &[&*mm], &[]).unwrap();
        assert_eq!(c.mapped_ptes, PER * CPUS as u64, "round {round}");
        assert_eq!(c.lru_folios, PER * CPUS as u64);
        // Every CPU that faulted is in the cpumask: an unmap must shoot down.
        assert!((0..CPUS).all(|c| mm.cpumask().contains(c)));
        let before = w.mmu.shootdowns();
        let counted = w.vm.counters().total(VmEvent::Shootdown);
        w.vm.zap_page_range(&mm, 0, VA, VA + PER * CPUS as u64 * 4096);
        assert!(w.mmu.shootdowns() > before, "other CPUs held translations");
        assert!(
            w.vm.counters().total(VmEvent::Shootdown) > counted,
            "and it was counted"
        );
        let c = w.vm.check(0, &[&*mm], &[]).unwrap();
        assert_eq!((c.mapped_ptes, c.lru_folios, c.charged), (0, 0, 0));
        // A fresh fault on every page after the zap.
        let faults = w.vm.counters().total(VmEvent::Fault);
        w.vm.touch(&mm, 0, VA, true).unwrap();
        assert_eq!(w.vm.counters().total(VmEvent::Fault), faults + 1);
        w.vm.zap_page_range(&mm, 0, VA, VA + 4096);
    }
    w.vm.munmap(&mm, 0, VA, PER * CPUS as u64 * 4096).unwrap();
    w.vm.destroy_mm(&mut mm, 0);
    w.grace_period();
    assert_eq!(w.free_frames(), free0);
}

#[test]
fn pft_threads_fault_slices_of_one_region_layout_a() {
    pft::<VmAreaA>();
}

#[test]
fn pft_threads_fault_slices_of_one_region_layout_b() {
    pft::<VmAreaB>();
}

/// Several CPUs read file-like pages into one memcg whose memory.max is well below the
/// working set: usage never passes max, reclaim evicts through the reverse map (some pages
/// are also mapped), pages refault and every page read has the right contents.
#[test]
fn memory_max_holds_while_cpus_read_and_map_file_pages() {
    const CPUS: usize = 3;
    const PAGES: u64 = 512;
    const MAX: u64 = 160;
    let w = world(CPUS, 4096, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    m.set_max(0, MAX).unwrap();
    let obj: &'static Object = Box::leak(Box::new(Object::new(ObjectKind::File, PAGES as usize)));
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    // The first 64 pages are also mapped, read-only.
    w.vm.mmap(
        &mm,
        &MapRequest {
            start: VA,
            len: 64 * 4096,
            write: false,
            object: Some((obj, 0)),
            node: 0,
        },
        &m,
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let over = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if m.usage() > MAX {
                    over.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let workers: Vec<_> = (0..CPUS)
            .map(|cpu| {
                let (vm, mm, m) = (&w.vm, &mm, &m);
                s.spawn(move || {
                    ksync::cpu::set_this_thread_cpu(cpu);
                    let mut x = 0x9e37_79b9u64 ^ cpu as u64;
                    for i in 0..3000u64 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let index = x % PAGES;
                        if i % 5 == 0 && index < 64 {
                            vm.touch(mm, cpu, VA + index * 4096, false).unwrap();
                        } else {
                            vm.filemap_read(obj, m, cpu, 0, index, true)
                                .unwrap_or_else(|e| panic!("read {index}: {e:?}"));
                        }
                    }
                })
            })
            .collect();
        let results: Vec<_> = workers.into_iter().map(|t| t.join()).collect();
        stop.store(true, Ordering::Relaxed);
        for r in results {
            if let Err(e) = r {
                std::panic::resume_unwind(e);
            }
        }
    });
    assert_eq!(
        over.load(Ordering::Relaxed),
        0,
        "usage went above memory.max"
    );
    let c = w.vm.counters();
    assert!(c.total(VmEvent::Evicted) > 100, "reclaim ran");
    assert!(c.total(VmEvent::Refault) > 100, "pages refaulted");
    assert!(c.total(VmEvent::Verified) > 5000, "contents were checked");
    m.flush_stats();
    assert!(m.memory_stat(lru::NodeStatItem::WorkingsetRefaultFile) > 0);
    let census = w.vm.check(0, &[&*mm], &[obj]).unwrap();
    assert!(census.charged <= MAX);
    assert!(census.shadows > 0);
    w.vm.munmap(&mm, 0, VA, 64 * 4096).unwrap();
    w.vm.truncate(obj, 0);
    w.vm.destroy_mm(&mut mm, 0);
    w.grace_period();
    let census = w.vm.check::<VmAreaA>(0, &[], &[obj]).unwrap();
    assert_eq!((census.cached_folios, census.charged), (0, 0));
}

/// readtwice: the second pass over a file object activates its pages (classic lists).
#[test]
fn the_second_read_activates() {
    let w = world(1, 2048, |c| c.mglru = false);
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let obj = Object::new(ObjectKind::File, 256);
    for pass in 0..2 {
        for i in 0..256 {
            w.vm.filemap_read(&obj, &m, 0, 0, i, pass == 1).unwrap();
        }
        w.vm.lru_add_drain_all(0);
        let lv = m.lruvec(0).unwrap();
        let active = lv.lru_size(lru::LruList::ActiveFile);
        if pass == 0 {
            assert_eq!(active, 0, "one read activates nothing");
        } else {
            assert_eq!(active, 256, "the second read activates every page");
        }
    }
    w.vm.check::<VmAreaA>(0, &[], &[&obj]).unwrap();
    w.vm.truncate(&obj, 0);
}

/// A memcg full of anonymous pages: the next fault fails cleanly, nothing changes, and the
/// pages already there stay.
#[test]
fn a_memcg_full_of_anonymous_pages_fails_the_next_fault() {
    let w = world(1, 2048, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    m.set_max(0, 40).unwrap();
    let mut mm = w.vm.new_mm::<VmAreaB>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, 64), &m).unwrap();
    for p in 0..40 {
        w.vm.touch(&mm, 0, VA + p * 4096, true).unwrap();
    }
    let free = w.free_frames();
    assert_eq!(
        w.vm.touch(&mm, 0, VA + 40 * 4096, true),
        Err(FaultError::MemcgOom)
    );
    assert!(!w.vm.pte_present(&mm, VA + 40 * 4096));
    assert_eq!(w.vm.counters().total(VmEvent::FaultFailMemcg), 1);
    assert_eq!(w.free_frames(), free, "the failed fault kept nothing");
    let c = w.vm.check(0, &[&*mm], &[]).unwrap();
    assert_eq!((c.lru_folios, c.charged), (40, 40));
    w.vm.destroy_mm(&mut mm, 0);
}

/// Both fault-injection knobs: the affected faults fail, are counted, nothing leaks.
#[test]
fn injected_failures_are_clean() {
    let w = world(1, 4096, |c| {
        c.fail_page_alloc = FaultSpec::Every(7);
        c.fail_charge = FaultSpec::Probability {
            percent: 10.0,
            seed: 3,
        };
    });
    let free0 = w.free_frames();
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, 500), &m).unwrap();
    let mut failed = 0;
    for p in 0..500 {
        match w.vm.touch(&mm, 0, VA + p * 4096, true) {
            Ok(()) => {}
            Err(FaultError::Injected) => failed += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    let (pa, ch) = w.vm.fault_attrs();
    assert!(
        pa.injected() > 50 && ch.injected() > 20,
        "{} {}",
        pa.injected(),
        ch.injected()
    );
    assert_eq!(failed, pa.injected() + ch.injected());
    assert_eq!(w.vm.counters().total(VmEvent::FaultFailInjected), failed);
    let c = w.vm.check(0, &[&*mm], &[]).unwrap();
    assert_eq!(c.mapped_ptes, 500 - failed);
    w.vm.destroy_mm(&mut mm, 0);
    w.grace_period();
    assert_eq!(w.free_frames(), free0);
}

/// A PTE carries its region's protection, and a fault hands out a zeroed frame even when
/// the frame it reuses was written before (`clear_page`).
#[test]
fn ptes_follow_the_region_and_reused_frames_come_zeroed() {
    use mm::pgtable::Mmu;
    let w = world(1, 1024, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    let ro = VA + (1 << 20);
    w.vm.mmap(&mm, &anon(VA, 4), &m).unwrap();
    w.vm.mmap(
        &mm,
        &MapRequest {
            start: ro,
            len: 4 * 4096,
            write: false,
            object: None,
            node: 0,
        },
        &m,
    )
    .unwrap();
    let pfn_at = |va: u64| w.mmu.pte_pfn(mm.pgtable().read_pte(va)).unwrap();
    w.vm.touch(&mm, 0, VA, true).unwrap();
    let dirty = pfn_at(VA);
    assert_eq!(mm.pgtable().read_pte(VA), w.mmu.mk_pte(dirty, true));
    // SAFETY: `dirty` is a frame of the arena, mapped by this test's region only, and no
    // other thread touches it.
    unsafe { std::ptr::write_bytes(w.mmu.frame_ptr(dirty), 0xa5, 4096) };
    w.vm.zap_page_range(&mm, 0, VA, VA + 4096);
    // The freed frame is the hot one on this CPU's list: the next fault reuses it.
    w.vm.touch(&mm, 0, ro, false).unwrap();
    assert_eq!(
        pfn_at(ro),
        dirty,
        "the per-CPU list hands back its hottest frame"
    );
    assert_eq!(
        mm.pgtable().read_pte(ro),
        w.mmu.mk_pte(dirty, false),
        "read-only"
    );
    // SAFETY: as above; the frame is now mapped read-only by this test's region only.
    let bytes = unsafe { std::slice::from_raw_parts(w.mmu.frame_ptr(dirty), 4096) };
    assert!(bytes.iter().all(|&b| b == 0), "the reused frame was zeroed");
    assert_eq!(
        w.vm.touch(&mm, 0, ro, true),
        Err(FaultError::AccessDenied),
        "no write to a read-only region"
    );
    w.vm.destroy_mm(&mut mm, 0);
}

/// A fault in a region mapping an object maps the folio its page cache holds.
#[test]
fn an_object_fault_maps_the_cached_folio() {
    let w: &'static World = Box::leak(Box::new(world(1, 1024, |_| {})));
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let obj: &'static Object = Box::leak(Box::new(Object::new(ObjectKind::File, 16)));
    let mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(
        &mm,
        &MapRequest {
            start: VA,
            len: 8 * 4096,
            write: false,
            object: Some((obj, 4)),
            node: 0,
        },
        &m,
    )
    .unwrap();
    // The fault retries while the folio it found has left the cache: it must not spin.
    let (mut mm, res) = bounded("the object fault", move || {
        let r = w.vm.touch(&mm, 0, VA + 2 * 4096, false);
        (mm, r)
    });
    res.unwrap();
    assert!(w.vm.pte_present(&mm, VA + 2 * 4096));
    let Some(mm::page_cache::Entry::Folio(f)) = obj.cache().lookup(6, 0, w.vm.tree()) else {
        panic!("page 4 + 2 of the object is cached");
    };
    f.put().unwrap();
    // The lru_add batch's reference goes with the drain.
    w.vm.lru_add_drain_all(0);
    let pte = mm.pgtable().read_pte(VA + 2 * 4096);
    assert_eq!(
        pte,
        mm::pgtable::Mmu::mk_pte(w.mmu, page_alloc::Pfn::of(f), false),
        "the PTE maps the cached folio, read-only as its region"
    );
    assert_eq!(
        w.vm.touch(&mm, 0, VA + 2 * 4096, true),
        Err(FaultError::AccessDenied)
    );
    assert_eq!(
        (f.mapcount(), f.refcount()),
        (1, 2),
        "the cache's and the mapping's"
    );
    assert_eq!(obj.cache().nr_folios(), 1, "only the page touched was read");
    // A writable mapping of the same object maps its pages writable.
    let rw = VA + (1 << 20);
    w.vm.mmap(
        &mm,
        &MapRequest {
            start: rw,
            len: 8 * 4096,
            write: true,
            object: Some((obj, 0)),
            node: 0,
        },
        &m,
    )
    .unwrap();
    w.vm.touch(&mm, 0, rw + 4096, true).unwrap();
    let Some(mm::page_cache::Entry::Folio(g)) = obj.cache().lookup(1, 0, w.vm.tree()) else {
        panic!("page 1 is cached");
    };
    g.put().unwrap();
    assert_eq!(
        mm.pgtable().read_pte(rw + 4096),
        mm::pgtable::Mmu::mk_pte(w.mmu, page_alloc::Pfn::of(g), true)
    );
    w.vm.check(0, &[&*mm], &[obj]).unwrap();
    w.vm.destroy_mm(&mut mm, 0);
    m.flush_stats();
    assert_eq!(
        m.memory_stat(lru::NodeStatItem::NrAnonMapped),
        0,
        "unmapping object pages leaves the anonymous count alone"
    );
    w.vm.truncate(obj, 0);
}

/// Running out of frames fails the fault with `NoMemory`, counted as such.
#[test]
fn no_free_frame_fails_the_fault_and_is_counted() {
    let w = world(1, 64, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &anon(VA, 128), &m).unwrap();
    let mut failed = 0;
    for p in 0..128 {
        match w.vm.touch(&mm, 0, VA + p * 4096, true) {
            Ok(()) => {}
            Err(FaultError::NoMemory) => failed += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(failed > 64, "{failed}");
    assert_eq!(w.vm.counters().total(VmEvent::FaultFailNoMemory), failed);
    assert_eq!(w.vm.counters().total(VmEvent::FaultFailMemcg), 0);
    w.vm.check(0, &[&*mm], &[]).unwrap();
    w.vm.destroy_mm(&mut mm, 0);
}

/// Page-cache pages are counted as file pages, and shmem-like ones as shmem too.
#[test]
fn page_cache_pages_are_counted_as_file_and_shmem() {
    use lru::NodeStatItem::{NrFilePages, NrShmem};
    let w = world(1, 1024, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let file = Object::new(ObjectKind::File, 8);
    let shmem = Object::new(ObjectKind::Shmem, 8);
    for i in 0..8 {
        w.vm.filemap_read(&file, &m, 0, 0, i, true).unwrap();
    }
    for i in 0..3 {
        w.vm.filemap_read(&shmem, &m, 0, 0, i, false).unwrap();
    }
    m.flush_stats();
    assert_eq!(
        (m.memory_stat(NrFilePages), m.memory_stat(NrShmem)),
        (11, 3)
    );
    w.vm.truncate(&file, 0);
    w.vm.truncate(&shmem, 0);
    m.flush_stats();
    assert_eq!((m.memory_stat(NrFilePages), m.memory_stat(NrShmem)), (0, 0));
}

/// `truncate_pagecache`: a truncated object is unmapped from each region that maps it as
/// one range (one TLB flush per mapping, as `unmap_mapping_range`'s zap batches it), not
/// page by page through the reverse map; then its pages leave the cache and are freed.
#[test]
fn truncation_unmaps_each_mapping_with_one_flush() {
    use lru::NodeStatItem::{NrFileMapped, NrFilePages, NrShmem};
    const PAGES: u64 = 32;
    let w = world(1, 4096, |_| {});
    let free0 = w.free_frames();
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let obj = Object::new(ObjectKind::Shmem, PAGES as usize);
    let mut spaces = Vec::new();
    for _ in 0..2 {
        let mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
        let req = MapRequest {
            start: VA,
            len: PAGES * 4096,
            write: true,
            object: Some((&obj, 0)),
            node: 0,
        };
        w.vm.mmap(&mm, &req, &m).unwrap();
        for p in 0..PAGES {
            w.vm.touch(&mm, 0, VA + p * 4096, true).unwrap();
        }
        spaces.push(mm);
    }
    m.flush_stats();
    assert_eq!(m.memory_stat(NrFileMapped), 2 * PAGES as i64);
    let (calls, addrs) = (w.mmu.local_flush_calls(), w.mmu.local_flushes());
    assert_eq!(w.vm.truncate(&obj, 0), PAGES as usize);
    assert_eq!(
        w.mmu.local_flush_calls() - calls,
        2,
        "one flush per mapping, not one per page"
    );
    assert_eq!(
        w.mmu.local_flushes() - addrs,
        2 * PAGES,
        "every address flushed"
    );
    for mm in &spaces {
        for p in 0..PAGES {
            assert!(
                !w.vm.pte_present(mm, VA + p * 4096),
                "page {p} still mapped"
            );
        }
    }
    m.flush_stats();
    assert_eq!(
        (
            m.memory_stat(NrFileMapped),
            m.memory_stat(NrFilePages),
            m.memory_stat(NrShmem)
        ),
        (0, 0, 0)
    );
    let census = w.vm.check(0, &[&*spaces[0], &*spaces[1]], &[&obj]).unwrap();
    assert_eq!(
        (census.cached_folios, census.charged, census.mapped_ptes),
        (0, 0, 0)
    );
    for mut mm in spaces {
        w.vm.destroy_mm(&mut mm, 0);
    }
    w.grace_period();
    assert_eq!(w.free_frames(), free0, "every frame back");
}

/// `shrink_folio_list`'s end (issue 19): the frames reclaim evicts from one lruvec in one
/// pass are freed under one `pcp->lock` hold, after one page-counter update for all of them.
#[test]
fn reclaimed_frames_are_freed_in_one_lock_hold_per_batch() {
    let w = world(1, 1024, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let file = Object::new(ObjectKind::File, 32);
    for i in 0..32 {
        w.vm.filemap_read(&file, &m, 0, 0, i, true).unwrap();
    }
    let usage = m.usage();
    let pcp = w.pa.cpu_stats(0);
    let rounds = w.vm.counters().total(VmEvent::PcpFreeRounds);
    // Reclaim takes at least a batch (`SWAP_CLUSTER_MAX`, 32) from the lruvec, in one
    // pass, whatever smaller amount is asked for.
    let got = m.memory_reclaim_write(0, "16K").unwrap();
    assert!(got >= 4, "{got}");
    assert_eq!(w.vm.counters().total(VmEvent::Evicted), got);
    let s = w.pa.cpu_stats(0).since(&pcp);
    assert_eq!(
        (s.free, s.free_rounds),
        (got, 1),
        "{got} frames, one lock hold"
    );
    assert_eq!(w.vm.counters().total(VmEvent::PcpFreeRounds) - rounds, 1);
    assert_eq!(m.usage(), usage - got);
    let c = w.vm.check::<VmAreaA>(0, &[], &[&file]).unwrap();
    assert_eq!(
        (c.charged, c.cached_folios, c.shadows),
        (32 - got, 32 - got, got)
    );
    w.vm.truncate(&file, 0);
}

/// Reclaim evicts a mapped file page through the reverse map: its PTE is cleared first,
/// a shadow takes its slot, and the next access refaults it.
#[test]
fn reclaim_unmaps_and_evicts_a_mapped_file_page() {
    let w = world(1, 1024, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let obj: &'static Object = Box::leak(Box::new(Object::new(ObjectKind::File, 4)));
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &file(VA, 4, obj), &m).unwrap();
    w.vm.touch(&mm, 0, VA, false).unwrap();
    let c = w.vm.check(0, &[&*mm], &[obj]).unwrap();
    assert_eq!((c.charged, c.cached_folios, c.mapped_ptes), (1, 1, 1));
    let file_pages = || {
        m.flush_stats();
        m.memory_stat(lru::NodeStatItem::NrFilePages)
    };
    let file_mapped = || {
        m.flush_stats();
        m.memory_stat(lru::NodeStatItem::NrFileMapped)
    };
    assert_eq!((file_pages(), file_mapped()), (1, 1));
    assert_eq!(m.memory_reclaim_write(0, "4K").unwrap(), 1);
    assert_eq!(file_pages(), 0, "an evicted page is no longer a file page");
    assert_eq!(
        file_mapped(),
        0,
        "unmapping it through the reverse map unaccounts it"
    );
    assert!(!w.vm.pte_present(&mm, VA), "unmapped before it was freed");
    assert_eq!(w.vm.counters().total(VmEvent::Evicted), 1);
    let c = w.vm.check(0, &[&*mm], &[obj]).unwrap();
    assert_eq!(
        (c.charged, c.cached_folios, c.shadows, c.mapped_ptes),
        (0, 0, 1, 0)
    );
    w.vm.touch(&mm, 0, VA, false).unwrap();
    assert_eq!(w.vm.counters().total(VmEvent::Refault), 1);
    w.vm.destroy_mm(&mut mm, 0);
    w.vm.truncate(obj, 0);
}

/// Reclaim through the reverse map whose shootdown fails does not free the page: the PTE is
/// cleared, but its reference is kept (so the eviction finds the folio busy and puts it
/// back), and once a flush succeeds the reference goes and the next reclaim evicts it.
/// A zap whose shootdown fails keeps its anonymous pages the same way.
#[test]
fn a_failed_shootdown_keeps_the_pages_until_a_flush_succeeds() {
    let w = world(2, 1024, |_| {});
    let root = w.vm.tree().root();
    let m = root.create_child().unwrap();
    let obj: &'static Object = Box::leak(Box::new(Object::new(ObjectKind::File, 4)));
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(&mm, &file(VA, 4, obj), &m).unwrap();
    w.vm.touch(&mm, 0, VA, false).unwrap();
    // CPU 1 uses the address space too: every unmap shoots down.
    mm.use_mm(1);
    // Onto the LRU, where reclaim finds it (at 2 CPUs the fault's lru_add batch holds it).
    let _ = w.vm.batches().drain_cpu(0, w.vm.tree());
    let fail = w.mmu.flush_failures();
    fail.set_every(1);
    let r = m.memory_reclaim_write(0, "4K");
    assert!(!w.vm.pte_present(&mm, VA), "the PTE was cleared ({r:?})");
    assert_eq!(w.vm.counters().total(VmEvent::Evicted), 0);
    assert!(w.vm.counters().total(VmEvent::EvictBusy) >= 1, "found busy");
    assert_eq!(w.vm.tlb_kept().now, 1, "the mapping's reference is kept");
    fail.set_every(0);
    w.vm.mmap(&mm, &anon(VA + 16 * 4096, 8), &m).unwrap();
    for p in 0..8 {
        w.vm.touch(&mm, 1, VA + (16 + p) * 4096, true).unwrap();
    }
    // The PTEs' references are then the pages' only ones.
    let _ = w.vm.batches().drain_cpu(1, w.vm.tree());
    fail.set_every(1);
    w.vm.zap_page_range(&mm, 0, VA + 16 * 4096, VA + 24 * 4096);
    assert_eq!(w.vm.tlb_kept().now, 9);
    assert_eq!(w.vm.counters().total(VmEvent::Released), 0);
    fail.set_every(0);
    w.vm.release_kept(0);
    let k = w.vm.tlb_kept();
    assert_eq!((k.kept, k.released, k.now, k.leaked), (9, 9, 0, 0));
    assert_eq!(w.vm.counters().total(VmEvent::Released), 8);
    assert_eq!(m.memory_reclaim_write(0, "4K").unwrap(), 1);
    assert_eq!(w.vm.counters().total(VmEvent::Evicted), 1);
    let c = w.vm.check(0, &[&*mm], &[obj]).unwrap();
    assert_eq!((c.charged, c.cached_folios, c.mapped_ptes), (0, 0, 0));
    w.vm.destroy_mm(&mut mm, 0);
    w.vm.truncate(obj, 0);
}

/// The unmap's `NR_FILE_MAPPED` decrements go to the memcg each folio is charged to, also
/// when a region maps page-cache folios of two memcgs in turn (a shared object's pages are
/// charged to whoever read them first): the zap looks a memcg up again whenever the
/// folio's memcg id differs from the previous folio's.
#[test]
fn unmap_counts_each_folio_against_its_own_memcg() {
    let w = world(1, 1024, |_| {});
    let root = w.vm.tree().root();
    let a = root.create_child().unwrap();
    let b = root.create_child().unwrap();
    let obj: &'static Object = Box::leak(Box::new(Object::new(ObjectKind::File, 4)));
    let mut mm_a = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    let mut mm_b = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    for (mm, m) in [(&mm_a, &a), (&mm_b, &b)] {
        let req = MapRequest {
            start: VA,
            len: 4 * 4096,
            write: false,
            object: Some((obj, 0)),
            node: 0,
        };
        w.vm.mmap(mm, &req, m).unwrap();
    }
    // b reads pages 1 and 3 first, a reads 0 and 2: the cache charges them so.
    for page in [1, 3] {
        w.vm.touch(&mm_b, 0, VA + page * 4096, false).unwrap();
    }
    for page in 0..4 {
        w.vm.touch(&mm_a, 0, VA + page * 4096, false).unwrap();
    }
    for page in [0, 2] {
        w.vm.touch(&mm_b, 0, VA + page * 4096, false).unwrap();
    }
    let mapped = |m: &memcg::MemcgRef<'_, Pn, mm::folios::VmFolios>| {
        m.flush_stats();
        m.memory_stat(lru::NodeStatItem::NrFileMapped)
    };
    assert_eq!(
        (mapped(&a), mapped(&b)),
        (4, 4),
        "two mappings of two pages each"
    );
    w.vm.munmap(&mm_a, 0, VA, 4 * 4096).unwrap();
    assert_eq!(
        (mapped(&a), mapped(&b)),
        (2, 2),
        "a's unmap took one mapping of each page from its own memcg"
    );
    w.vm.destroy_mm(&mut mm_a, 0);
    w.vm.destroy_mm(&mut mm_b, 0);
    w.vm.truncate(obj, 0);
}
