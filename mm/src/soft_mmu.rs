//! The software side of the fault core's MMU: page tables that only software walks.
//!
//! The host benchmark and the host tests run the very same fault core on host threads; a
//! "touch" there is a function call ([`crate::context::Vm::touch`]) that walks the PTE
//! tables in software and faults when the entry is not present, not a trap. Physical memory
//! is an arena of host memory standing for frames `base_pfn .. base_pfn + nr_frames` (the
//! same frames the page allocator manages), so zeroing, reading the backing store into a
//! page, checking contents and the PTE tables' 512 entries all touch real memory.
//!
//! Linking a PTE table needs nothing beyond the fault core's own directory, and there is no
//! TLB: flushes are counted (so tests can check that unmaps flush before freeing, and how
//! many shootdowns there would be) but do nothing. The PTE format is x86's (present,
//! writable, NX, frame number in bits 12..52), so the two sides differ in nothing but the
//! hardware.

use crate::addr::VirtAddr;
use crate::cpumask::CpuMask;
use crate::pgtable::{FlushFailures, Mmu, PtError, Pte};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use page_alloc::pfn::Pfn;

const PRESENT: u64 = 1;
const WRITABLE: u64 = 1 << 1;
const NX: u64 = 1 << 63;
const FRAME: u64 = 0x000f_ffff_ffff_f000;

/// A software MMU over an arena of host memory.
#[derive(Debug)]
pub struct SoftMmu {
    base: usize,
    base_pfn: u64,
    nr_frames: u64,
    linked: AtomicU64,
    local_flushes: AtomicU64,
    local_flush_calls: AtomicU64,
    shootdowns: AtomicU64,
    fail: FlushFailures,
}

impl SoftMmu {
    /// An arena for frames `base_pfn .. base_pfn + nr_frames`, zeroed, leaked (it lives as
    /// long as the allocator whose frames it backs).
    #[must_use]
    pub fn new(base_pfn: u64, nr_frames: u64) -> &'static SoftMmu {
        let bytes = usize::try_from(nr_frames + 1).unwrap_or(usize::MAX / 4096) * 4096;
        let mem: &'static mut [u8] = Vec::leak(alloc::vec![0u8; bytes]);
        let base = (mem.as_mut_ptr() as usize).next_multiple_of(4096);
        alloc::boxed::Box::leak(alloc::boxed::Box::new(SoftMmu {
            base,
            base_pfn,
            nr_frames,
            linked: AtomicU64::new(0),
            local_flushes: AtomicU64::new(0),
            local_flush_calls: AtomicU64::new(0),
            shootdowns: AtomicU64::new(0),
            fail: FlushFailures::new(),
        }))
    }

    /// PTE tables linked now.
    #[must_use]
    pub fn linked_tables(&self) -> u64 {
        self.linked.load(Relaxed)
    }

    /// Addresses flushed on the flushing CPU.
    #[must_use]
    pub fn local_flushes(&self) -> u64 {
        self.local_flushes.load(Relaxed)
    }

    /// Local flush requests (each of one or more addresses: an mmu_gather's flush, or one
    /// page unmapped through the reverse map).
    #[must_use]
    pub fn local_flush_calls(&self) -> u64 {
        self.local_flush_calls.load(Relaxed)
    }

    /// Shootdowns that would have been sent.
    #[must_use]
    pub fn shootdowns(&self) -> u64 {
        self.shootdowns.load(Relaxed)
    }

    /// The flush-failure injection knob (unlinks, shootdowns and full flushes).
    #[must_use]
    pub fn flush_failures(&self) -> &FlushFailures {
        &self.fail
    }
}

impl Mmu for SoftMmu {
    fn frame_ptr(&self, pfn: Pfn) -> *mut u8 {
        let off = pfn
            .as_u64()
            .checked_sub(self.base_pfn)
            .filter(|&o| o < self.nr_frames)
            .unwrap_or_else(|| panic!("pfn {pfn:#x} outside the arena"));
        (self.base + off as usize * 4096) as *mut u8
    }

    fn link_pte_table(&self, _va: VirtAddr, pt_pfn: Pfn) -> Result<(), PtError> {
        let pt_pfn = pt_pfn.as_u64();
        if pt_pfn < self.base_pfn || pt_pfn >= self.base_pfn + self.nr_frames {
            return Err(PtError::Platform);
        }
        self.linked.fetch_add(1, Relaxed);
        Ok(())
    }

    fn unlink_pte_table(&self, _va: VirtAddr, _cpus: &CpuMask, _me: usize) -> Result<(), PtError> {
        self.linked.fetch_sub(1, Relaxed);
        self.fail.check()
    }

    fn mk_pte(&self, pfn: Pfn, writable: bool) -> Pte {
        Pte::from_raw(pfn.phys_addr() & FRAME | PRESENT | NX | if writable { WRITABLE } else { 0 })
    }

    fn pte_pfn(&self, pte: Pte) -> Option<Pfn> {
        let pte = pte.raw();
        (pte & PRESENT != 0).then_some(Pfn::new((pte & FRAME) >> 12))
    }

    fn pte_write(&self, pte: Pte) -> bool {
        pte.raw() & (PRESENT | WRITABLE) == PRESENT | WRITABLE
    }

    fn flush_tlb_local(&self, vas: &[VirtAddr]) {
        self.local_flushes.fetch_add(vas.len() as u64, Relaxed);
        self.local_flush_calls.fetch_add(1, Relaxed);
    }

    fn flush_tlb_others(
        &self,
        cpus: &CpuMask,
        me: usize,
        _vas: &[VirtAddr],
    ) -> Result<(), PtError> {
        self.fail.check()?;
        if cpus.any_other_than(me) {
            self.shootdowns.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    fn flush_tlb_all(&self, _cpus: &CpuMask, _me: usize) -> Result<(), PtError> {
        self.fail.check()
    }
}
