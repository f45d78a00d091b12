//! Who drops the last reference of a folio releases it (`__folio_put`), wherever that
//! happens: a per-CPU folio batch that outlived its folio's owner, or reclaim putting back
//! a folio it had isolated when truncation raced with it. Both go to the tree's owner
//! (`FolioOwner::release_folio`), exactly once, with no reference left.
#![cfg(not(loom))]

use crate::common;

use common::*;
use lru::{Folio, FolioFlags, Shadow};
use memcg::{FolioFree, TreeLru};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A release closure that checks the folio has no reference left and counts it.
fn counting_release() -> (Arc<AtomicU64>, memcg::FolioReleaseFn) {
    let released = Arc::new(AtomicU64::new(0));
    let r = released.clone();
    let hook: memcg::FolioReleaseFn = Box::new(move |_cpu, f: &'static Folio| {
        // Released with no reference left; it may still be on its LRU list (the kernel's
        // owner takes it off, as `__page_cache_release` does).
        assert_eq!(f.refcount(), 0, "released with a reference left");
        r.fetch_add(1, Ordering::Relaxed);
    });
    (released, hook)
}

#[test]
fn a_batch_dropping_the_last_reference_releases_the_folio() {
    let (released, hook) = counting_release();
    let freed = Arc::new(AtomicU64::new(0));
    let lru = tree_lru(true, freed.clone()).with_release(hook);
    let tree = tree_with(memcg::MemcgConfig::new(1, 1), lru);
    let s = Setup { tree, freed };
    let m = s.tree.root().create_child().unwrap();
    let batches = lru::LruBatches::<ksync::Ticket>::new(1);
    let f = folio(0, true);
    s.tree.charge_folio(&m, 0, f).unwrap();
    batches.folio_add_lru(0, f, &s.tree).unwrap();
    // The owner unmaps and drops its reference while the folio still waits in the batch:
    // not the last one.
    assert_eq!(f.put(), Ok(false));
    assert_eq!(released.load(Ordering::Relaxed), 0);
    // Draining adds it to the LRU and drops the batch's reference: the last one.
    batches.drain_all(0, &s.tree).unwrap();
    // The release closure here only counts (it leaves the folio where it is: the kernel's
    // owner takes it off the LRU); the folio reached it exactly once.
    assert_eq!(released.load(Ordering::Relaxed), 1);
}

/// Reclaim isolates a folio (pinning it), the free hook finds it busy because its last
/// other reference went away meanwhile (truncation took it out of the cache), and the
/// putback drops the pin: that is the last reference, so the folio is released.
#[test]
fn a_putback_dropping_the_last_reference_releases_the_folio() {
    let (released, hook) = counting_release();
    let racing: Arc<std::sync::Mutex<Option<&'static Folio>>> = Arc::default();
    let r2 = racing.clone();
    let lru = TreeLru::new(
        true,
        Box::new(move |_cpu, f: &'static Folio, _shadow: Shadow| {
            // Reclaim's pin plus the owner's.
            assert_eq!(f.refcount(), 2);
            // Truncation races: the owner's reference goes.
            assert_eq!(f.put(), Ok(false));
            *r2.lock().unwrap() = Some(f);
            FolioFree::Busy
        }),
    )
    .with_release(hook)
    .with_swappiness(0);
    let tree = tree_with(memcg::MemcgConfig::new(1, 1), lru);
    let s = Setup {
        tree,
        freed: Arc::default(),
    };
    let m = s.tree.root().create_child().unwrap();
    let f = folio(0, false);
    s.tree.charge_folio(&m, 0, f).unwrap();
    s.tree.lru().lru_add_folio(&m, f).unwrap();
    let got = m.memory_reclaim(0, memcg::ReclaimRequest::pages(1));
    assert!(got.is_err(), "nothing could be freed: {got:?}");
    assert!(core::ptr::eq(racing.lock().unwrap().unwrap(), f));
    assert_eq!(
        released.load(Ordering::Relaxed),
        1,
        "released once, by the putback"
    );
    assert!(
        f.test(FolioFlags::LRU),
        "the putback put it on the LRU before the put"
    );
}

/// A folio waiting in a per-CPU batch when its memcg goes offline: offlining reparents the
/// LRU folios, not this one (it is on no LRU yet), so it stays charged to the zombie; the
/// drain must still find the zombie's lruvec and add it there (Linux's
/// `folio_lruvec_lock()` on an offline memcg), and once the folio is gone the zombie must be
/// freed, with nothing charged anywhere.
#[test]
fn a_folio_batched_across_its_memcgs_offline_lands_on_the_zombie_which_is_then_freed() {
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let root = s.tree.root();
        let m = root.create_child().unwrap();
        let id = m.id();
        let batches = lru::LruBatches::<ksync::Ticket>::new(1);
        let f = folio(0, true);
        s.tree.charge_folio(&m, 0, f).unwrap();
        batches.folio_add_lru(0, f, &s.tree).unwrap();
        assert!(!f.test_lru(), "still in the batch");
        drop(m);
        s.tree.offline(id, 0).unwrap();
        assert_eq!(s.tree.nr_zombies(), 1, "mglru {mglru}");
        assert_eq!(f.memcg_id(), id, "a batched folio is not reparented");
        let drained = batches.drain_all(0, &s.tree);
        assert!(
            !lru::MoveStats::drain_all_failed(&drained),
            "mglru {mglru}: {drained:?}"
        );
        assert!(f.test_lru(), "mglru {mglru}: the drain put it on an LRU");
        let zombie = s.tree.lookup_any(id).unwrap();
        assert_eq!(zombie.usage(), 1);
        // The owner frees it: off the zombie's LRU (where the drain put it), uncharged.
        s.tree.lru().lru_del_folio(&zombie, f).unwrap();
        let out = s.tree.uncharge_folios(0, &[f]).unwrap();
        assert_eq!((out.pages, out.failed), (1, 0));
        assert_eq!((zombie.usage(), root.usage()), (0, 0));
        drop(zombie);
        for _ in 0..3 {
            grace_period(&s.tree);
            s.tree.reap(0);
        }
        assert_eq!(
            (s.tree.nr_memcgs(), s.tree.nr_zombies(), s.tree.nr_dying()),
            (1, 0, 0),
            "mglru {mglru}: the zombie is freed"
        );
    }
}
