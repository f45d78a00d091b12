//! `struct mmu_gather`: batching what an unmap cleared until the TLB is flushed.
//!
//! Models include/asm-generic/tlb.h and mm/mmu_gather.c: `zap_pte_range` clears PTEs under
//! the table's lock and hands each page to the gather (`tlb_remove_page`) instead of freeing
//! it, because another CPU may still hold a translation to it; the gather remembers the
//! addresses, and when it is full or the unmap ends (`tlb_finish_mmu`) it flushes the TLB
//! first (`tlb_flush_mmu_tlbonly`) and only then lets the caller free the pages
//! (`tlb_batch_pages_flush`).
//!
//! The flush is `invlpg` on this CPU when no other CPU is in the address space's
//! `mm_cpumask`, else a shootdown to every CPU in it, waiting for each to acknowledge
//! ([`crate::pgtable::Mmu::flush_tlb_others`]); the platform turns a long list into a
//! full flush (Linux's `tlb_single_page_flush_ceiling`).
//!
//! A flush can fail here (a shootdown IPI that could not be sent), which Linux's cannot: then
//! no gathered page is released, each goes to the caller's `keep` instead, with the
//! reference its PTE held, until a later flush succeeds ([`crate::tlb_kept`]).

use crate::addr::VirtAddr;
use crate::cpumask::CpuMask;
use crate::pgtable::{Mmu, PtError};
use arrayvec::ArrayVec;
use lru::Folio;

/// Pages gathered before the gather must be flushed (`MAX_GATHER_BATCH` on x86_64).
pub const MAX_GATHER_BATCH: usize = 510;

/// Pages cleared from the page tables, waiting for the TLB flush.
pub struct MmuGather<'a, M: Mmu> {
    mmu: &'a M,
    cpumask: &'a CpuMask,
    cpu: usize,
    /// Left uninitialised beyond what is gathered: a gather lives for one unmap, often of
    /// a few pages, and zeroing 8 KiB for each would cost more than the pages' own work.
    vas: ArrayVec<VirtAddr, MAX_GATHER_BATCH>,
    folios: ArrayVec<&'static Folio, MAX_GATHER_BATCH>,
    /// Flushes done (local or shootdown), for the statistics.
    flushes: u64,
    /// Of those, shootdowns to other CPUs.
    shootdowns: u64,
}

impl<M: Mmu> core::fmt::Debug for MmuGather<'_, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MmuGather")
            .field("cpu", &self.cpu)
            .field("nr", &self.vas.len())
            .field("flushes", &self.flushes)
            .finish()
    }
}

impl<'a, M: Mmu> MmuGather<'a, M> {
    /// `tlb_gather_mmu`: an empty gather for an unmap by `cpu` in the address space whose
    /// CPUs are `cpumask`.
    #[must_use]
    pub fn new(mmu: &'a M, cpumask: &'a CpuMask, cpu: usize) -> Self {
        MmuGather {
            mmu,
            cpumask,
            cpu,
            vas: ArrayVec::new(),
            folios: ArrayVec::new(),
            flushes: 0,
            shootdowns: 0,
        }
    }

