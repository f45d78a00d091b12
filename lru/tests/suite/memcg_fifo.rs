//! The memcg FIFO: online/offline/release, the rotation ops, the cached tail against the
//! real tail, both tail-insertion variants side by side, the `shrink_many` reader, lockless
//! readers against concurrent rotation, and readers against entries being freed.

use ksync::Ticket;
use ksync::rcu::RcuReadGuard;
use lru::lru_gen::LruGenMemcgNode;
use lru::memcg_lru::{MEMCG_NR_BINS, MEMCG_NR_GENS, ShrinkStep, WalkEnd, get_memcg_gen, seg};
use lru::{
    LruError, LruGenFolio, LruGenFolioGrouped, LruGenMemcg, MemcgFifoEntry, MemcgLruOp, Rcu,
    TailMode,
};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

type Fifo = LruGenMemcg<Ticket, LruGenFolioGrouped>;

/// The CPU the test's main thread reads as.
const MAIN_CPU: usize = 7;

/// A FIFO with an RCU domain of its own (8 CPUs).
fn fifo(mode: TailMode, seed: u32) -> Fifo {
    let rcu: &'static Rcu<Ticket> = Box::leak(Box::new(Rcu::new(8)));
    Fifo::new(mode, seed, rcu)
}

/// A read-side section of `fifo`'s domain on the main thread's CPU.
fn reader<E: MemcgFifoEntry>(fifo: &LruGenMemcg<Ticket, E>) -> RcuReadGuard<'static> {
    fifo.rcu().online(MAIN_CPU).unwrap();
    fifo.rcu().read_lock(MAIN_CPU).unwrap()
}

fn entries(n: usize) -> Vec<&'static LruGenFolioGrouped> {
    (0..n)
        .map(|_| &*Box::leak(Box::new(LruGenFolioGrouped::new(true, 0))))
        .collect()
}

fn online<E: MemcgFifoEntry>(fifo: &LruGenMemcg<Ticket, E>, e: &'static E) -> Result<(), LruError> {
    // SAFETY: the test's entries are leaked: valid forever.
    unsafe { fifo.online(e) }
}

/// The FIFO node of an entry.
trait Node {
    fn node(&self) -> &LruGenMemcgNode;
}

impl Node for LruGenFolioGrouped {
    fn node(&self) -> &LruGenMemcgNode {
        LruGenFolio::memcg_node(self)
    }
}

fn addr<T>(e: &T) -> usize {
    std::ptr::from_ref(e) as usize
}

