//! Charging: the per-CPU stock, memory.max with reclaim through lru's eviction,
//! memory.reclaim with EAGAIN and FIFO rotation, limits below usage.
#![cfg(not(loom))]

mod common;

use common::*;
use lru::LruGenFolio;
use memcg::{FolioFree, MEMCG_CHARGE_BATCH, MemcgError, ReclaimRequest};
use std::sync::atomic::Ordering;

#[test]
fn stock_consumes_refills_and_drains_on_switch() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let b = root.create_child().unwrap();
    a.try_charge(0, 1).unwrap();
    // One batch went to the page counter; the surplus sits in CPU 0's stock.
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    assert_eq!(
        s.tree.stocks().stocked(0, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    for _ in 0..(MEMCG_CHARGE_BATCH - 1) {
        a.try_charge(0, 1).unwrap();
    }
    // All from the stock: the counter did not move.
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    a.try_charge(0, 2).unwrap();
    assert_eq!(a.usage(), 2 * MEMCG_CHARGE_BATCH);
    assert_eq!(
        s.tree.stocks().stocked(0, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 2
    );
    // CPU 0 switches to b: a's stock is drained (uncharged).
    b.try_charge(0, 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH + 2);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    assert_eq!(
        s.tree.stocks().stocked(0, &b).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    // CPU 1 has its own stock.
    a.try_charge(1, 1).unwrap();
    assert_eq!(
        s.tree.stocks().stocked(1, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    // Offline drains every CPU's stock of the memcg.
    let bid = b.id();
    b.uncharge(1).unwrap();
    drop(b);
    s.tree.offline(bid, 1).unwrap();
    assert_eq!(root.usage(), a.usage());
    // Charges above the batch bypass the stock.
    a.try_charge(1, 100).unwrap();
    assert_eq!(
        s.tree.stocks().stocked(1, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
}

#[test]
fn memory_max_reclaims_through_the_lru_then_fails_cleanly() {
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let root = s.tree.root();
        let a = root.create_child().unwrap();
        a.set_max(0, 100).unwrap();
        assert_eq!(a.memory().max(), 100);
        // 300 faults into a 100-page memcg: reclaim makes room every time.
        for i in 0..300 {
            try_fault(&s.tree, &a, 0, 0, i % 2 == 0).unwrap();
            assert!(a.usage() <= 100);
        }
        assert!(s.freed.load(Ordering::Relaxed) >= 200);
        s.tree.flush_stats(&a);
        assert_eq!(
            a.vmstats().events(memcg::MemcgEvent::PgSteal),
            s.freed.load(Ordering::Relaxed)
        );
        assert!(a.memory().failcnt() > 0);
        // Pages that are charged but not on any LRU cannot be reclaimed: OOM in this memcg.
        s.tree
            .memory_reclaim(&a, 0, ReclaimRequest::pages(1000))
            .unwrap_err();
        s.tree.stocks().drain(0).unwrap();
        let room = a.memory().margin();
        a.try_charge(0, room).unwrap();
        let err = fault_err(&s.tree, &a, 0, 0, true);
        assert_eq!(
            err,
            MemcgError::OutOfMemory {
                id: a.id(),
                over_limit: a.id(),
                nr_pages: 1
            }
        );
        assert_eq!(err.errno(), memcg::error::errno::ENOMEM);
        assert_eq!(a.usage(), 100);
    }
}

#[test]
fn ancestor_limit_reclaims_from_the_whole_subtree() {
    let s = setup(1, 2, false);
    let root = s.tree.root();
    let p = root.create_child().unwrap();
    let x = p.create_child().unwrap();
    let y = p.create_child().unwrap();
    p.set_max(0, 128).unwrap();
    for i in 0..100 {
        try_fault(&s.tree, &x, 0, i % 2, false).unwrap();
    }
    // y's faults hit p's limit; reclaim evicts x's folios.
    for i in 0..100 {
        try_fault(&s.tree, &y, 0, i % 2, false).unwrap();
        assert!(p.usage() <= 128);
        assert_eq!(p.usage(), x.usage() + y.usage());
    }
    assert!(s.freed.load(Ordering::Relaxed) > 0);
    assert!(x.usage() < 100);
}

#[test]
fn limit_below_usage() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    for _ in 0..50 {
        try_fault(&s.tree, &a, 0, 0, false).unwrap();
    }
    // Reclaimable: the limit is set after reclaim brings usage down.
    a.set_max(0, 20).unwrap();
    assert!(a.usage() <= 20);
    // Unreclaimable usage: a clear error, and the old limit stays.
    assert!(matches!(
        a.memory_reclaim(0, ReclaimRequest::pages(1000)),
        Err(MemcgError::Again { .. })
    ));
    s.tree.stocks().drain(0).unwrap();
    assert_eq!(a.usage(), 0);
    a.try_charge(0, 20).unwrap();
    assert_eq!(a.usage(), 20);
    let err = a.set_max(0, 10).unwrap_err();
    assert!(
        matches!(err, MemcgError::LimitBelowUsage { max: 10, .. }),
        "{err:?}"
    );
    assert_eq!(err.errno(), memcg::error::errno::EBUSY);
    assert_eq!(a.memory().max(), 20);
}

#[test]
fn memory_reclaim_reports_progress_or_eagain_and_rotates() {
    let s = setup(1, 1, true);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    for _ in 0..80 {
        try_fault(&s.tree, &a, 0, 0, false).unwrap();
    }
    let got = a.memory_reclaim(0, ReclaimRequest::pages(30)).unwrap();
    assert!(got >= 30, "{got}");
    let before = s.freed.load(Ordering::Relaxed);
    assert_eq!(before, got);
    let fifo = s.tree.node_data()[0].memcg_lru();
    let node = a.lruvec(0).unwrap().lrugen().memcg_node();
    let seq = fifo.seq();
    // Ask for more than there is: EAGAIN with what was reclaimed.
    let err = a
        .memory_reclaim(0, ReclaimRequest::pages(1000))
        .unwrap_err();
    match err {
        MemcgError::Again {
            requested,
            reclaimed,
        } => {
            assert_eq!(requested, 1000);
            assert_eq!(reclaimed, 80 - got);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.errno(), memcg::error::errno::EAGAIN);
    // The memcg was rotated to the young generation of the FIFO.
    let young = lru::memcg_lru::get_memcg_gen(fifo.seq() + 1);
    let gen_now = usize::from(node.r#gen.load(Ordering::Relaxed));
    assert!(
        gen_now == young || fifo.seq() != seq,
        "memcg gen {gen_now}, young {young}"
    );
    assert!(fifo.check().is_ok());
    assert_eq!(a.usage() - s.tree.stocks().stocked(0, &a).unwrap(), 0);
}

#[test]
fn memory_reclaim_takes_about_what_was_asked_in_shrinking_batches() {
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let root = s.tree.root();
        let a = root.create_child().unwrap();
        for i in 0..3000 {
            try_fault(&s.tree, &a, 0, 0, i % 2 == 0).unwrap();
        }
        s.tree.stocks().drain(0).unwrap();
        // Batches of a quarter of what is left (at least SWAP_CLUSTER_MAX): the request is
        // overshot by less than the last batch, not by a multiple of what was asked.
        let got = a.memory_reclaim(0, ReclaimRequest::pages(1000)).unwrap();
        assert!(
            (1000..1000 + memcg::charge::SWAP_CLUSTER_MAX).contains(&got),
            "mglru {mglru}: {got} reclaimed"
        );
        assert_eq!(s.freed.load(Ordering::Relaxed), got);
        assert_eq!(a.usage(), 3000 - got);
    }
}

#[test]
fn uncharge_and_free_path() {
    let s = setup(2, 1, true);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let folios: Vec<_> = (0..10)
        .map(|i| try_fault(&s.tree, &a, i % 2, 0, true).unwrap())
        .collect();
    for (i, f) in folios.into_iter().enumerate() {
        free(&s.tree, &a, i % 2, f);
    }
    s.tree.stocks().drain(0).unwrap();
    s.tree.stocks().drain(1).unwrap();
    assert_eq!(a.usage(), 0);
    assert_eq!(root.usage(), 0);
    s.tree.flush_stats(&root);
    for item in memcg::NodeStatItem::ALL {
        assert_eq!(a.vmstats().page_state(item), 0, "{}", item.name());
    }
}

#[test]
fn concurrent_faults_under_a_limit_never_exceed_it() {
    let s = setup(4, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    a.set_max(0, 256).unwrap();
    std::thread::scope(|sc| {
        for cpu in 0..4 {
            let (tree, a) = (&s.tree, &a);
            sc.spawn(move || {
                for i in 0..300 {
                    match try_fault(tree, a, cpu, 0, i % 2 == 0) {
                        Ok(_) | Err(MemcgError::OutOfMemory { .. }) => {}
                        Err(e) => panic!("{e:?}"),
                    }
                    assert!(a.usage() <= 256);
                }
            });
        }
    });
    assert!(a.usage() <= 256);
    assert!(a.memory().watermark() <= 256);
}

#[test]
fn oversized_requests_fail_without_side_effects() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    a.set_max(0, 100).unwrap();
    for _ in 0..10 {
        try_fault(&s.tree, &a, 0, 0, true).unwrap();
    }
    let usage = a.usage();
    // Larger than the limit: refused at once, nothing reclaimed.
    assert!(matches!(
        a.try_charge(0, 101),
        Err(MemcgError::OutOfMemory { nr_pages: 101, .. })
    ));
    assert!(matches!(
        a.try_charge(0, u64::MAX),
        Err(MemcgError::OutOfMemory { .. })
    ));
    assert_eq!(s.freed.load(Ordering::Relaxed), 0);
    // More than charged: refused, nothing uncharged.
    assert_eq!(
        a.uncharge(usage + 1),
        Err(MemcgError::UnchargeUnderflow {
            id: a.id(),
            nr_pages: usage + 1
        })
    );
    assert_eq!(a.usage(), usage);
    assert_eq!(root.usage(), usage);
}

#[test]
fn memory_reclaim_takes_the_requests_swappiness() {
    let s = setup(1, 1, true);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    for _ in 0..100 {
        try_fault(&s.tree, &a, 0, 0, true).unwrap();
    }
    // Seed 002's request: file only, and there is no file page: EAGAIN, nothing freed.
    let err = a.memory_reclaim_write(0, "1024M swappiness=0").unwrap_err();
    assert_eq!(
        err,
        MemcgError::Again {
            requested: 262_144,
            reclaimed: 0
        }
    );
    assert_eq!(s.freed.load(Ordering::Relaxed), 0);
    // Anon only: the anon pages go.
    let got = a.memory_reclaim_write(0, "64K swappiness=max").unwrap();
    assert!(got >= 16, "{got}");
    assert_eq!(s.freed.load(Ordering::Relaxed), got);
    // Bad requests are refused before any reclaim, with EINVAL.
    let bad = a.memory_reclaim_write(0, "1M swappiness=300").unwrap_err();
    assert_eq!(
        bad,
        MemcgError::BadRequest(memcg::ReclaimParseError::SwappinessRange(300))
    );
    assert_eq!(bad.errno(), memcg::error::errno::EINVAL);
}

#[test]
fn root_reclaim_walks_the_fifo_and_rotates_every_memcg_it_cannot_shrink() {
    let s = setup(1, 1, true);
    let root = s.tree.root();
    let memcgs: Vec<_> = (0..24).map(|_| root.create_child().unwrap()).collect();
    for m in &memcgs {
        for _ in 0..4 {
            try_fault(&s.tree, m, 0, 0, true).unwrap();
        }
    }
    let fifo = s.tree.node_data()[0].memcg_lru();
    let seq = fifo.seq();
    let lock = <ksync::class::std_classes::MemcgLruLock as ksync::LockClass>::data();
    ksync::stat::set_enabled(true);
    let before = lock.snapshot();
    // Only anon pages, file-only request: shrink_many visits every memcg of the old
    // generation, cannot reclaim, rotates each (tail, then young): EAGAIN.
    let err = root.memory_reclaim_write(0, "1M swappiness=0").unwrap_err();
    assert!(
        matches!(err, MemcgError::Again { reclaimed: 0, .. }),
        "{err:?}"
    );
    let rotations = lock.snapshot().since(&before).acquisitions;
    assert!(
        rotations >= 2 * memcgs.len() as u64,
        "{rotations} FIFO lock holds"
    );
    assert!(fifo.seq() > seq, "the old generation drained at least once");
    assert_eq!(fifo.check(), Ok(memcgs.len() + 1));
    assert_eq!(s.freed.load(Ordering::Relaxed), 0);
    // A request that can be met: root reclaim frees through the FIFO walk.
    let got = root.memory_reclaim(0, ReclaimRequest::pages(40)).unwrap();
    assert!(got >= 40, "{got}");
    assert_eq!(s.freed.load(Ordering::Relaxed), got);
}

#[test]
fn busy_folios_go_back_on_the_lru_still_charged() {
    use std::sync::atomic::AtomicU64;
    let freed = std::sync::Arc::new(AtomicU64::new(0));
    let busy = std::sync::Arc::new(AtomicU64::new(0));
    let (f2, b2) = (freed.clone(), busy.clone());
    // Every other reclaimed folio is busy (mapped again, refcount not freezable).
    let lru = memcg::TreeLru::new(
        true,
        Box::new(move |_, _, _| {
            if b2.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
                FolioFree::Busy
            } else {
                f2.fetch_add(1, Ordering::Relaxed);
                FolioFree::Freed
            }
        }),
    );
    let tree = memcg::MemcgTree::with_new_nodes(
        memcg::MemcgConfig::new(1, 1),
        lru::TailMode::Cached,
        rcu(1),
        lru,
    )
    .unwrap();
    let root = tree.root();
    let a = root.create_child().unwrap();
    for _ in 0..64 {
        try_fault(&tree, &a, 0, 0, false).unwrap();
    }
    tree.stocks().drain(0).unwrap();
    assert_eq!(a.usage(), 64);
    let got = tree.try_to_free_mem_cgroup_pages(&a, 0, 32, None).unwrap();
    let n_freed = freed.load(Ordering::Relaxed);
    assert_eq!(got, n_freed, "only freed folios count as reclaimed");
    assert!(busy.load(Ordering::Relaxed) > n_freed, "some were busy");
    // Busy ones stayed charged and went back on the LRU.
    assert_eq!(a.usage(), 64 - n_freed);
    assert_eq!(a.lruvec(0).unwrap().nr_folios() as u64, 64 - n_freed);
    tree.flush_stats(&a);
    assert_eq!(a.vmstats().events(memcg::MemcgEvent::PgSteal), n_freed);
    let on_lists: i64 = [
        memcg::NodeStatItem::NrInactiveFile,
        memcg::NodeStatItem::NrActiveFile,
    ]
    .iter()
    .map(|&i| a.vmstats().page_state(i))
    .sum();
    assert_eq!(
        on_lists as u64,
        64 - n_freed,
        "LRU stats follow the putback"
    );
}

/// Frozen folios (`FolioFree::Frozen`) are uncharged with the rest of the reclaim batch and
/// then handed to the free-batch hook in one call, already uncharged.
#[test]
fn frozen_folios_reach_the_free_batch_hook_in_one_call_uncharged() {
    use std::sync::Mutex;
    let calls: std::sync::Arc<Mutex<Vec<(usize, u64)>>> = Default::default();
    let tree_slot: std::sync::Arc<Mutex<Option<usize>>> = Default::default();
    let (c2, t2) = (calls.clone(), tree_slot.clone());
    let lru = memcg::TreeLru::new(true, Box::new(|_, _, _| FolioFree::Frozen)).with_free_batch(
        Box::new(move |_, folios| {
            // The memcg's usage when the hook runs: the batch is already uncharged.
            let usage = t2.lock().unwrap().map_or(u64::MAX, |p| {
                // SAFETY: the test's memcg outlives the reclaim that calls the hook.
                unsafe { &*(p as *const memcg::PageCounter) }.usage()
            });
            c2.lock().unwrap().push((folios.len(), usage));
        }),
    );
    let tree = memcg::MemcgTree::with_new_nodes(
        memcg::MemcgConfig::new(1, 1),
        lru::TailMode::Cached,
        rcu(1),
        lru,
    )
    .unwrap();
    let a = tree.root().create_child().unwrap();
    for _ in 0..64 {
        try_fault(&tree, &a, 0, 0, false).unwrap();
    }
    tree.stocks().drain(0).unwrap();
    *tree_slot.lock().unwrap() = Some(std::ptr::from_ref(a.memory()) as usize);
    let got = tree.try_to_free_mem_cgroup_pages(&a, 0, 32, None).unwrap();
    assert!(got > 1);
    assert_eq!(
        *calls.lock().unwrap(),
        [(got as usize, 64 - got)],
        "one call with every frozen folio, after the uncharge"
    );
    assert_eq!(a.usage(), 64 - got);
}

#[test]
fn classic_reclaim_notes_its_cost_on_the_lruvec_and_every_ancestor() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let a1 = a.create_child().unwrap();
    let folios: Vec<_> = (0..40)
        .map(|_| try_fault(&s.tree, &a1, 0, 0, false).unwrap())
        .collect();
    // The inactive tail is referenced: reclaim rotates it (a second chance), which is
    // reclaim cost (`lru_note_cost()`), here and up the hierarchy.
    for f in &folios[..3] {
        f.set(lru::FolioFlags::REFERENCED);
    }
    let got = a1
        .memory_reclaim(
            0,
            ReclaimRequest {
                nr_pages: 4,
                swappiness: Some(0),
            },
        )
        .unwrap();
    assert!(got >= 4);
    for m in [&a1, &a, &root] {
        let (anon, file) = m.lruvec(0).unwrap().costs();
        assert_eq!(anon, 0, "memcg {}", m.id());
        assert!(file > 0, "memcg {}: file_cost {file}", m.id());
    }
}

#[test]
fn reclaim_skips_min_protected_memcgs_and_takes_from_low_protected_ones_last() {
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let root = s.tree.root();
        let a = root.create_child().unwrap();
        let (a1, a2, a3) = (
            a.create_child().unwrap(),
            a.create_child().unwrap(),
            a.create_child().unwrap(),
        );
        for (m, n) in [(&a1, 10), (&a2, 10), (&a3, 40)] {
            for _ in 0..n {
                try_fault(&s.tree, m, 0, 0, false).unwrap();
            }
        }
        s.tree.stocks().drain(0).unwrap();
        a1.memory().set_min(1000);
        a2.memory().set_low(1000);
        // Subtree reclaim of a (one pass of SWAP_CLUSTER_MAX = 32 pages): a3 has enough.
        let req = ReclaimRequest {
            nr_pages: 5,
            swappiness: None,
        };
        assert_eq!(a.memory_reclaim(0, req).unwrap(), 32);
        assert_eq!((a1.usage(), a2.usage(), a3.usage()), (10, 10, 8));
        // a3 has 8 left: they meet the request, short of a pass as they are, and a2 keeps
        // its pages (low reserves are tapped only when nothing else could be reclaimed).
        assert_eq!(a.memory_reclaim(0, req).unwrap(), 8);
        assert_eq!((a1.usage(), a2.usage(), a3.usage()), (10, 10, 0));
        // a3 has run out: the retry for untapped low reserves takes from a2; a1 is never
        // reclaimed.
        let got = a.memory_reclaim(0, req).unwrap();
        assert!(got >= 5);
        assert_eq!(a1.usage(), 10, "memory.min is never reclaimed");
        assert_eq!(a3.usage(), 0, "the unprotected memcg goes first");
        assert!(
            a2.usage() < 10,
            "memory.low gives way when nothing else is left"
        );
        let before = a2.usage();
        // Nothing but the min-protected memcg is left: reclaim fails, a1 untouched.
        let err = a
            .memory_reclaim(
                0,
                ReclaimRequest {
                    nr_pages: 10 + before,
                    swappiness: None,
                },
            )
            .unwrap_err();
        assert!(matches!(err, MemcgError::Again { .. }), "{err:?}");
        assert_eq!((a1.usage(), a2.usage()), (10, 0), "mglru {mglru}");
        // Root reclaim (the memcg FIFO walk with MGLRU) honours memory.min as far as the
        // ancestors grant it: a1's effective min is bounded by a's (none), b's is its own.
        let b = root.create_child().unwrap();
        for _ in 0..10 {
            try_fault(&s.tree, &b, 0, 0, false).unwrap();
        }
        s.tree.stocks().drain(0).unwrap();
        b.memory().set_min(1000);
        let err = root
            .memory_reclaim(0, ReclaimRequest::pages(30))
            .unwrap_err();
        assert!(
            matches!(err, MemcgError::Again { reclaimed: 10, .. }),
            "{err:?}"
        );
        assert_eq!((a1.usage(), b.usage()), (0, 10), "mglru {mglru}");
        // Without protection it goes.
        b.memory().set_min(0);
        root.memory_reclaim(0, ReclaimRequest::pages(10)).unwrap();
        assert_eq!(b.usage(), 0);
    }
}

#[test]
fn another_cpus_stock_is_drained_when_a_charge_needs_its_pages() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    a.set_max(0, MEMCG_CHARGE_BATCH).unwrap();
    // CPU 0 charged one page and stocked the rest of its batch: a is at its limit.
    a.try_charge(0, 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    // CPU 1 needs those pages: nothing to reclaim, so the other CPU's stock is drained.
    a.try_charge(1, MEMCG_CHARGE_BATCH - 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    assert_eq!(s.tree.stocks().stocked(1, &a).unwrap(), 0);
    assert_eq!(s.freed.load(Ordering::Relaxed), 0);
    // Now every page is handed out: the next charge fails after its reclaim retries.
    assert_eq!(
        a.try_charge(1, 1),
        Err(MemcgError::OutOfMemory {
            id: a.id(),
            over_limit: a.id(),
            nr_pages: 1
        })
    );
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
}

#[test]
fn an_ancestors_limit_drains_a_descendants_stock_on_another_cpu() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let p = root.create_child().unwrap();
    let x = p.create_child().unwrap();
    let y = p.create_child().unwrap();
    p.set_max(0, 2 * MEMCG_CHARGE_BATCH).unwrap();
    x.try_charge(0, 1).unwrap();
    y.try_charge(1, 1).unwrap();
    assert_eq!(p.usage(), 2 * MEMCG_CHARGE_BATCH);
    // y needs more than p's margin: both CPUs' stocks of p's subtree are drained.
    y.try_charge(1, MEMCG_CHARGE_BATCH).unwrap();
    assert_eq!(s.tree.stocks().stocked(0, &x).unwrap(), 0);
    assert_eq!((x.usage(), y.usage()), (1, MEMCG_CHARGE_BATCH + 1));
    assert_eq!(p.usage(), MEMCG_CHARGE_BATCH + 2);
    // The refusal names the ancestor whose limit was hit.
    let room = p.memory().margin();
    x.try_charge(0, room).unwrap();
    assert_eq!(
        y.try_charge(1, 1),
        Err(MemcgError::OutOfMemory {
            id: y.id(),
            over_limit: p.id(),
            nr_pages: 1
        })
    );
    assert_eq!(
        y.try_charge(1, 2 * MEMCG_CHARGE_BATCH + 1),
        Err(MemcgError::OutOfMemory {
            id: y.id(),
            over_limit: p.id(),
            nr_pages: 2 * MEMCG_CHARGE_BATCH + 1
        })
    );
}

#[test]
fn set_max_drains_the_stocks_of_other_cpus() {
    let s = setup(3, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let a1 = a.create_child().unwrap();
    let b = root.create_child().unwrap();
    a1.try_charge(1, 2).unwrap();
    b.try_charge(2, 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    // The stocked pages are not in use: the limit fits once they are returned.
    a.set_max(0, 2).unwrap();
    assert_eq!((a.memory().max(), a.usage()), (2, 2));
    assert_eq!(s.tree.stocks().stocked(1, &a1).unwrap(), 0);
    // Only a's subtree is drained.
    assert_eq!(
        s.tree.stocks().stocked(2, &b).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    assert_eq!(s.freed.load(Ordering::Relaxed), 0);
    // Below what is really in use: refused once reclaim has nothing to take.
    assert_eq!(
        a.set_max(0, 1),
        Err(MemcgError::LimitBelowUsage {
            id: a.id(),
            usage: 2,
            max: 1
        })
    );
    assert_eq!(a.memory().max(), 2);
}

/// `uncharge_batch`: a batch is uncharged with one page-counter update per run of folios
/// of one memcg; uncharged folios are skipped; the batch's css references are dropped
/// (the memcgs can be reaped afterwards).
#[test]
fn a_batch_is_uncharged_once_per_run_of_one_memcg() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let b = root.create_child().unwrap();
    let fa: Vec<_> = (0..5)
        .map(|_| try_fault(&s.tree, &a, 0, 0, true).unwrap())
        .collect();
    let fb: Vec<_> = (0..3)
        .map(|_| try_fault(&s.tree, &b, 0, 0, true).unwrap())
        .collect();
    for f in &fa {
        s.tree.lru().lru_del_folio(&a, 0, f).unwrap();
    }
    for f in &fb {
        s.tree.lru().lru_del_folio(&b, 0, f).unwrap();
    }
    s.tree.stocks().drain(0).unwrap();
    assert_eq!((a.usage(), b.usage(), root.usage()), (5, 3, 8));
    let never = folio(0, true);
    // a a a, b b, (uncharged), a a, b: four runs.
    let batch = [
        fa[0], fa[1], fa[2], fb[0], fb[1], never, fa[3], fa[4], fb[2],
    ];
    let out = s.tree.uncharge_folios(0, &batch).unwrap();
    assert_eq!((out.pages, out.batches, out.failed), (8, 4, 0));
    assert_eq!((a.usage(), b.usage(), root.usage()), (0, 0, 0));
    assert_eq!(
        s.tree.uncharge_folios(1, &batch),
        Err(MemcgError::InvalidCpu { cpu: 1, nr_cpus: 1 })
    );
    // The folios' references are gone: both memcgs are reaped once offline.
    let (ida, idb) = (a.id(), b.id());
    drop((a, b));
    for f in batch {
        let _ = f.reset_lru_state();
    }
    s.tree.offline(ida, 0).unwrap();
    s.tree.offline(idb, 0).unwrap();
    for _ in 0..3 {
        grace_period(&s.tree);
        s.tree.reap(0);
    }
    assert_eq!(
        (s.tree.nr_memcgs(), s.tree.nr_zombies(), s.tree.nr_dying()),
        (1, 0, 0)
    );
}

#[test]
fn cpu_ids_are_checked_on_every_charge_path() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let bad = |cpu| MemcgError::InvalidCpu { cpu, nr_cpus: 2 };
    assert_eq!(a.try_charge(2, 1), Err(bad(2)));
    assert_eq!(a.try_charge(7, 1), Err(bad(7)));
    assert_eq!(a.set_max(2, 100), Err(bad(2)));
    assert_eq!(a.memory().max(), memcg::PAGE_COUNTER_MAX);
    let f = try_fault(&s.tree, &a, 1, 0, false).unwrap();
    s.tree.lru().lru_del_folio(&a, 1, f).unwrap();
    let usage = a.usage();
    assert_eq!(s.tree.uncharge_folio(2, f), Err(bad(2)));
    assert_eq!(a.usage(), usage, "nothing uncharged");
    s.tree.uncharge_folio(1, f).unwrap();
    assert_eq!(a.usage(), usage - 1);
    assert_eq!(a.usage(), s.tree.stocks().stocked(1, &a).unwrap());
}

#[test]
fn large_charges_go_straight_to_the_counter() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    // No limit: far above a batch (and above 4095 pages) fits.
    a.try_charge(0, 5000).unwrap();
    a.try_charge(0, 1 << 30).unwrap();
    assert_eq!(a.usage(), 5000 + (1 << 30));
    assert_eq!(root.usage(), a.usage());
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    a.uncharge(1 << 30).unwrap();
    // Exactly a batch: charged as it is, nothing stocked.
    a.try_charge(0, MEMCG_CHARGE_BATCH).unwrap();
    assert_eq!(a.usage(), 5000 + MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    // Nothing to charge: nothing happens.
    a.try_charge(0, 0).unwrap();
    assert_eq!(a.usage(), 5000 + MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
}

#[test]
fn a_charge_of_a_batch_or_more_leaves_the_stock_alone() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let b = root.create_child().unwrap();
    b.try_charge(0, 1).unwrap();
    assert_eq!(
        s.tree.stocks().stocked(0, &b).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    // Nothing left over for a's stock: b's stays cached on the CPU, untouched.
    for nr in [MEMCG_CHARGE_BATCH, MEMCG_CHARGE_BATCH + 1, 5000] {
        a.try_charge(0, nr).unwrap();
        assert_eq!(
            s.tree.stocks().stocked(0, &b).unwrap(),
            MEMCG_CHARGE_BATCH - 1,
            "{nr} pages"
        );
        assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    }
    assert_eq!(a.usage(), 2 * MEMCG_CHARGE_BATCH + 1 + 5000);
    assert_eq!(b.usage(), MEMCG_CHARGE_BATCH);
}

#[test]
fn a_charge_of_exactly_the_limit_reclaims_everything_else() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    a.set_max(0, 100).unwrap();
    for _ in 0..50 {
        try_fault(&s.tree, &a, 0, 0, false).unwrap();
    }
    s.tree.stocks().drain(0).unwrap();
    assert_eq!(a.usage(), 50);
    a.try_charge(0, 100).unwrap();
    assert_eq!(a.usage(), 100);
    assert_eq!(s.freed.load(Ordering::Relaxed), 50);
    // One page more than the limit never fits: refused without reclaim.
    a.uncharge(100).unwrap();
    assert!(matches!(
        a.try_charge(0, 101),
        Err(MemcgError::OutOfMemory { nr_pages: 101, .. })
    ));
    assert_eq!(s.freed.load(Ordering::Relaxed), 50);
}

/// What [`a_charge_retries_reclaim_that_made_no_progress`] asks of a memcg at its limit.
#[derive(Clone, Copy, Debug)]
enum Retrying {
    /// One more page (`try_charge_memcg()`).
    Charge,
    /// A `memory.max` one page below the usage.
    Limit,
    /// `memory.reclaim` of one page.
    Reclaim,
}

#[test]
fn a_charge_retries_reclaim_that_made_no_progress() {
    use std::sync::atomic::AtomicU64;
    // The first `busy` folios reclaim finds are busy (mapped again): rounds without
    // progress, which the charge retries up to MAX_RECLAIM_RETRIES times.
    let run = |busy: u64, what: Retrying| {
        let seen = std::sync::Arc::new(AtomicU64::new(0));
        let s2 = seen.clone();
        let lru = memcg::TreeLru::new(
            false,
            Box::new(move |_, _, _| {
                if s2.fetch_add(1, Ordering::Relaxed) < busy {
                    FolioFree::Busy
                } else {
                    FolioFree::Freed
                }
            }),
        );
        let tree = memcg::MemcgTree::with_new_nodes(
            memcg::MemcgConfig::new(1, 1),
            lru::TailMode::Cached,
            rcu(1),
            lru,
        )
        .unwrap();
        let a = tree.root().create_child().unwrap();
        a.set_max(0, 8).unwrap();
        for _ in 0..8 {
            try_fault(&tree, &a, 0, 0, false).unwrap();
        }
        tree.stocks().drain(0).unwrap();
        let res = match what {
            Retrying::Charge => a.try_charge(0, 1),
            Retrying::Limit => a.set_max(0, 7),
            Retrying::Reclaim => a.memory_reclaim(0, ReclaimRequest::pages(1)).map(|n| {
                assert!(n >= 1, "{n} reclaimed");
            }),
        };
        (res, seen.load(Ordering::Relaxed))
    };
    // Busy for the first round's folios (8 looked at, none freed): the retry frees one.
    // Lowering memory.max below the usage, and memory.reclaim, retry the same way.
    for what in [Retrying::Charge, Retrying::Limit, Retrying::Reclaim] {
        let (res, seen) = run(8, what);
        assert_eq!(res, Ok(()), "{what:?} after {seen} folios looked at");
        assert!(seen > 8);
        // Busy for good: it gives up after its retries, having tried every round.
        let (res, seen) = run(u64::MAX, what);
        // Each reclaim pass looks at all 8 folios. A charge: one pass, one more after
        // draining the stocks, then one per retry (Linux's `nr_retries--`). A limit write:
        // `memory_max_write()`'s MAX_RECLAIM_RETRIES reclaims without progress.
        // memory.reclaim: one pass, then one per retry (`user_proactive_reclaim()`).
        let passes = match what {
            Retrying::Charge => {
                assert!(
                    matches!(res, Err(MemcgError::OutOfMemory { .. })),
                    "{res:?}"
                );
                memcg::MAX_RECLAIM_RETRIES + 2
            }
            Retrying::Limit => {
                assert!(
                    matches!(res, Err(MemcgError::LimitBelowUsage { .. })),
                    "{res:?}"
                );
                memcg::MAX_RECLAIM_RETRIES
            }
            Retrying::Reclaim => {
                assert_eq!(
                    res,
                    Err(MemcgError::Again {
                        requested: 1,
                        reclaimed: 0
                    })
                );
                memcg::MAX_RECLAIM_RETRIES + 1
            }
        };
        assert_eq!(seen, 8 * u64::from(passes), "{what:?}: folios looked at");
    }
}

#[test]
fn lowering_the_limit_reclaims_what_is_over_it_not_everything() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    for _ in 0..200 {
        try_fault(&s.tree, &a, 0, 0, false).unwrap();
    }
    s.tree.stocks().drain(0).unwrap();
    assert_eq!(a.usage(), 200);
    // 100 over the new limit: reclaim takes about that (in SWAP_CLUSTER_MAX batches), not
    // the whole memcg.
    a.set_max(0, 100).unwrap();
    let freed = s.freed.load(Ordering::Relaxed);
    assert_eq!(a.usage(), 200 - freed);
    assert!(
        (100..100 + memcg::charge::SWAP_CLUSTER_MAX).contains(&freed),
        "{freed}"
    );
}

#[test]
fn successive_reclaims_of_a_parent_resume_at_the_next_child() {
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let root = s.tree.root();
        let p = root.create_child().unwrap();
        let k0 = p.create_child().unwrap();
        let k1 = p.create_child().unwrap();
        let k2 = p.create_child().unwrap();
        let g = k0.create_child().unwrap();
        // In the walk's order (pre-order: a memcg, then its children's subtrees).
        let ms = [&k0, &g, &k1, &k2];
        for m in ms {
            for i in 0..200 {
                try_fault(&s.tree, m, 0, 0, i % 2 == 0).unwrap();
            }
        }
        s.tree.stocks().drain(0).unwrap();
        // Pages charged to a memcg itself, not to its children.
        let own = |m: &memcg::MemcgRef<'_, _>| {
            let children: u64 = ms
                .iter()
                .filter(|c| c.parent().is_some_and(|q| q.id() == m.id()))
                .map(|c| c.usage())
                .sum();
            m.usage() - children
        };
        // Each reclaim of p meets its target in the first memcg with pages and stops there
        // (`mem_cgroup_iter_break()`); the next one starts after it (the reclaim iterator's
        // position), so the memcgs take turns instead of the first losing everything.
        let reclaim_one = |order: &mut Vec<usize>| {
            let before: Vec<u64> = ms.iter().map(|m| own(m)).collect();
            let got = s
                .tree
                .try_to_free_mem_cgroup_pages(&p, 0, memcg::charge::SWAP_CLUSTER_MAX, None)
                .unwrap();
            assert!(got >= memcg::charge::SWAP_CLUSTER_MAX, "{got}");
            let shrunk: Vec<usize> = (0..ms.len()).filter(|&i| own(ms[i]) < before[i]).collect();
            assert_eq!(
                shrunk.len(),
                1,
                "mglru {mglru}: {shrunk:?} shrunk by one walk"
            );
            order.push(shrunk[0]);
        };
        let mut order = Vec::new();
        for _ in 0..7 {
            reclaim_one(&mut order);
        }
        assert_eq!(
            order,
            [0, 1, 2, 3, 0, 1, 2],
            "mglru {mglru}: memcgs reclaimed in turn"
        );
        // The walk stopped at k1. A memcg created since, earlier in the walk's order (a
        // child of g), does not make the next walk start at k1 again: it resumes after the
        // memcg it stopped at.
        let late = g.create_child().unwrap();
        for _ in 0..3 {
            reclaim_one(&mut order);
        }
        assert_eq!(&order[7..], [3, 0, 1], "mglru {mglru}: after a new memcg");
        drop(late);
    }
}

/// `n` faults into `m` on `node`, half of them anon.
fn fill(s: &Setup, m: &Ref<'_>, node: u32, n: u64) {
    for i in 0..n {
        try_fault(&s.tree, m, 0, node, i % 2 == 0).unwrap();
    }
    s.tree.stocks().drain(0).unwrap();
}

#[test]
fn low_protected_memcgs_give_only_what_the_others_could_not() {
    const TARGET: u64 = memcg::charge::SWAP_CLUSTER_MAX;
    for mglru in [false, true] {
        // The unprotected memcg has enough: the low-protected one keeps everything.
        let s = setup(1, 1, mglru);
        let p = s.tree.root().create_child().unwrap();
        let (u, l) = (p.create_child().unwrap(), p.create_child().unwrap());
        fill(&s, &u, 0, 200);
        fill(&s, &l, 0, 200);
        l.memory().set_low(1000);
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&p, 0, TARGET, None)
            .unwrap();
        assert_eq!(got, TARGET, "mglru {mglru}");
        assert_eq!((u.usage(), l.usage()), (200 - TARGET, 200), "mglru {mglru}");
        // It has 10, less than asked: still progress, so the low-protected one keeps its
        // pages (Linux's `do_try_to_free_pages()` returns before its `memcg_low_reclaim`
        // retry when anything was reclaimed).
        let s = setup(1, 1, mglru);
        let p = s.tree.root().create_child().unwrap();
        let (u, l) = (p.create_child().unwrap(), p.create_child().unwrap());
        fill(&s, &u, 0, 10);
        fill(&s, &l, 0, 200);
        l.memory().set_low(1000);
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&p, 0, TARGET, None)
            .unwrap();
        assert_eq!((got, u.usage(), l.usage()), (10, 0, 200), "mglru {mglru}");
        // Nothing left but the low reserve: the retry takes a pass from it.
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&p, 0, TARGET, None)
            .unwrap();
        assert_eq!(got, TARGET, "mglru {mglru}");
        assert_eq!(s.freed.load(Ordering::Relaxed), 10 + got);
        assert_eq!(l.usage(), 200 - TARGET, "mglru {mglru}");
    }
}

