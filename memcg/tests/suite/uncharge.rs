//! Uncharging and freeing: the uncharge path, busy folios put back still charged, frozen
//! folios handed to the free-batch hook uncharged in one call, one page-counter update per
//! run of folios of one memcg.
#![cfg(not(loom))]

use crate::common;

use common::*;
use memcg::{FolioFree, MemcgError};
use std::sync::atomic::Ordering;

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
    let tree = tree_with(memcg::MemcgConfig::new(1, 1), lru);
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
    let tree = tree_with(memcg::MemcgConfig::new(1, 1), lru);
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
        s.tree.lru().lru_del_folio(&a, f).unwrap();
    }
    for f in &fb {
        s.tree.lru().lru_del_folio(&b, f).unwrap();
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
    assert!(
        batch.iter().all(|f| f.memcg_id() == 0),
        "uncharge_folio clears memcg_data"
    );
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
