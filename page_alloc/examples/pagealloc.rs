//! Micro-benchmark: order-0 alloc+free pairs per second per CPU through the per-CPU lists
//! and straight through the buddy lists, and the `zone->lock` acquisitions per 1,000
//! allocations of each (what the per-CPU lists save), on pinned host threads.
//!
//! The allocator manages a made-up node of `--pages` frames above 4 GiB (ZONE_NORMAL); the
//! frames are only numbers, so nothing but the memmap is touched, exactly as in the
//! kernel's `run=pagealloc`. Paths alternate pcp, buddy, pcp, buddy... for `--rounds`
//! rounds; pairs per second are the median round, lock figures the sum of all rounds.
//! Without `--burst` it runs the kernel's two burst sizes: 64 (the per-CPU lists hold
//! the whole burst) and 4096 (larger than `high`: they refill and spill).
//!
//! `cargo run -p page_alloc --release --example pagealloc -- [--threads N] [--burst B]
//!  [--pairs P] [--rounds R] [--pages F] [--batch B] [--high H]`

use ksync::class::LockClass;
use page_alloc::lock_classes::ZoneLock;
use page_alloc::microbench::{CpuRun, Path, PathResult, Platform, run_cpu, saved_per_1000};
use page_alloc::{HeapStorage, NumaTopology, PageAlloc, PcpConfig, PfnRange};
use std::sync::Barrier;
use std::time::Instant;

struct Opts {
    threads: usize,
    bursts: Vec<usize>,
    pairs: u64,
    rounds: usize,
    pages: u64,
    cfg: PcpConfig,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "pagealloc: {why}\nusage: pagealloc [--threads N] [--burst B] [--pairs P] [--rounds R] \
         [--pages F] [--batch B] [--high H]"
    );
    std::process::exit(2)
}

fn args() -> Opts {
    let mut o = Opts {
        threads: 1,
        bursts: vec![64, 4096],
        pairs: 2_000_000,
        rounds: 5,
        pages: 1 << 18,
        cfg: PcpConfig::default(),
    };
    let mut it = std::env::args().skip(1);
    let mut burst = None;
    while let Some(opt) = it.next() {
        let v: u64 = match it.next().map(|v| v.parse::<u64>()) {
            Some(Ok(n)) => n,
            _ => usage(&format!("{opt} needs a number")),
        };
        let positive = |v: u64| {
            if v == 0 {
                usage(&format!("{opt} must be positive"))
            } else {
                v
            }
        };
        match opt.as_str() {
            "--threads" => o.threads = positive(v) as usize,
            "--burst" => burst = Some(positive(v) as usize),
            "--pairs" => o.pairs = positive(v),
            "--rounds" => o.rounds = positive(v) as usize,
            "--pages" => o.pages = positive(v),
            "--batch" => o.cfg.batch = Some(positive(v) as u32),
            "--high" => o.cfg.high = Some(v as u32),
            _ => usage(&format!("unknown option `{opt}`")),
        }
    }
    if let Some(b) = burst {
        o.bursts = vec![b];
    }
    o
}

/// Pins the calling thread to host CPU `cpu` (modulo the CPUs there are); false when the
/// kernel refuses.
fn pin(cpu: usize) -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: `set` is a plain bit mask on our stack, passed with its size; the call only
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % n, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

fn round(pa: &PageAlloc, o: &Opts, burst: usize, path: Path, epoch: &Instant) -> PathResult {
    let barrier = Barrier::new(o.threads + 1);
    let before = ZoneLock::data().snapshot();
    let mut cpus: Vec<CpuRun> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..o.threads)
            .map(|cpu| {
                let barrier = &barrier;
                s.spawn(move || {
                    ksync::cpu::set_this_thread_cpu(cpu);
                    pin(cpu);
                    let mut held = Vec::with_capacity(burst);
                    let now = || epoch.elapsed().as_nanos() as u64;
                    let platform = Platform {
                        now_ns: &now,
                        between_bursts: &|| {},
                    };
                    barrier.wait();
                    let r = run_cpu(pa, cpu, path, burst, o.pairs, &mut held, &platform);
                    barrier.wait();
                    r
                })
            })
            .collect();
        barrier.wait();
        barrier.wait();
        cpus = handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect();
    });
    let zone_lock = ZoneLock::data().snapshot().since(&before);
    pa.drain_all();
    PathResult {
        path: Some(path),
        cpus,
        zone_lock,
    }
}

fn bench_burst(pa: &PageAlloc, o: &Opts, burst: usize, epoch: &Instant) {
    let mut results: Vec<(Path, Vec<PathResult>)> =
        Path::BOTH.iter().map(|&p| (p, Vec::new())).collect();
    for _ in 0..o.rounds {
        for (path, v) in &mut results {
            v.push(round(pa, o, burst, *path, epoch));
        }
    }
    let mut summary = Vec::new();
    for (path, mut v) in results {
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
        summary.push(median);
    }
    println!(
        "  per-CPU lists: {:.2}x the pairs/s of the buddy path, {} zone->lock acquisitions \
         saved per 1000 allocations",
        summary[0].mean_pairs_per_sec() as f64 / summary[1].mean_pairs_per_sec().max(1) as f64,
        saved_per_1000(&summary[0], &summary[1])
    );
}

fn main() {
    let o = args();
    let base = 1u64 << 20;
    let numa = NumaTopology::single_node(o.threads, &[PfnRange::new(base, base + o.pages)])
        .unwrap_or_else(|e| usage(&format!("{e}")));
    let pa = PageAlloc::with_all_free(numa, &mut HeapStorage::new(), o.cfg)
        .unwrap_or_else(|e| usage(&format!("{e}")));
    let zone = pa.zones().next().expect("one zone");
    let (batch, high) = zone.pcp_batch_high(0).unwrap_or_default();
    println!(
        "order-0 alloc+free pairs, {} thread(s) (pinned), {} pairs/thread/round, {} rounds; \
         zone {} frames, pcp batch {batch} high {high}",
        o.threads, o.pairs, o.rounds, o.pages
    );
    ksync::stat::set_enabled(true);
    let epoch = Instant::now();
    for &burst in &o.bursts {
        println!("burst {burst}");
        bench_burst(&pa, &o, burst, &epoch);
    }
    ksync::stat::set_enabled(false);
    pa.check()
        .expect("allocator consistent after the benchmark");
}