fn bin_order(fifo: &Fifo, r#gen: usize, bin: usize) -> Vec<usize> {
    let g = reader(fifo);
    let mut v = Vec::new();
    let end = fifo
        .walk_bin(&g, r#gen, bin, |e| {
            v.push(addr(e));
            assert!(v.len() <= 10_000, "the walk loops");
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(end, WalkEnd::Completed);
    v
}

#[test]
fn online_rotate_release_and_errors() {
    for mode in [TailMode::Walk, TailMode::Cached] {
        let fifo = fifo(mode, 7);
        let e = entries(3);
        for &x in &e {
            online(&fifo, x).unwrap();
        }
        assert_eq!(online(&fifo, e[0]), Err(LruError::AlreadyOnFifo));
        assert_eq!(fifo.nr_memcgs(0), 3);
        assert_eq!(fifo.check(), Ok(3));
        fifo.rotate(e[0], MemcgLruOp::Young).unwrap();
        assert_eq!(e[0].node().r#gen.load(Ordering::Relaxed), 1);
        assert_eq!((fifo.nr_memcgs(0), fifo.nr_memcgs(1)), (2, 1));
        fifo.rotate(e[1], MemcgLruOp::Head).unwrap();
        assert_eq!(e[1].node().seg.load(Ordering::Relaxed), seg::HEAD);
        fifo.rotate(e[1], MemcgLruOp::Tail).unwrap();
        assert_eq!(e[1].node().seg.load(Ordering::Relaxed), seg::TAIL);
        fifo.rotate(e[1], MemcgLruOp::Nop).unwrap();
        assert_eq!(fifo.check(), Ok(3));
        fifo.release(e[2]);
        fifo.release(e[2]);
        assert_eq!(
            fifo.rotate(e[2], MemcgLruOp::Head),
            Err(LruError::NotOnFifo)
        );
        assert_eq!(fifo.check(), Ok(2));
    }
}

#[test]
fn seq_advances_when_the_old_generation_drains() {
    let fifo = fifo(TailMode::Cached, 1);
    let e = entries(2);
    for &x in &e {
        online(&fifo, x).unwrap();
    }
    assert_eq!(fifo.seq(), 0);
    fifo.rotate(e[0], MemcgLruOp::Young).unwrap();
    assert_eq!(fifo.seq(), 0);
    fifo.rotate(e[1], MemcgLruOp::Young).unwrap();
    assert_eq!(fifo.seq(), 1, "old generation empty: seq moves on");
    assert_eq!(get_memcg_gen(fifo.seq()), 1);
    fifo.offline(e[0]).unwrap();
    assert_eq!(e[0].node().r#gen.load(Ordering::Relaxed), 1);
    assert_eq!(fifo.check(), Ok(2));
}

#[test]
fn walk_and_cached_give_the_same_order() {
    let walk = fifo(TailMode::Walk, 3);
    let cached = fifo(TailMode::Cached, 3);
    let ew = entries(40);
    let ec = entries(40);
    for i in 0..40 {
        online(&walk, ew[i]).unwrap();
        online(&cached, ec[i]).unwrap();
    }
    let ops = [
        MemcgLruOp::Tail,
        MemcgLruOp::Head,
        MemcgLruOp::Old,
        MemcgLruOp::Young,
    ];
    let mut x: u64 = 12345;
    for step in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let i = (x >> 33) as usize % 40;
        let op = ops[(x >> 20) as usize % 4];
        let bin = (x >> 8) as usize % MEMCG_NR_BINS;
        walk.rotate_to_bin(ew[i], op, bin).unwrap();
        cached.rotate_to_bin(ec[i], op, bin).unwrap();
        if step % 97 == 0 {
            cached.check().unwrap();
        }
    }
    assert_eq!(walk.check(), Ok(40));
    assert_eq!(cached.check(), Ok(40));
    assert_eq!(walk.seq(), cached.seq());
    let index = |v: Vec<usize>, es: &[&'static LruGenFolioGrouped]| -> Vec<usize> {
        v.iter()
            .map(|a| es.iter().position(|e| addr(*e) == *a).unwrap())
            .collect()
    };
    let g = reader(&cached);
    for r#gen in 0..MEMCG_NR_GENS {
        for b in 0..MEMCG_NR_BINS {
            assert_eq!(
                index(bin_order(&walk, r#gen, b), &ew),
                index(bin_order(&cached, r#gen, b), &ec)
            );
            let real_tail = bin_order(&cached, r#gen, b).last().copied();
            let ct = cached.cached_tail(&g, r#gen, b).unwrap().map(addr);
            assert_eq!(ct, real_tail);
        }
    }
}

#[test]
fn a_guard_of_another_domain_is_refused() {
    let a = fifo(TailMode::Cached, 1);
    let b = fifo(TailMode::Cached, 2);
    let g = reader(&b);
    let mut visited = 0;
    assert_eq!(
        a.walk_bin(&g, 0, 0, |_| {
            visited += 1;
            ControlFlow::Continue(())
        }),
        Err(LruError::RcuWrongDomain)
    );
    assert_eq!(
        a.shrink_many(&g, 0, |_| None).unwrap_err(),
        LruError::RcuWrongDomain
    );
    assert!(matches!(
        a.cached_tail(&g, 0, 0),
        Err(LruError::RcuWrongDomain)
    ));
    assert_eq!(visited, 0);
}

#[test]
fn shrink_many_visits_the_old_generation_and_applies_each_op() {
    let fifo = fifo(TailMode::Cached, 9);
    let e = entries(20);
    for &x in &e {
        online(&fifo, x).unwrap();
    }
    let g = reader(&fifo);
    // Every memcg shrinks successfully: rotate it young, as shrink_one() does.
    let mut seen = Vec::new();
    let stats = fifo
        .shrink_many(&g, 3, |x| {
            seen.push(addr(x));
            assert!(seen.len() <= 100, "the walk loops");
            Some(ShrinkStep {
                op: MemcgLruOp::Young,
                abort: false,
            })
        })
        .unwrap();
    assert_eq!(stats.visited, 20);
    assert_eq!(stats.rotated, 20);
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 20, "each memcg of the old generation once");
    // All rotated young: the old generation drained, seq moved on.
    assert_eq!(fifo.seq(), 1);
    assert_eq!(fifo.nr_memcgs(1), 20);
    assert_eq!(fifo.check(), Ok(20));
    assert!(
        e.iter()
            .all(|x| x.node().r#gen.load(Ordering::Relaxed) == 1)
    );
}

#[test]
fn shrink_many_skips_rotated_entries_counts_failed_trygets_and_aborts() {
    let fifo = fifo(TailMode::Cached, 11);
    let e = entries(12);
    for &x in &e {
        online(&fifo, x).unwrap();
        fifo.rotate_to_bin(x, MemcgLruOp::Tail, 0).unwrap();
    }
    let g = reader(&fifo);
    // The visitor of e[0] rotates e[1] young behind the walk's back (once): the walk, which
    // read the generation once, skips e[1] (its gen differs) instead of visiting it.
    let mut moved = false;
    let mut visited = Vec::new();
    let stats = fifo
        .shrink_many(&g, 0, |x| {
            visited.push(addr(x));
            assert!(visited.len() <= 100, "the walk loops");
            if addr(x) == addr(e[0]) && !moved {
                moved = true;
                fifo.rotate_to_bin(e[1], MemcgLruOp::Young, 5).unwrap();
            }
            // e[2] cannot be pinned (tryget fails).
            (addr(x) != addr(e[2])).then_some(ShrinkStep {
                op: MemcgLruOp::Nop,
                abort: false,
            })
        })
        .unwrap();
    assert!(!visited.contains(&addr(e[1])), "rotated entry visited");
    // The walk stood on e[1] when it moved: it ended on generation 1's nulls, so the bin
    // was restarted (e[0] visited again), and e[1] was skipped for its generation.
    assert_eq!(stats.restarts, 1);
    assert_eq!(stats.skipped, 1);
    assert_eq!(stats.visited, 12);
    assert_eq!(visited.iter().filter(|&&a| a == addr(e[0])).count(), 2);
    assert_eq!(stats.unpinned, 1);
    assert_eq!(stats.rotated, 0, "Nop rotates nothing");
    // An abort stops the walk at once, after applying the visited memcg's op.
    let mut n = 0;
    let stats = fifo
        .shrink_many(&g, 0, |_| {
            n += 1;
            assert!(n <= 100, "the walk loops");
            Some(ShrinkStep {
                op: MemcgLruOp::Tail,
                abort: n == 3,
            })
        })
        .unwrap();
    assert!(stats.aborted);
    assert_eq!((n, stats.rotated), (3, 3));
    assert_eq!(fifo.check(), Ok(12));
}

#[test]
fn readers_survive_concurrent_rotation() {
    const STABLE_BIN: usize = MEMCG_NR_BINS - 1;
    let fifo = fifo(TailMode::Cached, 5);
    let e = entries(64);
    // 8 entries parked in the last bin of generation 0, which no rotation below touches
    // (rotations pick bins 0..STABLE_BIN): generation 0 never drains, so seq stays 0 and
    // moving entries go between generations 0 and 1 only.
    let stable = &e[..8];
    let moving = &e[8..];
    for &x in &e {
        online(&fifo, x).unwrap();
    }
    for &x in stable {
        fifo.rotate_to_bin(x, MemcgLruOp::Tail, STABLE_BIN).unwrap();
    }
    for &x in moving {
        fifo.rotate_to_bin(x, MemcgLruOp::Tail, 0).unwrap();
    }
    let stable_order: Vec<usize> = stable.iter().map(|x| addr(*x)).collect();
    let ops = [
        MemcgLruOp::Tail,
        MemcgLruOp::Head,
        MemcgLruOp::Old,
        MemcgLruOp::Young,
    ];
    let done = AtomicBool::new(false);
    let rcu = fifo.rcu();
    std::thread::scope(|s| {
        for t in 0..2 {
            let (fifo, moving, done) = (&fifo, moving, &done);
            s.spawn(move || {
                // Also when a rotation fails: the reader stops instead of waiting forever.
                let _done = SetOnDrop(done);
                for i in 0..20_000usize {
                    let x = moving[(i * 7 + t) % moving.len()];
                    let bin = (i * 13 + t) % STABLE_BIN;
                    fifo.rotate_to_bin(x, ops[(i + t) % 4], bin).unwrap();
                }
            });
        }
        s.spawn(|| {
            rcu.online(1).unwrap();
            let known = |a: usize| e.iter().any(|x| addr(*x) == a);
            let (mut completed, mut raced) = (0, 0);
            for i in 0.. {
                if i >= 2000 && done.load(Ordering::Acquire) {
                    break;
                }
                let g = rcu.read_lock(1).unwrap();
                // The stable bin: always exactly the stable entries, in order, completed.
                let mut seen = Vec::new();
                let end = fifo
                    .walk_bin(&g, 0, STABLE_BIN, |x| {
                        seen.push(addr(x));
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                assert_eq!(end, WalkEnd::Completed);
                assert_eq!(seen, stable_order, "stable bin changed under a reader");
                // A moving bin: only known entries, and the walk ends either on its own
                // nulls or on another generation's (a detected race), never stopped.
                let mut n = 0;
                let end = fifo
                    .walk_bin(&g, i % 2, i % STABLE_BIN, |x| {
                        assert!(known(addr(x)), "visited a foreign address");
                        n += 1;
                        assert!(n < 10_000, "walk does not loop forever");
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                match end {
                    WalkEnd::Completed => completed += 1,
                    WalkEnd::Raced => raced += 1,
                    WalkEnd::Stopped => panic!("the visitor never stops the walk"),
                }
                drop(g);
                rcu.quiescent_state(1).unwrap();
            }
            assert!(completed > 0, "no walk completed ({raced} raced)");
            rcu.offline(1).unwrap();
        });
    });
    assert_eq!(fifo.check(), Ok(64));
}

/// A FIFO entry that knows whether it was freed (poisoned after its grace period).
#[repr(C)]
struct Poisonable {
    lrugen: LruGenFolioGrouped,
    alive: AtomicBool,
}

// SAFETY: `memcg_node` returns the `lrugen` field's node: `lrugen` is at offset 0 of this
// `repr(C)` struct, so the node is at the grouped layout's own offset.
unsafe impl MemcgFifoEntry for Poisonable {
    const MEMCG_NODE_OFFSET: usize = core::mem::offset_of!(Poisonable, lrugen)
        + <LruGenFolioGrouped as LruGenFolio>::MEMCG_NODE_OFFSET;
    fn memcg_node(&self) -> &LruGenMemcgNode {
        LruGenFolio::memcg_node(&self.lrugen)
    }
}

/// Sets a flag when dropped, also while its thread unwinds from a failed check.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Takes a CPU offline when dropped, also while its thread unwinds from a failed check.
struct OfflineOnDrop(&'static Rcu<Ticket>, usize);

impl Drop for OfflineOnDrop {
    fn drop(&mut self) {
        let _ = self.0.offline(self.1);
    }
}

#[test]
fn a_reader_never_touches_an_entry_freed_after_a_grace_period() {
    let rcu: &'static Rcu<Ticket> = Box::leak(Box::new(Rcu::new(2)));
    let fifo: LruGenMemcg<Ticket, Poisonable> = LruGenMemcg::new(TailMode::Cached, 3, rcu);
    let e: Vec<&'static Poisonable> = (0..16)
        .map(|_| {
            &*Box::leak(Box::new(Poisonable {
                lrugen: LruGenFolioGrouped::new(true, 0),
                alive: AtomicBool::new(true),
            }))
        })
        .collect();
    for &x in &e {
        online(&fifo, x).unwrap();
        fifo.rotate_to_bin(x, MemcgLruOp::Tail, 0).unwrap();
    }
    let (started, done) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|s| {
        // The reader (CPU 0) walks bin 0 slowly and checks every entry it is handed is
        // alive, before and after dwelling on it; it reports a quiescent state between
        // walks, never inside one.
        s.spawn(|| {
            rcu.online(0).unwrap();
            // A reader that fails goes offline while unwinding, so the writer's grace
            // periods end and the test fails instead of hanging.
            let _offline = OfflineOnDrop(rcu, 0);
            started.store(true, Ordering::Release);
            while !done.load(Ordering::Acquire) {
                let g = rcu.read_lock(0).unwrap();
                let mut n = 0;
                fifo.walk_bin(&g, 0, 0, |x| {
                    n += 1;
                    assert!(n <= e.len(), "the walk loops");
                    assert!(x.alive.load(Ordering::Acquire), "reader saw a freed entry");
                    for _ in 0..2_000 {
                        std::hint::spin_loop();
                    }
                    assert!(
                        x.alive.load(Ordering::Acquire),
                        "entry freed under a reader"
                    );
                    ControlFlow::Continue(())
                })
                .unwrap();
                drop(g);
                rcu.quiescent_state(0).unwrap();
            }
        });
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        // The writer (not a reader) releases entries one by one while the reader walks,
        // waits for a grace period and only then frees (poisons) each.
        let _done = SetOnDrop(&done);
        for &x in &e {
            std::thread::sleep(std::time::Duration::from_micros(200));
            fifo.release(x);
            rcu.synchronize(None).unwrap();
            x.alive.store(false, Ordering::Release);
        }
    });
    assert_eq!(fifo.check(), Ok(0));
}

#[test]
fn a_fifo_refuses_another_fifos_node() {
    let a = fifo(TailMode::Cached, 1);
    let b = fifo(TailMode::Walk, 2);
    let e = entries(2);
    online(&a, e[0]).unwrap();
    online(&a, e[1]).unwrap();
    assert_eq!(online(&b, e[0]), Err(LruError::AlreadyOnFifo));
    assert_eq!(b.rotate(e[0], MemcgLruOp::Tail), Err(LruError::NotOnFifo));
    b.release(e[0]);
    assert_eq!(a.check(), Ok(2));
    assert_eq!(b.check(), Ok(0));
    a.release(e[0]);
    online(&b, e[0]).unwrap();
    assert_eq!((a.check(), b.check()), (Ok(1), Ok(1)));
}

/// The entries of `fifo[gen][bin]` as indexes into `es`, in walk order.
fn order_of(
    fifo: &Fifo,
    r#gen: usize,
    bin: usize,
    es: &[&'static LruGenFolioGrouped],
) -> Vec<usize> {
    bin_order(fifo, r#gen, bin)
        .iter()
        .map(|a| es.iter().position(|e| addr(*e) == *a).unwrap())
        .collect()
}

#[test]
fn rotations_place_entries_where_the_walk_finds_them() {
    for mode in [TailMode::Walk, TailMode::Cached] {
        let fifo = fifo(mode, 21);
        let e = entries(4);
        for &x in &e {
            online(&fifo, x).unwrap();
            fifo.rotate_to_bin(x, MemcgLruOp::Tail, 2).unwrap();
        }
        assert_eq!(
            order_of(&fifo, 0, 2, &e),
            [0, 1, 2, 3],
            "{mode:?}: tail appends"
        );
        for b in (0..MEMCG_NR_BINS).filter(|&b| b != 2) {
            assert!(order_of(&fifo, 0, b, &e).is_empty(), "{mode:?}: bin {b}");
        }
        fifo.rotate_to_bin(e[2], MemcgLruOp::Head, 2).unwrap();
        assert_eq!(order_of(&fifo, 0, 2, &e), [2, 0, 1, 3], "{mode:?}: head");
        fifo.rotate_to_bin(e[0], MemcgLruOp::Tail, 2).unwrap();
        assert_eq!(order_of(&fifo, 0, 2, &e), [2, 1, 3, 0], "{mode:?}: tail");
        // A bin index wraps; the entry moves to that bin of the same generation.
        fifo.rotate_to_bin(e[1], MemcgLruOp::Tail, 5 + MEMCG_NR_BINS)
            .unwrap();
        assert_eq!(order_of(&fifo, 0, 2, &e), [2, 3, 0]);
        assert_eq!(order_of(&fifo, 0, 5, &e), [1]);
        assert_eq!(e[1].node().bin.load(Ordering::Relaxed), 5);
        // Young: the next generation; Old: the head of the current one.
        fifo.rotate_to_bin(e[3], MemcgLruOp::Young, 5).unwrap();
        assert_eq!(order_of(&fifo, 1, 5, &e), [3]);
        assert_eq!((fifo.nr_memcgs(0), fifo.nr_memcgs(1)), (3, 1));
        fifo.rotate_to_bin(e[3], MemcgLruOp::Old, 5).unwrap();
        assert_eq!(
            order_of(&fifo, 0, 5, &e),
            [3, 1],
            "{mode:?}: old goes first"
        );
        assert!(order_of(&fifo, 1, 5, &e).is_empty());
        assert_eq!((fifo.nr_memcgs(0), fifo.nr_memcgs(1)), (4, 0));
        assert_eq!(fifo.seq(), 0, "generation 0 never drained");
        assert_eq!(fifo.check(), Ok(4));
    }
}

#[test]
fn offline_moves_a_young_entry_to_the_head_of_the_old_generation() {
    let fifo = fifo(TailMode::Cached, 4);
    let e = entries(3);
    for &x in &e {
        online(&fifo, x).unwrap();
        fifo.rotate_to_bin(x, MemcgLruOp::Tail, 0).unwrap();
    }
    // e[2] was reclaimed successfully: young, skipped by this round's walk.
    fifo.rotate_to_bin(e[2], MemcgLruOp::Young, 0).unwrap();
    assert_eq!(e[2].node().r#gen.load(Ordering::Relaxed), 1);
    let g = reader(&fifo);
    let visit = |fifo: &Fifo| {
        let mut v = Vec::new();
        fifo.shrink_many(&g, 0, |x| {
            v.push(e.iter().position(|y| addr(*y) == addr(x)).unwrap());
            assert!(v.len() <= 100, "the walk loops");
            Some(ShrinkStep {
                op: MemcgLruOp::Nop,
                abort: false,
            })
        })
        .unwrap();
        v
    };
    assert_eq!(visit(&fifo), [0, 1]);
    // Offlined, it is reclaimed in this very round, first in its (random) bin.
    fifo.offline(e[2]).unwrap();
    assert_eq!(e[2].node().r#gen.load(Ordering::Relaxed), 0);
    let bin = usize::from(e[2].node().bin.load(Ordering::Relaxed));
    assert_eq!(order_of(&fifo, 0, bin, &e)[0], 2);
    let mut v = visit(&fifo);
    v.sort_unstable();
    assert_eq!(v, [0, 1, 2]);
    assert_eq!((fifo.nr_memcgs(0), fifo.nr_memcgs(1)), (3, 0));
    assert_eq!(fifo.check(), Ok(3));
    // Offlining an entry of no FIFO is an error.
    fifo.release(e[0]);
    assert_eq!(fifo.offline(e[0]), Err(LruError::NotOnFifo));
}

#[test]
fn random_bins_spread_the_memcgs() {
    // Seed 002: memcgs come online (and rotate) into random bins so that reclaimers
    // starting at random bins do not all walk the same list. Whatever the seed, 64
    // memcgs use most bins and no bin holds most of them.
    for seed in [0, 1, 2, 7, 0x8000_0000, u32::MAX] {
        for mode in [TailMode::Walk, TailMode::Cached] {
            let fifo = fifo(mode, seed);
            let e = entries(64);
            let mut per_bin = [0usize; MEMCG_NR_BINS];
            for &x in &e {
                online(&fifo, x).unwrap();
                per_bin[usize::from(x.node().bin.load(Ordering::Relaxed))] += 1;
            }
            let used = per_bin.iter().filter(|&&n| n > 0).count();
            assert!(used >= MEMCG_NR_BINS - 2, "seed {seed}: {per_bin:?}");
            assert!(per_bin.iter().all(|&n| n <= 24), "seed {seed}: {per_bin:?}");
            for (bin, &n) in per_bin.iter().enumerate() {
                assert_eq!(bin_order(&fifo, 0, bin).len(), n);
            }
            // Random rotations keep spreading them.
            let mut per_bin = [0usize; MEMCG_NR_BINS];
            for &x in &e {
                fifo.rotate(x, MemcgLruOp::Young).unwrap();
                per_bin[usize::from(x.node().bin.load(Ordering::Relaxed))] += 1;
            }
            let used = per_bin.iter().filter(|&&n| n > 0).count();
            assert!(used >= MEMCG_NR_BINS - 2, "seed {seed}: {per_bin:?}");
            assert_eq!(fifo.check(), Ok(64));
            // And so does the reclaimers' first bin.
            let mut first = [0usize; MEMCG_NR_BINS];
            for _ in 0..64 {
                first[fifo.next_random_bin()] += 1;
            }
            let used = first.iter().filter(|&&n| n > 0).count();
            assert!(used >= MEMCG_NR_BINS - 2, "seed {seed}: {first:?}");
            assert!(first.iter().all(|&n| n <= 24), "seed {seed}: {first:?}");
        }
    }
}
