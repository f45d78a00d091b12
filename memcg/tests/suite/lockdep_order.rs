//! Lock order with lockdep on (ksync's `std` feature + debug assertions): folio batches
//! moved through the memcg tree, against charging, reclaim, stat flushes, offline,
//! reparenting and reaping, in both lru_lock variants (seed 004), record no inversion; the
//! tree lock is taken before lru locks (reparenting under reap) and never under one,
//! because `folio_lruvec_relock` finds the next lruvec with the lockless RCU lookup.
//!
//! Lockdep's order graph is global to the process, so this test runs in a process of its own
//! (the deliberate inversion is in `lockdep_inversion.rs`).

use crate::common;
use rusty_fork::rusty_fork_test;

use common::*;
use ksync::LockClass;
use ksync::lockdep::{seen_before, take_inversion};
use lru::lock_classes::{FbatchLock, LruDrainLock, LruLock, MemcgLruLock, PgdatLruLock};
use lru::{LruBatches, LruvecLock};
use memcg::lock_classes::{MemcgTreeLock, RstatLock};
use memcg::{MemcgConfig, ReclaimRequest};

const CPUS: usize = 2;
const NODES: u32 = 2;

/// One run: memcgs a, b and a/c; folios of all three on both nodes queued on both CPUs
/// (each batch mixes memcgs, so moving it relocks between lruvecs of different memcgs),
/// moved, activated and deactivated through batches, reclaimed, flushed; c goes offline
/// with folios still queued, is reparented and reaped.
fn drive(lock: LruvecLock, mglru: bool) {
    let mut config = MemcgConfig::new(CPUS, NODES as usize);
    config.lru_lock = lock;
    let s = setup_with(config, mglru);
    let tree = &s.tree;
    let batches = LruBatches::<<Pn as lru::LruvecHost>::Family>::new(CPUS);
    let a = tree.root().create_child().unwrap();
    let b = tree.root().create_child().unwrap();
    let c = a.create_child().unwrap();
    let memcgs = [&a, &b, &c];
    let mut folios = Vec::new();
    for i in 0..96usize {
        let m = memcgs[i % 3];
        let cpu = (i / 3) % CPUS;
        let f = folio((i / 6) as u32 % NODES, i % 2 == 0);
        tree.charge_folio(m, cpu, f).unwrap();
        let st = batches.folio_add_lru(cpu, f, tree).unwrap();
        assert_eq!(st.error, None);
        folios.push(f);
    }
    for cpu in 0..CPUS {
        assert_eq!(batches.drain_cpu(cpu, tree).unwrap().error, None);
    }
    assert!(folios.iter().all(|f| f.test_lru()));
    for (i, &f) in folios.iter().enumerate() {
        let cpu = i % CPUS;
        let st = if i % 4 == 0 {
            batches.folio_activate(cpu, f, tree)
        } else {
            batches.folio_deactivate(cpu, f, tree)
        };
        assert_eq!(st.unwrap().error, None);
    }
    let st = batches
        .drain_all(0, tree)
        .unwrap()
        .expect("nobody else drains");
    assert_eq!(st.error, None);
    // Reclaim from a subtree and from the root (the FIFO walk when MGLRU is on).
    let req = ReclaimRequest {
        nr_pages: 8,
        swappiness: Some(60),
    };
    let _ = a.memory_reclaim(0, req);
    let _ = tree.root().memory_reclaim(1, req);
    tree.flush_stats(&tree.root());
    // c's folios still in batches when it goes offline: they reach its lruvec after the
    // reparent and move to a when it is reaped.
    let late: Vec<_> = (0..8)
        .map(|i| {
            let f = folio(i % NODES, false);
            tree.charge_folio(&c, 1, f).unwrap();
            batches.folio_add_lru(1, f, tree).unwrap();
            f
        })
        .collect();
    let cid = c.id();
    drop(c);
    tree.offline(cid, 0).unwrap();
    assert_eq!(batches.drain_cpu(1, tree).unwrap().error, None);
    assert!(late.iter().all(|f| f.test_lru()));
    // Free the late folios (they hold c's references), then reap c.
    for &f in &late {
        let owner = tree.lookup_any(f.memcg_id()).unwrap();
        free(tree, &owner, 0, f);
    }
    grace_period(tree);
    tree.reap(0);
    let bid = b.id();
    drop(b);
    let _ = tree.root().memory_reclaim(0, req);
    tree.offline(bid, 1).unwrap();
    grace_period(tree);
    tree.reap(1);
    assert_eq!(take_inversion(), None, "lock order inversion ({lock:?})");
}

fn class<C: LockClass>() -> &'static ksync::class::ClassData {
    C::data()
}

rusty_fork_test! {
    #[test]
    fn folio_batches_through_the_tree_never_take_the_tree_lock_under_an_lru_lock() {
        for mglru in [false, true] {
            drive(LruvecLock::Own, mglru);
            drive(LruvecLock::Node, mglru);
        }
        let tree = class::<MemcgTreeLock>();
        for lru_lock in [class::<LruLock>(), class::<PgdatLruLock>()] {
            // Reaping reparents under the tree lock: tree lock, then lru locks.
            assert!(seen_before(tree, lru_lock), "{}", lru_lock.name());
            // The relock path (and everything else) never takes the tree lock under one.
            assert!(!seen_before(lru_lock, tree), "{}", lru_lock.name());
            // Folio batches are moved under their CPU's batch lock.
            assert!(seen_before(class::<FbatchLock>(), lru_lock));
            assert!(!seen_before(lru_lock, class::<FbatchLock>()));
            assert!(!seen_before(lru_lock, class::<RstatLock>()));
            assert!(!seen_before(lru_lock, class::<MemcgLruLock>()));
        }
        assert!(seen_before(class::<LruDrainLock>(), class::<FbatchLock>()));
        assert!(seen_before(tree, class::<RstatLock>()));
        assert!(!seen_before(class::<RstatLock>(), tree));
        assert!(seen_before(tree, class::<MemcgLruLock>()));
        assert!(!seen_before(class::<MemcgLruLock>(), tree));
        assert_eq!(take_inversion(), None);
    }
}
