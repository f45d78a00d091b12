//! `seed000-refault`: every CPU reads random pages of its own file-like object, all in ONE
//! memcg whose memory.max is a third of what they read, so nearly every read refaults (seed
//! 000: fio randread, psync, bs=4k, buffered, 24 files of 128 MiB on brd, all jobs in one
//! memcg with memory.max=1G; scaled down, one file per CPU).
//!
//! A read that misses finds the page's shadow entry: `lru_gen_refault` adds to the lruvec's
//! lockless `refaulted[][][]` (and the eviction before it to `evicted[][][]`), while every
//! LRU add on every CPU reads `enabled` and reclaim's FIFO walk reads `gen`/`seg`/`list`.
//! Both variants use mainline's `mem_cgroup_per_node` (the lruvec after the memcg-v1
//! fields, not line-aligned) and differ in nothing but `lru_gen_folio`: in A (Linux before
//! the seed's patch) the file type's `refaulted[]` counters of every tier share the line of
//! `enabled`/`gen`/`seg`/`list`, as the seed says of its kernel; in B they sit in a group of
//! their own. That placement follows the seed's statement, not Linux's declarations:
//! `memcg::pn::mainline` lays the structs out as Linux 6.14+ declares them with the seed's
//! configuration, and there the lruvec starts at 72 and `lrugen` 16 bytes into its line, so
//! only tier 3 of the file counters (working-set refaults, which random reads like these
//! and the seed's almost never make) shares the node's line. The seed's struct is 2,176
//! bytes where the declared one is 1,984, and no whole field reproduces the difference, so
//! its offsets cannot be computed; `memcg::pn::SEED000_SHIFT` (24 bytes after the memcg-v1
//! fields, in both variants) is the smallest move of `lrugen` that makes the seed's
//! statement hold. Everything else in the layout is the declared one, asserted at compile
//! time against `memcg::pn::mainline`, and `kx layout` prints both.
//! Each runs with its `mem_cgroup_per_node` at +0 and at +64 of a 128-byte pair
//! (every object of the slab at the same placement), so the pairings of the 128-byte
//! prefetcher are the same for A and B at each placement. MGLRU is on, as in the seed's
//! kernel; the backing store's contents are checked on every read, as brd copies the page.
//! One operation is one page read.
//!
//! Counted per run: the increments of `evicted[]` and `refaulted[]` per type and tier
//! (`lru::events`), and how many of them hit a counter on the FIFO node's line in this
//! variant's layout (`refaulted_on_node_line`, `evicted_on_node_line`); refaults that
//! restored the working-set flag (`workingset_restore`).
//!
//! Premises, over each variant's measured runs: reads refault (`refaults` per read above
//! zero); in A at least 90% of the `refaulted[]` increments land on the node's line, in B
//! none; and at two CPUs or more, across CPUs: a `refaulted[]` counter is added to by
//! another CPU between two additions of one (`refaulted_handoffs_per_op` above zero,
//! `ksync::handoff`), so the line those counters sit on moves between CPUs. The memcg
//! tree's lock is never taken on the measured path (`tree_lock_acquisitions_per_op` zero:
//! the reclaim walk is `mem_cgroup_iter()`'s, under RCU), as Linux takes no
//! `cgroup_mutex` there.
//!
//! The page counter moves too, as it would in Linux: the memcg runs at its memory.max, where
//! `try_charge_memcg()`'s batch of `MEMCG_CHARGE_BATCH` pages does not fit, so after
//! reclaim it retries with the pages asked for (`batch = nr_pages; goto retry`) and every
//! charge writes `memory.usage` (and the ancestors'); the per-CPU stock absorbs nothing
//! there. Eviction uncharges in batches (`uncharge_folios`). So the `page_counter` lines
//! are among the most moved of every variant (about one move per operation under
//! `kx bench --coherence`), in A and in B alike: they are not the seed's, and Linux's would
//! move as much at this limit.
//!
//! The invariant after every run: the memcg is within its limit, plus the checker's.

