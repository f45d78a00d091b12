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
//! `MAX_RECLAIM_RETRIES` passes reclaimed nothing and then fails with `EAGAIN`, as the
//! seed's writes did. One operation is one whole request.
//!
//! The invariant after every run: each node's FIFO is consistent (every entry in the bin
//! and generation it records, the cached tails right, the count right) and holds every
//! memcg, plus the checker's.

use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use crate::vm::{Ctx, PnPaired, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use lru::TailMode;
use memcg::MemcgError;
use mm::vm::context::VmConfig;
use mm::vm::vma::VmAreaA;

/// The request every CPU writes (the seed's).
pub const REQUEST: &str = "1024M swappiness=0";

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

struct Reclaim<'h, H: VmHost> {
    ctx: Ctx<'h, H, PnPaired, VmAreaA>,
    memcgs: usize,
    again: AtomicU64,
}

impl<'h, H: VmHost> Reclaim<'h, H> {
    fn build(host: &'h H, memcgs: usize, mode: TailMode) -> Result<Self, String> {
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.tail_mode = mode;
        cfg.max_memcgs = memcgs + 64;
        let mut ctx = Ctx::new(host, cfg)?;
        for _ in 0..memcgs {
            ctx.add_memcg(None, None)?;
        }
        Ok(Reclaim {
            ctx,
            memcgs,
            again: AtomicU64::new(0),
        })
    }
}

impl<H: VmHost> Instance for Reclaim<'_, H> {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let root = self.ctx.tree().root();
        match root.memory_reclaim_write(ctx.cpu as usize, REQUEST) {
            Err(MemcgError::Again { .. }) => {
                self.again.fetch_add(1, Ordering::Relaxed);
                Ok(1)
            }
            Ok(n) => Err(ScenarioError::new(format!(
                "`{REQUEST}` was met ({n} pages): there was reclaimable memory"
            ))),
            Err(e) => Err(ScenarioError::new(format!("`{REQUEST}`: {e:?}"))),
        }
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let mut c = self.ctx.counters();
        c.push((
            "reclaim_eagain".into(),
            self.again.load(Ordering::Relaxed) as i64,
        ));
        c
    }

    fn check(&self) -> Result<(), String> {
        self.ctx.check()?;
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

    fn teardown(mut self: Box<Self>) -> Result<(), ScenarioError> {
        self.ctx.shutdown().map_err(ScenarioError::from)
    }
}

impl<H: VmHost> BenchScenario for Seed002<'_, H> {
    fn name(&self) -> &'static str {
        "seed002-reclaim"
    }

    fn floor_relative(&self) -> bool {
        false
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let memcgs: usize = setup
            .config
            .parse()
            .map_err(|_| ScenarioError::new(format!("no config `{}`", setup.config)))?;
        let mode = match setup.variant {
            "A" => TailMode::Walk,
            "B" => TailMode::Cached,
            v => return Err(ScenarioError::new(format!("no variant `{v}`"))),
        };
        Ok(Box::new(Reclaim::build(self.host, memcgs, mode)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::tests::{counter, leak_a_charge, on, soft};
    use crate::vm::soft::SoftHost;

    fn build(host: &SoftHost, memcgs: usize) -> Reclaim<'_, SoftHost> {
        Reclaim::build(host, memcgs, TailMode::Cached).expect("built")
    }

    /// Every count of memcgs the catalog runs fits the context's id space, with the root,
    /// and each node's FIFO holds them all.
    #[test]
    fn every_catalog_config_builds_its_memcgs() {
        let host = soft(1, 64);
        let s = Seed002::new(host);
        for config in crate::catalog::scenario("seed002-reclaim").unwrap().configs {
            let inst = s
                .instantiate(&Setup {
                    config,
                    variant: "B",
                    cpus: 1,
                })
                .unwrap_or_else(|e| panic!("{config} memcgs: {e}"));
            inst.check().unwrap();
            inst.teardown().unwrap();
        }
    }

    #[test]
    fn a_request_fails_with_eagain_and_leaves_every_memcg_in_the_fifo() {
        let host = soft(2, 64);
        let inst = build(host, 10);
        for cpu in 0..2 {
            assert_eq!(inst.run_batch(&on(cpu, u64::MAX)), Ok(1));
            host.quiescent(cpu as usize);
        }
        assert_eq!(counter(&inst, "reclaim_eagain"), 2);
        inst.check().unwrap();
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn check_fails_on_a_memcg_it_did_not_build_and_teardown_on_a_leaked_charge() {
        let host = soft(1, 64);
        let inst = build(host, 10);
        let extra = inst.ctx.tree().root().create_child().unwrap();
        assert!(
            inst.check().is_err(),
            "eleven memcgs and the root in the FIFO"
        );
        let id = extra.id();
        drop(extra);
        inst.ctx.tree().offline(id, 0).unwrap();
        Box::new(inst).teardown().unwrap();

        let inst = build(host, 10);
        leak_a_charge(inst.ctx.memcg(3));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }

    #[test]
    fn its_rates_are_not_fractions_of_the_fault_floor() {
        let host = soft(1, 16);
        assert!(!Seed002::new(host).floor_relative());
    }
}
