//! Making and unmaking regions: `mmap`, `munmap`, `zap_page_range`, tearing an address
//! space down.
//!
//! Models mm/mmap.c (`mmap_region`, `do_vmi_munmap`), mm/memory.c (`zap_page_range_single`
//! -> `zap_pte_range`) and mm/mmu_gather.c. Unmapping clears PTEs under each table's lock
//! and hands the pages to an [`MmuGather`]; before any page can be freed the gather flushes
//! the TLB (`invlpg`, or a shootdown IPI to every CPU in the address space's cpumask,
//! waiting for each to acknowledge). Then every page's mapping reference is dropped in a
//! batch: anonymous folios reach zero and are released (off their lruvecs with the LRU flag
//! cleared under one lock hold per run of folios of one lruvec, `folios_put_refs`; uncharged;
//! frames back to this CPU's per-CPU list); object folios stay in their object's page cache,
//! charged and on the LRU, until evicted or truncated. When a flush fails, the pages and
//! table frames it covered are kept instead of released ([`crate::tlb_kept`]) and let
//! go after the next flush that succeeds ([`Vm::release_kept`]).
//!
//! Unsafe code here, and why: a region's handle is boxed, published by raw pointer and
//! freed by hand once the region is detached and no reader can hold it.
#![allow(unsafe_code)]

use crate::context::Vm;
use crate::counters::VmEvent;
use crate::cpumask::CpuMask;
use crate::fault::{FaultError, RegionMemcg};
use crate::folios::VmFolios;
use crate::mm_struct::{MmError, MmStruct};
use crate::mmu_gather::{MAX_GATHER_BATCH, MmuGather};
use crate::object::{Mapping, Object};
use crate::pgtable::{Mmu, PTE_TABLE_SPAN, pte_index};
use crate::tlb_kept::Kept;
use crate::vma::{VmArea, VmFlags, VmaDesc};
use alloc::boxed::Box;
use alloc::vec::Vec;
use arrayvec::ArrayVec;
use core::ptr::NonNull;
use ksync::rcu::RcuReadGuard;
use lru::NodeId;
use lru::lruvec::folio_lruvec_relock;
use lru::{Folio, LruvecGuard, NodeStatItem};
use memcg::{MemCgroup, MemCgroupPerNode, MemcgId, MemcgRef};

/// What a new region maps.
#[derive(Debug, Clone, Copy)]
pub struct MapRequest<'a> {
    /// First byte (page aligned, inside the address space's range).
    pub start: u64,
    /// Length in bytes (a multiple of 4 KiB).
    pub len: u64,
    /// Writable?
    pub write: bool,
    /// The object mapped at page `pgoff`, or `None` for anonymous memory.
    pub object: Option<(&'a Object, u64)>,
    /// Node to allocate from first.
    pub node: NodeId,
}

