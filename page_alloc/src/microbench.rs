//! The order-0 alloc/free micro-benchmark: through the per-CPU lists, and straight to the
//! buddy lists, on every CPU at once.
//!
//! Each CPU repeats: allocate `burst` order-0 frames from its own node, then free them all
//! again on itself, until it has done `pairs` alloc+free pairs. Path `pcp` is what every
//! order-0 allocation does (`alloc_page()` / `free_page()`: the CPU's own list, refilled
//! and spilled `batch` frames at a time under `zone->lock`); path `buddy` takes
//! `zone->lock` for every allocation and every free (what the per-CPU lists save). A burst
//! larger than `high` makes the lists refill and spill in steady state; a burst that fits
//! shows the best case, where the list recycles its frames without the zone lock at all.
//!
//! The platform runs [`run_cpu`] on each CPU between two barriers (the kernel through
//! `on_each_cpu`, the host example on pinned threads) and hands the per-CPU results and the
//! `zone->lock` class statistics of the round to [`PathResult`], which prints the figures
//! of the closing note: pairs per second per CPU and zone-lock acquisitions per 1,000
//! allocations.

use crate::page_alloc::PageAlloc;
use crate::stats::PageStats;
use alloc::vec::Vec;
use core::fmt;
use ksync::LockStatSnapshot;
use page::Folio;

/// Which way frames go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// `alloc_page()` / `free_page()`: the CPU's per-CPU list.
    Pcp,
    /// `alloc_pages_buddy()` / `free_pages_buddy()`: `zone->lock` every time.
    Buddy,
}

impl Path {
    /// Both paths, in the order they alternate.
    pub const BOTH: [Path; 2] = [Path::Pcp, Path::Buddy];

    /// The name reports use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Path::Pcp => "pcp",
            Path::Buddy => "buddy",
        }
    }
}

/// One CPU's run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuRun {
    /// Alloc+free pairs completed.
    pub pairs: u64,
    /// Allocations that failed (memory ran out: the burst is too large).
    pub failed: u64,
    /// Nanoseconds the run took.
    pub ns: u64,
    /// The CPU's allocator counters over the run.
    pub stats: PageStats,
}

impl CpuRun {
    /// Pairs per second.
    #[must_use]
    pub fn pairs_per_sec(&self) -> u64 {
        (u128::from(self.pairs) * 1_000_000_000)
            .checked_div(u128::from(self.ns))
            .unwrap_or(0) as u64
    }
}

/// The platform's side of a run: its clock, and what to do between two bursts (the kernel
/// reports an RCU quiescent state there).
pub struct Platform<'a> {
    /// Nanoseconds since some fixed point.
    pub now_ns: &'a dyn Fn() -> u64,
    /// Called after every burst.
    pub between_bursts: &'a dyn Fn(),
}

/// Runs `pairs` order-0 alloc+free pairs on `cpu` in bursts of `burst`, holding the
/// burst in `held` (cleared; its capacity is reused).
pub fn run_cpu(
    pa: &PageAlloc,
    cpu: usize,
    path: Path,
    burst: usize,
    pairs: u64,
    held: &mut Vec<&'static Folio>,
    platform: &Platform<'_>,
) -> CpuRun {
    let node = pa.numa().cpu_to_node(cpu);
    let before = pa.cpu_stats(cpu);
    held.clear();
    let (mut done, mut failed) = (0u64, 0u64);
    let start = (platform.now_ns)();
    while done < pairs {
        let n = (burst as u64).min(pairs - done).max(1);
        for _ in 0..n {
            let got = match path {
                Path::Pcp => pa.alloc_page(cpu, node),
                Path::Buddy => pa.alloc_pages_buddy(cpu, node, 0),
            };
            match got {
                Some(f) => held.push(f),
                None => failed += 1,
            }
        }
        for f in held.drain(..) {
            let r = match path {
                Path::Pcp => pa.free_page(cpu, f),
                Path::Buddy => pa.free_pages_buddy(cpu, f, 0),
            };
            if r == Ok(true) {
                done += 1;
            }
        }
        (platform.between_bursts)();
        if failed > 0 && done == 0 {
            break;
        }
    }
    let ns = (platform.now_ns)().saturating_sub(start);
    CpuRun {
        pairs: done,
        failed,
        ns,
        stats: pa.cpu_stats(cpu).since(&before),
    }
}

/// One path's result over all CPUs of a round.
#[derive(Clone, Debug, Default)]
pub struct PathResult {
    /// The path.
    pub path: Option<Path>,
    /// Per CPU, in CPU order.
    pub cpus: Vec<CpuRun>,
    /// `zone->lock` class statistics over the round (all zones, all CPUs).
    pub zone_lock: LockStatSnapshot,
}

