//! `seed001-faultfree`: every CPU faults pages in and frees them, all charged to ONE memcg
//! (seed 001: "threads faulting in and freeing memory in a single memcg").
//!
//! The seed's benchmark is multi-threaded ("threads pinned to CPUs"), so every CPU's
//! worker is a thread of ONE process: one address space, in which each thread has a
//! region of its own (`WINDOW` pages, its own VMA, on page tables of its own: regions
//! start [`STRIDE`] apart, 2 MiB-aligned), all charging the same memcg. What the threads
//! share is what the seed is about (the memcg's `mem_cgroup_per_node` and its lruvec:
//! lru_lock, the LRU heads, `lru_zone_size`, the per-CPU stat pointers; the page counter
//! and the node) and what threads of one process share in Linux: the `mm_struct`, and with
//! it the TLB shootdowns every free sends to the other CPUs running the process
//! (`mm_cpumask`). One batch, on one CPU:
//!
//! - `anon`: store to [`BATCH`] fresh pages of an anonymous region (a page fault each:
//!   allocate, zero, charge, lru_add batch, stats, PTE), then `zap_page_range` them
//!   (mmu_gather, `invlpg`, off the LRU, uncharge, stats, free);
//! - `shmem`: store to every page of a [`BATCH`]-page shmem-like object mapped in the
//!   region (a page-cache miss each: allocate, zero, charge, insert, LRU, map), then truncate
//!   it (`truncate_pagecache`: the mapping zapped as one range, mmu_gather and one TLB
//!   flush; then off the page cache and the LRU, uncharge, free).
//!
//! One operation is one page faulted and freed. The variants differ in nothing but the
//! `mem_cgroup_per_node` layout (Linux's, or patch 1's pairing of the read-mostly line with
//! the cold group), where it starts in its 128-byte pair (+0 or +64, which decides what the
//! read-mostly line is prefetched with), and how the fault path updates the per-node stats
//! (through the lruvec, or patch 2's memcg + node): six contexts built side by side.
//!
//! The classic active/inactive LRU is used, as in the seed's kernel: under MGLRU
//! `lruvec->lists[]` is never written, so patch 1's pairing of the read-mostly line with
//! the list heads could change nothing. New anonymous folios go to the inactive list, as
//! Linux 5.9+ adds them.
//!
//! Counted per run: writes to the list heads (`list_head_writes`) and lruvec stat updates
//! by path (`stat_updates_lruvec`, `stat_updates_direct`). Per page faulted and freed,
//! anon makes 4 stat updates (NR_ANON_MAPPED +1/-1, the LRU list's NR_INACTIVE_ANON
//! +1/-1), shmem 8 (NR_FILE_PAGES, NR_SHMEM, NR_FILE_MAPPED and NR_INACTIVE_ANON, each +1
//! and -1), as Linux makes them; patch 2 moves all but the LRU-size updates (which
//! `update_lru_size()` makes with the lruvec in hand) to the direct path.
//!
//! Premises, over each variant's measured runs: the list heads are written
//! (`list_head_writes` per operation above zero), and, at two CPUs or more, the memcg's
//! `lru_lock` (whose line the list heads share) changes hands between CPUs
//! (`lru_lock_handoffs_per_op` above zero: an acquisition that found the lock last taken
//! by another CPU, `ksync::handoff`), so the line the seed is about moves between CPUs.
//!
//! The invariant after every run: nothing is mapped, on an LRU or charged (every batch
//! frees what it faulted), plus the checker's.

