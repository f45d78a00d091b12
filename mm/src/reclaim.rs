//! Eviction through the reverse map, and releasing folios whose last reference dropped.
//!
//! Models mm/vmscan.c's `shrink_folio_list` for clean page-cache folios (`try_to_unmap`,
//! `__remove_mapping` with `folio_ref_freeze`, `workingset_eviction`), mm/rmap.c's
//! `try_to_unmap_one` for object pages, and mm/swap.c's `__folio_put`.
//!
//! Both run in [`VmFolios`], the owner of the frames that the `Vm`'s memcg tree holds
//! (memcg's `FolioOwner`, see `vm/folios.rs`); the tree hands it itself at every call.
//!
//! **Eviction** (`FolioOwner::evict_folio`, memcg reclaim's free hook). The folio comes isolated
//! (off the LRU) and pinned by reclaim. Anonymous and shmem-like folios are refused: there is
//! no swap device. For a file page: every PTE that maps it is cleared through the object's
//! list of mapping regions, each under its table's lock and with a TLB flush (a shootdown
//! when other CPUs may hold the translation), dropping the mapping's reference; then the
//! count is frozen at exactly the cache's reference plus reclaim's pin (`folio_ref_freeze`:
//! anyone who looked the page up meanwhile makes this fail, and the folio goes back); the
//! page-cache slot gets the shadow entry. memcg uncharges the reclaim batch's evicted folios
//! together, counts them reclaimed and hands them back (`FolioOwner::free_evicted`), which frees
//! their frames under one `pcp->lock` hold per run of one zone (`shrink_folio_list`'s
//! `free_unref_folios`).
//!
//! **Release** (`FolioOwner::release_folio`, `__folio_put`): whoever drops a folio's
//! last reference (an unmap, a truncation, a folio batch, reclaim's putback) ends here: the
//! folio leaves its LRU (`__page_cache_release`: the LRU flag tested with a plain load, then
//! cleared with a plain store under its lruvec's lock: with the count at zero no isolation
//! can race, since isolation pins first), is uncharged, and its frame goes back to the
//! running CPU's per-CPU list.
//!
//! Unsafe code here, and why: eviction turns a file folio's mapping word into its object
//! (`object_of`), alive while the object has cached folios.
#![allow(unsafe_code)]

use crate::addr::VirtAddr;
use crate::context::Vm;
use crate::counters::VmEvent;
use crate::cpumask::CpuMask;
use crate::fault::object_of;
use crate::folios::VmFolios;
use crate::mm_struct::MmStruct;
use crate::object::{Object, RmapTarget, Unmapped, ZappedPtes};
use crate::pgtable::{Mmu, PTE_TABLE_SPAN, pte_index};
use crate::tlb_kept::Kept;
use crate::vma::VmArea;
use lru::{Folio, FolioFlags, NodeStatItem, Shadow};
use memcg::{FolioFree, FolioOwner, MemCgroupPerNode, MemcgTree};
use page_alloc::pfn::Pfn;

/// The reverse map's view of this address space (it walks an object's mappings through
/// [`RmapTarget`]): `try_to_unmap_one` for one object page, and the PTE half of
/// `zap_page_range_single` for `unmap_mapping_range`.
impl<V: VmArea, M: Mmu> RmapTarget for MmStruct<V, M> {
    fn try_to_unmap_one(&self, va: u64, pfn: u64) -> Unmapped {
        let Some(table) = self.pgtable().table(va) else {
            return Unmapped::No;
        };
        let idx = pte_index(va);
        let mut pte = table.lock();
        if pte.pfn(idx) != Some(Pfn::new(pfn)) {
            return Unmapped::No;
        }
        ksync::warn_on_once!(
            pte.clear(idx).is_none(),
            "try_to_unmap_one could not clear a PTE it had just read"
        );
        drop(pte);
        let mmu = self.pgtable().mmu();
        let me = ksync::this_cpu();
        let vas = [VirtAddr::new(va)];
        mmu.flush_tlb_local(&vas);
        if self.cpumask().any_other_than(me)
            && mmu.flush_tlb_others(self.cpumask(), me, &vas).is_err()
        {
            return Unmapped::Unflushed;
        }
        Unmapped::Flushed
    }

