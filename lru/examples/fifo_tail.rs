//! Benchmark: memcg FIFO tail insertion, walk (before seed 002) vs cached tail (after).
//!
//! Onlines N memcgs into one `lru_gen_memcg`, then rotates them to the tail of a random
//! bin (`MEMCG_LRU_TAIL`, what a reclaim attempt that cannot meet its target does) as fast
//! as possible from T threads, alternating the two variants A B A B over several rounds
//! and reporting the median.
//!
//! What it times is one rotation (`lru_gen_rotate_memcg()` under `memcg_lru.lock`), not
//! the seed's whole `memory.reclaim` requests: a request also walks the FIFO, tries each
//! memcg and fails with EAGAIN, so the seed's 9.5x request rate is not this table's ratio.
//! The whole-request scenario is the kernel benchmark's. Run in release:
//!
//! `cargo run -p lru --release --example fifo_tail -- [--threads T] [--ops OPS] [--rounds R]`

use ksync::Ticket;
use lru::{LruGenFolio, LruGenFolioGrouped, LruGenMemcg, MemcgLruOp, Rcu, TailMode};
use std::time::Instant;

type Fifo = LruGenMemcg<Ticket, LruGenFolioGrouped>;

/// Parses the options; a bad option or value ends the program with exit status 2.
fn args() -> (usize, usize, usize) {
    let mut it = std::env::args().skip(1);
    let (mut threads, mut ops, mut rounds) = (1, 200_000, 5);
    while let Some(opt) = it.next() {
        let slot = match opt.as_str() {
            "--threads" => &mut threads,
            "--ops" => &mut ops,
            "--rounds" => &mut rounds,
            _ => usage(&format!("unknown option `{opt}`")),
        };
        *slot = match it.next().map(|v| v.parse::<usize>()) {
            Some(Ok(n)) if n > 0 => n,
            _ => usage(&format!("{opt} needs a positive number")),
        };
    }
    (threads, ops, rounds)
}

fn usage(why: &str) -> ! {
    eprintln!("fifo_tail: {why}\nusage: fifo_tail [--threads T] [--ops OPS] [--rounds R]");
    std::process::exit(2)
}

/// Nanoseconds per rotation (not per request) with `threads` threads doing `ops`
/// rotations each.
fn run(mode: TailMode, memcgs: &[&'static LruGenFolioGrouped], threads: usize, ops: usize) -> f64 {
    let rcu: &'static Rcu<Ticket> = Box::leak(Box::new(Rcu::new(threads)));
    let fifo = Fifo::new(mode, 0x9e37_79b9, rcu);
    for &m in memcgs {
        // SAFETY: the entries are leaked: valid for the whole program.
        unsafe { fifo.online(m) }.expect("fresh entry");
    }
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let fifo = &fifo;
            s.spawn(move || {
                let mut x = 0x2545_f491_u64.wrapping_mul(t as u64 + 1);
                for _ in 0..ops {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let m = memcgs[(x % memcgs.len() as u64) as usize];
                    fifo.rotate(m, MemcgLruOp::Tail).expect("online entry");
                }
            });
        }
    });
    let ns = start.elapsed().as_nanos() as f64 / (threads * ops) as f64;
    fifo.check().expect("consistent FIFO");
    for &m in memcgs {
        fifo.release(m);
    }
    ns
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (threads, ops, rounds) = args();
    println!(
        "memcg FIFO tail insertion (seed 002): times one rotation to a bin's tail \
         (lru_gen_rotate_memcg, MEMCG_LRU_TAIL), not whole memory.reclaim requests"
    );
    println!(
        "{threads} thread(s), {ops} rotations/thread, median of {rounds} rounds, A B interleaved"
    );
    println!(
        "{:>8} {:>18} {:>18} {:>12}",
        "memcgs", "walk ns/rotation", "cached ns/rotation", "speedup"
    );
    for &n in &[10usize, 1_500, 10_000] {
        let memcgs: Vec<&'static LruGenFolioGrouped> = (0..n)
            .map(|_| &*Box::leak(Box::new(LruGenFolioGrouped::new(true, 0))))
            .collect();
        let (mut walk, mut cached) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            walk.push(run(TailMode::Walk, &memcgs, threads, ops));
            cached.push(run(TailMode::Cached, &memcgs, threads, ops));
        }
        let (w, c) = (median(walk), median(cached));
        println!("{n:>8} {w:>18.1} {c:>18.1} {:>11.1}x", w / c);
    }
    println!(
        "seed 002 reports 9.5x the rate of whole memory.reclaim requests at 1500 memcgs \
         (8 threads); this table is the rotation alone"
    );
}