use crate::engine::premise::{self, PremiseCheck, Premises};
use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use crate::record::Run;
use crate::scenarios::fault_core::{FaultCoreInstance, VmCtx, split_placement};
use crate::vm::{Ctx, Pn, PnBase, PnPaired, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use ksync::LockClass;
use lru::events::LruEvent;
use lru::lock_classes::LruLock;
use memcg::PnPlacement;
use mm::check::VmCensus;
use mm::context::{StatPath, VmConfig};
use mm::object::ObjectKind;
use mm::vma::VmAreaA;

mod entry;
pub use entry::CATALOG;

/// Pages faulted and freed per batch: the whole window, one PTE table's worth, as a
/// fault/free benchmark maps, touches and unmaps a large region at a time (will-it-scale's
/// `page_fault1` 128 MiB per iteration; the Linux reference in the same QEMU, 512 pages).
/// The free's TLB shootdown to the other CPUs of the process, and its mmu_gather flush,
/// are paid once per batch, as there; at 32 pages per free they were paid 16 times as often
/// as by the Linux the runs are compared with.
pub const BATCH: u64 = WINDOW;
/// Pages in each CPU's anonymous region (one PTE table); every batch faults it from its
/// first page.
const WINDOW: u64 = 512;
/// Bytes from one CPU's region to the next in the process's address space: two PTE
/// tables' worth, so regions never share a page table and a one-table gap separates their
/// VMAs (Linux would merge adjacent anonymous mappings).
pub const STRIDE: u64 = 2 * WINDOW * 4096;

/// The scenario on platform `H`.
pub struct Seed001<'h, H: VmHost> {
    host: &'h H,
}

impl<'h, H: VmHost> Seed001<'h, H> {
    /// The scenario over `host`'s fault core.
    #[must_use]
    pub fn new(host: &'h H) -> Self {
        Seed001 { host }
    }
}

/// One variant set up for some CPUs.
struct FaultFree<'h, H: VmHost, P: Pn> {
    ctx: Ctx<'h, H, P, VmAreaA>,
    shmem: bool,
}

fn config_of(variant: &str) -> Option<(bool, PnPlacement, StatPath)> {
    let (layout, placement) = split_placement(variant)?;
    let (paired, path) = match layout {
        "base" => (false, StatPath::ThroughLruvec),
        "patch1" => (true, StatPath::ThroughLruvec),
        "patch1+2" => (true, StatPath::Direct),
        _ => return None,
    };
    Some((paired, placement, path))
}

impl<'h, H: VmHost, P: Pn> FaultFree<'h, H, P> {
    fn build(
        host: &'h H,
        setup: &Setup<'_, 'h>,
        placement: PnPlacement,
        path: StatPath,
    ) -> Result<Self, String> {
        let shmem = match setup.config {
            "anon" => false,
            "shmem" => true,
            c => return Err(ScenarioError::no_config(c).0),
        };
        let mut cfg = VmConfig::new(host.nr_cpus());
        cfg.mglru = false;
        cfg.placement = placement;
        cfg.stat_path = path;
        cfg.max_memcgs = 64;
        let mut ctx = Ctx::new(host, setup.storage, cfg)?;
        let m = ctx.add_memcg(None, None)?;
        let s = ctx.add_space(STRIDE * u64::from(setup.cpus))?;
        let base = ctx.space(s).base();
        if base % STRIDE != 0 {
            return Err(format!(
                "the address space starts at {base:#x}, not {STRIDE:#x}-aligned"
            ));
        }
        for cpu in 0..setup.cpus as usize {
            let start = base + cpu as u64 * STRIDE;
            let node = host.node_of(cpu);
            if shmem {
                let o = ctx.add_object(ObjectKind::Shmem, BATCH as usize);
                ctx.map(s, start, BATCH, Some(o), m, node)?;
            } else {
                ctx.map(s, start, WINDOW, None, m, node)?;
            }
        }
        Ok(FaultFree { ctx, shmem })
    }
}