impl PathResult {
    /// Allocations in the round.
    #[must_use]
    pub fn allocations(&self) -> u64 {
        self.cpus.iter().map(|c| c.pairs).sum()
    }

    /// Mean pairs per second per CPU.
    #[must_use]
    pub fn mean_pairs_per_sec(&self) -> u64 {
        let n = self.cpus.len() as u64;
        self.cpus
            .iter()
            .map(CpuRun::pairs_per_sec)
            .sum::<u64>()
            .checked_div(n)
            .unwrap_or(0)
    }

    /// `zone->lock` acquisitions per 1,000 allocations (each allocation comes with its free).
    #[must_use]
    pub fn zone_lock_per_1000(&self) -> u64 {
        (self.zone_lock.acquisitions * 1000)
            .checked_div(self.allocations())
            .unwrap_or(0)
    }

    /// The same figure from the allocator's own counters (refills, spills, drains, buddy
    /// operations), which must agree with the lock statistics when nothing else runs.
    #[must_use]
    pub fn zone_lock_ops_per_1000(&self) -> u64 {
        let ops: u64 = self.cpus.iter().map(|c| c.stats.zone_lock_ops()).sum();
        (ops * 1000).checked_div(self.allocations()).unwrap_or(0)
    }
}

impl fmt::Display for PathResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.path.map_or("?", Path::name);
        write!(f, "{name:>5}: pairs/s per cpu")?;
        for (cpu, c) in self.cpus.iter().enumerate() {
            write!(f, " cpu{cpu}={}", c.pairs_per_sec())?;
        }
        write!(
            f,
            " mean={}; zone->lock per 1000 allocs: {} (allocator's count {}), contended {}/{}",
            self.mean_pairs_per_sec(),
            self.zone_lock_per_1000(),
            self.zone_lock_ops_per_1000(),
            self.zone_lock.contended,
            self.zone_lock.acquisitions
        )?;
        let failed: u64 = self.cpus.iter().map(|c| c.failed).sum();
        if failed > 0 {
            write!(f, "; {failed} allocations failed (burst too large)")?;
        }
        Ok(())
    }
}

/// Zone-lock acquisitions per 1,000 allocations that the per-CPU lists save: buddy minus
/// pcp (the same units as [`PathResult::zone_lock_per_1000`]).
#[must_use]
pub fn saved_per_1000(pcp: &PathResult, buddy: &PathResult) -> i64 {
    buddy.zone_lock_per_1000() as i64 - pcp.zone_lock_per_1000() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa::{NumaTopology, PfnRange};
    use crate::page_alloc::PcpConfig;
    use crate::storage::HeapStorage;

    #[test]
    fn both_paths_complete_and_count() {
        let numa = NumaTopology::single_node(1, &[PfnRange::new(0, 4096)]).unwrap();
        let pa = PageAlloc::with_all_free(
            numa,
            &mut HeapStorage::new(),
            PcpConfig {
                batch: Some(8),
                high: Some(32),
            },
        )
        .unwrap();
        // A clock that advances 1 us per reading.
        let cell = core::cell::Cell::new(0u64);
        let now = || {
            cell.set(cell.get() + 1000);
            cell.get()
        };
        let bursts = core::cell::Cell::new(0u32);
        let between = || bursts.set(bursts.get() + 1);
        let platform = Platform {
            now_ns: &now,
            between_bursts: &between,
        };
        let mut held = Vec::new();
        let p = run_cpu(&pa, 0, Path::Pcp, 100, 1000, &mut held, &platform);
        assert_eq!(bursts.get(), 10);
        assert_eq!((p.pairs, p.failed), (1000, 0));
        assert_eq!(p.stats.alloc, 1000);
        assert!(p.stats.refill > 0 && p.stats.spill > 0);
        let b = run_cpu(&pa, 0, Path::Buddy, 100, 1000, &mut held, &platform);
        assert_eq!(b.stats.buddy_alloc, 1000);
        assert_eq!(b.stats.buddy_free, 1000);
        assert_eq!(b.stats.zone_lock_ops(), 2000);
        assert_eq!(b.pairs_per_sec(), 1000 * 1_000_000);
        // Larger than memory: the run stops with failures instead of spinning.
        let big = run_cpu(&pa, 0, Path::Pcp, 10_000, 10_000, &mut held, &platform);
        assert!(big.failed > 0 && big.pairs > 0);
        pa.drain_all();
        assert_eq!(pa.nr_free_pages(), 4096);
    }
}