#[test]
fn the_reclaim_target_itself_is_never_protected() {
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let root = s.tree.root();
        let a = root.create_child().unwrap();
        fill(&s, &a, 0, 50);
        a.memory().set_min(1000);
        // Reclaim from above computes a's effective min (all of it): nothing goes.
        let err = root
            .memory_reclaim(0, ReclaimRequest::pages(10))
            .unwrap_err();
        assert!(
            matches!(err, MemcgError::Again { reclaimed: 0, .. }),
            "{err:?}"
        );
        assert_eq!(a.usage(), 50);
        // memory.reclaim written to a itself: its own memory.min does not protect it
        // from it (`mem_cgroup_unprotected()`: memcg == target).
        let got = a.memory_reclaim(0, ReclaimRequest::pages(10)).unwrap();
        assert!(got >= 10, "mglru {mglru}: {got}");
        assert_eq!(a.usage(), 50 - got);
    }
}

#[test]
fn root_reclaim_goes_on_to_the_next_node_only_while_short() {
    const TARGET: u64 = memcg::charge::SWAP_CLUSTER_MAX;
    for mglru in [false, true] {
        let s = setup(1, 2, mglru);
        let root = s.tree.root();
        let a = root.create_child().unwrap();
        let b = root.create_child().unwrap();
        // Only node 1 has pages: reclaim finds them after an empty node 0.
        fill(&s, &b, 1, 100);
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&root, 0, TARGET, None)
            .unwrap();
        assert_eq!(got, TARGET, "mglru {mglru}");
        assert_eq!(b.usage(), 100 - TARGET);
        // Node 0 has enough: node 1 is left alone.
        fill(&s, &a, 0, 100);
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&root, 0, TARGET, None)
            .unwrap();
        assert_eq!(got, TARGET, "mglru {mglru}");
        assert_eq!(
            (a.usage(), b.usage()),
            (100 - TARGET, 100 - TARGET),
            "mglru {mglru}"
        );
    }
}

