//! `seed002-reclaim`: every CPU writes `1024M swappiness=0` to the root's memory.reclaim, a
//! request that cannot be met, among 10, 1,500 or 10,000 memcgs (seed 002, the cached tail
//! of the memcg FIFO's bins).
//!
//! Root reclaim on MGLRU is `shrink_many()` over each node's memcg FIFO under RCU: every
//! memcg it visits is shrunk by `shrink_one()` and, finding nothing it may reclaim (the
//! memcgs hold no page cache and swappiness 0 rules out anonymous memory), rotated in the
//! FIFO. Every rotation inserts the memcg at the tail of a bin of the other generation,
//! under the FIFO's lock: variant A finds the tail by walking the bin (O(bin length), the
//! lock held meanwhile), B keeps it cached (O(1)). The request is retried until
//! `MAX_RECLAIM_RETRIES` tries reclaimed nothing and then fails with `EAGAIN`, as the
//! seed's writes did; each try is `do_try_to_free_pages()`'s priority loop, twice (see
//! [`PREMISE`]). One operation is one whole request.
//!
//! The instance counts what its requests did ([`memcg::reclaim::ReclaimStats`], summed):
//! `reclaim_tries`, `priority_passes`, `shrink_many_calls`, `memcgs_visited`, `rotations`
//! and `restarts`, each a total over the run; per request they are the total divided by
//! `reclaim_eagain` (every request ends in EAGAIN). [`expected_per_request`] is what the
//! premise check compares them with.
//!
//! Under QEMU's TCG the emulator's software TLB is resized only when the guest flushes
//! its whole TLB, and seed 002's requests never do: a request's cost then depends on the
//! TLB size the previous scenarios left (up to 5x for A at 1,500 memcgs). So each CPU's
//! first batch of an instance conditions it first ([`TLB_CONDITIONING_ROUNDS`] rounds of
//! touching every memcg and FIFO entry, then a full local flush), which sizes TCG's TLB
//! to the instance's working set whatever ran before. On real hardware it costs a few
//! flushes in the warm-up round.
//!
//! The invariant after every run: each node's FIFO is consistent (every entry in the bin
//! and generation it records, the cached tails right, the count right) and holds every
//! memcg, plus the checker's.

use crate::engine::premise::{self, PremiseCheck, Premises};
use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup, Storage};
use crate::record::Run;
use crate::scenarios::fault_core::{FaultCoreInstance, VmCtx};
use crate::vm::{Ctx, PnPaired, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use lru::TailMode;
use memcg::reclaim::ReclaimStats;
use memcg::{MemcgError, ReclaimRequest};
use mm::check::VmCensus;
use mm::context::VmConfig;
use mm::pgtable::Mmu;
use mm::vma::VmAreaA;

mod entry;
pub use entry::CATALOG;

/// The request every CPU writes (the seed's).
pub const REQUEST: &str = "1024M swappiness=0";

/// The premise every run of this scenario must meet (checked per request from the
/// counters): every request ends in EAGAIN after `MAX_RECLAIM_RETRIES + 1` tries, each
/// running `do_try_to_free_pages()`'s priority loop twice (the `memcg_full_walk` retry)
/// from priority 6 (`set_initial_priority()` on a node with no inactive pages, clamped to
/// `DEF_PRIORITY / 2`) down to 0: the counts of [`expected_per_request`].
pub const PREMISE: &str = "every request ends in EAGAIN after 17 tries of 2 x 7 priorities, \
     one shrink_many per node per priority (238 per node per request)";

/// Full-flush rounds that size the emulator's TLB for an instance (see the module doc).
pub const TLB_CONDITIONING_ROUNDS: usize = 12;

/// What one request of [`REQUEST`] does on a machine of `nr_nodes` nodes whose nodes hold
/// no inactive pages: (tries, priority passes, `shrink_many` calls).
#[must_use]
pub fn expected_per_request(nr_nodes: usize) -> (u64, u64, u64) {
    let tries = u64::from(memcg::MAX_RECLAIM_RETRIES) + 1;
    // The batch is a quarter of the request: set_initial_priority() applies.
    let batch = memcg::ReclaimRequest::parse(REQUEST).map_or(0, |r| r.nr_pages / 4);
    let first = memcg::reclaim::initial_priority(0, batch);
    let priorities = tries * 2 * (u64::from(first) + 1);
    (tries, priorities, priorities * nr_nodes as u64)
}

/// The scenario on platform `H`.
pub struct Seed002<'h, H: VmHost> {
    host: &'h H,
}

