//! `seed004-readtwice`: vm-scalability's `case-lru-file-readtwice`, the benchmark of seed
//! 004 (Alex Shi's per-memcg `lru_lock` series): per memcg one file and two readers started
//! together, each streaming the whole file with 4 KiB reads; the files are larger than the
//! memory their memcgs may use, so reclaim runs all along.
//!
//! The seed ran 208 readers in 104 memcgs on 104 CPUs: one memcg per CPU, one file per
//! memcg, two `dd` readers per file, and the scheduler does not keep the two readers of one
//! file on one CPU. Here every CPU runs two readers, interleaved as two `dd` processes
//! sharing a CPU, each reading [`TURN`] pages per turn (a scheduler slice's worth) before
//! the other runs: CPU c runs the first reader of memcg c's file and the second reader of
//! memcg c-1's (of the last memcg's on CPU 0), so with two CPUs or more each memcg's lock
//! is taken by two CPUs, as the seed's were; at one CPU both readers of the one memcg
//! share it. A reader allocates on its CPU's node. The first reader's read of a page
//! misses (charge, page cache,
//! `lru_add` batch onto the inactive list, `folio_mark_accessed` sets it referenced); the
//! second reader's read, a turn later, finds it on the LRU, referenced, and activates it
//! (`folio_activate`: the activate batch, moved under the lruvec's lock), which is what
//! dominates that case's lock time. A file is [`FILE_PAGES`] pages under a memory.max of
//! [`LIMIT`] pages, so by the time the cursors wrap around the file's first pages were
//! reclaimed (isolated under the same lock, evicted, left as shadows) and refault. The
//! classic active/inactive lists are used, as in the seed's kernel.
//!
//! Linux activates a folio that is still in this CPU's `lru_add` batch without the lock
//! (`__lru_cache_activate_folio`); this model does not, so the second reader's reads of
//! the last pages of a turn that are still batched (at most `FOLIO_BATCH_SIZE - 1` of each
//! [`TURN`]) leave them referenced but inactive.
//!
//! A: every lruvec of a node takes the node's one lock (`pgdat->lru_lock`, before the
//! series); B: each memcg's lruvec its own (`lruvec->lru_lock`). One operation is one page
//! read.
//!
//! Premises, over each variant's measured runs: activations happen (`activations` per
//! read above zero), reclaim runs (`evicted` per read above zero), and the lock class is
//! the variant's: A takes `pgdat->lru_lock` and never `lruvec->lru_lock`, B the reverse.
//! At two CPUs or more, across CPUs: the variant's lock changes hands between CPUs
//! (`variant_lock_handoffs_per_op` above zero: `ksync::handoff`), in A because every
//! memcg's readers take the node's one lock, in B because each memcg's two readers run on
//! two CPUs; and A's shared lock is contended (`node_lock_contended_per_op` above zero: an
//! acquisition found it held by another CPU). B's contention is in the results' lock
//! statistics beside A's. The memcg tree's lock is never taken on the measured path
//! (`tree_lock_acquisitions_per_op` zero: reclaim walks the memcg under RCU).
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
//! The invariant after every run: no memcg is above its limit, plus the checker's.

