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
//! is one fault. pft times the faults only: the unmap is untimed work
//! ([`Instance::untimed`]), done before the next batch with the CPU's clock paused and
//! reported apart (`untimed_ns`, `unmapped`). One difference from pft remains: pft unmaps
//! the whole region after a barrier, while every thread is idle; here each CPU unmaps its
//! own slice when it is full, so the shootdown it sends interrupts the other CPUs' timed
//! faults (one interrupt per [`SLICE`] faults of a CPU).
//!
//! Premise: every fault is served under the per-VMA read lock (`lock_vma_under_rcu`), the
//! path whose line the two layouts move; a fault that fell back to `mmap_lock`
//! (`faults_slow_path`) would not read `vm_lock_seq` as seed 003's do. The fallbacks must be
//! zero over the measured runs. And the seed's condition, at two CPUs or more, across
//! CPUs: faults from several CPUs on the one VMA, seen as `vm_refcnt` written by another
//! CPU between two writes of one (`vm_refcnt_handoffs_per_op` above zero,
//! `ksync::handoff`); the compare-and-swaps that lost to another CPU's write and retried
//! are the class's `contended` count in the results, and readers that found `vm_lock_seq`
//! changed between their two checks (a writer got in) are `vma->vm_lock_seq`'s
//! `contended` (nothing write-locks the VMA during the runs, so 0 is expected there).
//!
//! `zone->lock` moves between the CPUs too (about 0.018 acquisitions per fault at 2 vCPUs,
//! most of them handed between CPUs), as it would in Linux: each CPU's per-CPU page list
//! is refilled from the buddy allocator `batch` frames at a time (`rmqueue_bulk()`, one
//! `zone->lock` section per refill) and the unmap spills past `high` the same way;
//! `batch` and `high` are Linux's `zone_batchsize()`/`zone_highsize()` for the zone
//! (`page_alloc::pcp`: 63 frames for a 1 GiB guest's DMA32 zone, so about one section per 63
//! faults).
//!
//! The invariant after every run: every present PTE is one of the pages the slices' cursors
//! say are faulted, each charged and on the LRU, plus the checker's.

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
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::{CachePadded, LockClass};
use mm::check::VmCensus;
use mm::context::VmConfig;
use mm::lock_classes::VmRefcntWord;
use mm::vma::{VmArea, VmAreaA, VmAreaB};

mod entry;
pub use entry::CATALOG;

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
    fn build(host: &'h H, storage: &'h Storage, cpus: u32) -> Result<Self, String> {
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.max_memcgs = 64;
        let mut ctx = Ctx::new(host, storage, cfg)?;
        let m = ctx.add_memcg(None, None)?;
        let s = ctx.add_space(SLICE * 4096 * u64::from(cpus))?;
        let base = ctx.space(s).base();
        ctx.map(s, base, SLICE * u64::from(cpus), None, m, host.node_of(0))?;
        let done = (0..cpus).map(|_| CachePadded(AtomicU64::new(0))).collect();
        Ok(Pft { ctx, done })
    }
}

impl<H: VmHost, V: VmArea + 'static> FaultCoreInstance for Pft<'_, H, V> {
    fn untimed_due_now(&self, ctx: &BatchCtx) -> bool {
        self.done[ctx.index as usize].0.load(Ordering::Relaxed) == SLICE
    }

    fn untimed_work(&self, ctx: &BatchCtx) -> Result<(), ScenarioError> {
        let (cpu, i) = (ctx.cpu as usize, ctx.index as usize);
        if self.done[i].0.load(Ordering::Relaxed) != SLICE {
            return Err(ScenarioError::new(
                "an unmap of a slice that is not full (untimed work that was not due)",
            ));
        }
        let space = self.ctx.space(0);
        space.use_mm(cpu);
        let slice = space.base() + i as u64 * SLICE * 4096;
        self.ctx
            .vm()
            .zap_page_range(space.mm(), cpu, slice, slice + SLICE * 4096);
        self.done[i].0.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let (cpu, i) = (ctx.cpu as usize, ctx.index as usize);
        let space = self.ctx.space(0);
        space.use_mm(cpu);
        let slice = space.base() + i as u64 * SLICE * 4096;
        let done = self.done[i].0.load(Ordering::Relaxed);
        if done == SLICE {
            return Err(ScenarioError::new(
                "a batch on a full slice: its unmap (untimed) did not run",
            ));
        }
        let n = BATCH.min(ctx.max_ops).min(SLICE - done);
        space
            .write_pages(cpu, slice + done * 4096, n)
            .map_err(|(va, e)| format!("fault at {va:#x}: {e:?}"))?;
        self.done[i].0.store(done + n, Ordering::Relaxed);
        Ok(n)
    }

