//! Per-CPU statistics: exact totals after a flush with many threads as CPUs, the flush
//! threshold (`MEMCG_CHARGE_BATCH * nr_cpus`), both stat update paths of seed 001, and
//! hierarchical versus local totals.
#![cfg(not(loom))]

use crate::common;

use common::*;
use memcg::{MemcgEvent, NodeStatItem};

#[test]
fn exact_after_flush_with_many_threads_and_concurrent_flushes() {
    const CPUS: usize = 6;
    const ROUNDS: i64 = 20_000;
    let s = setup(CPUS, 2, false);
    let root = s.tree.root();
    let mid = root.create_child().unwrap();
    let leaf = mid.create_child().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        // A reader flushing all the time, as memory.stat readers do.
        sc.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                s.tree.flush_stats(&root);
                std::thread::yield_now();
            }
        });
        let workers: Vec<_> = (0..CPUS - 1)
            .map(|cpu| {
                let (leaf, mid) = (&leaf, &mid);
                sc.spawn(move || {
                    let node = (cpu % 2) as lru::NodeId;
                    let via_lruvec = leaf.lruvec_ref(node).unwrap();
                    for i in 0..ROUNDS {
                        if i % 2 == 0 {
                            // Path A: through the lruvec.
                            via_lruvec.mod_state(cpu, NodeStatItem::NrShmem, 2).unwrap();
                        } else {
                            // Path B: memcg and node known.
                            leaf.mod_lruvec_state(cpu, node, NodeStatItem::NrShmem, -1)
                                .unwrap();
                        }
                        mid.mod_lruvec_state(cpu, node, NodeStatItem::NrAnonMapped, 1)
                            .unwrap();
                        leaf.count_events(cpu, MemcgEvent::PgFault, 1).unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    s.tree.flush_stats(&root);
    let n = (CPUS - 1) as i64;
    let shmem = n * (ROUNDS / 2) * 2 - n * (ROUNDS / 2);
    assert_eq!(leaf.vmstats().page_state(NodeStatItem::NrShmem), shmem);
    assert_eq!(
        leaf.vmstats().page_state_local(NodeStatItem::NrShmem),
        shmem
    );
    assert_eq!(mid.vmstats().page_state(NodeStatItem::NrShmem), shmem);
    assert_eq!(mid.vmstats().page_state_local(NodeStatItem::NrShmem), 0);
    assert_eq!(root.vmstats().page_state(NodeStatItem::NrShmem), shmem);
    assert_eq!(
        mid.vmstats().page_state(NodeStatItem::NrAnonMapped),
        n * ROUNDS
    );
    assert_eq!(leaf.vmstats().page_state(NodeStatItem::NrAnonMapped), 0);
    assert_eq!(
        root.vmstats().events(MemcgEvent::PgFault),
        (n * ROUNDS) as u64
    );
    assert_eq!(
        leaf.vmstats().events_local(MemcgEvent::PgFault),
        (n * ROUNDS) as u64
    );
    // Per node: CPUs 0, 2, 4 used node 0, CPUs 1, 3 node 1.
    let per_cpu = (ROUNDS / 2) * 2 - ROUNDS / 2;
    assert_eq!(
        leaf.lruvec_state(0, NodeStatItem::NrShmem).unwrap(),
        3 * per_cpu
    );
    assert_eq!(
        leaf.lruvec_state(1, NodeStatItem::NrShmem).unwrap(),
        2 * per_cpu
    );
    assert_eq!(
        mid.lruvec_state(1, NodeStatItem::NrShmem).unwrap(),
        2 * per_cpu
    );
    assert_eq!(mid.lruvec_state_local(1, NodeStatItem::NrShmem).unwrap(), 0);
    assert_eq!(
        root.lruvec_state(0, NodeStatItem::NrAnonMapped).unwrap(),
        3 * ROUNDS
    );
}

#[test]
fn flush_threshold_is_batch_times_cpus() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    assert_eq!(a.vmstats().flush_threshold(), 128);
    // 100 updates: one batch of 64 folded in, 36 still per-CPU; no flush due.
    for _ in 0..100 {
        a.count_events(0, MemcgEvent::PgSteal, 1).unwrap();
    }
    assert_eq!(a.vmstats().pending_updates(), 64);
    assert!(!a.vmstats().needs_flush());
    assert_eq!(
        a.memory_events(MemcgEvent::PgSteal),
        0,
        "read without a due flush"
    );
    // Up to 192 folded: above 128, so the next read flushes and is exact.
    for _ in 0..100 {
        a.count_events(0, MemcgEvent::PgSteal, 1).unwrap();
    }
    assert_eq!(a.vmstats().pending_updates(), 192);
    assert!(a.vmstats().needs_flush());
    // The parent's count also crossed its threshold.
    assert!(root.vmstats().needs_flush());
    assert_eq!(a.memory_events(MemcgEvent::PgSteal), 200);
    assert!(!a.vmstats().needs_flush());
    assert_eq!(a.vmstats().pending_updates(), 0);
    // Big updates count by magnitude.
    a.mod_lruvec_state(1, 0, NodeStatItem::NrFilePages, -500)
        .unwrap();
    assert!(a.vmstats().needs_flush());
    assert_eq!(a.memory_stat(NodeStatItem::NrFilePages), -500);
}

#[test]
fn both_update_paths_reach_the_same_counters() {
    let s = setup(1, 2, true);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    for node in 0..2 {
        a.lruvec_ref(node)
            .unwrap()
            .mod_state(0, NodeStatItem::WorkingsetRefaultFile, 5)
            .unwrap();
        a.mod_lruvec_state(0, node, NodeStatItem::WorkingsetRefaultFile, 7)
            .unwrap();
    }
    s.tree.flush_stats(&root);
    for node in 0..2 {
        assert_eq!(
            a.lruvec_state(node, NodeStatItem::WorkingsetRefaultFile)
                .unwrap(),
            12
        );
    }
    assert_eq!(
        a.vmstats().page_state(NodeStatItem::WorkingsetRefaultFile),
        24
    );
    assert_eq!(
        root.vmstats()
            .page_state(NodeStatItem::WorkingsetRefaultFile),
        24
    );
    assert_eq!(
        a.lruvec_ref(0)
            .unwrap()
            .mod_state(3, NodeStatItem::NrShmem, 1),
        Err(memcg::MemcgError::InvalidCpu { cpu: 3, nr_cpus: 1 })
    );
}

#[test]
fn stats_of_freed_children_stay_in_the_parent() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let p = root.create_child().unwrap();
    let c = p.create_child().unwrap();
    c.count_events(1, MemcgEvent::PgFault, 9).unwrap();
    c.mod_lruvec_state(0, 0, NodeStatItem::NrFilePages, 4)
        .unwrap();
    let id = c.id();
    drop(c);
    s.tree.offline(id, 0).unwrap();
    // A grace period confirms its css count (the reap unlinks it), another frees it.
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 0);
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 1);
    s.tree.flush_stats(&root);
    assert_eq!(p.vmstats().events(MemcgEvent::PgFault), 9);
    assert_eq!(p.vmstats().events_local(MemcgEvent::PgFault), 0);
    assert_eq!(root.vmstats().page_state(NodeStatItem::NrFilePages), 4);
    assert_eq!(p.lruvec_state(0, NodeStatItem::NrFilePages).unwrap(), 4);
}

