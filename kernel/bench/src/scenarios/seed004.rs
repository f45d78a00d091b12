//! `seed004-readtwice`: readers stream their own file-like object twice, in memcgs whose
//! memory.max is below what they read (seed 004, the per-memcg `lru_lock` series, measured
//! with vm-scalability's readtwice).
//!
//! Every reader (one per CPU) has an object of [`PAGES`] pages per reader of its memcg and
//! reads it front to back twice, `filemap_read` page by page: the first pass misses and reads each page in (charge,
//! page cache, lru_add batch onto the inactive list), the second finds it and marks it
//! accessed (the activate batch moves it to the active list, under the lru_lock), and since
//! the memcg's limit is [`LIMIT_PER_READER`] pages per reader, reclaim runs all along
//! (isolate under the lru_lock, evict, shadow entries, refaults on the next pass). The
//! classic active/inactive lists are used, as in the seed's time. An object is sized by the
//! readers sharing its memcg so that no single reader's object fits under the memcg's
//! limit: with 512-page objects, two readers under a 768-page limit ran bimodally (one
//! reader's object stayed resident and every read of it hit, the other missed every read),
//! and which mode a run fell into decided its rate far more than the lock did.
//!
//! Configs: `1-per-memcg` (each reader in a memcg of its own) and `2-per-memcg` (two
//! readers per memcg: the seed's 208 readers in 104 memcgs). A: every lruvec of a node takes
//! the node's one lock (`pgdat->lru_lock`, before the series); B: each lruvec its own
//! (`lruvec->lru_lock`). One operation is one page read.
//!
//! The invariant after every run: no memcg is above its limit, plus the checker's.

use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use crate::vm::{Ctx, PnPaired, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::CachePadded;
use lru::LruvecLock;
use mm::vm::context::VmConfig;
use mm::vm::object::ObjectKind;
use mm::vm::vma::VmAreaA;

/// Pages of each reader's object, per reader of its memcg.
pub const PAGES: u64 = 512;
/// memory.max per reader in a memcg (three quarters of what it reads).
pub const LIMIT_PER_READER: u64 = 384;
/// Reads per batch.
const BATCH: u64 = 32;

/// The scenario on platform `H`.
pub struct Seed004<'h, H: VmHost> {
    host: &'h H,
}

impl<'h, H: VmHost> Seed004<'h, H> {
    /// The scenario over `host`'s fault core.
    #[must_use]
    pub fn new(host: &'h H) -> Self {
        Seed004 { host }
    }
}

struct ReadTwice<'h, H: VmHost> {
    ctx: Ctx<'h, H, PnPaired, VmAreaA>,
    /// Per reader: its memcg.
    memcg_of: Vec<usize>,
    /// Pages of each object ([`PAGES`] times the readers per memcg).
    pages: u64,
    /// Per reader: reads done (pass = n / pages % 2, index = n % pages).
    pos: Vec<CachePadded<AtomicU64>>,
    nodes: Vec<u32>,
}

impl<'h, H: VmHost> ReadTwice<'h, H> {
    fn build(host: &'h H, setup: &Setup<'_>, lock: LruvecLock) -> Result<Self, String> {
        let per = match setup.config {
            "1-per-memcg" => 1,
            "2-per-memcg" => 2,
            c => return Err(format!("no config `{c}`")),
        };
        let readers = setup.cpus as usize;
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.mglru = false;
        cfg.lru_lock = lock;
        cfg.max_memcgs = readers + 16;
        let mut ctx = Ctx::new(host, cfg)?;
        let mut memcg_of = Vec::with_capacity(readers);
        for r in 0..readers {
            if r % per == 0 {
                let in_this = per.min(readers - r) as u64;
                ctx.add_memcg(None, Some(in_this * LIMIT_PER_READER))?;
            }
            memcg_of.push(ctx.nr_memcgs() - 1);
            ctx.add_object(ObjectKind::File, (PAGES * per as u64) as usize);
        }
        Ok(ReadTwice {
            ctx,
            memcg_of,
            pages: PAGES * per as u64,
            pos: (0..readers)
                .map(|_| CachePadded(AtomicU64::new(0)))
                .collect(),
            nodes: (0..readers).map(|c| host.node_of(c)).collect(),
        })
    }
}

impl<H: VmHost> Instance for ReadTwice<'_, H> {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let (cpu, r) = (ctx.cpu as usize, ctx.index as usize);
        let obj = self.ctx.object(r);
        let memcg = self.ctx.memcg(self.memcg_of[r]);
        let n = BATCH.min(ctx.max_ops);
        let first = self.pos[r].0.load(Ordering::Relaxed);
        for k in first..first + n {
            self.ctx
                .vm()
                .filemap_read(obj, memcg, cpu, self.nodes[r], k % self.pages, false)
                .map_err(|e| format!("read of page {}: {e:?}", k % self.pages))?;
        }
        self.pos[r].0.store(first + n, Ordering::Relaxed);
        Ok(n)
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let mut c = self.ctx.counters();
        let active: u64 = (0..self.ctx.nr_memcgs())
            .filter_map(|i| self.ctx.memcg(i).lruvec(0).ok())
            .map(|lv| lv.lru_size(lru::LruList::ActiveFile) as u64)
            .sum();
        c.push(("active_file".into(), active as i64));
        c
    }

    fn check(&self) -> Result<(), String> {
        self.ctx.check()?;
        for i in 0..self.ctx.nr_memcgs() {
            let m = self.ctx.memcg(i);
            if m.usage() > m.memory().max() {
                return Err(format!(
                    "memcg {i}: usage {} above max {}",
                    m.usage(),
                    m.memory().max()
                ));
            }
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<(), ScenarioError> {
        self.ctx.shutdown().map_err(ScenarioError::from)
    }
}

impl<H: VmHost> BenchScenario for Seed004<'_, H> {
    fn name(&self) -> &'static str {
        "seed004-readtwice"
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let lock = match setup.variant {
            "A" => LruvecLock::Node,
            "B" => LruvecLock::Own,
            v => return Err(ScenarioError::new(format!("no variant `{v}`"))),
        };
        Ok(Box::new(ReadTwice::build(self.host, setup, lock)?))
    }
}
