//! `memory.reclaim` and root reclaim: progress or EAGAIN, shrinking batches, the request's
//! swappiness, the memcg FIFO walked and rotated by what each shrink did, classic reclaim's
//! cost notes, resuming at the next child, asking each memcg only for what is still missing.

use crate::common;
use rusty_fork::rusty_fork_test;

use common::*;
use lru::LruGenFolio;
use memcg::{MemcgError, ReclaimRequest};
use std::sync::atomic::Ordering;

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
        let lock = <lru::lock_classes::MemcgLruLock as ksync::LockClass>::data();
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}

rusty_fork_test! {
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
}