    /// Whether the gather is full: the caller must [`MmuGather::flush`] (dropping its PTE
    /// lock first) before gathering more.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.vas.is_full()
    }

    /// `tlb_remove_page`: `folio` was mapped at `va` and its PTE is now clear. Returns false
    /// (and keeps nothing) when the gather is full.
    #[must_use]
    pub fn remove_page(&mut self, va: u64, folio: &'static Folio) -> bool {
        if self.is_full() {
            return false;
        }
        self.vas.push(VirtAddr::new(va));
        self.folios.push(folio);
        true
    }

    /// Pages gathered and not yet flushed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.vas.len()
    }

    /// Whether nothing is gathered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.vas.is_empty()
    }

    /// `tlb_flush_mmu`: flushes every gathered address (locally, or by shootdown when other
    /// CPUs may hold them), then hands each gathered page to `release`, in order; or, when
    /// the shootdown failed, to `keep` (another CPU may still translate to it).
    ///
    /// # Errors
    /// The shootdown's error; the gather is empty either way.
    pub fn flush(
        &mut self,
        mut release: impl FnMut(u64, &'static Folio),
        mut keep: impl FnMut(u64, &'static Folio),
    ) -> Result<(), PtError> {
        if self.vas.is_empty() {
            return Ok(());
        }
        let vas = &self.vas[..];
        self.mmu.flush_tlb_local(vas);
        let mut flushed = Ok(());
        if self.cpumask.any_other_than(self.cpu) {
            flushed = self.mmu.flush_tlb_others(self.cpumask, self.cpu, vas);
            self.shootdowns += 1;
        }
        self.flushes += 1;
        for (va, f) in self.vas.drain(..).zip(self.folios.drain(..)) {
            if flushed.is_ok() {
                release(va.as_u64(), f);
            } else {
                keep(va.as_u64(), f);
            }
        }
        flushed
    }

    /// `(flushes, shootdowns)` so far.
    #[must_use]
    pub fn flush_counts(&self) -> (u64, u64) {
        (self.flushes, self.shootdowns)
    }
}

impl<M: Mmu> Drop for MmuGather<'_, M> {
    fn drop(&mut self) {
        // Pages must never be freed without a flush, nor forgotten: a gather dropped with
        // pages in it is a bug in its user.
        debug_assert!(
            self.vas.is_empty(),
            "mmu_gather dropped with {} pages",
            self.vas.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgtable::tests::{SoftMmu, frame};
    use core::sync::atomic::Ordering;

    #[test]
    fn flushes_before_release_and_shoots_down_only_with_other_cpus() {
        let mmu = SoftMmu::new(1);
        let mask = CpuMask::new();
        mask.set(2);
        let mut g = MmuGather::new(mmu, &mask, 2);
        for i in 0..3u64 {
            assert!(g.remove_page(0x1000 * i, frame(i)));
        }
        let mut released = alloc::vec::Vec::new();
        g.flush(
            |va, f| {
                assert_eq!(
                    mmu.local_flushes.load(Ordering::Relaxed),
                    3,
                    "flush before release"
                );
                released.push((va, f.pfn()));
            },
            |_, _| panic!("flushed"),
        )
        .unwrap();
        assert_eq!(released, [(0, 0), (0x1000, 1), (0x2000, 2)]);
        assert_eq!(
            mmu.remote_flushes.load(Ordering::Relaxed),
            0,
            "only CPU 2 in the mask"
        );
        mask.set(5);
        assert!(g.remove_page(0x9000, frame(9)));
        g.flush(|_, _| {}, |_, _| panic!("flushed")).unwrap();
        assert_eq!(mmu.remote_flushes.load(Ordering::Relaxed), 1);
        assert_eq!(g.flush_counts(), (2, 1));
        for i in 0..MAX_GATHER_BATCH as u64 {
            assert!(g.remove_page(i * 4096, frame(i)));
        }
        assert!(g.is_full());
        assert!(!g.remove_page(0, frame(0)));
        g.flush(|_, _| {}, |_, _| panic!("flushed")).unwrap();
        assert!(g.is_empty());
    }

    /// A failed shootdown releases nothing: every gathered page goes to `keep`, and the
    /// gather is empty for the next batch.
    #[test]
    fn a_failed_shootdown_keeps_every_page() {
        let mmu = SoftMmu::new(1);
        let mask = CpuMask::new();
        mask.set(0);
        mask.set(1);
        let mut g = MmuGather::new(mmu, &mask, 0);
        for i in 0..3u64 {
            assert!(g.remove_page(0x1000 * i, frame(i)));
        }
        mmu.fail.set_every(1);
        let mut kept = alloc::vec::Vec::new();
        let r = g.flush(|_, _| panic!("released"), |va, f| kept.push((va, f.pfn())));
        assert_eq!(r, Err(PtError::Flush));
        assert_eq!(kept, [(0, 0), (0x1000, 1), (0x2000, 2)]);
        assert!(g.is_empty());
        // Without other CPUs there is no shootdown to fail.
        let alone = CpuMask::new();
        alone.set(0);
        let mut g = MmuGather::new(mmu, &alone, 0);
        assert!(g.remove_page(0, frame(0)));
        assert_eq!(g.flush(|_, _| {}, |_, _| panic!("kept")), Ok(()));
    }

    #[test]
    fn len_counts_what_is_gathered_until_the_flush() {
        let mmu = SoftMmu::new(1);
        let mask = CpuMask::new();
        let mut g = MmuGather::new(mmu, &mask, 0);
        assert_eq!((g.len(), g.is_empty()), (0, true));
        for i in 0..5u64 {
            assert!(g.remove_page(0x1000 * i, frame(i)));
        }
        assert_eq!((g.len(), g.is_empty()), (5, false));
        g.flush(|_, _| {}, |_, _| {}).unwrap();
        assert_eq!((g.len(), g.is_empty()), (0, true));
    }

    /// Dropping a gather that still holds pages (never flushed, so never released) is a
    /// bug its drop reports in debug builds.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "mmu_gather dropped with 2 pages")]
    fn dropping_unflushed_pages_is_reported() {
        let mmu = SoftMmu::new(1);
        let mask = CpuMask::new();
        let mut g = MmuGather::new(mmu, &mask, 0);
        assert!(g.remove_page(0, frame(0)));
        assert!(g.remove_page(0x1000, frame(1)));
        drop(g);
    }
}
