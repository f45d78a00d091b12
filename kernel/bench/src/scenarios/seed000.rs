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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::tests::{counter, leak_a_charge, on, soft};
    use crate::vm::soft::SoftHost;
    use std::collections::BTreeSet;

    fn build(host: &SoftHost, cpus: u32) -> Refault<'_, SoftHost, PnGenGrouped> {
        Refault::build(host, cpus).expect("built")
    }

    /// The pages of reader `i`'s object in its page cache (read and not evicted).
    fn cached(inst: &Refault<'_, SoftHost, PnGenGrouped>, i: usize) -> BTreeSet<u64> {
        let mut s = BTreeSet::new();
        inst.ctx.object(i).cache().for_each(|index, folio| {
            if folio.is_some() {
                s.insert(index);
            }
        });
        s
    }

    #[test]
    fn memory_max_is_256_pages_plus_80_per_reader() {
        assert_eq!(
            [limit(1), limit(2), limit(3), limit(8)],
            [336, 416, 496, 896]
        );
        let host = soft(3, 64);
        for cpus in 1..=3 {
            let inst = build(host, cpus);
            assert_eq!(inst.ctx.nr_memcgs(), 1, "one memcg for every reader");
            assert_eq!(inst.ctx.memcg(0).memory().max(), limit(cpus));
            Box::new(inst).teardown().unwrap();
        }
    }

    #[test]
    fn the_readers_objects_are_eight_times_memory_max() {
        let host = soft(3, 64);
        for cpus in 1..=3u32 {
            let inst = build(host, cpus);
            let max = limit(cpus);
            let sizes: Vec<u64> = (0..cpus as usize)
                .map(|i| inst.ctx.object(i).nr_pages())
                .collect();
            assert!(sizes.iter().all(|&p| p == inst.pages), "{sizes:?}");
            let all: u64 = sizes.iter().sum();
            assert!(
                all >= OVERCOMMIT * max && all < OVERCOMMIT * max + u64::from(cpus),
                "{cpus} readers of {sizes:?} pages under a limit of {max}"
            );
            Box::new(inst).teardown().unwrap();
        }
    }

    /// Every reader draws its pages from a sequence of its own: after one batch each, no
    /// two readers' objects hold the same pages, and each holds nearly a batch of them.
    #[test]
    fn every_reader_reads_pages_of_its_own_sequence() {
        const READERS: u32 = 8;
        let host = soft(READERS as usize, 64);
        let inst = build(host, READERS);
        for cpu in 0..READERS {
            assert_eq!(inst.run_batch(&on(cpu, u64::MAX)), Ok(BATCH));
            host.quiescent(cpu as usize);
        }
        assert_eq!(counter(&inst, "evicted"), 0, "a batch per reader fits");
        let sets: Vec<BTreeSet<u64>> = (0..READERS as usize).map(|i| cached(&inst, i)).collect();
        for (i, s) in sets.iter().enumerate() {
            assert!(s.len() as u64 >= BATCH - 4, "reader {i} read only {s:?}");
            for (j, t) in sets.iter().enumerate().skip(i + 1) {
                assert_ne!(s, t, "readers {i} and {j} read the same pages");
            }
        }
        Box::new(inst).teardown().unwrap();
    }

    /// The readers' pseudo-random sequence (xorshift64) does not fall into a short cycle: by
    /// Brent's algorithm over the generator's state after each read, none within 2^17 reads.
    /// (The reads themselves are of page 0 only, so that they are cheap; the state does not
    /// depend on the pages.)
    #[test]
    fn the_read_sequence_does_not_cycle_soon() {
        let host = soft(1, 16);
        let mut inst = build(host, 1);
        inst.pages = 1;
        let state =
            |inst: &Refault<'_, SoftHost, PnGenGrouped>| inst.rng[0].0.load(Ordering::Relaxed);
        let step = |inst: &Refault<'_, SoftHost, PnGenGrouped>| {
            assert_eq!(inst.run_batch(&on(0, 1)), Ok(1));
        };
        // Brent: `power` doubles until the hare meets the tortoise; `lam` is then the cycle
        // length. Bounded: a cycle longer than the budget is as good as none here.
        let budget = 1u64 << 17;
        let (mut power, mut lam) = (1u64, 1u64);
        let mut tortoise = state(&inst);
        step(&inst);
        let mut steps = 1;
        while state(&inst) != tortoise && steps < budget {
            if power == lam {
                tortoise = state(&inst);
                power *= 2;
                lam = 0;
            }
            step(&inst);
            lam += 1;
            steps += 1;
        }
        assert_eq!(steps, budget, "the sequence cycles with period {lam}");
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn check_passes_at_memory_max_and_fails_on_a_leaked_charge() {
        let host = soft(1, 64);
        let inst = build(host, 1);
        for _ in 0..4 {
            inst.run_batch(&on(0, u64::MAX)).unwrap();
        }
        inst.check().unwrap();
        // memory.max down to exactly the usage (the stocks are drained by the check): still
        // within the limit.
        let m = inst.ctx.memcg(0);
        m.set_max(0, m.usage()).unwrap();
        assert_eq!(m.usage(), m.memory().max());
        inst.check().unwrap();
        leak_a_charge(m);
        assert!(inst.check().is_err(), "a charge no folio holds");
    }

    #[test]
    fn teardown_gives_every_frame_back_and_reports_what_was_left() {
        let host = soft(2, 64);
        let free = host.free_frames();
        let inst = build(host, 2);
        for cpu in 0..2 {
            inst.run_batch(&on(cpu, u64::MAX)).unwrap();
        }
        Box::new(inst).teardown().unwrap();
        assert_eq!(host.free_frames(), free);

        let inst = build(host, 2);
        leak_a_charge(inst.ctx.memcg(0));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }
}
