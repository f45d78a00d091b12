//! The kernel's own page tables, built with the `x86_64` crate.
//!
//! Replaces the boot stub's 4 GiB identity map (all RWX) with:
//! - the kernel image at its link address (1 MiB): `.boot`+`.text` read-execute, `.rodata`
//!   read-only no-execute, `.data`+`.bss` read-write no-execute;
//! - a direct map of all physical memory (and the MMIO hole below 4 GiB, where the local APIC
//!   and most framebuffers live) at [`PHYS_OFFSET`], read-write no-execute, with 1 GiB pages
//!   when the CPU has them, else 2 MiB;
//! - nothing else: page 0 and the rest of low memory are unmapped, so null dereferences fault.
//!   Kernel stacks are mapped later in their own area, each above an unmapped guard page.
//!
//! PML4 slot 448 belongs to the address-space slot ([`super::aspace`]), whose lower levels
//! that module writes itself under its own lock: [`map_page`], [`unmap_page`] and
//! [`translate`] refuse addresses there, and only [`install_pml4_table`] touches its entry.
//!
//! Construction runs on the boot identity map: page-table frames come from the early
//! allocator's lowest ranges, which lie below 4 GiB, so they can be written through their
//! physical addresses until CR3 switches.
//!
//! Unsafe code here, and why: building and loading the kernel's own page tables writes
//! frames through raw pointers and loads CR3.
#![allow(unsafe_code)]

use crate::mm::frame::{self, Frames};
use spin::Mutex;
use x86_64::registers::control::{Cr3, Cr3Flags};
use x86_64::structures::paging::mapper::{MapToError, TranslateResult};
use x86_64::structures::paging::{
    Mapper, OffsetPageTable, Page, PageSize, PageTable, PageTableFlags as F, PhysFrame, Size1GiB,
    Size2MiB, Size4KiB, Translate,
};
use x86_64::{PhysAddr, VirtAddr};

pub use super::vmlayout::{PHYS_OFFSET, kernel_virt_to_phys, phys_to_virt};

static MAPPER: Mutex<Option<OffsetPageTable<'static>>> = Mutex::new(None);

unsafe extern "C" {
    static __kernel_start: u8;
    static __text_end: u8;
    static __rodata_end: u8;
    static __kernel_end: u8;
}

/// Physical `[start, end)` of the loaded kernel image.
#[must_use]
pub fn kernel_image() -> (u64, u64) {
    (
        &raw const __kernel_start as u64,
        &raw const __kernel_end as u64,
    )
}

/// Why building or changing the page tables failed.
#[derive(Clone, Copy, Debug)]
pub enum PagingError {
    /// No frame for a page table.
    OutOfFrames,
    /// The page was already mapped.
    AlreadyMapped,
    /// A huge page is in the way.
    HugePage,
    /// The page tables are not built yet.
    NotReady,
    /// The address lies in the address-space slot, which this mapper does not manage.
    MmSlot,
}

fn in_mm_slot(virt: VirtAddr) -> bool {
    (super::vmlayout::MM_SLOT_START..super::vmlayout::MM_SLOT_END).contains(&virt.as_u64())
}

impl<S: PageSize> From<MapToError<S>> for PagingError {
    fn from(e: MapToError<S>) -> Self {
        match e {
            MapToError::FrameAllocationFailed => PagingError::OutOfFrames,
            MapToError::PageAlreadyMapped(_) => PagingError::AlreadyMapped,
            MapToError::ParentEntryHugePage => PagingError::HugePage,
        }
    }
}

