//! The memcg FIFO: online/offline/release, the rotation ops, the cached tail against the
//! real tail, both tail-insertion variants side by side, and lockless readers.

use ksync::Ticket;
use lru::memcg_lru::{MEMCG_NR_BINS, MEMCG_NR_GENS, WalkEnd, get_memcg_gen, seg};
use lru::{LruError, LruGenFolio, LruGenFolioGrouped, LruGenMemcg, MemcgLruOp, TailMode};
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

type Fifo = LruGenMemcg<Ticket, LruGenFolioGrouped>;

fn entries(n: usize) -> Vec<&'static LruGenFolioGrouped> {
    (0..n)
        .map(|_| &*Box::leak(Box::new(LruGenFolioGrouped::new(true, 0))))
        .collect()
}

fn bin_order(fifo: &Fifo, r#gen: usize, bin: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let end = fifo.walk_bin(r#gen, bin, |e| {
        v.push(std::ptr::from_ref(e) as usize);
        ControlFlow::Continue(())
    });
    assert_eq!(end, WalkEnd::Completed);
    v
}

#[test]
fn online_rotate_release_and_errors() {
    for mode in [TailMode::Walk, TailMode::Cached] {
        let fifo = Fifo::new(mode, 7);
        let e = entries(3);
        for &x in &e {
            fifo.online(x).unwrap();
        }
        assert_eq!(fifo.online(e[0]), Err(LruError::AlreadyOnFifo));
        assert_eq!(fifo.nr_memcgs(0), 3);
        assert_eq!(fifo.check(), Ok(3));
        fifo.rotate(e[0], MemcgLruOp::Young).unwrap();
        assert_eq!(e[0].memcg_node().r#gen.load(Ordering::Relaxed), 1);
        assert_eq!((fifo.nr_memcgs(0), fifo.nr_memcgs(1)), (2, 1));
        fifo.rotate(e[1], MemcgLruOp::Head).unwrap();
        assert_eq!(e[1].memcg_node().seg.load(Ordering::Relaxed), seg::HEAD);
        fifo.rotate(e[1], MemcgLruOp::Tail).unwrap();
        assert_eq!(e[1].memcg_node().seg.load(Ordering::Relaxed), seg::TAIL);
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
    let fifo = Fifo::new(TailMode::Cached, 1);
    let e = entries(2);
    for &x in &e {
        fifo.online(x).unwrap();
    }
    assert_eq!(fifo.seq(), 0);
    fifo.rotate(e[0], MemcgLruOp::Young).unwrap();
    assert_eq!(fifo.seq(), 0);
    fifo.rotate(e[1], MemcgLruOp::Young).unwrap();
    assert_eq!(fifo.seq(), 1, "old generation empty: seq moves on");
    assert_eq!(get_memcg_gen(fifo.seq()), 1);
    fifo.offline(e[0]).unwrap();
    assert_eq!(e[0].memcg_node().r#gen.load(Ordering::Relaxed), 1);
    assert_eq!(fifo.check(), Ok(2));
}

#[test]
fn walk_and_cached_give_the_same_order() {
    let walk = Fifo::new(TailMode::Walk, 3);
    let cached = Fifo::new(TailMode::Cached, 3);
    let ew = entries(40);
    let ec = entries(40);
    for i in 0..40 {
        walk.online(ew[i]).unwrap();
        cached.online(ec[i]).unwrap();
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
            .map(|a| {
                es.iter()
                    .position(|e| std::ptr::from_ref(*e) as usize == *a)
                    .unwrap()
            })
            .collect()
    };
    for g in 0..MEMCG_NR_GENS {
        for b in 0..MEMCG_NR_BINS {
            assert_eq!(
                index(bin_order(&walk, g, b), &ew),
                index(bin_order(&cached, g, b), &ec)
            );
            let real_tail = bin_order(&cached, g, b).last().copied();
            let ct = cached
                .cached_tail(g, b)
                .map(|e| std::ptr::from_ref(e) as usize);
            assert_eq!(ct, real_tail);
        }
    }
}

#[test]
fn for_each_memcg_visits_the_old_generation_and_can_stop() {
    let fifo = Fifo::new(TailMode::Cached, 9);
    let e = entries(20);
    for &x in &e {
        fifo.online(x).unwrap();
    }
    let mut seen = 0;
    let restarts = fifo.for_each_memcg(0, 4, |_| {
        seen += 1;
        ControlFlow::Continue(())
    });
    assert_eq!((seen, restarts), (20, 0));
    let mut seen = 0;
    fifo.for_each_memcg(3, 4, |_| {
        seen += 1;
        if seen == 5 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!(seen, 5);
}

#[test]
fn readers_survive_concurrent_rotation() {
    let fifo = Fifo::new(TailMode::Cached, 5);
    let e = entries(64);
    for &x in &e {
        fifo.online(x).unwrap();
    }
    let ops = [
        MemcgLruOp::Tail,
        MemcgLruOp::Head,
        MemcgLruOp::Old,
        MemcgLruOp::Young,
    ];
    std::thread::scope(|s| {
        for t in 0..2 {
            let (fifo, e) = (&fifo, &e);
            s.spawn(move || {
                for i in 0..20_000usize {
                    fifo.rotate(e[(i * 7 + t) % 64], ops[(i + t) % 4]).unwrap();
                }
            });
        }
        s.spawn(|| {
            for i in 0..2000 {
                let mut n = 0;
                fifo.walk_bin(i % MEMCG_NR_GENS, i % MEMCG_NR_BINS, |_| {
                    n += 1;
                    assert!(n < 1_000_000, "walk does not loop forever");
                    ControlFlow::Continue(())
                });
            }
        });
    });
    assert_eq!(fifo.check(), Ok(64));
}

#[test]
fn a_fifo_refuses_another_fifos_node() {
    let a = Fifo::new(TailMode::Cached, 1);
    let b = Fifo::new(TailMode::Walk, 2);
    let e = entries(2);
    a.online(e[0]).unwrap();
    a.online(e[1]).unwrap();
    assert_eq!(b.online(e[0]), Err(LruError::AlreadyOnFifo));
    assert_eq!(b.rotate(e[0], MemcgLruOp::Tail), Err(LruError::NotOnFifo));
    b.release(e[0]);
    assert_eq!(a.check(), Ok(2));
    assert_eq!(b.check(), Ok(0));
    a.release(e[0]);
    b.online(e[0]).unwrap();
    assert_eq!((a.check(), b.check()), (Ok(1), Ok(1)));
}
