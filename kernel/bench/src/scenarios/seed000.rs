//! `seed000-refault`: every CPU reads random pages of its own file-like object, all in ONE
//! memcg whose memory.max is an eighth of what they read, so nearly every read is a refault
//! (seed 000: fio randread on brd, one memcg, scaled down).
//!
//! A read that misses finds the page's shadow entry: `workingset_refault` reads the
//! lruvec's `lru_gen_folio` (its `evicted`/`refaulted` counters, `min_seq`, the tiers'
//! averages) while other CPUs hold the lru_lock to add, age and evict, writing the same
//! struct's generation lists, `nr_pages` and `seg`. Both variants use mainline's
//! `mem_cgroup_per_node` (the lruvec after the memcg-v1 fields, not line-aligned). In
//! layout A (Linux before the seed's patch) the refault atomics share lines with those hot
//! fields: the file type's upper tiers, where refaults of folios that had refaulted before
//! are counted, sit on the line of `enabled`/`gen`/`seg`/`list`; in B they sit in a group
//! of their own. MGLRU is on; the backing store's contents are checked on every read, as brd
//! copies the page. One operation is one page read.
//!
//! The invariant after every run: the memcg is within its limit, plus the checker's.

use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use crate::vm::{Ctx, Pn, PnGenBase, PnGenGrouped, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::CachePadded;
use mm::vm::context::VmConfig;
use mm::vm::object::ObjectKind;
use mm::vm::vma::VmAreaA;

/// Reads per batch.
const BATCH: u64 = 32;
/// The working set over memory.max.
const OVERCOMMIT: u64 = 8;

/// memory.max for `cpus` readers: room for every CPU's in-flight charges (its stock and
/// folio batch) and reclaim's batches, then some.
#[must_use]
pub fn limit(cpus: u32) -> u64 {
    256 + 80 * u64::from(cpus)
}

/// The scenario on platform `H`.
pub struct Seed000<'h, H: VmHost> {
    host: &'h H,
}

impl<'h, H: VmHost> Seed000<'h, H> {
    /// The scenario over `host`'s fault core.
    #[must_use]
    pub fn new(host: &'h H) -> Self {
        Seed000 { host }
    }
}

struct Refault<'h, H: VmHost, P: Pn> {
    ctx: Ctx<'h, H, P, VmAreaA>,
    pages: u64,
    rng: Vec<CachePadded<AtomicU64>>,
    nodes: Vec<u32>,
}

impl<'h, H: VmHost, P: Pn> Refault<'h, H, P> {
    fn build(host: &'h H, cpus: u32) -> Result<Self, String> {
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.max_memcgs = 64;
        let mut ctx = Ctx::new(host, cfg)?;
        let max = limit(cpus);
        ctx.add_memcg(None, Some(max))?;
        let pages = (OVERCOMMIT * max).div_ceil(u64::from(cpus));
        for _ in 0..cpus {
            ctx.add_object(ObjectKind::File, pages as usize);
        }
        Ok(Refault {
            ctx,
            pages,
            rng: (0..cpus)
                .map(|c| CachePadded(AtomicU64::new(0x9e37_79b9_7f4a_7c15 ^ u64::from(c + 1))))
                .collect(),
            nodes: (0..cpus as usize).map(|c| host.node_of(c)).collect(),
        })
    }
}

impl<H: VmHost, P: Pn> Instance for Refault<'_, H, P> {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let (cpu, i) = (ctx.cpu as usize, ctx.index as usize);
        let obj = self.ctx.object(i);
        let memcg = self.ctx.memcg(0);
        let n = BATCH.min(ctx.max_ops);
        let mut x = self.rng[i].0.load(Ordering::Relaxed);
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let index = x % self.pages;
            self.ctx
                .vm()
                .filemap_read(obj, memcg, cpu, self.nodes[i], index, true)
                .map_err(|e| format!("read of page {index}: {e:?}"))?;
        }
        self.rng[i].0.store(x, Ordering::Relaxed);
        Ok(n)
    }

    fn counters(&self) -> Vec<(String, i64)> {
        self.ctx.counters()
    }

    fn check(&self) -> Result<(), String> {
        self.ctx.check()?;
        let m = self.ctx.memcg(0);
        if m.usage() > m.memory().max() {
            return Err(format!(
                "usage {} above max {}",
                m.usage(),
                m.memory().max()
            ));
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<(), ScenarioError> {
        self.ctx.shutdown().map_err(ScenarioError::from)
    }
}

impl<H: VmHost> BenchScenario for Seed000<'_, H> {
    fn name(&self) -> &'static str {
        "seed000-refault"
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        if setup.config != "file" {
            return Err(ScenarioError::new(format!("no config `{}`", setup.config)));
        }
        Ok(match setup.variant {
            "A" => Box::new(Refault::<H, PnGenBase>::build(self.host, setup.cpus)?),
            "B" => Box::new(Refault::<H, PnGenGrouped>::build(self.host, setup.cpus)?),
            v => return Err(ScenarioError::new(format!("no variant `{v}`"))),
        })
    }
}
