//! The x86 side of the fault core's page tables: `mm::vm::pgtable::Mmu` on the kernel's own
//! page tables.
//!
//! The platform-neutral code owns the PTE level (it allocates a table frame, writes its 512
//! entries under the table's split lock, and frees it); this file links such a table into
//! the address-space slot's page directory ([`super::aspace::link_pte_table`], upper levels
//! from the page allocator), encodes PTEs ([`super::pte::Pte`]: present, writable, NX,
//! never global) and flushes: `invlpg` here, a shootdown IPI to the other CPUs in the
//! address space's `mm_cpumask` ([`super::tlb::flush_tlb_others`]).

use super::aspace::{self, TableFrames};
use super::paging::phys_to_virt;
use super::pte::{Pte, PteProt};
use super::tlb::{self, TlbFlush};
use crate::percpu::CpuSet;
use core::sync::atomic::{AtomicU64, Ordering};
use mm::vm::cpumask::CpuMask;
use mm::vm::pgtable::{Mmu, PtError};
use x86_64::PhysAddr;

/// The kernel's MMU.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelMmu;

/// The one instance the address spaces share.
pub static KERNEL_MMU: KernelMmu = KernelMmu;

/// Upper-level table frames from the page allocator (never freed while the slot is used).
struct AllocatorFrames;

/// Upper-level table frames the slot holds (see [`upper_table_frames`]).
static UPPER_TABLES: AtomicU64 = AtomicU64::new(0);

/// Frames the address-space slot holds as upper-level tables (PDPT, page directories).
/// They stay linked once made, so a test that counts free frames adds these back.
#[must_use]
pub fn upper_table_frames() -> u64 {
    UPPER_TABLES.load(Ordering::Relaxed)
}

impl TableFrames for AllocatorFrames {
    fn alloc(&mut self) -> Option<PhysAddr> {
        let f = crate::mm::page_alloc::alloc_kernel_frame()?;
        UPPER_TABLES.fetch_add(1, Ordering::Relaxed);
        Some(PhysAddr::new(f.pfn() << 12))
    }

    fn free(&mut self, frame: PhysAddr) {
        if let (Some(pa), Some(f)) = (
            crate::mm::page_alloc::get(),
            crate::mm::page_alloc::get().and_then(|pa| pa.pfn_to_folio(frame.as_u64() >> 12)),
        ) {
            UPPER_TABLES.fetch_sub(1, Ordering::Relaxed);
            ksync::warn_on_once!(
                pa.free_page(crate::percpu::cpu_id(), f).is_err(),
                "freeing an upper page-table frame failed"
            );
        }
    }
}

fn cpuset(mask: &CpuMask) -> CpuSet {
    let mut s = CpuSet::new();
    for c in mask.iter() {
        s.insert(c);
    }
    s
}

impl Mmu for KernelMmu {
    fn frame_ptr(&self, pfn: u64) -> *mut u8 {
        phys_to_virt(PhysAddr::new(pfn << 12)).as_mut_ptr()
    }

    /// The kernel's `clear_page` (the version Linux would pick here; `clear_page_orig`
    /// under TCG, where `rep stos` runs one element per loop trip).
    unsafe fn clear_page(&self, pfn: u64) {
        // SAFETY: the caller owns the frame exclusively; the direct map covers its 4 KiB,
        // which are 4 KiB aligned.
        unsafe { super::clear_page::clear_page(self.frame_ptr(pfn)) };
    }

    fn link_pte_table(&self, va: u64, pt_pfn: u64) -> Result<(), PtError> {
        // SAFETY: the caller (mm's page-table code) passes a zeroed frame it allocated for
        // this table and owns until it unlinks it; `va` is inside an address-space range of
        // the slot that the caller's address space owns.
        unsafe { aspace::link_pte_table(va, PhysAddr::new(pt_pfn << 12), &mut AllocatorFrames) }
            .map_err(|e| match e {
                aspace::AspaceError::OutOfFrames => PtError::NoMemory,
                aspace::AspaceError::OutsideSlot(_) | aspace::AspaceError::NotAllocated(_) => {
                    PtError::OutOfRange
                }
                _ => PtError::Platform,
            })
    }

    fn unlink_pte_table(&self, va: u64, cpus: &CpuMask, _me: usize) {
        // The slot flushes the caller and every CPU of the set before handing the table back.
        let _ = aspace::unlink_pte_table(va, &cpuset(cpus));
    }

    fn mk_pte(&self, pfn: u64, writable: bool) -> u64 {
        Pte::new(PhysAddr::new(pfn << 12), PteProt::data(writable)).map_or(0, Pte::raw)
    }

    fn pte_pfn(&self, pte: u64) -> Option<u64> {
        let p = Pte::from_raw(pte);
        p.present().then(|| p.pfn())
    }

    fn pte_write(&self, pte: u64) -> bool {
        let p = Pte::from_raw(pte);
        p.present() && p.writable()
    }

    fn flush_tlb_local(&self, vas: &[u64]) {
        tlb::flush_tlb_local_request(&TlbFlush::Pages(vas));
    }

    fn flush_tlb_others(&self, cpus: &CpuMask, _me: usize, vas: &[u64]) {
        // A shootdown fails only for a CPU that is not online (it holds no translation) or
        // when called from inside this CPU's own shootdown (the fault core never is).
        let _ = tlb::flush_tlb_others(&cpuset(cpus), &TlbFlush::Pages(vas));
    }
}
