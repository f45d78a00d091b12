//! `run=pagealloc`: the page allocator micro-benchmark on every online CPU.
//!
//! Runs `page_alloc::microbench` (order-0 alloc+free pairs in bursts, through the per-CPU lists
//! and straight through the buddy lists) on all CPUs at once through `on_each_cpu`, for a
//! few rounds alternating the two paths, with lock statistics on, and prints per path:
//! pairs per second per CPU (median round) and `zone->lock` acquisitions per 1,000
//! allocations (all rounds), then what the per-CPU lists save. Under TCG the absolute
//! figures are emulation speed; compare the paths within one boot. Each CPU allocates from
//! its own node; every CPU reports an RCU quiescent state between bursts and is offline to
//! RCU while it waits at the barriers.

use crate::arch::tsc;
use crate::mm::page_alloc;
use crate::percpu::{self, on_each_cpu};
use crate::sync::Barrier;
use crate::{println, rcu};
use ::page_alloc::lock_classes::ZoneLock;
use ::page_alloc::microbench::{CpuRun, Path, PathResult, Platform, run_cpu, saved_per_1000};
use abi::ExitCode;
use alloc::vec::Vec;
use core::num::NonZeroU32;
use ksync::LockClass;

/// Rounds per path (pcp and buddy alternate).
const ROUNDS: usize = 3;
/// Pairs per CPU per round.
const PAIRS: u64 = 200_000;
/// Burst sizes: one the lists can hold (they recycle frames without `zone->lock`), one
/// larger than `high` (they refill and spill in steady state).
const BURSTS: [usize; 2] = [64, 4096];

fn round(pa: &'static ::page_alloc::PageAlloc, path: Path, burst: usize) -> Option<PathResult> {
    let n = percpu::nr_cpu_ids();
    let barrier = Barrier::new(NonZeroU32::new(n as u32).unwrap_or(NonZeroU32::MIN));
    let results: spin::Mutex<Vec<Option<CpuRun>>> = spin::Mutex::new(alloc::vec![None; n]);
    let before = ZoneLock::data().snapshot();
    let done = on_each_cpu(&|cpu| {
        let mut held = Vec::with_capacity(burst);
        let platform = Platform {
            now_ns: &tsc::now_ns,
            between_bursts: &|| {
                rcu::quiescent();
            },
        };
        rcu::extended_qs(|| barrier.wait());
        let r = run_cpu(pa, cpu, path, burst, PAIRS, &mut held, &platform);
        rcu::extended_qs(|| barrier.wait());
        if let Some(slot) = results.lock().get_mut(cpu) {
            *slot = Some(r);
        }
    });
    let zone_lock = ZoneLock::data().snapshot().since(&before);
    if let Err(e) = done {
        println!("pagealloc: on_each_cpu: {e}");
        return None;
    }
    page_alloc::drain_all_pages();
    let cpus: Option<Vec<CpuRun>> = results.into_inner().into_iter().collect();
    Some(PathResult {
        path: Some(path),
        cpus: cpus?,
        zone_lock,
    })
}

/// Runs the benchmark and prints its report.
pub fn run() -> ExitCode {
    let Some(pa) = page_alloc::get() else {
        println!("pagealloc: no page allocator");
        return ExitCode::TestFailure;
    };
    let n = percpu::nr_cpu_ids();
    println!(
        "pagealloc: order-0 alloc+free pairs on {n} CPU(s), {PAIRS} pairs/CPU/round, \
         {ROUNDS} rounds per path"
    );
    for z in pa.zones() {
        let (batch, high) = z.pcp_batch_high(0).unwrap_or_default();
        println!(
            "  node {} {}: {} free, pcp batch {batch} high {high}",
            z.node(),
            z.name(),
            z.nr_free()
        );
    }
    ksync::stat::set_enabled(true);
    let mut ok = true;
    for burst in BURSTS {
        println!("pagealloc: burst {burst}");
        let mut per_path: Vec<(Path, Vec<PathResult>)> =
            Path::BOTH.iter().map(|&p| (p, Vec::new())).collect();
        for _ in 0..ROUNDS {
            for (path, v) in &mut per_path {
                match round(pa, *path, burst) {
                    Some(r) => v.push(r),
                    None => ok = false,
                }
            }
        }
        let mut medians = Vec::new();
        for (path, mut v) in per_path {
            if v.is_empty() {
                continue;
            }
            let mut lock = ksync::LockStatSnapshot::default();
            for r in &v {
                lock.add(&r.zone_lock);
            }
            let allocs: u64 = v.iter().map(PathResult::allocations).sum();
            v.sort_by_key(PathResult::mean_pairs_per_sec);
            let median = v[v.len() / 2].clone();
            println!("  {median}");
            println!(
                "  {:>5}: all rounds: zone->lock {} acquisitions for {allocs} allocations = {} per \
                 1000, {} contended",
                path.name(),
                lock.acquisitions,
                (lock.acquisitions * 1000).checked_div(allocs).unwrap_or(0),
                lock.contended
            );
            medians.push(median);
        }
        if let [pcp, buddy] = medians.as_slice() {
            let (p, b) = (pcp.mean_pairs_per_sec(), buddy.mean_pairs_per_sec().max(1));
            println!(
                "  per-CPU lists: {}.{:02}x the pairs/s of the buddy path, {} zone->lock \
                 acquisitions saved per 1000 allocations",
                p / b,
                p * 100 / b % 100,
                saved_per_1000(pcp, buddy)
            );
        }
    }
    ksync::stat::set_enabled(false);
    match pa.check() {
        Ok(c) => println!(
            "pagealloc: allocator consistent afterwards ({} free frames)",
            c.free_pages
        ),
        Err(e) => {
            println!("pagealloc: allocator inconsistent afterwards: {e}");
            ok = false;
        }
    }
    if ok {
        ExitCode::Success
    } else {
        ExitCode::TestFailure
    }
}