    fn own_objects(&self) -> Vec<crate::engine::ObjectDesc> {
        let space = self.ctx.space(0);
        let Ok(guard) = space.mm().lock_vma_under_rcu(space.base()) else {
            return Vec::new();
        };
        alloc::vec![crate::engine::ObjectDesc {
            label: "vm_area_struct (the region every CPU faults)".into(),
            addr: core::ptr::from_ref(guard.vma()) as usize,
            size: core::mem::size_of::<V>(),
            fields: V::layout_fields().to_vec(),
        }]
    }

    fn premise_classes(&self) -> Vec<&'static ksync::ClassData> {
        vec![VmRefcntWord::data()]
    }

    fn premise_checks(&self, runs: &[&Run]) -> Premises {
        Ok(vec![
            PremiseCheck::above_zero("faults_per_op", premise::per_op(runs, "faults")?),
            PremiseCheck::zero(
                "mmap_lock_fallbacks_per_op",
                premise::per_op(runs, "faults_slow_path")?,
            ),
            PremiseCheck::above_zero(
                "vm_refcnt_handoffs_per_op",
                premise::handoffs_per_op(runs, VmRefcntWord::NAME)?,
            )
            .across_cpus(),
        ])
    }

    fn check_census(&self, c: &VmCensus) -> Result<(), String> {
        let faulted: u64 = self.done.iter().map(|d| d.0.load(Ordering::Relaxed)).sum();
        if (c.mapped_ptes, c.lru_folios, c.charged) != (faulted, faulted, faulted) {
            return Err(format!(
                "{faulted} pages faulted by the slices, census {c:?}"
            ));
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

impl<H: VmHost> BenchScenario for Seed003<'_, H> {
    fn name(&self) -> &'static str {
        CATALOG.name
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        if setup.config != "anon" {
            return Err(ScenarioError::no_config(setup.config));
        }
        Ok(match setup.variant {
            "A" => Box::new(Pft::<H, VmAreaA>::build(
                self.host,
                setup.storage,
                setup.cpus,
            )?),
            "B" => Box::new(Pft::<H, VmAreaB>::build(
                self.host,
                setup.storage,
                setup.cpus,
            )?),
            v => return Err(ScenarioError::no_variant(v)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::tests::{TraceHost, counter, leak_a_charge, on};
    use std::collections::BTreeSet;

    /// Pages in a PTE table (2 MiB).
    const PTE_TABLE: u64 = 512;

    fn build<'h>(
        host: &'h TraceHost,
        storage: &'h Storage,
        cpus: u32,
    ) -> Pft<'h, TraceHost, VmAreaB> {
        Pft::build(host, storage, cpus).expect("built")
    }

    /// Page numbers, from the first page of the space, stored to by CPU `cpu`.
    fn pages_of(host: &TraceHost, cpu: usize) -> BTreeSet<u64> {
        let t = host.trace();
        let base = t.spaces[0].0;
        t.accesses
            .iter()
            .filter(|a| a.cpu == cpu && a.write)
            .map(|a| (a.va - base) >> 12)
            .collect()
    }

    #[test]
    fn the_cpus_fault_slices_of_their_own_in_one_shared_space() {
        let host = TraceHost::new(2, 64);
        let storage = Storage::new();
        let inst = build(&host, &storage, 2);
        assert_eq!(inst.ctx.nr_memcgs(), 1);
        assert_eq!(
            host.trace().spaces.len(),
            1,
            "one address space for all CPUs"
        );
        let size = host.trace().spaces[0].1;
        assert!(
            size >= 2 * SLICE * 4096,
            "a space of {size} bytes for two slices"
        );
        for cpu in 0..2 {
            assert_eq!(inst.run_batch(&on(cpu, u64::MAX)), Ok(BATCH));
            host.soft().quiescent(cpu as usize);
        }
        for cpu in 0..2u64 {
            let first = cpu * SLICE;
            assert_eq!(first % PTE_TABLE, 0, "each slice starts a PTE table");
            assert_eq!(
                pages_of(&host, cpu as usize),
                (first..first + BATCH).collect::<BTreeSet<u64>>(),
                "cpu {cpu}"
            );
        }
        assert_eq!(counter(&inst, "faults"), 2 * BATCH as i64);
        inst.check().unwrap();
        // The second slice to its end: the space must hold it.
        for _ in 1..SLICE / BATCH {
            inst.run_batch(&on(1, u64::MAX)).unwrap();
        }
        assert!(
            host.trace().outside.is_empty(),
            "{:?}",
            host.trace().outside.first()
        );
        inst.check().unwrap();
        // CPU 0 fills its slice and starts it over: its unmap leaves CPU 1's slice mapped.
        for _ in 1..SLICE / BATCH {
            inst.run_batch(&on(0, u64::MAX)).unwrap();
        }
        let unmapped = counter(&inst, "unmapped");
        assert!(inst.untimed_due(&on(0, u64::MAX)));
        assert_eq!(inst.untimed(&on(0, u64::MAX)), Ok(()));
        inst.run_batch(&on(0, u64::MAX)).unwrap();
        assert_eq!(counter(&inst, "unmapped") - unmapped, SLICE as i64);
        inst.check().unwrap();
        Box::new(inst).teardown().unwrap();
    }

    /// A batch stops at the end of the slice, however many operations it is asked for; the
    /// next one unmaps the whole slice and starts it over.
    #[test]
    fn a_full_slice_is_unmapped_and_faulted_again() {
        let host = TraceHost::new(1, 64);
        let storage = Storage::new();
        let inst = build(&host, &storage, 1);
        let ask = 40;
        let mut done = 0;
        while done < SLICE {
            assert!(!inst.untimed_due(&on(0, ask)), "nothing to unmap yet");
            let n = inst.run_batch(&on(0, ask)).unwrap();
            assert_eq!(n, ask.min(SLICE - done));
            done += n;
        }
        assert_eq!(done, SLICE);
        assert_eq!(pages_of(&host, 0), (0..SLICE).collect::<BTreeSet<u64>>());
        assert!(host.trace().outside.is_empty());
        inst.check().unwrap();
        assert_eq!(counter(&inst, "unmapped"), 0);

        host.clear();
        // The faults are timed, the unmap is not: a batch never unmaps.
        assert!(
            inst.run_batch(&on(0, ask)).is_err(),
            "a batch on a full slice"
        );
        assert_eq!(counter(&inst, "unmapped"), 0);
        assert!(inst.untimed_due(&on(0, ask)));
        assert_eq!(inst.untimed(&on(0, ask)), Ok(()));
        assert_eq!(counter(&inst, "unmapped"), SLICE as i64, "the whole slice");
        assert_eq!(
            pages_of(&host, 0),
            BTreeSet::new(),
            "the unmap stores nothing"
        );
        assert_eq!(inst.run_batch(&on(0, ask)), Ok(ask));
        assert_eq!(pages_of(&host, 0), (0..ask).collect::<BTreeSet<u64>>());
        assert_eq!(counter(&inst, "faults"), (SLICE + ask) as i64);
        inst.check().unwrap();
        Box::new(inst).teardown().unwrap();
    }

    /// The premises read the runs' counters: every fault under the per-VMA lock holds, one
    /// fallback to `mmap_lock` does not.
    #[test]
    fn premises_need_faults_and_no_mmap_lock_fallback() {
        use crate::scenarios::tests::{run_with, with_lock};
        let host = TraceHost::new(1, 64);
        let storage = Storage::new();
        let inst = build(&host, &storage, 1);
        let run = |slow: i64, handoffs: u64| {
            with_lock(
                run_with(&[("faults", 640), ("faults_slow_path", slow)], 640),
                VmRefcntWord::NAME,
                1280,
                0,
                handoffs,
            )
        };
        let held = |runs: &[&Run]| -> Vec<bool> {
            inst.premises(runs)
                .unwrap()
                .iter()
                .map(|p| p.held)
                .collect()
        };
        let ok = run(0, 64);
        assert_eq!(held(&[&ok]), [true, true, true]);
        let fell_back = run(1, 64);
        let p = inst.premises(&[&ok, &fell_back]).unwrap();
        assert!(!p[1].held);
        assert_eq!(p[1].figure, 1.0 / 1280.0);
        // One CPU's faults alone on the VMA: no handoff of vm_refcnt.
        assert_eq!(held(&[&run(0, 0)]), [true, true, false]);
        assert!(p[2].across_cpus && !p[0].across_cpus);
        assert!(
            inst.premises(&[&run_with(&[("faults", 640)], 640)])
                .is_err()
        );
        // Real faults: none falls back in the steady state.
        for _ in 0..4 {
            inst.run_batch(&on(0, u64::MAX)).unwrap();
        }
        assert_eq!(counter(&inst, "faults_slow_path"), 0);
        assert_eq!(counter(&inst, "faults"), 4 * BATCH as i64);
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn check_fails_on_a_page_no_cursor_counts_and_teardown_on_a_leaked_charge() {
        let host = TraceHost::new(1, 64);
        let storage = Storage::new();
        let inst = build(&host, &storage, 1);
        inst.run_batch(&on(0, u64::MAX)).unwrap();
        inst.check().unwrap();
        let space = inst.ctx.space(0);
        space.use_mm(0);
        space.write(0, space.base() + BATCH * 4096, 1).unwrap();
        assert!(inst.check().is_err(), "a page past the cursor");
        Box::new(inst).teardown().unwrap();

        let storage = Storage::new();

        let inst = build(&host, &storage, 1);
        leak_a_charge(inst.ctx.memcg(0));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }
}
