//! The x86 side of the fault core's page tables: `mm::pgtable::Mmu` on the kernel's own
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
//! [`PhysAddr`] ([`Pfn::phys_addr`]) for the page-table links, and on the fault path a
//! direct-map pointer ([`pfn_to_kaddr`]) or a PTE ([`Pte::from_pfn`]) without the checks a
//! [`PhysAddr`] makes (the memmap's frames always fit), an [`mm::pgtable::Pte`] is the word
//! of an x86 [`Pte`], and a list of [`mm::VirtAddr`] is handed to the flush as its numbers
//! ([`mm::VirtAddr::slice_as_u64`]).
//!
//! A flush that fails (a shootdown IPI that could not be sent) is reported as
//! [`PtError::Flush`], so the fault core keeps the frames it covered instead of freeing them
//! (`mm::tlb_kept`). [`flush_failures`] injects such failures on demand (after the real
//! flush, so injection never leaves a stale translation behind, only frames kept longer).
//!
//! Unsafe code here, and why: the kernel's MMU for the fault core zeroes frames and links
//! page tables through the direct map, for frames its caller owns.
#![allow(unsafe_code)]

use super::aspace::{self, TableFrames};
use super::pte::{Pte, PteProt};
use super::tlb::{self, TlbFlush};
use super::vmlayout::pfn_to_kaddr;
use crate::percpu::CpuSet;
use ::page_alloc::Pfn;
use core::sync::atomic::{AtomicU64, Ordering};
use mm::VirtAddr;
use mm::cpumask::CpuMask;
use mm::pgtable::{self, Mmu, PtError};
use x86_64::PhysAddr;

/// The kernel's MMU.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelMmu;

/// The one instance the address spaces share.
pub static KERNEL_MMU: KernelMmu = KernelMmu;

/// Upper-level table frames from the page allocator (never freed while the slot is used).
struct AllocatorFrames;

/// Flush failures injected into this MMU (every `n`th flush call reports failure).
static FLUSH_FAILURES: pgtable::FlushFailures = pgtable::FlushFailures::new();

/// The kernel MMU's flush-failure injection knob (unlinks, shootdowns and full flushes).
#[must_use]
pub fn flush_failures() -> &'static pgtable::FlushFailures {
    &FLUSH_FAILURES
}

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

/// The CPUs of `mask` that are online: one that is not never ran, so it caches nothing,
/// and a shootdown to it would fail for nothing (`flush_tlb_all` is asked for every CPU a
/// context serves, which may include CPUs that never came up).
fn online(mask: &CpuMask) -> CpuSet {
    let mut s = CpuSet::new();
    for c in mask.iter().filter(|&c| crate::percpu::area(c).is_some()) {
        s.insert(c);
    }
    s
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
        pfn_to_kaddr(pfn.as_u64())
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

    fn unlink_pte_table(&self, va: VirtAddr, cpus: &CpuMask, _me: usize) -> Result<(), PtError> {
        // The slot flushes the caller and every CPU of the set before handing the table back.
        match aspace::unlink_pte_table(va.as_u64(), &cpuset(cpus)) {
            Ok(_) => FLUSH_FAILURES.check(),
            Err(aspace::AspaceError::Flush { .. }) => {
                ksync::warn_on_once!(true, "the flush after unlinking a PTE table failed");
                Err(PtError::Flush)
            }
            Err(_) => {
                // Outside the slot or not linked: no walker can reach the frame.
                ksync::warn_on_once!(true, "unlinking a PTE table the slot did not hold");
                FLUSH_FAILURES.check()
            }
        }
    }

    fn mk_pte(&self, pfn: Pfn, writable: bool) -> pgtable::Pte {
        pgtable::Pte::from_raw(Pte::from_pfn(pfn.as_u64(), PteProt::data(writable)).raw())
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

    fn flush_tlb_others(
        &self,
        cpus: &CpuMask,
        _me: usize,
        vas: &[VirtAddr],
    ) -> Result<(), PtError> {
        // Every CPU of an address space's cpumask ran in it, so it is online: a shootdown
        // that finds one that is not fails, and the frames are kept (no filter here, on the
        // unmap path, to check each CPU twice).
        let flush = TlbFlush::Pages(VirtAddr::slice_as_u64(vas));
        let r = tlb::flush_tlb_others(&cpuset(cpus), &flush);
        if ksync::warn_on_once!(r.is_err(), "a TLB shootdown failed") {
            return Err(PtError::Flush);
        }
        FLUSH_FAILURES.check()
    }

    fn flush_tlb_all(&self, cpus: &CpuMask, _me: usize) -> Result<(), PtError> {
        let mut set = online(cpus);
        set.insert(crate::percpu::cpu_id());
        let r = tlb::flush_tlb_cpus(&set, &TlbFlush::All);
        if ksync::warn_on_once!(r.is_err(), "a full TLB flush failed") {
            return Err(PtError::Flush);
        }
        FLUSH_FAILURES.check()
    }
}
