//! Per-CPU list refills, spills and frees on worker threads while another thread drains
//! every CPU's lists remotely (`drain_all_pages()` under each `pcp->lock`).
//!
//! Each worker stands for one CPU and allocates bursts of frames (mostly order 0 through
//! its lists, some larger blocks), marks each frame in a shared ownership map — a frame
//! marked twice was handed out twice — and frees them again. A drainer thread empties
//! every list meanwhile. Nothing here is lock-free (the lists are behind their locks), so
//! there is no loom model; the test is the ownership map, the invariant checker and the
//! free lists merging back exactly.

use crate::common;

use common::{single, snapshot};
use page::Folio;
use page_alloc::{PageAlloc, PcpConfig};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

const WORKERS: usize = 3;
const ROUNDS: usize = 1000;
const PAGES: u64 = 8192;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn claim(owned: &[AtomicBool], f: &Folio, order: u32) {
    for p in f.pfn()..f.pfn() + (1 << order) {
        assert!(
            !owned[p as usize].swap(true, Ordering::AcqRel),
            "pfn {p:#x} handed out twice"
        );
    }
}

fn release(owned: &[AtomicBool], f: &Folio, order: u32) {
    for p in f.pfn()..f.pfn() + (1 << order) {
        assert!(
            owned[p as usize].swap(false, Ordering::AcqRel),
            "pfn {p:#x} was not ours"
        );
    }
}

fn hammer(pa: &PageAlloc) {
    let initial = snapshot(pa);
    let owned: Vec<AtomicBool> = (0..PAGES).map(|_| AtomicBool::new(false)).collect();
    let running = AtomicUsize::new(WORKERS);
    let drained = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for cpu in 0..WORKERS {
            let (owned, running) = (&owned, &running);
            s.spawn(move || {
                ksync::cpu::set_this_thread_cpu(cpu);
                let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(cpu as u64 + 1);
                let mut held: Vec<(&'static Folio, u32)> = Vec::new();
                for _ in 0..ROUNDS {
                    let burst = 1 + xorshift(&mut x) % 96;
                    for _ in 0..burst {
                        let order = if xorshift(&mut x).is_multiple_of(16) {
                            (xorshift(&mut x) % 4) as u32
                        } else {
                            0
                        };
                        if let Some(f) = pa.alloc_pages(cpu, 0, order) {
                            claim(owned, f, order);
                            held.push((f, order));
                        }
                    }
                    for (f, order) in held.drain(..) {
                        release(owned, f, order);
                        assert_eq!(pa.free_pages(cpu, f, order), Ok(true));
                    }
                }
                running.fetch_sub(1, Ordering::AcqRel);
            });
        }
        let (running, drained) = (&running, &drained);
        s.spawn(move || {
            ksync::cpu::set_this_thread_cpu(WORKERS);
            while running.load(Ordering::Acquire) != 0 {
                drained.fetch_add(pa.drain_all() as usize, Ordering::Relaxed);
                std::thread::yield_now();
            }
        });
    });
    pa.drain_all();
    assert_eq!(snapshot(pa), initial, "free lists did not merge back");
    let census = pa.check().unwrap();
    assert_eq!((census.free_pages, census.pcp_pages), (PAGES, 0));
    let t = pa.total_stats();
    assert_eq!(t.alloc + t.buddy_alloc, t.free + t.buddy_free);
    assert_eq!(t.pcp_pages(), 0);
    assert!(t.refill > 0 && t.drain_pages > 0, "{t}");
    assert!(owned.iter().all(|o| !o.load(Ordering::Relaxed)));
}

#[test]
fn refill_and_drain_against_drain_all_small_lists() {
    hammer(&single(
        WORKERS + 1,
        0,
        PAGES,
        PcpConfig {
            batch: Some(7),
            high: Some(31),
        },
    ));
}

#[test]
fn refill_and_drain_against_drain_all_default_lists() {
    hammer(&single(WORKERS + 1, 0, PAGES, PcpConfig::default()));
}