    fn zap_ptes(&self, start: u64, end: u64, out: &mut ZappedPtes) -> u64 {
        let mut va = start & !0xfff;
        // One PTE table (a 2 MiB span, `zap_pmd_range`) per pass, one lock hold each; every
        // pass advances `va`, so the loop ends.
        while va < end && !out.is_full() {
            let stop = ((va / PTE_TABLE_SPAN + 1) * PTE_TABLE_SPAN).min(end);
            let Some(table) = self.pgtable().table(va) else {
                va = stop;
                continue;
            };
            let mut pte = table.lock();
            while va < stop && !out.is_full() {
                if let Some(pfn) = pte.clear(pte_index(va)) {
                    out.push((VirtAddr::new(va), pfn));
                }
                va += 4096;
            }
        }
        va
    }

    fn cpumask(&self) -> &CpuMask {
        MmStruct::cpumask(self)
    }
}

impl<P: MemCgroupPerNode, M: Mmu> Vm<P, M> {
    /// Drops a reference to `folio`; the last one releases it (`folio_put`).
    pub fn folio_put(&self, cpu: usize, folio: &'static Folio) {
        if let Ok(true) = folio.put() {
            self.release_folio(cpu, folio);
        }
    }

    /// `__folio_put`: `folio`'s last reference is gone. Takes it off its LRU, uncharges it
    /// and frees its frame to `cpu`'s per-CPU list.
    pub fn release_folio(&self, cpu: usize, folio: &'static Folio) {
        self.folios().release_folio(&self.tree, cpu, folio);
    }
}

impl VmFolios {
    /// `unmap_mapping_folio` (truncation) or `try_to_unmap` (eviction) of the object folio
    /// `folio`, page `index` of `obj`: clears every PTE that maps it through the reverse
    /// map, each with its TLB flush, and drops each mapping's mapcount, reference and
    /// `NR_FILE_MAPPED`. The caller holds another reference (the cache's, or reclaim's
    /// pin), so none of these is the last. A mapping whose flush failed hands its
    /// reference to the kept frames instead ([`crate::tlb_kept`]): the folio cannot be
    /// freed while a CPU may still translate to it. Returns the PTEs cleared (0 at once
    /// for an unmapped folio).
    // Out of line and in the kernel's `.text.hot`: seed000's reads evict a folio every few
    // operations, and one variant's copy straddling a page once cost it 0.67 unchained
    // transitions per read that the other's did not (`crate::fault`, "Placement").
    #[inline(never)]
    pub(crate) fn unmap_mapping_folio<P: MemCgroupPerNode>(
        &self,
        tree: &MemcgTree<P, Self>,
        cpu: usize,
        obj: &Object,
        index: u64,
        folio: &'static Folio,
    ) -> usize {
        if folio.mapcount() == 0 {
            return 0;
        }
        let done = obj.unmap_page(index, folio.pfn());
        let cleared = done.ptes;
        for i in 0..cleared {
            ksync::warn_on_once!(
                folio.dec_mapcount().is_err(),
                "unmap_mapping_folio: a PTE mapped a folio with no mapcount"
            );
            if i < done.unflushed {
                self.tlb_kept.keep(Kept::Ref(folio));
                continue;
            }
            ksync::warn_on_once!(
                folio.put() != Ok(false),
                "unmap_mapping_folio: a mapping's reference was the last or missing"
            );
        }
        if cleared > 0 {
            self.mod_folio_stat_of(
                tree,
                cpu,
                folio,
                NodeStatItem::NrFileMapped,
                -(cleared as i64),
            );
        }
        cleared
    }
}