impl<'h, H: VmHost> Seed002<'h, H> {
    /// The scenario over `host`'s fault core.
    #[must_use]
    pub fn new(host: &'h H) -> Self {
        Seed002 { host }
    }
}

/// The instance's counters, summed over its requests (see the module doc).
#[derive(Default)]
struct Counts {
    again: AtomicU64,
    tries: AtomicU64,
    priorities: AtomicU64,
    shrink_many: AtomicU64,
    visited: AtomicU64,
    rotations: AtomicU64,
    restarts: AtomicU64,
}

impl Counts {
    fn add(&self, s: &ReclaimStats) {
        for (c, v) in [
            (&self.tries, s.tries),
            (&self.priorities, s.priorities),
            (&self.shrink_many, s.shrink_many_calls),
            (&self.visited, s.visited),
            (&self.rotations, s.rotations),
            (&self.restarts, s.restarts),
        ] {
            c.fetch_add(v, Ordering::Relaxed);
        }
    }
}

struct Reclaim<'h, H: VmHost> {
    ctx: Ctx<'h, H, PnPaired, VmAreaA>,
    memcgs: usize,
    /// The variant: how a rotation finds a bin's tail.
    mode: TailMode,
    req: ReclaimRequest,
    counts: Counts,
    /// Per CPU: whether its TLB was conditioned for this instance.
    conditioned: Vec<AtomicBool>,
}

impl<'h, H: VmHost> Reclaim<'h, H> {
    fn build(
        host: &'h H,
        storage: &'h Storage,
        memcgs: usize,
        mode: TailMode,
    ) -> Result<Self, String> {
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.tail_mode = mode;
        cfg.max_memcgs = memcgs + 64;
        let mut ctx = Ctx::new(host, storage, cfg)?;
        for _ in 0..memcgs {
            ctx.add_memcg(None, None)?;
        }
        Ok(Reclaim {
            ctx,
            memcgs,
            mode,
            req: ReclaimRequest::parse(REQUEST).map_err(|e| format!("{REQUEST}: {e}"))?,
            counts: Counts::default(),
            conditioned: (0..host.nr_cpus())
                .map(|_| AtomicBool::new(false))
                .collect(),
        })
    }

    /// The distinct 4 KiB pages the memcgs and their node-0 lruvecs lie on (the pages a
    /// request's walk touches at least).
    fn working_set_pages(&self) -> (usize, usize) {
        let mut memcgs = Vec::with_capacity(self.memcgs);
        let mut lruvecs = Vec::with_capacity(self.memcgs);
        for i in 0..self.memcgs {
            let m = self.ctx.memcg(i);
            memcgs.push(core::ptr::from_ref::<memcg::MemCgroup<PnPaired>>(m) as usize >> 12);
            if let Ok(lv) = m.lruvec(0) {
                lruvecs.push(core::ptr::from_ref(lv) as usize >> 12);
            }
        }
        for v in [&mut memcgs, &mut lruvecs] {
            v.sort_unstable();
            v.dedup();
        }
        (memcgs.len(), lruvecs.len())
    }

    /// Sizes the emulator's TLB on `cpu` to this instance's working set: touches every
    /// memcg and every FIFO entry, then drops every translation of the CPU (more pages than
    /// the single-page flush ceiling: a CR3 reload in the kernel), [`TLB_CONDITIONING_ROUNDS`]
    /// times. TCG grows (or shrinks) its TLB only at such full flushes, by the share of it
    /// the last interval used.
    fn condition_tlb(&self) {
        // More pages than the kernel's single-page flush ceiling (33): a full flush.
        let many = [mm::VirtAddr::new(0); 64];
        for _ in 0..TLB_CONDITIONING_ROUNDS {
            for i in 0..self.memcgs {
                core::hint::black_box(self.ctx.memcg(i).usage());
            }
            for pgdat in self.ctx.tree().node_data() {
                core::hint::black_box(pgdat.memcg_lru().check().ok());
            }
            self.ctx.vm().mmu().flush_tlb_local(&many);
        }
    }
}

