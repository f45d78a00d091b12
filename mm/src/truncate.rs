//! Truncating a page-cache object: `truncate_pagecache`.
//!
//! Models mm/truncate.c's `truncate_pagecache` for a truncation to size 0, as shmem's
//! `shmem_setattr` and a file's `ftruncate` do it:
//!
//! 1. `unmap_mapping_range`: every region that maps the object (its `i_mmap`, walked under
//!    the object's lock) has its whole range zapped as `zap_page_range_single` zaps it:
//!    the PTEs cleared under each table's lock, a batch at a time
//!    ([`RmapTarget::zap_ptes`](crate::object::RmapTarget::zap_ptes)), each page's
//!    mapcount and `NR_FILE_MAPPED` dropped and the page gathered in an mmu_gather; one
//!    TLB flush (a shootdown when other CPUs use the address space) per gather, then the
//!    mappings' references are dropped. The page cache still holds its own reference, so
//!    no folio is freed here.
//! 2. `truncate_inode_pages`: the slots are emptied under the object's `i_pages` lock;
//!    `NR_FILE_PAGES` (and `NR_SHMEM`) drop by one per folio, and the cache's reference
//!    goes. Folios whose last reference that was are released together (`folios_put_refs`:
//!    off their lruvecs, uncharged, freed).
//!
//! A fault that raced with step 1 may have mapped a page again before step 2 emptied its
//! slot. The fault path takes the folio's mapcount and then checks, under the PTE lock,
//! that the slot still holds the folio; step 2 empties the slots and then reads each
//! removed folio's mapcount, with a full fence on both sides, so one of them sees the
//! other: the fault backs off, or step 2 sees it mapped. Linux's `truncate_cleanup_folio`
//! unmaps such a folio through the reverse map (`unmap_mapping_folio`); step 2 does the
//! same for any removed folio still mapped, with a TLB flush per page, a path only races
//! take.

use crate::context::Vm;
use crate::mmu_gather::{MAX_GATHER_BATCH, MmuGather};
use crate::object::{Object, ObjectKind, ZAP_BATCH, ZappedPtes};
use crate::pgtable::Mmu;
use alloc::vec::Vec;
use lru::{Folio, NodeStatItem};
use memcg::MemCgroupPerNode;

impl<P: MemCgroupPerNode, M: Mmu> Vm<P, M> {
    /// `truncate_pagecache(inode, 0)`: unmaps every page of `obj` from every region that
    /// maps it, then removes every page from its page cache (shadows included) and frees
    /// the folios no one else holds. Returns the pages removed from the cache.
    pub fn truncate(&self, obj: &Object, cpu: usize) -> usize {
        let cpu = self.cpu(cpu);
        // The pages this CPU just added may still sit in its own lru_add batch:
        // lru_add_drain() first, as the unmap path does. A page in another CPU's batch
        // holds that batch's reference, so it is released (and taken off its LRU) by the
        // drain that moves it, never here.
        ksync::warn_on_once!(
            lru::MoveStats::failed(&self.batches.drain_cpu(cpu, &self.tree)),
            "truncate: lru_add_drain failed"
        );
        self.unmap_mapping_range(obj, cpu);
        self.truncate_inode_pages(obj, cpu)
    }

    /// `unmap_mapping_range(mapping, 0, 0, 1)`: zaps every region mapping `obj`, whole;
    /// see the module documentation.
    // Out of line: see `crate::fault`'s module documentation, "Placement".
    #[inline(never)]
    fn unmap_mapping_range(&self, obj: &Object, cpu: usize) {
        obj.rmap_walk(|m, mm| {
            let mut tlb = MmuGather::new(self.mmu, mm.cpumask(), cpu);
            let mut memmap = self.alloc.memmap().cursor();
            let mut va = m.start;
            // Every `zap_ptes` call advances `va` (or ends the walk): bounded.
            while va < m.end {
                if tlb.len() + ZAP_BATCH > MAX_GATHER_BATCH {
                    self.tlb_flush(&mut tlb, cpu);
                }
                let mut cleared = ZappedPtes::new();
                va = mm.zap_ptes(va, m.end, &mut cleared);
                // One RCU read section per batch for the folios' memcgs, ended before any
                // flush and its shootdown.
                let rcu = self.tree.rcu().read_lock(cpu).ok();
                let mut last = None;
                for &(at, pfn) in &cleared {
                    if let Some(folio) = memmap.pfn_to_folio(pfn.as_u64()) {
                        self.zap_folio(&mut tlb, cpu, rcu.as_ref(), &mut last, at.as_u64(), folio);
                    }
                }
            }
            self.tlb_flush(&mut tlb, cpu);
        });
    }

    /// `truncate_inode_pages(mapping, 0)`: empties `obj`'s page cache; see the module
    /// documentation. Returns the pages removed.
    // Out of line: see `crate::fault`'s module documentation, "Placement".
    #[inline(never)]
    fn truncate_inode_pages(&self, obj: &Object, cpu: usize) -> usize {
        let removed = obj.cache().truncate(0);
        // Between emptying the slots and reading the mapcounts: a fault may map one here.
        ksync::race::window();
        // Each folio's last reference goes once: no growth (and no realloc) on the way.
        let mut last_refs: Vec<&'static Folio> = Vec::with_capacity(removed.len());
        // Mapped again by a fault that raced with the unmap: `unmap_mapping_folio`, outside
        // the RCU section below (it flushes, maybe by shootdown).
        // Pairs with the fault path's fence between its mapcount increment and its check
        // that the folio is still cached (see `do_object_fault`): after this fence, a fault
        // that will map one of these folios has either made its increment visible to the
        // reads below, or will find the slot empty and back off.
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        // Only folios a racing fault mapped: the rule is none, so the others cost a load.
        for &(index, folio) in removed.iter().filter(|(_, f)| f.mapcount() > 0) {
            // We hold the cache's reference until below: no mapping's is the last.
            self.folios()
                .unmap_mapping_folio(&self.tree, cpu, obj, index, folio);
        }
        let rcu = self.tree.rcu().read_lock(cpu).ok();
        let mut last = None;
        for &(_, folio) in &removed {
            // A cached folio holds its memcg's reference (its charge).
            if let Some(m) = self.folio_memcg_cached(rcu.as_ref(), &mut last, folio) {
                let node = folio.node();
                self.mod_folio_stat(m, cpu, node, NodeStatItem::NrFilePages, -1);
                if obj.kind() == ObjectKind::Shmem {
                    self.mod_folio_stat(m, cpu, node, NodeStatItem::NrShmem, -1);
                }
            }
            // The cache's reference.
            if let Ok(true) = folio.put() {
                last_refs.push(folio);
            }
        }
        drop(rcu);
        self.release_folios(cpu, &last_refs);
        removed.len()
    }
}
