//! The reclaim walk over a subtree (`mem_cgroup_iter()`): it takes no tree lock and writes
//! no shared css count while the memcgs are online, and it no longer reaches a memcg once
//! that memcg is unlinked. In a process of its own: it reads the tree lock's statistics,
//! which other tests' trees would add to.

use crate::common;
use rusty_fork::rusty_fork_test;

use common::*;
use ksync::LockClass;
use memcg::lock_classes::MemcgTreeLock;

rusty_fork_test! {
    #[test]
    fn subtree_reclaim_takes_no_tree_lock_and_no_shared_reference() {
        ksync::stat::set_enabled(true);
        let s = setup(2, 1, true);
        let root = s.tree.root();
        let p = root.create_child().unwrap();
        let k0 = p.create_child().unwrap();
        let g = k0.create_child().unwrap();
        let k1 = p.create_child().unwrap();
        let leaves = [&k0, &g, &k1];
        for m in leaves {
            for i in 0..300 {
                try_fault(&s.tree, m, 1, 0, i % 2 == 0).unwrap();
            }
        }
        let lock = MemcgTreeLock::data();
        let shared = || -> Vec<u64> {
            [&p, &k0, &g, &k1]
                .iter()
                .map(|m| m.css_atomic_writes())
                .collect()
        };
        let usage = || -> Vec<u64> { leaves.iter().map(|m| m.usage()).collect() };
        let (locks, writes, before) = (lock.snapshot(), shared(), usage());
        // Walk the whole subtree several times: each reclaim stops where it met its target and
        // the next resumes after it.
        let mut got = 0;
        for _ in 0..8 {
            got += s
                .tree
                .try_to_free_mem_cgroup_pages(&p, 1, memcg::charge::SWAP_CLUSTER_MAX, None)
                .unwrap();
        }
        assert!(got >= 8 * memcg::charge::SWAP_CLUSTER_MAX, "{got}");
        assert_eq!(
            lock.snapshot().since(&locks).acquisitions,
            0,
            "the reclaim walk took the tree lock"
        );
        assert_eq!(shared(), writes, "the walk's pins wrote a shared css count");
        for (i, after) in usage().into_iter().enumerate() {
            assert!(
                after < before[i],
                "memcg {} was never reclaimed",
                leaves[i].id()
            );
        }

        // Unlinked: offline k1 (its folios go to p) and reap it after a grace period; the walk
        // no longer reaches it, and reclaim still meets its targets from the others.
        let k1_id = k1.id();
        drop(k1);
        s.tree.offline(k1_id, 0).unwrap();
        grace_period(&s.tree);
        s.tree.reap(0);
        grace_period(&s.tree);
        s.tree.reap(0);
        assert!(s.tree.lookup_any(k1_id).is_err(), "k1 is unlinked");
        let got = s
            .tree
            .try_to_free_mem_cgroup_pages(&p, 1, memcg::charge::SWAP_CLUSTER_MAX, None)
            .unwrap();
        assert!(got >= memcg::charge::SWAP_CLUSTER_MAX, "{got}");
    }
}
