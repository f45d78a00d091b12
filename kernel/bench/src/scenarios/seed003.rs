//! `seed003-pft`: every CPU faults its own slice of ONE shared anonymous region (mmtests
//! pft, seed 003's benchmark).
//!
//! All CPUs share one address space with one region, so every fault on every CPU runs
//! `lock_vma_under_rcu` on the same `vm_area_struct`: it reads `vm_lock_seq` and the
//! region's bounds and flags, and increments and decrements `vm_refcnt`. Layout A keeps
//! `vm_lock_seq` in the first line with `vm_start`/`vm_end`/`vm_flags` (Linux); layout B
//! moves it next to `vm_refcnt`, into the line every fault writes, so every CPU's read of
//! it misses (the seed's 6-10% at 12-56 CPUs). The page tables are split per 2 MiB (each
//! slice starts on its own PTE table), as Linux's split PTE locks.
//!
//! One batch stores to the next [`BATCH`] pages of the CPU's slice (a fault each); when the
//! slice is full the CPU unmaps it (`zap_page_range`, with a shootdown to the other CPUs of
//! the address space) and starts over, as pft's loop of fault-in and unmap. One operation
//! is one fault; the unmaps are part of the measured time, one per [`SLICE`] faults.
//!
//! The invariant after every run: every present PTE is one of the pages the slices' cursors
//! say are faulted, each charged and on the LRU, plus the checker's.

use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use crate::vm::{Ctx, PnPaired, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::CachePadded;
use mm::vm::context::VmConfig;
use mm::vm::vma::{VmArea, VmAreaA, VmAreaB};

/// Faults per batch.
pub const BATCH: u64 = 64;
/// Pages in each CPU's slice (8 MiB: four PTE tables).
pub const SLICE: u64 = 2048;

/// The scenario on platform `H`.
pub struct Seed003<'h, H: VmHost> {
    host: &'h H,
}

impl<'h, H: VmHost> Seed003<'h, H> {
    /// The scenario over `host`'s fault core.
    #[must_use]
    pub fn new(host: &'h H) -> Self {
        Seed003 { host }
    }
}

struct Pft<'h, H: VmHost, V: VmArea + 'static> {
    ctx: Ctx<'h, H, PnPaired, V>,
    /// Per CPU: pages of its slice faulted since the last unmap.
    done: Vec<CachePadded<AtomicU64>>,
}

impl<'h, H: VmHost, V: VmArea + 'static> Pft<'h, H, V> {
    fn build(host: &'h H, cpus: u32) -> Result<Self, String> {
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.max_memcgs = 64;
        let mut ctx = Ctx::new(host, cfg)?;
        let m = ctx.add_memcg(None, None)?;
        let s = ctx.add_space(SLICE * 4096 * u64::from(cpus))?;
        let base = ctx.space(s).base();
        ctx.map(s, base, SLICE * u64::from(cpus), None, m, host.node_of(0))?;
        let done = (0..cpus).map(|_| CachePadded(AtomicU64::new(0))).collect();
        Ok(Pft { ctx, done })
    }
}

impl<H: VmHost, V: VmArea + 'static> Instance for Pft<'_, H, V> {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let (cpu, i) = (ctx.cpu as usize, ctx.index as usize);
        let space = self.ctx.space(0);
        space.use_mm(cpu);
        let slice = space.base() + i as u64 * SLICE * 4096;
        let done = self.done[i].0.load(Ordering::Relaxed);
        if done == SLICE {
            self.ctx
                .vm()
                .zap_page_range(space.mm(), cpu, slice, slice + SLICE * 4096);
            self.done[i].0.store(0, Ordering::Relaxed);
            return self.run_batch(ctx);
        }
        let n = BATCH.min(ctx.max_ops).min(SLICE - done);
        for p in done..done + n {
            let va = slice + p * 4096;
            space
                .write(cpu, va, va)
                .map_err(|e| format!("fault at {va:#x}: {e:?}"))?;
        }
        self.done[i].0.store(done + n, Ordering::Relaxed);
        Ok(n)
    }

    fn counters(&self) -> Vec<(String, i64)> {
        self.ctx.counters()
    }

    fn check(&self) -> Result<(), String> {
        let c = self.ctx.check()?;
        let faulted: u64 = self.done.iter().map(|d| d.0.load(Ordering::Relaxed)).sum();
        if (c.mapped_ptes, c.lru_folios, c.charged) != (faulted, faulted, faulted) {
            return Err(format!(
                "{faulted} pages faulted by the slices, census {c:?}"
            ));
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<(), ScenarioError> {
        self.ctx.shutdown().map_err(ScenarioError::from)
    }
}

impl<H: VmHost> BenchScenario for Seed003<'_, H> {
    fn name(&self) -> &'static str {
        "seed003-pft"
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        if setup.config != "anon" {
            return Err(ScenarioError::new(format!("no config `{}`", setup.config)));
        }
        Ok(match setup.variant {
            "A" => Box::new(Pft::<H, VmAreaA>::build(self.host, setup.cpus)?),
            "B" => Box::new(Pft::<H, VmAreaB>::build(self.host, setup.cpus)?),
            v => return Err(ScenarioError::new(format!("no variant `{v}`"))),
        })
    }
}
