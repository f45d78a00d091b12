//! `memory.max`: a charge over the limit reclaims through lru's eviction and retries (also
//! after reclaim that made no progress), then fails cleanly; ancestors' limits, limits set
//! below usage, concurrent faults under a limit, oversized requests.
#![cfg(not(loom))]

use crate::common;

use common::*;
use memcg::{FolioFree, MemcgError, ReclaimRequest};
use std::sync::atomic::Ordering;

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
        let tree = tree_with(memcg::MemcgConfig::new(1, 1), lru);
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