use crate::engine::premise::{self, PremiseCheck, Premises};
use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use crate::record::Run;
use crate::scenarios::fault_core::{FaultCoreInstance, VmCtx};
use crate::vm::{Ctx, PnPaired, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::CachePadded;
use ksync::LockClass;
use lru::LruvecLock;
use lru::lock_classes::{LruLock, PgdatLruLock};
use memcg::lock_classes::MemcgTreeLock;
use mm::check::VmCensus;
use mm::context::VmConfig;
use mm::object::ObjectKind;
use mm::vma::VmAreaA;

mod entry;
pub use entry::CATALOG;

/// Pages of each memcg's file (4 MiB).
pub const FILE_PAGES: u64 = 1024;
/// memory.max of each memcg, pages: three quarters of its file.
pub const LIMIT: u64 = 768;
/// Pages a reader reads before the other reader of its file runs.
pub const TURN: u64 = 128;
/// Readers per file (and per memcg).
pub const READERS: u64 = 2;

// The file must not fit under memory.max (reclaim runs), and a turn must (the second
// reader finds the first one's pages).
const _: () = assert!(FILE_PAGES > LIMIT && LIMIT > TURN);
/// The node lock's class name (variant A).
pub const NODE_LOCK: &str = PgdatLruLock::NAME;
/// The per-memcg lock's class name (variant B).
pub const MEMCG_LOCK: &str = LruLock::NAME;

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

/// One CPU's two readers: how far each has read, and whose turn it is.
#[derive(Default)]
struct Readers {
    /// Pages read by the CPU's two readers together; reader `(n / TURN) % 2` reads next.
    reads: AtomicU64,
}

struct ReadTwice<'h, H: VmHost> {
    ctx: Ctx<'h, H, PnPaired, VmAreaA>,
    lock: LruvecLock,
    /// Per CPU: its two readers.
    pairs: Vec<CachePadded<Readers>>,
    nodes: Vec<u32>,
}

impl<'h, H: VmHost> ReadTwice<'h, H> {
    fn build(host: &'h H, setup: &Setup<'_, 'h>, lock: LruvecLock) -> Result<Self, String> {
        if setup.config != "2-per-memcg" {
            return Err(ScenarioError::no_config(setup.config).0);
        }
        let cpus = setup.cpus as usize;
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.mglru = false;
        cfg.lru_lock = lock;
        cfg.max_memcgs = cpus + 16;
        let mut ctx = Ctx::new(host, setup.storage, cfg)?;
        for _ in 0..cpus {
            ctx.add_memcg(None, Some(LIMIT))?;
            ctx.add_object(ObjectKind::File, FILE_PAGES as usize);
        }
        Ok(ReadTwice {
            ctx,
            lock,
            pairs: (0..cpus).map(|_| CachePadded(Readers::default())).collect(),
            nodes: (0..cpus).map(|c| host.node_of(c)).collect(),
        })
    }

    /// The memcg (and file) whose reader `reader` (0: first, 1: second) runs on CPU `i` of
    /// `cpus`: the first reader of memcg `i`, the second of memcg `i - 1`.
    fn memcg_of(i: usize, reader: u64, cpus: usize) -> usize {
        if reader == 0 {
            i
        } else {
            (i + cpus - 1) % cpus
        }
    }

    /// Which of a CPU's two readers reads at the CPU's `n`th read, and which page of its
    /// file: both readers go through their files in order, a turn each in alternation, so
    /// the second reader of a file runs one turn behind its first (on the next CPU).
    fn page(n: u64) -> (u64, u64) {
        let turn = n / TURN;
        let reader = turn % READERS;
        // Reads this reader did before: its own turns so far.
        let own = (turn / READERS) * TURN + n % TURN;
        (reader, own % FILE_PAGES)
    }
}