impl<H: VmHost> FaultCoreInstance for Reclaim<'_, H> {
    fn batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let cpu = ctx.cpu as usize;
        if let Some(flag) = self.conditioned.get(cpu)
            && !flag.swap(true, Ordering::Relaxed)
        {
            self.condition_tlb();
        }
        let tree = self.ctx.tree();
        let mut stats = ReclaimStats::default();
        let got = tree.memory_reclaim_counted(&tree.root(), cpu, self.req, &mut stats);
        self.counts.add(&stats);
        match got {
            Err(MemcgError::Again { .. }) => {
                self.counts.again.fetch_add(1, Ordering::Relaxed);
                Ok(1)
            }
            Ok(n) => Err(ScenarioError::new(format!(
                "`{REQUEST}` was met ({n} pages): there was reclaimable memory"
            ))),
            Err(e) => Err(ScenarioError::new(format!("`{REQUEST}`: {e:?}"))),
        }
    }

    fn setup_note(&self) -> Option<String> {
        let (memcgs, lruvecs) = self.working_set_pages();
        Some(format!(
            "{} memcgs on {memcgs} 4 KiB pages, their node-0 lruvecs (the FIFO entries) on \
             {lruvecs}; {TLB_CONDITIONING_ROUNDS} TLB conditioning rounds per CPU",
            self.memcgs
        ))
    }

    fn own_counters(&self) -> Vec<(String, i64)> {
        let mut c = Vec::new();
        let k = &self.counts;
        for (name, v) in [
            ("reclaim_eagain", &k.again),
            ("reclaim_tries", &k.tries),
            ("priority_passes", &k.priorities),
            ("shrink_many_calls", &k.shrink_many),
            ("memcgs_visited", &k.visited),
            ("rotations", &k.rotations),
            ("restarts", &k.restarts),
        ] {
            c.push((name.into(), v.load(Ordering::Relaxed) as i64));
        }
        let steps = lru::events::LruEvent::FifoTailStep;
        c.push((steps.name().into(), lru::events::total(steps) as i64));
        c
    }

    /// [`PREMISE`]: every request ended in EAGAIN, after the modelled tries, priority
    /// passes and `shrink_many` calls per request.
    fn premise_checks(&self, runs: &[&Run]) -> Premises {
        let nodes = self.ctx.tree().node_data().len();
        let (tries, priorities, shrink_many) = expected_per_request(nodes);
        let ops = premise::ops(runs);
        let exact = |name: &'static str, counter: &str, want: u64| {
            let figure = premise::per_op(runs, counter)?;
            let ok = ops > 0 && premise::total(runs, counter)? == (want * ops) as i64;
            Ok(PremiseCheck::exactly(name, ok, figure, want))
        };
        // What the patch removes: A walks each bin to its tail on every rotation, B never.
        let steps = premise::per_op(runs, lru::events::LruEvent::FifoTailStep.name())?;
        let tail_walk = match self.mode {
            TailMode::Walk => PremiseCheck::above_zero("tail_walk_steps_per_request", steps),
            TailMode::Cached => PremiseCheck::zero("tail_walk_steps_per_request", steps),
        };
        Ok(vec![
            exact("eagain_per_request", "reclaim_eagain", 1)?,
            exact("tries_per_request", "reclaim_tries", tries)?,
            exact("priority_passes_per_request", "priority_passes", priorities)?,
            exact("shrink_many_per_request", "shrink_many_calls", shrink_many)?,
            tail_walk,
        ])
    }

    fn check_census(&self, _: &VmCensus) -> Result<(), String> {
        for (node, pgdat) in self.ctx.tree().node_data().iter().enumerate() {
            let n = pgdat
                .memcg_lru()
                .check()
                .map_err(|e| format!("node {node}'s memcg FIFO: {e}"))?;
            // Every memcg of ours, and the root.
            if n != self.memcgs + 1 {
                return Err(format!(
                    "node {node}'s memcg FIFO holds {n} memcgs, not {}",
                    self.memcgs + 1
                ));
            }
        }
        Ok(())
    }

    fn ctx(&self) -> &dyn VmCtx {
        &self.ctx
    }

    fn ctx_mut(&mut self) -> &mut dyn VmCtx {
        &mut self.ctx
    }
}

