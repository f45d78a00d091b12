//! `memory.reclaim` requests on the root: how much reclaim work one request does
//! (`user_proactive_reclaim()` -> `try_to_free_mem_cgroup_pages()` ->
//! `do_try_to_free_pages()`'s priority loop -> `shrink_many()` per node), counted by
//! [`ReclaimStats`]: seed 002's `1024M swappiness=0`, a target too small for
//! `set_initial_priority()`, and a request that is met at the first priority.
#![cfg(not(loom))]

use crate::common;

use common::*;
use memcg::reclaim::{DEF_PRIORITY, ReclaimStats, initial_priority};
use memcg::{MAX_RECLAIM_RETRIES, MemcgError, ReclaimRequest};

/// `MAX_RECLAIM_RETRIES + 1`: the tries of a request that reclaims nothing.
const TRIES: u64 = MAX_RECLAIM_RETRIES as u64 + 1;

/// `n` memcgs under the root, each holding `anon` anonymous folios on node 0.
fn memcgs(s: &Setup, n: usize, anon: usize) -> Vec<Ref<'_>> {
    let root = s.tree.root();
    let v: Vec<_> = (0..n).map(|_| root.create_child().unwrap()).collect();
    for m in &v {
        for _ in 0..anon {
            try_fault(&s.tree, m, 0, 0, true).unwrap();
        }
    }
    v
}

/// Runs `req` on the root and returns its error and what it did.
fn request(s: &Setup, req: &str) -> (Result<u64, MemcgError>, ReclaimStats) {
    let req = ReclaimRequest::parse(req).unwrap();
    let mut stats = ReclaimStats::default();
    let got = s
        .tree
        .memory_reclaim_counted(&s.tree.root(), 0, req, &mut stats);
    (got, stats)
}

#[test]
fn the_initial_priority_is_the_shift_from_the_nodes_inactive_pages_to_the_target() {
    // No inactive pages at all: below DEF_PRIORITY / 2, clamped up to it.
    assert_eq!(initial_priority(0, 65_536), DEF_PRIORITY / 2);
    // fls(2^26) - 1 - fls(65535) = 27 - 1 - 16.
    assert_eq!(initial_priority(1 << 26, 65_536), 10);
    assert_eq!(initial_priority((1 << 27) - 1, 65_536), 10);
    // Far more than the target: clamped down to DEF_PRIORITY.
    assert_eq!(initial_priority(1 << 40, 64), DEF_PRIORITY);
    assert_eq!(initial_priority(u64::MAX, 1), DEF_PRIORITY);
}

/// Seed 002's request among memcgs holding only anon pages (swappiness 0 cannot touch
/// them): 17 tries, each the priority loop twice (`memcg_full_walk`) from 6 down to 0, one
/// `shrink_many()` per node per priority, and every memcg visited is rotated.
#[test]
fn seed_002s_request_runs_the_priority_loop_twice_per_try_on_every_node() {
    for nodes in [1, 2] {
        for anon in [0, 3] {
            let s = setup(1, nodes, true);
            let _m = memcgs(&s, 24, anon);
            let (got, st) = request(&s, "1024M swappiness=0");
            assert!(
                matches!(got, Err(MemcgError::Again { reclaimed: 0, .. })),
                "{got:?}"
            );
            let ctx = format!("{nodes} node(s), {anon} anon folios each: {st:?}");
            assert_eq!(st.tries, TRIES, "{ctx}");
            assert_eq!(st.walks, 2 * TRIES, "{ctx}");
            assert_eq!(st.priorities, TRIES * 2 * 7, "{ctx}");
            assert_eq!(st.priorities, 238, "{ctx}");
            assert_eq!(st.shrink_many_calls, 238 * nodes as u64, "{ctx}");
            // Nothing may be reclaimed and nothing is sizable at swappiness 0: each memcg
            // visited goes to the tail or to the young generation. One CPU: no races.
            assert_eq!(st.rotations, st.visited, "{ctx}");
            assert!(st.visited >= st.shrink_many_calls, "{ctx}");
            assert_eq!((st.restarts, st.unpinned, st.reclaimed), (0, 0, 0), "{ctx}");
            for pgdat in s.tree.node_data() {
                assert_eq!(pgdat.memcg_lru().check(), Ok(25), "{ctx}");
            }
        }
    }
}

/// A target below `MIN_LRU_BATCH` keeps `DEF_PRIORITY`: 13 priorities per loop.
#[test]
fn a_small_target_runs_every_priority_from_def_priority() {
    let s = setup(1, 1, true);
    let _m = memcgs(&s, 8, 2);
    // 128K = 32 pages, batches of 8: the SWAP_CLUSTER_MAX minimum of 32 < 64.
    let (got, st) = request(&s, "128K swappiness=0");
    assert!(matches!(got, Err(MemcgError::Again { .. })), "{got:?}");
    assert_eq!(st.tries, TRIES);
    assert_eq!(st.priorities, TRIES * 2 * (u64::from(DEF_PRIORITY) + 1));
    assert_eq!(st.shrink_many_calls, st.priorities);
}

/// A request that can be met stops the loop at the first priority that meets it, and the
/// `memcg_full_walk` retry never runs.
#[test]
fn a_met_request_stops_at_the_first_priority_that_meets_it() {
    let s = setup(1, 1, true);
    let _m = memcgs(&s, 4, 40);
    let (got, st) = request(&s, "128K swappiness=100");
    let got = got.unwrap();
    assert!(got >= 32, "{got}");
    assert_eq!((st.tries, st.walks, st.priorities), (1, 1, 1), "{st:?}");
    assert_eq!(st.reclaimed, got);
    assert_eq!(s.freed.load(std::sync::atomic::Ordering::Relaxed), got);
}

/// Each visit pins its memcg on the reclaiming CPU's slot of the per-CPU css count and
/// drops the pin there: a request over online memcgs writes none of their shared counts.
#[test]
fn reclaim_visits_write_no_shared_css_count_of_online_memcgs() {
    let s = setup(1, 1, true);
    let m = memcgs(&s, 8, 0);
    let before: Vec<u64> = m.iter().map(|x| x.css_atomic_writes()).collect();
    let refs: Vec<usize> = m.iter().map(|x| x.css_refcnt()).collect();
    let (got, st) = request(&s, "1024M swappiness=0");
    assert!(matches!(got, Err(MemcgError::Again { .. })), "{got:?}");
    assert!(st.visited >= 8 * TRIES, "{st:?}");
    let after: Vec<u64> = m.iter().map(|x| x.css_atomic_writes()).collect();
    assert_eq!(after, before, "shared css writes by reclaim visits");
    let refs_after: Vec<usize> = m.iter().map(|x| x.css_refcnt()).collect();
    assert_eq!(refs_after, refs, "every pin dropped");
}
