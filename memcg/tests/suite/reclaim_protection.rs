//! Reclaim protection (`memory.min`, `memory.low`): min-protected memcgs skipped,
//! low-protected ones reclaimed last and only for what the others could not give, the
//! reclaim target itself never protected.
#![cfg(not(loom))]

use crate::common;

use common::*;
use memcg::{MemcgError, ReclaimRequest};
use std::sync::atomic::Ordering;

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