impl<P: MemCgroupPerNode, M: Mmu> Vm<P, M> {
    /// `mmap`: a region of `mm` charging `memcg` for its pages, at `req.start`, which it
    /// returns (as `mmap(2)` returns the address). The region keeps its own reference on the
    /// memcg until it is unmapped. An object must outlive the region.
    pub fn mmap<'t, V: VmArea>(
        &'t self,
        mm: &MmStruct<V, M>,
        req: &MapRequest<'_>,
        memcg: &MemcgRef<'t, P, VmFolios>,
    ) -> Result<u64, MmError> {
        let flags = if req.write {
            VmFlags::READ | VmFlags::WRITE
        } else {
            VmFlags::READ
        };
        let held: Box<RegionMemcg<'t, P>> = Box::new(memcg.clone());
        let held = Box::into_raw(held);
        let desc = VmaDesc {
            start: req.start,
            end: req.start.saturating_add(req.len),
            flags,
            object: req.object.map(|(o, _)| o),
            pgoff: req.object.map_or(0, |(_, p)| p),
            memcg: held.cast_const().cast(),
            node: req.node,
            anon_id: 0,
            mm: core::ptr::null(),
        };
        let w = mm.mmap_write_lock();
        match w.insert(&desc) {
            Ok(vma) => {
                if let Some((obj, pgoff)) = req.object {
                    let target: NonNull<MmStruct<V, M>> = NonNull::from(mm);
                    obj.map(Mapping {
                        mm: target,
                        start: vma.vm_start(),
                        end: vma.vm_end(),
                        pgoff,
                    });
                }
                Ok(vma.vm_start())
            }
            Err(e) => {
                // SAFETY: `held` came from `Box::into_raw` above and was not published.
                drop(unsafe { Box::from_raw(held) });
                Err(e)
            }
        }
    }

    /// `munmap` of the region at exactly `[start, start + len)`: write-lock it (new faults
    /// wait, readers in flight finish), zap its pages, unpublish it (freed after a grace
    /// period), drop its memcg reference.
    pub fn munmap<V: VmArea>(
        &self,
        mm: &MmStruct<V, M>,
        cpu: usize,
        start: u64,
        len: u64,
    ) -> Result<(), MmError> {
        let w = mm.mmap_write_lock();
        let vma = w.write_lock(start, start.saturating_add(len))?;
        self.zap_page_range(mm, cpu, vma.vm_start(), vma.vm_end());
        if let Some(obj) = vma.vm_file() {
            obj.unmap(mm, vma.vm_start());
        }
        let held = vma.memcg().cast::<RegionMemcg<'_, P>>().cast_mut();
        w.remove(vma)?;
        // SAFETY: `held` is the handle `mmap` boxed for this region; the region is detached
        // and no fault can reach it any more (faults that found it before it was
        // write-locked have finished: `write_lock` waited for them).
        drop(unsafe { Box::from_raw(held) });
        Ok(())
    }

    /// Unmaps every region of `mm` and frees its page tables (`exit_mmap`). The address
    /// space may then be dropped.
    pub fn destroy_mm<V: VmArea>(&self, mm: &mut MmStruct<V, M>, cpu: usize) {
        let regions: Vec<(u64, u64)> = {
            let w = mm.mmap_write_lock();
            w.regions().map(|v| (v.vm_start(), v.vm_end())).collect()
        };
        for (s, e) in regions {
            ksync::warn_on_once!(
                self.munmap(mm, cpu, s, e - s).is_err(),
                "exit_mmap: unmapping a region of the address space failed"
            );
        }
        let cpu = self.cpu(cpu);
        let (pgtable, cpus) = mm.pgtable_and_cpumask();
        let kept = &self.folios().tlb_kept;
        pgtable.free_tables(
            cpus,
            cpu,
            |f| {
                ksync::warn_on_once!(
                    self.alloc.free_page(cpu, f).is_err(),
                    "freeing a page-table frame failed"
                );
            },
            |f| kept.keep(Kept::Table(f)),
        );
        self.release_kept(cpu);
    }

    /// Lets go of the frames kept after failed TLB flushes ([`crate::tlb_kept`]) once a
    /// flush of every CPU this context serves succeeds: references are put (freeing the
    /// pages whose last they were), table frames freed. Nothing to do (one load) while
    /// nothing is kept. The list is taken before the flush, so a frame kept by another CPU
    /// meanwhile waits for the next flush; after a failed one everything goes back.
    pub fn release_kept(&self, cpu: usize) {
        let kept = &self.folios().tlb_kept;
        if kept.is_empty() {
            return;
        }
        let cpu = self.cpu(cpu);
        let frames = kept.take();
        let all = CpuMask::new();
        for c in 0..self.nr_cpus() {
            all.set(c);
        }
        if self.mmu.flush_tlb_all(&all, cpu).is_err() {
            for k in frames {
                kept.restore(k);
            }
            return;
        }
        for &k in &frames {
            match k {
                Kept::Ref(f) => self.folio_put(cpu, f),
                Kept::Table(f) => {
                    ksync::warn_on_once!(
                        self.alloc.free_page(cpu, f).is_err(),
                        "freeing a kept page-table frame failed"
                    );
                }
            }
        }
        kept.released(frames.len());
    }

    /// `zap_page_range`: clear every PTE in `[start, end)` of `mm` and release what they
    /// mapped (see the module documentation). The caller holds the region (write-locked by
    /// `munmap`, or read-locked / known quiet for a partial zap). The range is clipped to
    /// the address space's, as `unmap_single_vma()` clips it to the region's.
    pub fn zap_page_range<V: VmArea>(&self, mm: &MmStruct<V, M>, cpu: usize, start: u64, end: u64) {
        let cpu = self.cpu(cpu);
        let (lo, hi) = mm.range();
        let (start, end) = (start.max(lo), end.min(hi));
        // The pages this CPU just faulted may still sit in its own lru_add batch:
        // lru_add_drain() first, as the unmap path does.
        ksync::warn_on_once!(
            lru::MoveStats::failed(&self.batches.drain_cpu(cpu, &self.tree)),
            "zap_page_range: lru_add_drain failed"
        );
        let mut tlb = MmuGather::new(self.mmu, mm.cpumask(), cpu);
        // A table's frames are nearly always of one memmap section: one root-table lookup.
        let mut memmap = self.alloc.memmap().cursor();
        let start = start & !0xfff;
        // One pass per 2 MiB span that a PTE table covers (`zap_pmd_range`), each over the
        // span's pages in the range: bounded loops.
        for span in start / PTE_TABLE_SPAN..end.div_ceil(PTE_TABLE_SPAN) {
            let from = (span * PTE_TABLE_SPAN).max(start);
            let stop = ((span + 1) * PTE_TABLE_SPAN).min(end);
            let Some(table) = mm.pgtable().table(from) else {
                continue;
            };
            let mut pte = table.lock();
            let mut va = from;
            while va < stop {
                if tlb.is_full() {
                    drop(pte);
                    self.tlb_flush(&mut tlb, cpu);
                    pte = table.lock();
                }
                // folio_memcg(): see `zap_folio`. One RCU read section per gather, ended
                // before the flush and its shootdown.
                let rcu = self.tree.rcu().read_lock(cpu).ok();
                let mut last = None;
                while va < stop && !tlb.is_full() {
                    if let Some(pfn) = pte.clear(pte_index(va))
                        && let Some(folio) = memmap.pfn_to_folio(pfn.as_u64())
                    {
                        self.zap_folio(&mut tlb, cpu, rcu.as_ref(), &mut last, va, folio);
                    }
                    va += 4096;
                }
            }
            drop(pte);
        }
        self.tlb_flush(&mut tlb, cpu);
    }

    /// What `zap_pte_range` does with a page whose PTE (at `va`) it just cleared:
    /// `folio_remove_rmap_pte` (the mapcount, and `NR_ANON_MAPPED` or `NR_FILE_MAPPED` of
    /// the folio's memcg, per folio as Linux updates them: seed 001 measures exactly these
    /// updates), then `tlb_remove_page`. The gather must have room.
    ///
    /// folio_memcg(): each mapped folio holds a reference on the memcg it is charged to,
    /// so that memcg outlives its PTE; the caller's RCU read section `rcu` keeps the last
    /// memcg found by id valid, and consecutive folios of one memcg (the rule in a region)
    /// look it up once (`last`) instead of once per page.
    #[inline(always)]
    pub(crate) fn zap_folio<'g>(
        &'g self,
        tlb: &mut MmuGather<'_, M>,
        cpu: usize,
        rcu: Option<&'g RcuReadGuard<'_>>,
        last: &mut Option<(MemcgId, &'g MemCgroup<P>)>,
        va: u64,
        folio: &'static Folio,
    ) {
        ksync::warn_on_once!(
            folio.dec_mapcount().is_err(),
            "unmapping a folio with no mapcount"
        );
        let item = if folio.mapping() & crate::fault::MAPPING_ANON != 0 {
            NodeStatItem::NrAnonMapped
        } else {
            NodeStatItem::NrFileMapped
        };
        if let Some(m) = self.folio_memcg_cached(rcu, last, folio) {
            self.mod_folio_stat(m, cpu, folio.node(), item, -1);
        }
        ksync::warn_on_once!(
            !tlb.remove_page(va, folio),
            "zap_folio: the mmu_gather was full"
        );
        self.count(cpu, VmEvent::Unmapped);
    }

    /// `folio_memcg(folio)` for a folio that holds its memcg's reference (mapped, or
    /// cached and charged), inside the caller's RCU read section `rcu`: the memcg found
    /// last (`last`, updated) when the folio's id is the same, else a lookup by id.
    pub(crate) fn folio_memcg_cached<'g>(
        &'g self,
        rcu: Option<&'g RcuReadGuard<'_>>,
        last: &mut Option<(MemcgId, &'g MemCgroup<P>)>,
        folio: &Folio,
    ) -> Option<&'g MemCgroup<P>> {
        let id = folio.memcg_id();
        let memcg = match (*last, rcu) {
            (Some((last_id, m)), _) if last_id == id => Some(m),
            (_, Some(guard)) => self.tree.lookup_rcu(guard, id).ok(),
            (_, None) => None,
        }?;
        *last = Some((id, memcg));
        Some(memcg)
    }

    /// `tlb_flush_mmu`: flush, then drop every gathered page's mapping reference, releasing
    /// the folios that reach zero in one pass (`folios_put_refs`).
    pub(crate) fn tlb_flush(&self, tlb: &mut MmuGather<'_, M>, cpu: usize) {
        let before = tlb.flush_counts().1;
        // At most a gather's worth, on the stack: no heap allocation per unmap.
        let mut last: ArrayVec<&'static Folio, MAX_GATHER_BATCH> = ArrayVec::new();
        let kept = &self.folios().tlb_kept;
        let flushed = tlb.flush(
            |_, folio| {
                if let Ok(true) = folio.put() {
                    last.push(folio);
                }
            },
            |_, folio| kept.keep(Kept::Ref(folio)),
        );
        if tlb.flush_counts().1 > before {
            self.count(cpu, VmEvent::Shootdown);
        }
        self.release_folios(cpu, &last);
        if flushed.is_ok() {
            self.release_kept(cpu);
        }
    }

    /// `folios_put_refs` for folios whose last reference is gone: off their lruvecs in one
    /// pass (`__page_cache_release`: the LRU flag tested with a plain load and cleared
    /// under the lruvec's lock, relocked only when the lruvec changes), then
    /// uncharged with one page-counter update per run of folios of one memcg
    /// (`mem_cgroup_uncharge_folios`) and freed with one `pcp->lock` hold per run of one
    /// zone (`free_unref_folios`).
    pub(crate) fn release_folios(&self, cpu: usize, folios: &[&'static Folio]) {
        if folios.is_empty() {
            return;
        }
        if let Ok(rcu) = self.tree.rcu().read_lock(cpu) {
            let mut guard: Option<LruvecGuard<'_, P>> = None;
            for &f in folios {
                // `folio_test_lru()`, a plain load: the count is zero, so no one can pin
                // the folio to isolate it, and the flag is cleared under the lock below.
                if !f.test_lru() {
                    continue;
                }
                ksync::race::window();
                match folio_lruvec_relock(guard.take(), f, &self.tree, &rcu) {
                    Ok(mut g) => {
                        ksync::warn_on_once!(
                            g.del_released_folio(f).is_err(),
                            "a released folio with its LRU flag was on no list of its lruvec"
                        );
                        guard = Some(g);
                    }
                    Err(_) => {
                        // Still on a list it cannot be taken off: the frame must not be
                        // freed under it, and this cannot happen for a charged folio.
                        ksync::warn_on_once!(true, "a released folio's lruvec was not found");
                    }
                }
            }
        }
        // Off the LRU now: uncharge (which clears each folio's memcg id), then free (whose
        // `free_pages_prepare` resets the rest of the folio, once, and refuses a folio still
        // linked on an LRU list).
        match self.tree.uncharge_folios(cpu, folios) {
            Ok(u) => {
                ksync::warn_on_once!(u.failed > 0, "uncharging released folios failed");
                self.folios()
                    .counters
                    .add(cpu, VmEvent::UnchargeBatches, u.batches);
            }
            Err(_) => {
                ksync::warn_on_once!(true, "uncharging released folios failed");
            }
        }
        match self.alloc.free_frozen_folios(cpu, folios) {
            Ok(freed) => {
                let counters = &self.folios().counters;
                counters.add(cpu, VmEvent::Released, freed.freed as u64);
                counters.add(cpu, VmEvent::PcpFreeRounds, freed.rounds as u64);
                ksync::warn_on_once!(
                    freed.failed > 0,
                    "a released folio failed free_pages_prepare (still on an LRU list?)"
                );
            }
            Err(_) => {
                ksync::warn_on_once!(true, "freeing released frames failed");
            }
        }
    }

    /// Whether the PTE of `addr` in `mm` is present (a software walk: the host platform's
    /// "touch" and the tests use it).
    #[must_use]
    pub fn pte_present<V: VmArea>(&self, mm: &MmStruct<V, M>, addr: u64) -> bool {
        self.mmu.pte_pfn(mm.pgtable().read_pte(addr)).is_some()
    }

    /// A touch done in software (the host's stand-in for a load or store that may fault):
    /// a present PTE is a hit (for a store, a present and writable one), anything else goes
    /// through [`Vm::handle_mm_fault`], as the MMU would raise a fault: a store to a
    /// read-only page fails there with [`FaultError::AccessDenied`].
    pub fn touch<V: VmArea>(
        &self,
        mm: &MmStruct<V, M>,
        cpu: usize,
        addr: u64,
        write: bool,
    ) -> Result<(), FaultError> {
        // The accessing CPU uses the address space (a present PTE is a TLB fill on a
        // real MMU, without a fault).
        mm.use_mm(self.cpu(cpu));
        let pte = mm.pgtable().read_pte(addr);
        let hit = if write {
            self.mmu.pte_write(pte)
        } else {
            self.mmu.pte_pfn(pte).is_some()
        };
        if hit {
            return Ok(());
        }
        self.handle_mm_fault(mm, cpu, addr, write)
    }
}