use crate::engine::premise::{self, PremiseCheck, Premises};
use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup, Storage};
use crate::record::Run;
use crate::scenarios::fault_core::{FaultCoreInstance, VmCtx, split_placement};
use crate::vm::{Ctx, Pn, PnGenBase, PnGenGrouped, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::CachePadded;
use ksync::LockClass;
use lru::events::TierCounter;
use lru::lock_classes::RefaultedWord;
use lru::lru_gen::MAX_NR_TIERS;
use memcg::PnPlacement;
use memcg::lock_classes::MemcgTreeLock;
use mm::check::VmCensus;
use mm::context::VmConfig;
use mm::object::ObjectKind;
use mm::vma::VmAreaA;

mod entry;
pub use entry::CATALOG;

/// Reads per batch.
const BATCH: u64 = 32;
/// What the readers read over memory.max (the seed: 24 x 128 MiB under 1 GiB).
const OVERCOMMIT: u64 = 3;
/// The least share of `refaulted[]` increments on the node's line for A's premise.
pub const A_NODE_LINE_SHARE: f64 = 0.9;

/// memory.max for `cpus` readers: room for every CPU's in-flight charges (its stock and
/// folio batch) and reclaim's batches, then some.
#[must_use]
pub fn limit(cpus: u32) -> u64 {
    256 + 80 * u64::from(cpus)
}

/// The counter names of one type's tiers: `{evicted,refaulted}_{anon,file}_t{0..3}`.
fn tier_name(counter: TierCounter, ty: usize, tier: usize) -> String {
    let c = match counter {
        TierCounter::Evicted => "evicted",
        TierCounter::Refaulted => "refaulted",
    };
    let t = if ty == lru::folio::LRU_GEN_FILE {
        "file"
    } else {
        "anon"
    };
    format!("{c}_{t}_t{tier}")
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
    /// Whether this is the seed's "before" (A), for the premise.
    before: bool,
}

impl<'h, H: VmHost, P: Pn> Refault<'h, H, P> {
    fn build(
        host: &'h H,
        storage: &'h Storage,
        cpus: u32,
        placement: PnPlacement,
    ) -> Result<Self, String> {
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.max_memcgs = 64;
        cfg.placement = placement;
        let mut ctx = Ctx::new(host, storage, cfg)?;
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
            before: !<P::Gen as lru::LruGenFolio>::STATS_GROUPED,
        })
    }

    /// Increments of `counter` so far, and how many of them hit a counter on the FIFO
    /// node's line in layout `P`.
    fn tier_counts(counter: TierCounter) -> (Vec<(String, i64)>, i64) {
        let mut out = Vec::new();
        let mut on_line = 0;
        for ty in 0..lru::folio::ANON_AND_FILE {
            for tier in 0..MAX_NR_TIERS {
                let n = lru::events::tier_total(counter, ty, tier) as i64;
                if memcg::pn::tier_shares_node_line::<P>(counter == TierCounter::Evicted, ty, tier)
                {
                    on_line += n;
                }
                out.push((tier_name(counter, ty, tier), n));
            }
        }
        (out, on_line)
    }
}

impl<H: VmHost, P: Pn> FaultCoreInstance for Refault<'_, H, P> {
    fn batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
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

    fn own_counters(&self) -> Vec<(String, i64)> {
        let (evicted, evicted_on_line) = Self::tier_counts(TierCounter::Evicted);
        let (refaulted, refaulted_on_line) = Self::tier_counts(TierCounter::Refaulted);
        let refaulted_all: i64 = refaulted.iter().map(|(_, n)| n).sum();
        let mut c = evicted;
        c.extend(refaulted);
        c.push(("evicted_on_node_line".into(), evicted_on_line));
        c.push(("refaulted_on_node_line".into(), refaulted_on_line));
        c.push(("refaulted_all_tiers".into(), refaulted_all));
        c
    }

    fn premise_classes(&self) -> Vec<&'static ksync::ClassData> {
        vec![RefaultedWord::data(), MemcgTreeLock::data()]
    }

    fn premise_checks(&self, runs: &[&Run]) -> Premises {
        let all = premise::total(runs, "refaulted_all_tiers")?;
        let share = if all == 0 {
            0.0
        } else {
            premise::total(runs, "refaulted_on_node_line")? as f64 / all as f64
        };
        let line = if self.before {
            PremiseCheck::at_least("refaulted_on_node_line_share", share, A_NODE_LINE_SHARE)
        } else {
            PremiseCheck::zero("refaulted_on_node_line_share", share)
        };
        Ok(vec![
            PremiseCheck::above_zero("refaults_per_op", premise::per_op(runs, "refaults")?),
            line,
            PremiseCheck::above_zero(
                "refaulted_handoffs_per_op",
                premise::handoffs_per_op(runs, RefaultedWord::NAME)?,
            )
            .across_cpus(),
            PremiseCheck::zero(
                "tree_lock_acquisitions_per_op",
                premise::acquisitions_per_op(runs, MemcgTreeLock::NAME)?,
            ),
        ])
    }

    fn check_census(&self, _: &VmCensus) -> Result<(), String> {
        self.ctx.check_within_max(0)
    }

    fn ctx(&self) -> &dyn VmCtx {
        &self.ctx
    }

    fn ctx_mut(&mut self) -> &mut dyn VmCtx {
        &mut self.ctx
    }
}