impl<H: VmHost, P: Pn> FaultCoreInstance for FaultFree<'_, H, P> {
    fn batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let (cpu, i) = (ctx.cpu as usize, ctx.index as usize);
        let space = self.ctx.space(0);
        space.use_mm(cpu);
        let base = space.base() + i as u64 * STRIDE;
        let vm = self.ctx.vm();
        let n = BATCH.min(ctx.max_ops);
        if self.shmem {
            space
                .write_pages(cpu, base, n)
                .map_err(|(va, e)| format!("shmem fault at {va:#x}: {e:?}"))?;
            vm.truncate(self.ctx.object(i), cpu);
            return Ok(n);
        }
        space
            .write_pages(cpu, base, n)
            .map_err(|(va, e)| format!("anonymous fault at {va:#x}: {e:?}"))?;
        vm.zap_page_range(space.mm(), cpu, base, base + n * 4096);
        Ok(n)
    }

    fn own_counters(&self) -> Vec<(String, i64)> {
        LruEvent::ALL
            .iter()
            .map(|&e| (String::from(e.name()), lru::events::total(e) as i64))
            .collect()
    }

    fn premise_classes(&self) -> Vec<&'static ksync::ClassData> {
        vec![LruLock::data()]
    }

    fn premise_checks(&self, runs: &[&Run]) -> Premises {
        Ok(vec![
            PremiseCheck::above_zero(
                "list_head_writes_per_op",
                premise::per_op(runs, LruEvent::ListHeadWrite.name())?,
            ),
            PremiseCheck::above_zero(
                "lru_lock_handoffs_per_op",
                premise::handoffs_per_op(runs, LruLock::NAME)?,
            )
            .across_cpus(),
        ])
    }

    fn check_census(&self, c: &VmCensus) -> Result<(), String> {
        if c.mapped_ptes != 0 || c.lru_folios != 0 || c.charged != 0 {
            return Err(format!("pages left after the batches: {c:?}"));
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

impl<H: VmHost> BenchScenario for Seed001<'_, H> {
    fn name(&self) -> &'static str {
        CATALOG.name
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let (paired, placement, path) =
            config_of(setup.variant).ok_or_else(|| ScenarioError::no_variant(setup.variant))?;
        let inst: Box<dyn Instance + 'a> = if paired {
            Box::new(FaultFree::<H, PnPaired>::build(
                self.host, setup, placement, path,
            )?)
        } else {
            Box::new(FaultFree::<H, PnBase>::build(
                self.host, setup, placement, path,
            )?)
        };
        Ok(inst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Storage;
    use crate::scenarios::tests::{TraceHost, counter, leak_a_charge, on};
    use std::collections::BTreeSet;

    fn build<'h>(
        host: &'h TraceHost,
        storage: &'h Storage,
        config: &str,
        cpus: u32,
    ) -> FaultFree<'h, TraceHost, PnPaired> {
        let setup = Setup {
            config,
            variant: "patch1@+0",
            cpus,
            storage,
        };
        FaultFree::build(
            host,
            &setup,
            PnPlacement::PairStart,
            StatPath::ThroughLruvec,
        )
        .expect("built")
    }

    /// Page numbers (from the space's first page) of what space `s` was stored to.
    fn pages(host: &TraceHost, s: usize) -> BTreeSet<u64> {
        let base = host.trace().spaces[s].0 >> 12;
        host.trace()
            .pages_written(s)
            .iter()
            .map(|p| p - base)
            .collect()
    }

    /// Threads of one process: one address space, a region of its own per CPU (its own
    /// VMA and page tables), all charging the one memcg; a batch on CPU 1 stores only to
    /// CPU 1's region, and the process's CPUs are in its `mm_cpumask` once they ran it.
    #[test]
    fn every_cpu_is_a_thread_of_one_process_charging_the_one_memcg() {
        let host = TraceHost::new(2, 32);
        for config in ["anon", "shmem"] {
            let spaces = host.trace().spaces.len();
            let storage = Storage::new();
            let inst = build(&host, &storage, config, 2);
            assert_eq!(inst.ctx.nr_memcgs(), 1);
            let t = host.trace().spaces[spaces..].to_vec();
            assert_eq!(t.len(), 1, "{config}: one address space");
            assert!(
                t[0].1 >= 2 * STRIDE,
                "{config}: a space of {} bytes",
                t[0].1
            );
            if config == "shmem" {
                for i in 0..2 {
                    assert_eq!(inst.ctx.object(i).nr_pages(), BATCH);
                    assert_eq!(inst.ctx.object(i).nr_mappings(), 1);
                }
            }
            host.clear();
            assert_eq!(inst.run_batch(&on(1, u64::MAX)), Ok(BATCH));
            assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(BATCH));
            let written = pages(&host, spaces);
            let first_of = |cpu: u64| cpu * STRIDE / 4096;
            assert!(
                written.iter().any(|&p| p >= first_of(1)),
                "{config}: {written:?}"
            );
            assert!(
                written.iter().any(|&p| p < first_of(0) + WINDOW),
                "{config}"
            );
            assert!(
                written
                    .iter()
                    .all(|&p| (p - first_of(p * 4096 / STRIDE)) < WINDOW),
                "{config}: a store outside the CPUs' regions: {written:?}"
            );
            let mm = inst.ctx.space(0).mm();
            assert!(
                mm.cpumask().contains(0) && mm.cpumask().contains(1),
                "{config}"
            );
            inst.check().unwrap();
            Box::new(inst).teardown().unwrap();
        }
    }

    #[test]
    fn anonymous_batches_fault_the_window_and_free_what_they_fault() {
        let host = TraceHost::new(1, 32);
        let storage = Storage::new();
        let inst = build(&host, &storage, "anon", 1);
        for b in 0..3 {
            host.clear();
            let faults = counter(&inst, "faults");
            let unmapped = counter(&inst, "unmapped");
            assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(BATCH));
            assert_eq!(counter(&inst, "faults") - faults, BATCH as i64, "batch {b}");
            assert_eq!(
                counter(&inst, "unmapped") - unmapped,
                BATCH as i64,
                "batch {b}"
            );
            // Every page of the window, one PTE table, as the Linux reference's cycle.
            let p = pages(&host, 0);
            assert_eq!(p, (0..WINDOW).collect::<BTreeSet<u64>>(), "batch {b}");
            assert!(host.trace().outside.is_empty());
            inst.check().unwrap();
        }
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn shmem_batches_fault_every_page_of_the_object_and_truncate_it() {
        let host = TraceHost::new(1, 32);
        let storage = Storage::new();
        let inst = build(&host, &storage, "shmem", 1);
        for _ in 0..3 {
            host.clear();
            let faults = counter(&inst, "faults");
            assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(BATCH));
            assert_eq!(counter(&inst, "faults") - faults, BATCH as i64);
            assert_eq!(pages(&host, 0), (0..BATCH).collect::<BTreeSet<u64>>());
            assert_eq!(inst.ctx.object(0).cache().nr_folios(), 0, "truncated");
            inst.check().unwrap();
        }
        Box::new(inst).teardown().unwrap();
    }

    /// Stat updates and list-head writes per page faulted and freed, by layout and path,
    /// counted on this test's own CPU (a thread id no other test uses).
    ///
    /// The Linux items behind the counts, per page:
    /// - anon: `NR_ANON_MAPPED` +1 (`folio_add_new_anon_rmap`) and -1
    ///   (`folio_remove_rmap_pte`), `NR_INACTIVE_ANON` +1 (`lruvec_add_folio`) and -1
    ///   (`lruvec_del_folio`): 4;
    /// - shmem: `NR_FILE_PAGES` and `NR_SHMEM` +1 (`shmem_add_to_page_cache`) and -1
    ///   (`filemap_unaccount_folio`), `NR_FILE_MAPPED` +1 (`folio_add_file_rmap_pte`) and -1
    ///   (`folio_remove_rmap_pte`), `NR_INACTIVE_ANON` +1 and -1 (shmem is swap-backed): 8.
    ///
    /// Patch 2 (`patch1+2`) sends every update but the LRU sizes' (made by
    /// `update_lru_size()` with the lruvec in hand) straight to the memcg and node.
    #[test]
    fn stat_updates_and_list_head_writes_per_operation_are_linuxs() {
        ksync::cpu::set_this_thread_cpu(ksync::MAX_CPUS - 3);
        let host = TraceHost::new(1, 32);
        let count = |e| lru::events::this_cpu_count(e) as i64;
        // (config, variant, through the lruvec, direct) per page.
        for (config, variant, lruvec, direct) in [
            ("anon", "base@+0", 4, 0),
            ("anon", "patch1@+64", 4, 0),
            ("anon", "patch1+2@+0", 2, 2),
            ("shmem", "base@+64", 8, 0),
            ("shmem", "patch1+2@+0", 2, 6),
        ] {
            let storage = Storage::new();
            let setup = Setup {
                config,
                variant,
                cpus: 1,
                storage: &storage,
            };
            let scenario = Seed001::new(&host);
            let inst = scenario.instantiate(&setup).unwrap();
            // A first batch fills the per-CPU caches; the second is the steady state.
            inst.run_batch(&on(0, u64::MAX)).unwrap();
            let before = LruEvent::ALL.map(count);
            assert_eq!(inst.run_batch(&on(0, u64::MAX)), Ok(BATCH));
            let per_op = LruEvent::ALL.map(|e| (count(e) - before[e as usize]) / BATCH as i64);
            let at = format!("{config} {variant}");
            assert_eq!(per_op[LruEvent::StatThroughLruvec as usize], lruvec, "{at}");
            assert_eq!(per_op[LruEvent::StatDirect as usize], direct, "{at}");
            // Each page is added at the head of the inactive list and deleted from it.
            assert!(
                per_op[LruEvent::ListHeadWrite as usize] >= 1,
                "{at}: {per_op:?}"
            );
            inst.teardown().unwrap();
        }
    }

    #[test]
    fn premises_need_list_head_writes_and_lru_lock_handoffs() {
        use crate::scenarios::tests::{run_with, with_lock};
        let host = TraceHost::new(1, 32);
        let storage = Storage::new();
        let inst = build(&host, &storage, "anon", 1);
        let judged = |r| {
            inst.premises(&[&r])
                .unwrap()
                .iter()
                .map(|p| (p.name, p.held, p.figure, p.across_cpus))
                .collect::<Vec<_>>()
        };
        let ok = with_lock(
            run_with(&[("list_head_writes", 64)], 32),
            LruLock::NAME,
            8,
            0,
            4,
        );
        assert_eq!(
            judged(ok),
            [
                ("list_head_writes_per_op", true, 2.0, false),
                ("lru_lock_handoffs_per_op", true, 0.125, true)
            ]
        );
        // MGLRU writes no list head; one CPU hands no lock to another.
        let mglru = with_lock(
            run_with(&[("list_head_writes", 0)], 32),
            LruLock::NAME,
            8,
            0,
            4,
        );
        assert!(!judged(mglru)[0].1);
        let alone = with_lock(
            run_with(&[("list_head_writes", 64)], 32),
            LruLock::NAME,
            8,
            0,
            0,
        );
        assert!(!judged(alone)[1].1);
        // A run that did not report the list-head writes is an error, not a 0.
        assert!(inst.premises(&[&run_with(&[], 32)]).is_err());
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn check_fails_on_a_page_left_mapped_and_teardown_on_a_leaked_charge() {
        let host = TraceHost::new(1, 32);
        let storage = Storage::new();
        let inst = build(&host, &storage, "anon", 1);
        inst.check().unwrap();
        let space = inst.ctx.space(0);
        space.use_mm(0);
        space.write(0, space.base(), 1).unwrap();
        assert!(inst.check().is_err(), "a page faulted and not freed");
        Box::new(inst).teardown().unwrap();

        let free = host.soft().free_frames();
        let storage = Storage::new();
        let inst = build(&host, &storage, "anon", 1);
        inst.run_batch(&on(0, u64::MAX)).unwrap();
        Box::new(inst).teardown().unwrap();
        assert_eq!(host.soft().free_frames(), free, "every frame back");

        let storage = Storage::new();
        let inst = build(&host, &storage, "shmem", 1);
        leak_a_charge(inst.ctx.memcg(0));
        assert!(Box::new(inst).teardown().is_err(), "a leaked charge");
    }
}
