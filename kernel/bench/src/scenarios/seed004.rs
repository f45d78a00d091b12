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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::tests::{counter, leak_a_charge, on, soft};
    use crate::vm::soft::SoftHost;

    fn build<'h>(host: &'h SoftHost, config: &str, cpus: u32) -> ReadTwice<'h, SoftHost> {
        let setup = Setup {
            config,
            variant: "B",
            cpus,
        };
        ReadTwice::build(host, &setup, LruvecLock::Own).expect("built")
    }

    /// Per memcg: memory.max.
    fn limits(inst: &ReadTwice<'_, SoftHost>) -> Vec<u64> {
        (0..inst.ctx.nr_memcgs())
            .map(|i| inst.ctx.memcg(i).memory().max())
            .collect()
    }

    /// Slots of reader `r`'s object that were ever read: a folio, or a shadow once evicted.
    fn slots_read(inst: &ReadTwice<'_, SoftHost>, r: usize) -> u64 {
        let mut n = 0;
        inst.ctx.object(r).cache().for_each(|_, _| n += 1);
        n
    }

    #[test]
    fn readers_share_memcgs_as_configured_each_limited_per_reader() {
        let host = soft(3, 64);
        let inst = build(host, "1-per-memcg", 3);
        assert_eq!(inst.memcg_of, [0, 1, 2]);
        assert_eq!(limits(&inst), [LIMIT_PER_READER; 3]);
        assert_eq!(inst.pages, PAGES);
        assert!((0..3).all(|r| inst.ctx.object(r).nr_pages() == PAGES));
        Box::new(inst).teardown().unwrap();

        // Three readers two by two: the last memcg has one reader, and its limit.
        let inst = build(host, "2-per-memcg", 3);
        assert_eq!(inst.memcg_of, [0, 0, 1]);
        assert_eq!(limits(&inst), [2 * LIMIT_PER_READER, LIMIT_PER_READER]);
        assert_eq!(inst.pages, 2 * PAGES);
        assert!((0..3).all(|r| inst.ctx.object(r).nr_pages() == 2 * PAGES));
        Box::new(inst).teardown().unwrap();
    }

    /// A reader streams its object front to back, every page once per pass, and the
    /// memcg's limit makes reclaim evict as it goes; a second pass starts over at page 0.
    #[test]
    fn a_pass_reads_every_page_of_the_object_under_reclaim() {
        let host = soft(1, 64);
        let inst = build(host, "2-per-memcg", 1);
        let pages = inst.pages;
        for _ in 0..pages / BATCH {
            assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(BATCH));
        }
        assert_eq!(slots_read(&inst, 0), pages, "every page of the first pass");
        assert_eq!(counter(&inst, "file_reads"), pages as i64);
        assert_eq!(counter(&inst, "cache_misses"), pages as i64);
        assert!(
            counter(&inst, "evicted") > 0,
            "the limit is below the object"
        );
        inst.check().unwrap();
        // The second pass: page 0 again, which was evicted long ago.
        let refaults = counter(&inst, "refaults");
        assert_eq!(inst.run_batch(&on(0, 1)), Ok(1));
        assert_eq!(counter(&inst, "refaults") - refaults, 1);
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn check_passes_at_memory_max_and_fails_on_a_leaked_charge() {
        let host = soft(2, 64);
        let inst = build(host, "1-per-memcg", 2);
        for cpu in 0..2 {
            inst.run_batch(&on(cpu, u64::MAX)).unwrap();
        }
        inst.check().unwrap();
        for i in 0..2 {
            let m = inst.ctx.memcg(i);
            m.set_max(0, m.usage()).unwrap();
            assert_eq!(m.usage(), m.memory().max());
        }
        inst.check().unwrap();
        leak_a_charge(inst.ctx.memcg(1));
        assert!(inst.check().is_err(), "a charge no folio holds");
    }

    #[test]
    fn teardown_gives_every_frame_back_and_reports_what_was_left() {
        let host = soft(2, 64);
        let free = host.free_frames();
        let inst = build(host, "2-per-memcg", 2);
        for cpu in 0..2 {
            inst.run_batch(&on(cpu, u64::MAX)).unwrap();
        }
        Box::new(inst).teardown().unwrap();
        assert_eq!(host.free_frames(), free);

        let inst = build(host, "1-per-memcg", 2);
        leak_a_charge(inst.ctx.memcg(1));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }
}
