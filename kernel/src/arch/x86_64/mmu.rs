//! The x86 side of the fault core's page tables: `mm::vm::pgtable::Mmu` on the kernel's own
//! page tables.
//!
//! The platform-neutral code owns the PTE level (it allocates a table frame, writes its 512
//! entries under the table's split lock, and frees it); this file links such a table into
//! the address-space slot's page directory ([`super::aspace::link_pte_table`], upper levels
//! from the page allocator), encodes PTEs ([`super::pte::Pte`]: present, writable, NX,
//! never global) and flushes: `invlpg` here, a shootdown IPI to the other CPUs in the
//! address space's `mm_cpumask` ([`super::tlb::flush_tlb_others`]).
//!
//! The trait's typed values meet the x86 ones here and nowhere else: a [`Pfn`] becomes a
//! [`PhysAddr`] ([`Pfn::phys_addr`]), an [`mm::vm::pgtable::Pte`] is the word of an x86
//! [`Pte`], and a list of [`mm::vm::VirtAddr`] is handed to the flush as its numbers
//! ([`mm::vm::VirtAddr::slice_as_u64`]).

use super::aspace::{self, TableFrames};
use super::paging::phys_to_virt;
use super::pte::{Pte, PteProt};
use super::tlb::{self, TlbFlush};
use crate::percpu::CpuSet;
use core::sync::atomic::{AtomicU64, Ordering};
use mm::Pfn;
use mm::vm::VirtAddr;
use mm::vm::cpumask::CpuMask;
use mm::vm::pgtable::{self, Mmu, PtError};
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
    fn frame_ptr(&self, pfn: Pfn) -> *mut u8 {
        phys_to_virt(PhysAddr::new(pfn.phys_addr())).as_mut_ptr()
    }

    /// The kernel's `clear_page` (the version Linux would pick here; `clear_page_orig`
    /// under TCG, where `rep stos` runs one element per loop trip).
    unsafe fn clear_page(&self, pfn: Pfn) {
        // SAFETY: the caller owns the frame exclusively; the direct map covers its 4 KiB,
        // which are 4 KiB aligned.
        unsafe { super::clear_page::clear_page(self.frame_ptr(pfn)) };
    }

    fn link_pte_table(&self, va: VirtAddr, pt_pfn: Pfn) -> Result<(), PtError> {
        // SAFETY: the caller (mm's page-table code) passes a zeroed frame it allocated for
        // this table and owns until it unlinks it; `va` is inside an address-space range of
        // the slot that the caller's address space owns.
        unsafe {
            aspace::link_pte_table(
                va.as_u64(),
                PhysAddr::new(pt_pfn.phys_addr()),
                &mut AllocatorFrames,
            )
        }
        .map_err(|e| match e {
            aspace::AspaceError::OutOfFrames => PtError::NoMemory,
            aspace::AspaceError::OutsideSlot(_) | aspace::AspaceError::NotAllocated(_) => {
                PtError::OutOfRange
            }
            _ => PtError::Platform,
        })
    }

    fn unlink_pte_table(&self, va: VirtAddr, cpus: &CpuMask, _me: usize) {
        // The slot flushes the caller and every CPU of the set before handing the table back.
        let _ = aspace::unlink_pte_table(va.as_u64(), &cpuset(cpus));
    }

    fn mk_pte(&self, pfn: Pfn, writable: bool) -> pgtable::Pte {
        let pte = Pte::new(PhysAddr::new(pfn.phys_addr()), PteProt::data(writable));
        pgtable::Pte::from_raw(pte.map_or(0, Pte::raw))
    }

    fn pte_pfn(&self, pte: pgtable::Pte) -> Option<Pfn> {
        let p = Pte::from_raw(pte.raw());
        p.present().then(|| Pfn::new(p.pfn()))
    }

    fn pte_write(&self, pte: pgtable::Pte) -> bool {
        let p = Pte::from_raw(pte.raw());
        p.present() && p.writable()
    }

    fn flush_tlb_local(&self, vas: &[VirtAddr]) {
        tlb::flush_tlb_local_request(&TlbFlush::Pages(VirtAddr::slice_as_u64(vas)));
    }

    fn flush_tlb_others(&self, cpus: &CpuMask, _me: usize, vas: &[VirtAddr]) {
        // A shootdown fails only for a CPU that is not online (it holds no translation) or
        // when called from inside this CPU's own shootdown (the fault core never is).
        let _ = tlb::flush_tlb_others(&cpuset(cpus), &TlbFlush::Pages(VirtAddr::slice_as_u64(vas)));
    }
}