#[test]
fn subtree_reclaim_asks_each_memcg_only_for_what_is_still_missing() {
    const TARGET: u64 = memcg::charge::SWAP_CLUSTER_MAX;
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let p = s.tree.root().create_child().unwrap();
        let (a, b) = (p.create_child().unwrap(), p.create_child().unwrap());
        fill(&s, &a, 0, 10);
        fill(&s, &b, 0, 100);
        // The walk takes a's 10, then from b only the 22 still missing.
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&p, 0, TARGET, None)
            .unwrap();
        assert_eq!(got, TARGET, "mglru {mglru}");
        assert_eq!(
            (a.usage(), b.usage()),
            (0, 100 - (TARGET - 10)),
            "mglru {mglru}"
        );
    }
}

#[test]
fn root_reclaim_asks_each_memcg_only_for_what_is_still_missing() {
    const TARGET: u64 = memcg::charge::SWAP_CLUSTER_MAX;
    let s = setup(1, 1, true);
    let root = s.tree.root();
    let ms: Vec<_> = (0..4).map(|_| root.create_child().unwrap()).collect();
    for m in &ms {
        fill(&s, m, 0, 20);
    }
    // 20 pages each: the FIFO walk needs two memcgs, and takes from the second only the
    // 12 still missing.
    let got = s
        .tree
        .try_to_free_mem_cgroup_pages(&root, 0, TARGET, None)
        .unwrap();
    assert_eq!(got, TARGET);
    let mut left: Vec<u64> = ms.iter().map(|m| m.usage()).collect();
    left.sort_unstable();
    assert_eq!(left, [0, 20 - (TARGET - 20), 20, 20]);
}