impl<H: VmHost> BenchScenario for Seed000<'_, H> {
    fn name(&self) -> &'static str {
        CATALOG.name
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        if setup.config != "file" {
            return Err(ScenarioError::no_config(setup.config));
        }
        let bad = || ScenarioError::no_variant(setup.variant);
        let (layout, placement) = split_placement(setup.variant).ok_or_else(bad)?;
        Ok(match layout {
            "A" => Box::new(Refault::<H, PnGenBase>::build(
                self.host,
                setup.storage,
                setup.cpus,
                placement,
            )?),
            "B" => Box::new(Refault::<H, PnGenGrouped>::build(
                self.host,
                setup.storage,
                setup.cpus,
                placement,
            )?),
            _ => return Err(bad()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::tests::{counter, leak_a_charge, on, soft};
    use crate::vm::soft::SoftHost;
    use std::collections::BTreeSet;

    fn build<'h>(
        host: &'h SoftHost,
        storage: &'h Storage,
        cpus: u32,
    ) -> Refault<'h, SoftHost, PnGenGrouped> {
        Refault::build(host, storage, cpus, PnPlacement::PairStart).expect("built")
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
            let storage = Storage::new();
            let inst = build(host, &storage, cpus);
            assert_eq!(inst.ctx.nr_memcgs(), 1, "one memcg for every reader");
            assert_eq!(inst.ctx.memcg(0).memory().max(), limit(cpus));
            Box::new(inst).teardown().unwrap();
        }
    }

    #[test]
    fn the_readers_objects_are_three_times_memory_max() {
        let host = soft(3, 64);
        for cpus in 1..=3u32 {
            let storage = Storage::new();
            let inst = build(host, &storage, cpus);
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
        let storage = Storage::new();
        let inst = build(host, &storage, READERS);
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
        let storage = Storage::new();
        let mut inst = build(host, &storage, 1);
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

    /// The variants are A and B at both placements, and each memcg's per-node struct
    /// sits at its variant's placement, the same for A and B.
    #[test]
    fn a_and_b_at_both_placements_differ_only_in_lru_gen_folio() {
        let host = soft(1, 64);
        let scenario = Seed000::new(host);
        for v in ["A@+0", "B@+0", "A@+64", "B@+64"] {
            let storage = Storage::new();
            let setup = Setup {
                config: "file",
                variant: v,
                cpus: 1,
                storage: &storage,
            };
            scenario.instantiate(&setup).unwrap().teardown().unwrap();
        }
        for v in ["A", "C@+0", "A@+32"] {
            let storage = Storage::new();
            let setup = Setup {
                config: "file",
                variant: v,
                cpus: 1,
                storage: &storage,
            };
            assert!(scenario.instantiate(&setup).is_err(), "{v}");
        }
        for placement in [PnPlacement::PairStart, PnPlacement::PairMiddle] {
            let storage = Storage::new();
            let a = Refault::<SoftHost, PnGenBase>::build(host, &storage, 1, placement).unwrap();
            let b = Refault::<SoftHost, PnGenGrouped>::build(host, &storage, 1, placement).unwrap();
            let at = |addr: usize| addr % 128;
            let pa = a.ctx.memcg(0).lruvec(0).unwrap() as *const _ as usize
                - <PnGenBase as lru::LruvecHost>::LRUVEC_OFFSET;
            let pb = b.ctx.memcg(0).lruvec(0).unwrap() as *const _ as usize
                - <PnGenGrouped as lru::LruvecHost>::LRUVEC_OFFSET;
            assert_eq!(at(pa), placement.offset());
            assert_eq!(at(pb), placement.offset());
            assert!(a.before && !b.before);
            Box::new(a).teardown().unwrap();
            Box::new(b).teardown().unwrap();
        }
    }

    /// In A every file tier of `refaulted[]` is on the node's line, in B none; the
    /// workload's refaults are counted per tier and the premise judges the share.
    #[test]
    fn refault_increments_land_on_the_node_line_in_a_only() {
        for tier in 0..MAX_NR_TIERS {
            let file = lru::folio::LRU_GEN_FILE;
            assert!(memcg::pn::tier_shares_node_line::<PnGenBase>(
                false, file, tier
            ));
            assert!(!memcg::pn::tier_shares_node_line::<PnGenGrouped>(
                false, file, tier
            ));
            assert!(!memcg::pn::tier_shares_node_line::<PnGenGrouped>(
                true, file, tier
            ));
        }
        ksync::cpu::set_this_thread_cpu(ksync::MAX_CPUS - 5);
        let host = soft(1, 64);
        let storage = Storage::new();
        let a = Refault::<SoftHost, PnGenBase>::build(host, &storage, 1, PnPlacement::PairStart)
            .unwrap();
        let before = counter(&a, "refaulted_all_tiers");
        let on_line = counter(&a, "refaulted_on_node_line");
        let refaults = counter(&a, "refaults");
        // Enough reads to cycle the working set through memory.max a few times.
        for _ in 0..4 * OVERCOMMIT * limit(1) / BATCH {
            a.run_batch(&on(0, u64::MAX)).unwrap();
        }
        let all = counter(&a, "refaulted_all_tiers") - before;
        assert!(all > 0, "the reads refaulted");
        assert!(counter(&a, "refaults") - refaults >= all);
        assert_eq!(
            counter(&a, "refaulted_on_node_line") - on_line,
            all,
            "all file tiers"
        );
        let file_tiers: i64 = (0..MAX_NR_TIERS)
            .map(|t| counter(&a, &tier_name(TierCounter::Refaulted, 1, t)))
            .sum();
        assert!(file_tiers > 0);
        Box::new(a).teardown().unwrap();

        let run = |on_line, all| {
            crate::scenarios::tests::with_lock(
                crate::scenarios::tests::run_with(
                    &[
                        ("refaults", all),
                        ("refaulted_on_node_line", on_line),
                        ("refaulted_all_tiers", all),
                    ],
                    100,
                ),
                RefaultedWord::NAME,
                all as u64,
                0,
                10,
            )
        };
        let storage = Storage::new();
        let a = Refault::<SoftHost, PnGenBase>::build(host, &storage, 1, PnPlacement::PairStart)
            .unwrap();
        let b =
            Refault::<SoftHost, PnGenGrouped>::build(host, &storage, 1, PnPlacement::PairMiddle)
                .unwrap();
        let held =
            |inst: &dyn Instance, r| -> Vec<bool> { crate::scenarios::tests::held(inst, &[r]) };
        assert_eq!(held(&a, run(95, 100)), [true, true, true, true]);
        assert_eq!(
            held(&a, run(80, 100)),
            [true, false, true, true],
            "80% on the line"
        );
        assert_eq!(held(&b, run(0, 100)), [true, true, true, true]);
        assert_eq!(held(&b, run(1, 100)), [true, false, true, true]);
        // No refault at all: neither the refault premise nor A's line share holds.
        assert_eq!(held(&a, run(0, 0)), [false, false, true, true]);
        // No counter handed between CPUs.
        let alone = |inst: &dyn Instance| {
            let mut r = run(95, 100);
            r.locks.get_mut(RefaultedWord::NAME).unwrap().handoffs = 0;
            held(inst, r)
        };
        assert_eq!(alone(&a), [true, true, false, true]);
        // The memcg tree's lock taken on the measured path.
        let locked = crate::scenarios::tests::with_lock(run(95, 100), MemcgTreeLock::NAME, 1, 0, 0);
        assert_eq!(held(&a, locked), [true, true, true, false]);
        let recorded = crate::scenarios::tests::as_recorded(&a, &[run(95, 100)]);
        let p = a.premises(&[&recorded[0]]).unwrap();
        assert!(!p[1].across_cpus && p[2].across_cpus);
        // A run that did not list the tree lock's class (it did not record) is an error.
        assert!(a.premises(&[&run(95, 100)]).is_err());
        Box::new(a).teardown().unwrap();
        Box::new(b).teardown().unwrap();
    }

    #[test]
    fn check_passes_at_memory_max_and_fails_on_a_leaked_charge() {
        let host = soft(1, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 1);
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
        let storage = Storage::new();
        let inst = build(host, &storage, 2);
        for cpu in 0..2 {
            inst.run_batch(&on(cpu, u64::MAX)).unwrap();
        }
        Box::new(inst).teardown().unwrap();
        assert_eq!(host.free_frames(), free);

        let storage = Storage::new();
        let inst = build(host, &storage, 2);
        leak_a_charge(inst.ctx.memcg(0));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }
}
