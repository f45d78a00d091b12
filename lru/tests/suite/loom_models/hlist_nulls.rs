//! Loom: a lockless hlist_nulls reader against concurrent FIFO rotation with the cached
//! tail, and against an entry being released and freed after a grace period. The reader
//! never touches an invalid node, sees exactly what a correct walk can see, and either
//! completes its bin or sees a foreign nulls value; afterwards the cached tail equals the
//! real tail.
use super::loom_support;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom_support::{Loom, model};
use lru::lru_gen::LruGenMemcgNode;
use lru::memcg_lru::WalkEnd;
use lru::{
    LruGenFolio, LruGenFolioGrouped, LruGenMemcg, MemcgFifoEntry, MemcgLruOp, Rcu, TailMode,
};
use std::ops::ControlFlow;

/// A FIFO entry that knows whether it was freed (poisoned once its grace period is over).
#[repr(C)]
struct Entry {
    lrugen: LruGenFolioGrouped,
    alive: AtomicBool,
}

// SAFETY: `lrugen` is at offset 0 of this `repr(C)` struct, so its node is at the grouped
// layout's own node offset.
unsafe impl MemcgFifoEntry for Entry {
    const MEMCG_NODE_OFFSET: usize = <LruGenFolioGrouped as LruGenFolio>::MEMCG_NODE_OFFSET;
    fn memcg_node(&self) -> &LruGenMemcgNode {
        LruGenFolio::memcg_node(&self.lrugen)
    }
}

type Fifo = LruGenMemcg<Loom, Entry>;

/// A FIFO of `n` entries, all in bin 0 of generation 0 in order, and CPU 0 of its RCU
/// domain online for the reader.
fn setup(n: usize) -> (&'static Fifo, Vec<&'static Entry>) {
    let rcu: &'static Rcu<Loom> = Box::leak(Box::new(Rcu::new(1)));
    let _ = rcu.pending_callbacks(); // build the lazily created loom lock before spawning
    let fifo: &'static Fifo = Box::leak(Box::new(Fifo::new(TailMode::Cached, 1, rcu)));
    let e: Vec<&'static Entry> = (0..n)
        .map(|_| {
            &*Box::leak(Box::new(Entry {
                lrugen: LruGenFolioGrouped::new(true, 0),
                alive: AtomicBool::new(true),
            }))
        })
        .collect();
    for &x in &e {
        // SAFETY: entries are leaked; a test that "frees" one only poisons it.
        unsafe { fifo.online(x) }.unwrap();
        fifo.rotate_to_bin(x, MemcgLruOp::Tail, 0).unwrap();
    }
    rcu.online(0).unwrap();
    (fifo, e)
}

/// One walk of bin 0 of generation 0 as CPU 0: the entries visited (as indices into `e`),
/// checking each is alive while the reader holds it, and how the walk ended.
fn reader(fifo: &'static Fifo, e: &[&'static Entry]) -> (Vec<usize>, WalkEnd) {
    let rcu = fifo.rcu();
    let g = rcu.read_lock(0).unwrap();
    let mut visited = Vec::new();
    let end = fifo
        .walk_bin(&g, 0, 0, |x| {
            let i = e
                .iter()
                .position(|y| std::ptr::eq(*y, x))
                .expect("visited a foreign node");
            assert!(
                x.alive.load(Ordering::Acquire),
                "reader touched a freed entry"
            );
            visited.push(i);
            assert!(visited.len() <= 2 * e.len(), "walk ran away");
            ControlFlow::Continue(())
        })
        .unwrap();
    drop(g);
    rcu.quiescent_state(0).unwrap();
    assert_ne!(end, WalkEnd::Stopped);
    (visited, end)
}

/// Whether entry `i` occurs at most `max[i]` times in `visited`.
fn at_most(visited: &[usize], max: &[usize]) -> bool {
    max.iter()
        .enumerate()
        .all(|(i, &m)| visited.iter().filter(|&&v| v == i).count() <= m)
}