/// Builds the kernel page tables and switches CR3 to them.
///
/// `phys_top` is the end of the physical range to direct-map.
///
/// # Safety
/// Must run once, on the BSP, while the boot stub's identity map is active and before any
/// other CPU runs.
pub unsafe fn init(phys_top: u64) -> Result<(), PagingError> {
    let nx = if super::cpu::nx_enabled() {
        F::NO_EXECUTE
    } else {
        F::empty()
    };
    let pml4_frame = frame::alloc().ok_or(PagingError::OutOfFrames)?;
    assert!(
        pml4_frame.start_address().as_u64() < (4 << 30),
        "page table above 4 GiB"
    );
    // SAFETY: the frame is free RAM below 4 GiB, identity mapped by the boot stub, and owned
    // by us; it becomes the new PML4.
    let pml4 = unsafe { &mut *(pml4_frame.start_address().as_u64() as *mut PageTable) };
    pml4.zero();
    // SAFETY: offset 0 is correct while the boot identity map is live, and the early allocator
    // hands out frames below 4 GiB first.
    let mut m = unsafe { OffsetPageTable::new(pml4, VirtAddr::new(0)) };
    let table = F::PRESENT | F::WRITABLE;

    // Linker-script symbols: only their addresses are taken (no unsafe needed for that).
    let (start, text_end, ro_end, end) = (
        &raw const __kernel_start as u64,
        &raw const __text_end as u64,
        &raw const __rodata_end as u64,
        &raw const __kernel_end as u64,
    );
    let mut a = start & !0xfff;
    while a < end {
        let flags = if a < text_end {
            F::PRESENT
        } else if a < ro_end {
            F::PRESENT | nx
        } else {
            F::PRESENT | F::WRITABLE | nx
        };
        let page = Page::<Size4KiB>::containing_address(VirtAddr::new(a));
        let phys = PhysFrame::containing_address(PhysAddr::new(a));
        // SAFETY: the image maps to itself (virtual == physical), as the boot stub had it.
        unsafe { m.map_to_with_table_flags(page, phys, flags, table, &mut Frames) }?.ignore();
        a += 4096;
    }

    let direct = F::PRESENT | F::WRITABLE | nx;
    let giga = super::cpu::has_1gib_pages();
    let step = if giga { Size1GiB::SIZE } else { Size2MiB::SIZE };
    let top = phys_top.div_ceil(step) * step;
    let mut p = 0;
    while p < top {
        let v = VirtAddr::new(PHYS_OFFSET + p);
        // SAFETY: the direct map aliases physical memory at a fixed offset; nothing else
        // uses that part of the address space.
        unsafe {
            if giga {
                m.map_to_with_table_flags(
                    Page::<Size1GiB>::containing_address(v),
                    PhysFrame::containing_address(PhysAddr::new(p)),
                    direct,
                    table,
                    &mut Frames,
                )?
                .ignore();
            } else {
                m.map_to_with_table_flags(
                    Page::<Size2MiB>::containing_address(v),
                    PhysFrame::containing_address(PhysAddr::new(p)),
                    direct,
                    table,
                    &mut Frames,
                )?
                .ignore();
            }
        }
        p += step;
    }

    // SAFETY: the new tables map the running code (image), the stack (.bss) and all data the
    // kernel uses at the same addresses as before, so execution continues after the switch.
    unsafe { Cr3::write(pml4_frame, Cr3Flags::empty()) };
    let pml4_virt = PHYS_OFFSET + pml4_frame.start_address().as_u64();
    // SAFETY: the PML4 is now reached through the direct map; from here on only MAPPER
    // touches the tables (under its lock).
    let m = unsafe {
        OffsetPageTable::new(
            &mut *(pml4_virt as *mut PageTable),
            VirtAddr::new(PHYS_OFFSET),
        )
    };
    *MAPPER.lock() = Some(m);
    Ok(())
}

/// Maps one 4 KiB page.
///
/// # Safety
/// Mapping `phys` at `virt` must not create an alias that breaks Rust's aliasing rules
/// (e.g. a second writable view of memory that is in use).
pub unsafe fn map_page(virt: VirtAddr, phys: PhysAddr, flags: F) -> Result<(), PagingError> {
    if in_mm_slot(virt) {
        return Err(PagingError::MmSlot);
    }
    let mut guard = MAPPER.lock();
    let m = guard.as_mut().ok_or(PagingError::NotReady)?;
    let page = Page::<Size4KiB>::containing_address(virt);
    let frame = PhysFrame::containing_address(phys);
    // SAFETY: forwarded to the caller; intermediate tables come from the frame allocator.
    unsafe {
        m.map_to_with_table_flags(page, frame, flags, F::PRESENT | F::WRITABLE, &mut Frames)
    }?
    .flush();
    Ok(())
}

/// Unmaps one 4 KiB page, returning the frame it mapped.
///
/// # Safety
/// Nothing may still use the page.
pub unsafe fn unmap_page(virt: VirtAddr) -> Option<PhysFrame> {
    if in_mm_slot(virt) {
        return None;
    }
    let mut guard = MAPPER.lock();
    let m = guard.as_mut()?;
    let (frame, flush) = m.unmap(Page::<Size4KiB>::containing_address(virt)).ok()?;
    flush.flush();
    Some(frame)
}

/// Physical address and flags that `virt` maps to, if it is mapped.
#[must_use]
pub fn translate(virt: VirtAddr) -> Option<(PhysAddr, F)> {
    if in_mm_slot(virt) {
        return None;
    }
    let guard = MAPPER.lock();
    match guard.as_ref()?.translate(virt) {
        TranslateResult::Mapped {
            frame,
            offset,
            flags,
        } => Some((frame.start_address() + offset, flags)),
        _ => None,
    }
}

/// Points PML4 entry `index` at the (zeroed) table `table`, present and writable, if the
/// entry is empty. Returns whether it was installed (`false`: the entry was already in use
/// and nothing changed). Every CPU shares this PML4, and a non-present entry is never cached,
/// so no TLB flush is needed.
///
/// # Safety
/// `table` must be a zeroed 4 KiB frame that becomes a page table of this hierarchy for good
/// (it is never freed while the kernel runs).
pub unsafe fn install_pml4_table(index: usize, table: PhysAddr) -> Result<bool, PagingError> {
    let mut guard = MAPPER.lock();
    let m = guard.as_mut().ok_or(PagingError::NotReady)?;
    let entry = &mut m.level_4_table_mut()[index % 512];
    if !entry.is_unused() {
        return Ok(false);
    }
    let nx = if super::cpu::nx_enabled() {
        F::NO_EXECUTE
    } else {
        F::empty()
    };
    entry.set_addr(table, F::PRESENT | F::WRITABLE | nx);
    Ok(true)
}