impl<H: VmHost> FaultCoreInstance for ReadTwice<'_, H> {
    fn batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let (cpu, i) = (ctx.cpu as usize, ctx.index as usize);
        let first = self.pairs[i].0.reads.load(Ordering::Relaxed);
        let (reader, _) = Self::page(first);
        let m = Self::memcg_of(i, reader, self.pairs.len());
        let obj = self.ctx.object(m);
        let memcg = self.ctx.memcg(m);
        // One turn of one reader at most.
        let n = (TURN - first % TURN).min(ctx.max_ops);
        for k in first..first + n {
            let (_, page) = Self::page(k);
            self.ctx
                .vm()
                .filemap_read(obj, memcg, cpu, self.nodes[i], page, false)
                .map_err(|e| format!("read of page {page}: {e:?}"))?;
        }
        self.pairs[i].0.reads.store(first + n, Ordering::Relaxed);
        Ok(n)
    }

    fn own_counters(&self) -> Vec<(String, i64)> {
        let active: u64 = (0..self.ctx.nr_memcgs())
            .filter_map(|i| self.ctx.memcg(i).lruvec(0).ok())
            .map(|lv| lv.lru_size(lru::LruList::ActiveFile) as u64)
            .sum();
        vec![("active_file".into(), active as i64)]
    }

    fn premise_classes(&self) -> Vec<&'static ksync::ClassData> {
        vec![PgdatLruLock::data(), LruLock::data(), MemcgTreeLock::data()]
    }

    fn premise_checks(&self, runs: &[&Run]) -> Premises {
        let (taken, not_taken) = match self.lock {
            LruvecLock::Node => (NODE_LOCK, MEMCG_LOCK),
            LruvecLock::Own => (MEMCG_LOCK, NODE_LOCK),
        };
        let named = |mut p: PremiseCheck, class: &str| {
            p.expect = format!("{} ({class})", p.expect);
            p
        };
        let mut checks = vec![
            PremiseCheck::above_zero("activations_per_op", premise::per_op(runs, "activations")?),
            PremiseCheck::above_zero("evicted_per_op", premise::per_op(runs, "evicted")?),
            named(
                PremiseCheck::above_zero(
                    "variant_lock_acquisitions_per_op",
                    premise::acquisitions_per_op(runs, taken)?,
                ),
                taken,
            ),
            named(
                PremiseCheck::zero(
                    "other_lock_acquisitions_per_op",
                    premise::acquisitions_per_op(runs, not_taken)?,
                ),
                not_taken,
            ),
            named(
                PremiseCheck::above_zero(
                    "variant_lock_handoffs_per_op",
                    premise::handoffs_per_op(runs, taken)?,
                )
                .across_cpus(),
                taken,
            ),
            PremiseCheck::zero(
                "tree_lock_acquisitions_per_op",
                premise::acquisitions_per_op(runs, MemcgTreeLock::NAME)?,
            ),
        ];
        if self.lock == LruvecLock::Node {
            checks.push(named(
                PremiseCheck::above_zero(
                    "node_lock_contended_per_op",
                    premise::contended_per_op(runs, NODE_LOCK)?,
                )
                .across_cpus(),
                NODE_LOCK,
            ));
        }
        Ok(checks)
    }

    fn check_census(&self, _: &VmCensus) -> Result<(), String> {
        for i in 0..self.ctx.nr_memcgs() {
            self.ctx
                .check_within_max(i)
                .map_err(|e| format!("memcg {i}: {e}"))?;
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

impl<H: VmHost> BenchScenario for Seed004<'_, H> {
    fn name(&self) -> &'static str {
        CATALOG.name
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let lock = match setup.variant {
            "A" => LruvecLock::Node,
            "B" => LruvecLock::Own,
            v => return Err(ScenarioError::no_variant(v)),
        };
        Ok(Box::new(ReadTwice::build(self.host, setup, lock)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Storage;
    use crate::scenarios::tests::{counter, leak_a_charge, on, run_with, soft, with_lock};
    use crate::vm::soft::SoftHost;

    fn build<'h>(
        host: &'h SoftHost,
        storage: &'h Storage,
        cpus: u32,
        lock: LruvecLock,
    ) -> ReadTwice<'h, SoftHost> {
        let setup = Setup {
            config: "2-per-memcg",
            variant: "B",
            cpus,
            storage,
        };
        ReadTwice::build(host, &setup, lock).expect("built")
    }

    #[test]
    fn one_memcg_and_one_file_per_cpu_the_file_larger_than_the_limit() {
        let host = soft(3, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 3, LruvecLock::Own);
        assert_eq!(inst.ctx.nr_memcgs(), 3);
        for i in 0..3 {
            assert_eq!(inst.ctx.memcg(i).memory().max(), LIMIT);
            assert_eq!(inst.ctx.object(i).nr_pages(), FILE_PAGES);
        }
        Box::new(inst).teardown().unwrap();
        let storage = Storage::new();
        let setup = Setup {
            config: "1-per-memcg",
            variant: "A",
            cpus: 1,
            storage: &storage,
        };
        assert!(ReadTwice::build(host, &setup, LruvecLock::Node).is_err());
    }

    /// The two readers of a file take turns of TURN pages, the second one turn behind the
    /// first, both reading every page of the file in order.
    #[test]
    fn the_second_reader_follows_the_first_one_turn_behind() {
        type R<'h> = ReadTwice<'h, SoftHost>;
        assert_eq!(R::page(0), (0, 0));
        assert_eq!(R::page(TURN - 1), (0, TURN - 1));
        assert_eq!(R::page(TURN), (1, 0));
        assert_eq!(R::page(2 * TURN), (0, TURN));
        assert_eq!(R::page(3 * TURN + 5), (1, TURN + 5));
        // Each reader reads the whole file, then starts over.
        let first: Vec<u64> = (0..2 * FILE_PAGES)
            .filter(|&n| R::page(n).0 == 0)
            .map(|n| R::page(n).1)
            .collect();
        assert_eq!(first, (0..FILE_PAGES).collect::<Vec<_>>());
        assert_eq!(R::page(2 * FILE_PAGES), (0, 0));
    }

    /// The second read of a page activates it; reclaim runs; every read is one operation.
    #[test]
    fn second_reads_activate_and_the_limit_makes_reclaim_run() {
        let host = soft(1, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 1, LruvecLock::Own);
        // The first reader's turn: misses only, nothing to activate.
        assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(TURN));
        assert_eq!(counter(&inst, "cache_misses"), TURN as i64);
        assert_eq!(counter(&inst, "activations"), 0);
        // The second reader's turn: hits, most of them activating.
        assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(TURN));
        assert_eq!(counter(&inst, "cache_hits"), TURN as i64);
        let act = counter(&inst, "activations");
        assert!(
            act >= (TURN - lru::FOLIO_BATCH_SIZE as u64) as i64,
            "{act} activations in a turn of {TURN}"
        );
        // Two whole passes: the limit is below the file, so reclaim evicts and the second
        // pass refaults.
        let mut n = 2 * TURN;
        while n < 2 * READERS * FILE_PAGES {
            n += inst.run_batch(&on(0, u64::MAX)).unwrap();
        }
        assert!(counter(&inst, "evicted") > 0);
        assert!(counter(&inst, "refaults") > 0);
        assert_eq!(counter(&inst, "file_reads"), n as i64);
        inst.check().unwrap();
        Box::new(inst).teardown().unwrap();
    }

    /// The lock premise follows the variant: A may take only the node's lock, B only its
    /// own, and each must take its own.
    #[test]
    fn premises_name_the_variants_lock_and_need_activations() {
        let host = soft(1, 64);
        let counts = run_with(&[("activations", 10), ("evicted", 3)], 100);
        let node = with_lock(counts.clone(), NODE_LOCK, 50, 5, 20);
        let storage = Storage::new();
        let a = build(host, &storage, 1, LruvecLock::Node);
        let b = build(host, &storage, 1, LruvecLock::Own);
        let held = |inst: &ReadTwice<'_, SoftHost>, r: &Run| -> Vec<bool> {
            crate::scenarios::tests::held(inst, core::slice::from_ref(r))
        };
        // A: activations, evictions, its lock taken, not B's, handed off, no tree lock,
        // contended.
        assert_eq!(held(&a, &node), [true; 7]);
        assert_eq!(
            held(&b, &node),
            [true, true, false, false, false, true],
            "B took the node's lock"
        );
        let memcg = with_lock(counts.clone(), MEMCG_LOCK, 50, 0, 20);
        assert_eq!(held(&b, &memcg), [true; 6], "B: no contention premise");
        // A lock never handed between CPUs, or never contended.
        let alone = with_lock(counts.clone(), NODE_LOCK, 50, 5, 0);
        assert_eq!(
            held(&a, &alone),
            [true, true, true, true, false, true, true]
        );
        let uncontended = with_lock(counts.clone(), NODE_LOCK, 50, 0, 20);
        assert_eq!(
            held(&a, &uncontended),
            [true, true, true, true, true, true, false]
        );
        // The memcg tree's lock taken on the measured path.
        let locked = with_lock(
            node.clone(),
            memcg::lock_classes::MemcgTreeLock::NAME,
            1,
            0,
            0,
        );
        assert_eq!(
            held(&a, &locked),
            [true, true, true, true, true, false, true]
        );
        let node = crate::scenarios::tests::as_recorded(&a, &[node]);
        let across: Vec<bool> = a
            .premises(&[&node[0]])
            .unwrap()
            .iter()
            .map(|p| p.across_cpus)
            .collect();
        assert_eq!(across, [false, false, false, false, true, false, true]);
        let idle = with_lock(
            run_with(&[("activations", 0), ("evicted", 3)], 100),
            NODE_LOCK,
            50,
            5,
            20,
        );
        assert!(!held(&a, &idle)[0], "no activation");
        // A run that did not list the lock classes (they did not record) is an error.
        assert!(a.premises(&[&idle]).is_err());
        // A run that did not report evictions is an error.
        assert!(
            a.premises(&[&run_with(&[("activations", 10)], 100)])
                .is_err()
        );
        Box::new(a).teardown().unwrap();
        Box::new(b).teardown().unwrap();
    }

    /// CPU c runs the first reader of memcg c and the second of memcg c-1, so each memcg's
    /// two readers are on two CPUs (one CPU: both readers of its memcg).
    #[test]
    fn a_memcgs_two_readers_run_on_two_cpus() {
        type R<'h> = ReadTwice<'h, SoftHost>;
        assert_eq!((R::memcg_of(0, 0, 1), R::memcg_of(0, 1, 1)), (0, 0));
        for cpus in 2..5 {
            for m in 0..cpus {
                // (reader, CPU) of every reader of memcg m.
                let mut on: Vec<(u64, usize)> = (0..cpus)
                    .flat_map(|c| (0..READERS).map(move |r| (r, c)))
                    .filter(|&(r, c)| R::memcg_of(c, r, cpus) == m)
                    .collect();
                on.sort_unstable();
                assert_eq!(on, [(0, m), (1, (m + 1) % cpus)], "memcg {m} of {cpus}");
            }
        }
        // Driven: CPU 1's second turn reads memcg 0's file, which CPU 0's first turn read.
        let host = soft(2, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 2, LruvecLock::Own);
        let hits = counter(&inst, "cache_hits");
        assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(TURN));
        assert_eq!(inst.run_batch(&on(1, u64::MAX)), Ok(TURN));
        assert_eq!(
            counter(&inst, "cache_hits"),
            hits,
            "two first readers: misses"
        );
        assert_eq!(inst.run_batch(&on(1, u64::MAX)), Ok(TURN));
        assert_eq!(
            counter(&inst, "cache_hits") - hits,
            TURN as i64,
            "memcg 0's second reader"
        );
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn check_passes_at_memory_max_and_fails_on_a_leaked_charge() {
        let host = soft(2, 64);
        let storage = Storage::new();
        let inst = build(host, &storage, 2, LruvecLock::Node);
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
        let storage = Storage::new();
        let inst = build(host, &storage, 2, LruvecLock::Own);
        for cpu in 0..2 {
            inst.run_batch(&on(cpu, u64::MAX)).unwrap();
        }
        Box::new(inst).teardown().unwrap();
        assert_eq!(host.free_frames(), free);

        let storage = Storage::new();
        let inst = build(host, &storage, 2, LruvecLock::Own);
        leak_a_charge(inst.ctx.memcg(1));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }
}