impl<H: VmHost> BenchScenario for Seed002<'_, H> {
    fn name(&self) -> &'static str {
        CATALOG.name
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let memcgs: usize = setup
            .config
            .parse()
            .map_err(|_| ScenarioError::no_config(setup.config))?;
        let mode = match setup.variant {
            "A" => TailMode::Walk,
            "B" => TailMode::Cached,
            v => return Err(ScenarioError::no_variant(v)),
        };
        Ok(Box::new(Reclaim::build(
            self.host,
            setup.storage,
            memcgs,
            mode,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::tests::{counter, leak_a_charge, on, soft};
    use crate::vm::soft::SoftHost;

    fn build<'h>(host: &'h SoftHost, storage: &'h Storage, memcgs: usize) -> Reclaim<'h, SoftHost> {
        Reclaim::build(host, storage, memcgs, TailMode::Cached).expect("built")
    }

    /// Every count of memcgs the catalog runs fits the context's id space, with the root,
    /// and each node's FIFO holds them all.
    #[test]
    fn every_catalog_config_builds_its_memcgs() {
        let host = soft(1, 64);
        let s = Seed002::new(host);
        let storage = Storage::new();
        for config in crate::catalog::scenario("seed002-reclaim").unwrap().configs {
            let inst = s
                .instantiate(&Setup {
                    config,
                    variant: "B",
                    cpus: 1,
                    storage: &storage,
                })
                .unwrap_or_else(|e| panic!("{config} memcgs: {e}"));
            inst.check().unwrap();
            inst.teardown().unwrap();
        }
    }

    #[test]
    fn a_request_fails_with_eagain_and_leaves_every_memcg_in_the_fifo() {
        let host = soft(2, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 10);
        for cpu in 0..2 {
            assert_eq!(inst.run_batch(&on(cpu, u64::MAX)), Ok(1));
            host.quiescent(cpu as usize);
        }
        assert_eq!(counter(&inst, "reclaim_eagain"), 2);
        inst.check().unwrap();
        Box::new(inst).teardown().unwrap();
    }

    /// One request of the seed's `1024M swappiness=0` at 10 memcgs does what the premise
    /// says: 17 tries, 238 priority passes and `shrink_many()` calls per node, each visiting
    /// and rotating every memcg and the root once (their empty lruvecs go young); one CPU,
    /// so no restarts.
    #[test]
    fn a_request_runs_the_priority_loop_the_premise_counts() {
        let host = soft(1, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 10);
        let nodes = inst.ctx.tree().node_data().len() as i64;
        let (tries, priorities, shrink_many) = expected_per_request(nodes as usize);
        assert_eq!(
            (tries, priorities, shrink_many),
            (17, 238, 238 * nodes as u64)
        );
        for n in 1..=2 {
            assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(1));
            host.quiescent(0);
            assert_eq!(counter(&inst, "reclaim_eagain"), n);
            assert_eq!(counter(&inst, "reclaim_tries"), n * 17);
            assert_eq!(counter(&inst, "priority_passes"), n * 238);
            assert_eq!(counter(&inst, "shrink_many_calls"), n * 238 * nodes);
            assert_eq!(counter(&inst, "memcgs_visited"), n * 238 * nodes * 11);
            assert_eq!(counter(&inst, "rotations"), n * 238 * nodes * 11);
            assert_eq!(counter(&inst, "restarts"), 0);
        }
        inst.check().unwrap();
        // The premises over runs with those counts hold; one try short does not.
        let k = |name| counter(&inst, name);
        let run = |tries_off: i64| {
            crate::scenarios::tests::run_with(
                &[
                    ("reclaim_eagain", k("reclaim_eagain")),
                    ("reclaim_tries", k("reclaim_tries") - tries_off),
                    ("priority_passes", k("priority_passes")),
                    ("shrink_many_calls", k("shrink_many_calls")),
                    ("memcg_fifo_tail_steps", 0),
                ],
                2,
            )
        };
        assert!(inst.premises(&[&run(0)]).unwrap().iter().all(|p| p.held));
        let short = inst.premises(&[&run(1)]).unwrap();
        assert!(!short[1].held, "{short:?}");
        assert_eq!(short[1].figure, 33.0 / 2.0);
        Box::new(inst).teardown().unwrap();
    }

    /// What the patch removes, counted: A's rotations walk each bin to its tail, B's
    /// never; and the premise asks exactly that of each.
    #[test]
    fn a_walks_to_the_tail_on_rotation_and_b_does_not() {
        use lru::events::{LruEvent, this_cpu_count};
        let host = soft(1, 64);
        let steps = |mode| {
            let storage = Storage::new();
            let inst = Reclaim::build(host, &storage, 100, mode).expect("built");
            let before = this_cpu_count(LruEvent::FifoTailStep);
            assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(1));
            host.quiescent(0);
            let n = this_cpu_count(LruEvent::FifoTailStep) - before;
            let counts = |steps| {
                let k = |name| counter(&inst, name);
                crate::scenarios::tests::run_with(
                    &[
                        ("reclaim_eagain", k("reclaim_eagain")),
                        ("reclaim_tries", k("reclaim_tries")),
                        ("priority_passes", k("priority_passes")),
                        ("shrink_many_calls", k("shrink_many_calls")),
                        ("memcg_fifo_tail_steps", steps),
                    ],
                    1,
                )
            };
            let held = |steps| inst.premises(&[&counts(steps)]).unwrap()[4].held;
            let judged = (held(0), held(n as i64));
            Box::new(inst).teardown().unwrap();
            (n, judged)
        };
        let (a, a_held) = steps(TailMode::Walk);
        // 101 memcgs over 8 bins: a rotation walks about 6 entries of its new bin.
        assert!(a > 238 * 101, "{a} steps in a request of A");
        assert_eq!(a_held, (false, true));
        let (b, b_held) = steps(TailMode::Cached);
        assert_eq!(b, 0);
        assert_eq!(b_held, (true, true));
    }

    /// Each CPU's first batch conditions its TLB (one full flush per round), later batches
    /// and other instances' CPUs do not.
    #[test]
    fn each_cpu_conditions_its_tlb_once_per_instance() {
        let host = soft(2, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 10);
        let flushes = || inst.ctx.vm().mmu().local_flushes();
        // Each round flushes 64 pages' worth: more than the ceiling, a full flush.
        let per_round = 64 * TLB_CONDITIONING_ROUNDS as u64;
        let base = flushes();
        assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(1));
        assert_eq!(flushes(), base + per_round);
        assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(1));
        assert_eq!(flushes(), base + per_round);
        host.quiescent(0);
        assert_eq!(inst.run_batch(&on(1, u64::MAX)), Ok(1));
        assert_eq!(flushes(), base + 2 * per_round);
        host.quiescent(1);
        let (memcgs, lruvecs) = inst.working_set_pages();
        assert!(memcgs >= 1 && lruvecs >= 1, "{memcgs} {lruvecs}");
        assert!(inst.note().unwrap().contains("10 memcgs on"));
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn check_fails_on_a_memcg_it_did_not_build_and_teardown_on_a_leaked_charge() {
        let host = soft(1, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 10);
        let extra = inst.ctx.tree().root().create_child().unwrap();
        assert!(
            inst.check().is_err(),
            "eleven memcgs and the root in the FIFO"
        );
        let id = extra.id();
        drop(extra);
        inst.ctx.tree().offline(id, 0).unwrap();
        Box::new(inst).teardown().unwrap();

        let storage = Storage::new();
        let inst = build(host, &storage, 10);
        leak_a_charge(inst.ctx.memcg(3));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }
}