#[test]
fn both_paths_update_the_node_counters_too() {
    let s = setup(2, 2, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let b = root.create_child().unwrap();
    let before = [0, 1].map(|n| {
        s.tree.node_data()[n]
            .vmstat()
            .state_snapshot(NodeStatItem::NrShmem)
    });
    // Path A (through the lruvec and lruvec->pgdat) on node 1, path B (NODE_DATA) on node 0.
    for _ in 0..300 {
        a.lruvec_ref(1)
            .unwrap()
            .mod_state(0, NodeStatItem::NrShmem, 1)
            .unwrap();
        b.mod_lruvec_state(1, 0, NodeStatItem::NrShmem, 2).unwrap();
    }
    let node = |n: usize| {
        s.tree.node_data()[n]
            .vmstat()
            .state_snapshot(NodeStatItem::NrShmem)
    };
    assert_eq!(node(1) - before[1], 300, "path A reached node 1's counters");
    assert_eq!(node(0) - before[0], 600, "path B reached node 0's counters");
    // The node totals (without per-CPU deltas) lag by at most one threshold per CPU.
    let t = i64::from(s.tree.node_data()[0].vmstat().threshold());
    assert!(
        (node(0) - s.tree.node_data()[0].node_page_state(NodeStatItem::NrShmem)).abs() <= 2 * t
    );
    // And the memcg and lruvec counters as before.
    s.tree.flush_stats(&root);
    assert_eq!(a.lruvec_state(1, NodeStatItem::NrShmem).unwrap(), 300);
    assert_eq!(b.lruvec_state(0, NodeStatItem::NrShmem).unwrap(), 600);
    assert_eq!(root.vmstats().page_state(NodeStatItem::NrShmem), 900);
    // A bad CPU is refused before anything is counted anywhere.
    assert!(
        a.lruvec_ref(0)
            .unwrap()
            .mod_state(9, NodeStatItem::NrShmem, 1)
            .is_err()
    );
    assert!(b.mod_lruvec_state(9, 0, NodeStatItem::NrShmem, 1).is_err());
    assert_eq!(node(0) - before[0], 600);
}

/// The LRU size statistics are the list code's (`update_lru_size` under lru_lock, through
/// the lruvec): folios moved by per-CPU folio batches, and MGLRU aging turning the two
/// youngest generations' folios from active to inactive as new generations open, keep
/// `memory.stat`'s active/inactive counts equal to the lists' sizes.
#[test]
fn lru_statistics_follow_batches_and_aging() {
    let s = setup(2, 1, true);
    let root = s.tree.root();
    let m = root.create_child().unwrap();
    let batches = lru::LruBatches::<ksync::Ticket>::new(2);
    let folios: Vec<_> = (0..100).map(|i| folio(0, i % 2 == 0)).collect();
    for (i, &f) in folios.iter().enumerate() {
        s.tree.charge_folio(&m, 0, f).unwrap();
        if i % 3 == 0 {
            // Faulted folios start in the youngest generation (lru_gen_in_fault).
            f.set(lru::FolioFlags::ACTIVE);
        }
        batches.folio_add_lru(i % 2, f, &s.tree).unwrap();
    }
    batches.drain_all(0, &s.tree).unwrap();
    let lruvec = m.lruvec(0).unwrap();
    let check = |what: &str| {
        m.flush_stats();
        for (item, list) in [
            (NodeStatItem::NrInactiveAnon, lru::LruList::InactiveAnon),
            (NodeStatItem::NrActiveAnon, lru::LruList::ActiveAnon),
            (NodeStatItem::NrInactiveFile, lru::LruList::InactiveFile),
            (NodeStatItem::NrActiveFile, lru::LruList::ActiveFile),
        ] {
            assert_eq!(
                m.memory_stat(item),
                lruvec.lru_size(list) as i64,
                "{what}: {} differs from the list",
                item.name()
            );
        }
    };
    check("after the batches");
    assert_eq!(lruvec.nr_folios(), 100);
    assert!(lruvec.lru_size(lru::LruList::ActiveAnon) > 0);
    for now in 1..=3 {
        lruvec.age(now).unwrap();
        check("after aging");
    }
    assert_eq!(
        lruvec.lru_size(lru::LruList::ActiveAnon) + lruvec.lru_size(lru::LruList::ActiveFile),
        0,
        "three new generations make every folio inactive"
    );
}