#[test]
fn root_reclaim_rotates_a_memcg_by_what_its_shrink_did() {
    use lru::memcg_lru::{get_memcg_gen, seg};
    const TARGET: u64 = memcg::charge::SWAP_CLUSTER_MAX;
    // (gen, seg) of `m` in node 0's memcg FIFO.
    let fifo_pos = |m: &Ref<'_>| {
        let n = m.lruvec(0).unwrap().lrugen().memcg_node();
        (
            usize::from(n.r#gen.load(Ordering::Relaxed)),
            n.seg.load(Ordering::Relaxed),
        )
    };
    let s = setup(1, 1, true);
    let root = s.tree.root();
    let fifo = s.tree.node_data()[0].memcg_lru();
    let small: Vec<_> = (0..4).map(|_| root.create_child().unwrap()).collect();
    for m in &small {
        fill(&s, m, 0, 100);
    }
    let old = get_memcg_gen(fifo.seq());
    assert!(small.iter().all(|m| fifo_pos(m) == (old, seg::NONE)));
    // The first memcg the walk meets gives the whole target and keeps cold folios: too
    // small to wait in place (`lruvec_is_sizable()`), it goes to the tail of its
    // generation for one more try; the others were not visited.
    let got = s
        .tree
        .try_to_free_mem_cgroup_pages(&root, 0, TARGET, None)
        .unwrap();
    assert_eq!(got, TARGET);
    let shrunk: Vec<_> = small.iter().filter(|m| m.usage() < 100).collect();
    assert_eq!(shrunk.len(), 1);
    let victim = shrunk[0];
    assert_eq!(fifo_pos(victim), (old, seg::TAIL));
    for m in small.iter().filter(|m| m.id() != victim.id()) {
        assert_eq!(fifo_pos(m), (old, seg::NONE));
    }
    // A sizable memcg (evictable pages >> DEF_PRIORITY not zero) that met the target
    // without running out of cold folios stays where it is.
    let s = setup(1, 1, true);
    let root = s.tree.root();
    let fifo = s.tree.node_data()[0].memcg_lru();
    let big = root.create_child().unwrap();
    let pages = 2 << memcg::reclaim::DEF_PRIORITY;
    fill(&s, &big, 0, pages);
    let old = get_memcg_gen(fifo.seq());
    let got = s
        .tree
        .try_to_free_mem_cgroup_pages(&root, 0, TARGET, None)
        .unwrap();
    assert_eq!((got, big.usage()), (TARGET, pages - TARGET));
    assert_eq!(fifo_pos(&big), (old, seg::NONE));
    // Within its memory.low: the first visit (priority 12) only moves it to the tail of
    // its generation; the next priority's walk meets it there and reclaims it, and since
    // it was at the tail already, it is rotated young (small as it is and with cold folios
    // left), which drains the old generation.
    let s = setup(1, 1, true);
    let root = s.tree.root();
    let fifo = s.tree.node_data()[0].memcg_lru();
    let low = root.create_child().unwrap();
    fill(&s, &low, 0, 100);
    low.memory().set_low(1000);
    let seq = fifo.seq();
    let mut st = memcg::reclaim::ReclaimStats::default();
    let got = s
        .tree
        .try_to_free_mem_cgroup_pages_counted(&root, 0, TARGET, None, &mut st)
        .unwrap();
    assert_eq!((got, low.usage()), (TARGET, 100 - TARGET));
    assert_eq!((st.walks, st.priorities), (1, 2), "{st:?}");
    assert_eq!(fifo_pos(&low), (get_memcg_gen(seq + 1), seg::NONE));
}

