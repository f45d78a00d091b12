//! Loom: a lockless hlist_nulls reader against concurrent FIFO rotation with the cached
//! tail. The reader never touches an invalid node and either completes its bin or sees a
//! foreign nulls value and restarts; afterwards the cached tail equals the real tail.
#![cfg(loom)]

mod loom_support;

use loom_support::{Loom, model};
use lru::memcg_lru::WalkEnd;
use lru::{LruGenFolio, LruGenFolioGrouped, LruGenMemcg, MemcgLruOp, TailMode};
use std::ops::ControlFlow;

type Fifo = LruGenMemcg<Loom, LruGenFolioGrouped>;

fn setup(n: usize) -> (&'static Fifo, Vec<&'static LruGenFolioGrouped>) {
    let fifo: &'static Fifo = Box::leak(Box::new(Fifo::new(TailMode::Cached, 1)));
    let e: Vec<&'static LruGenFolioGrouped> = (0..n)
        .map(|_| &*Box::leak(Box::new(LruGenFolioGrouped::new(true, 0))))
        .collect();
    for &x in &e {
        fifo.online(x).unwrap();
        fifo.rotate_to_bin(x, MemcgLruOp::Tail, 0).unwrap();
    }
    (fifo, e)
}

fn reader(fifo: &'static Fifo, e: &[&'static LruGenFolioGrouped]) -> WalkEnd {
    let mut visited = 0;
    let end = fifo.walk_bin(0, 0, |x| {
        assert!(
            e.iter().any(|y| std::ptr::eq(*y, x)),
            "visited a foreign node"
        );
        visited += 1;
        assert!(visited <= 2 * e.len(), "walk ran away");
        ControlFlow::Continue(())
    });
    assert_ne!(end, WalkEnd::Stopped);
    end
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
        let end = reader(fifo, &e);
        assert_eq!(
            end,
            WalkEnd::Completed,
            "same-bin moves never leave the bin"
        );
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
        // Either a consistent walk of bin 0 of generation 0, or a detected race.
        let _ = reader(fifo, &e);
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
        let _ = reader(fifo, &e);
        for w in ws {
            w.join().unwrap();
        }
        assert_eq!(fifo.check(), Ok(3));
        let tail = fifo
            .cached_tail(0, 0)
            .map(|x| std::ptr::from_ref(x) as usize);
        assert!(tail == Some(e[0] as *const _ as usize) || tail == Some(e[1] as *const _ as usize));
    });
}