#[test]
fn reader_vs_rotate_to_tail_same_bin() {
    model(3, || {
        let (fifo, e) = setup(3);
        let (f2, e2) = (fifo, e.clone());
        let w = loom::thread::spawn(move || {
            f2.rotate_to_bin(e2[0], MemcgLruOp::Tail, 0).unwrap();
            f2.rotate_to_bin(e2[1], MemcgLruOp::Head, 0).unwrap();
        });
        let (visited, end) = reader(fifo, &e);
        assert_eq!(
            end,
            WalkEnd::Completed,
            "same-bin moves never leave the bin"
        );
        // A node moved within the bin can be passed twice (once before, once after its move)
        // or make the walk end early (moved to the tail while the reader stood on it); a
        // node that never moves is seen at most once.
        assert!(at_most(&visited, &[2, 2, 1]), "{visited:?}");
        w.join().unwrap();
        assert_eq!(fifo.check(), Ok(3));
    });
}

#[test]
fn reader_vs_rotate_to_other_generation() {
    model(3, || {
        let (fifo, e) = setup(2);
        let (f2, e2) = (fifo, e.clone());
        let w = loom::thread::spawn(move || {
            f2.rotate_to_bin(e2[0], MemcgLruOp::Young, 0).unwrap();
        });
        let (visited, end) = reader(fifo, &e);
        match end {
            // A consistent walk of the bin: e[1] (which never moves) is seen, last, and e[0]
            // at most once before it.
            WalkEnd::Completed => {
                assert!(visited == [0, 1] || visited == [1], "{visited:?}");
            }
            // The reader stood on e[0] when it moved to generation 1, followed it there and
            // ended on generation 1's nulls: it saw e[0] only.
            WalkEnd::Raced => assert_eq!(visited, [0]),
            WalkEnd::Stopped => unreachable!(),
        }
        w.join().unwrap();
        assert_eq!(fifo.check(), Ok(2));
        assert_eq!(fifo.nr_memcgs(1), 1);
    });
}

#[test]
fn two_rotators_keep_the_cached_tail_exact() {
    model(2, || {
        let (fifo, e) = setup(3);
        let ws: Vec<_> = (0..2)
            .map(|t| {
                let (f, x) = (fifo, e[t]);
                loom::thread::spawn(move || {
                    f.rotate_to_bin(x, MemcgLruOp::Tail, 0).unwrap();
                })
            })
            .collect();
        let (visited, end) = reader(fifo, &e);
        assert_eq!(end, WalkEnd::Completed);
        assert!(at_most(&visited, &[2, 2, 1]), "{visited:?}");
        for w in ws {
            w.join().unwrap();
        }
        assert_eq!(fifo.check(), Ok(3));
        let rcu = fifo.rcu();
        let g = rcu.read_lock(0).unwrap();
        let tail = fifo
            .cached_tail(&g, 0, 0)
            .unwrap()
            .map(|x| x as *const Entry);
        assert!(tail == Some(e[0] as *const _) || tail == Some(e[1] as *const _));
    });
}

#[test]
fn an_entry_freed_after_a_grace_period_is_never_seen_freed() {
    model(3, || {
        let (fifo, e) = setup(2);
        let (f2, e2) = (fifo, e.clone());
        // The writer: release e[0], wait for a grace period, free (poison) it.
        let w = loom::thread::spawn(move || {
            f2.release(e2[0]);
            f2.rcu().synchronize(None).unwrap();
            e2[0].alive.store(false, Ordering::Release);
        });
        let (visited, end) = reader(fifo, &e);
        assert_eq!(end, WalkEnd::Completed);
        assert!(visited == [0, 1] || visited == [1], "{visited:?}");
        fifo.rcu().offline(0).unwrap();
        w.join().unwrap();
        assert_eq!(fifo.check(), Ok(1));
    });
}