#[test]
fn a_memcg_is_sizable_by_what_the_requests_swappiness_can_evict() {
    use lru::memcg_lru::{get_memcg_gen, seg};
    const TARGET: u64 = memcg::charge::SWAP_CLUSTER_MAX;
    let many = 2 << memcg::reclaim::DEF_PRIORITY;
    // Many pages of one type, a few of the other, and a file-only request (swappiness 0)
    // that meets its target with cold folios left. Many file pages: sizable, the memcg
    // stays where it is. Many anon pages, which the request cannot evict: too small to
    // wait in place, it goes to the tail of its generation.
    for (many_anon, after) in [(false, seg::NONE), (true, seg::TAIL)] {
        let s = setup(1, 1, true);
        let root = s.tree.root();
        let fifo = s.tree.node_data()[0].memcg_lru();
        let m = root.create_child().unwrap();
        for i in 0..many + 1000 {
            let anon = (i < many) == many_anon;
            try_fault(&s.tree, &m, 0, 0, anon).unwrap();
        }
        s.tree.stocks().drain(0).unwrap();
        let old = get_memcg_gen(fifo.seq());
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&root, 0, TARGET, Some(0))
            .unwrap();
        assert_eq!(got, TARGET, "many anon {many_anon}");
        let n = m.lruvec(0).unwrap().lrugen().memcg_node();
        let pos = (
            usize::from(n.r#gen.load(Ordering::Relaxed)),
            n.seg.load(Ordering::Relaxed),
        );
        assert_eq!(pos, (old, after), "many anon {many_anon}");
    }
}