impl<P: MemCgroupPerNode> FolioOwner<MemcgTree<P, Self>> for VmFolios {
    /// `__folio_put`; see the module documentation.
    fn release_folio(&self, tree: &MemcgTree<P, Self>, cpu: usize, folio: &'static Folio) {
        let cpu = self.cpu(cpu);
        if folio.test_lru() {
            ksync::race::window();
            // Nobody else can isolate it (isolation pins first, and the count is zero):
            // ours to unlink, under its lruvec's lock, which clears the flag with a plain
            // store (`__page_cache_release`).
            if let Ok(guard) = tree.rcu().read_lock(cpu)
                && let Ok(m) = tree.lookup_rcu(&guard, folio.memcg_id())
                && let Ok(lruvec) = m.lruvec(folio.node())
            {
                ksync::warn_on_once!(
                    lruvec.lock().del_released_folio(folio).is_err(),
                    "__folio_put: a folio with its LRU flag was on no list of its lruvec"
                );
            } else {
                // On a list no one can take it off: its frame must not be reused silently.
                ksync::warn_on_once!(true, "__folio_put: a folio's lruvec was not found");
            }
        }
        if folio.memcg_id() != 0 {
            let uncharged = tree.uncharge_folio(cpu, folio);
            if !ksync::warn_on_once!(uncharged.is_err(), "__folio_put: uncharge failed") {
                self.count(cpu, VmEvent::UnchargeBatches);
            }
        }
        ksync::warn_on_once!(
            folio.reset_lru_state().is_err(),
            "__folio_put: a released folio is still on an LRU list"
        );
        let freed = self.alloc.free_frozen_page(cpu, folio);
        if !ksync::warn_on_once!(freed.is_err(), "__folio_put: freeing the frame failed") {
            self.count(cpu, VmEvent::Released);
            self.count(cpu, VmEvent::PcpFreeRounds);
        }
    }

    /// memcg reclaim's free hook: evict the isolated, pinned `folio` with `shadow`, or say
    /// it is busy. See the module documentation.
    fn evict_folio(
        &self,
        tree: &MemcgTree<P, Self>,
        cpu: usize,
        folio: &'static Folio,
        shadow: Shadow,
    ) -> FolioFree {
        let cpu = self.cpu(cpu);
        if folio.test(FolioFlags::SWAPBACKED) {
            // Anonymous or shmem-like: nowhere to write it (no swap).
            self.count(cpu, VmEvent::EvictBusy);
            return FolioFree::Busy;
        }
        // SAFETY: a file folio's mapping is its object, alive while it has cached folios.
        let Some(obj) = (unsafe { object_of(folio) }) else {
            self.count(cpu, VmEvent::EvictBusy);
            return FolioFree::Busy;
        };
        let index = folio.index();
        let cleared = self.unmap_mapping_folio(tree, cpu, obj, index, folio);
        self.counters.add(cpu, VmEvent::Shootdown, cleared as u64);
        // The cache's reference and reclaim's pin, nothing else.
        if folio.mapcount() != 0 || !folio.ref_freeze(2) {
            self.count(cpu, VmEvent::EvictBusy);
            return FolioFree::Busy;
        }
        if !obj.cache().replace_with_shadow(index, folio, Some(shadow)) {
            folio.ref_unfreeze(2);
            self.count(cpu, VmEvent::EvictBusy);
            return FolioFree::Busy;
        }
        self.mod_folio_stat_of(tree, cpu, folio, NodeStatItem::NrFilePages, -1);
        // memcg uncharges the reclaim batch's frozen folios (one page-counter update and
        // one `css_put_many` per lruvec) and then hands them to `free_evicted`.
        self.count(cpu, VmEvent::Evicted);
        FolioFree::Frozen
    }

    /// memcg reclaim's free-batch step: the frames of one reclaim batch's evicted folios
    /// (frozen, uncharged) go back to `cpu`'s per-CPU lists with one `pcp->lock` hold per
    /// run of one zone (`free_unref_folios`, as `shrink_folio_list()` ends).
    fn free_evicted(&self, _tree: &MemcgTree<P, Self>, cpu: usize, folios: &[&'static Folio]) {
        let cpu = self.cpu(cpu);
        for &f in folios {
            ksync::warn_on_once!(
                f.reset_lru_state().is_err(),
                "an evicted folio is still on an LRU list"
            );
        }
        match self.alloc.free_frozen_folios(cpu, folios) {
            Ok(freed) => self
                .counters
                .add(cpu, VmEvent::PcpFreeRounds, freed.rounds as u64),
            Err(_) => {
                ksync::warn_on_once!(true, "freeing evicted frames failed");
            }
        }
    }
}
