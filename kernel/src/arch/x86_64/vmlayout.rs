//! The kernel's virtual memory layout: where the direct map and the address-space slot sit.
//!
//! Linux documents its x86_64 layout in Documentation/arch/x86/x86_64/mm.rst and defines
//! it in asm/page_64_types.h (`__PAGE_OFFSET`, `__va()`); here it is two PML4 slots:
//!
//! - slot 256 ([`PHYS_OFFSET`]): the direct map of all physical memory, so a frame's bytes
//!   are at [`phys_to_virt`] of its address;
//! - slot 448 ([`MM_SLOT_INDEX`], [`MM_SLOT_START`]..[`MM_SLOT_END`]): the address-space
//!   slot whose lower levels [`super::aspace`] manages and the boot mapper
//!   ([`super::paging`]) refuses to touch.
//!
//! A leaf: the mapper, the address-space slot, the touch routines, the fault handler and
//! every user of the direct map (ACPI, the APIC, SMP bring-up, the page allocator's
//! memmap) read these constants without depending on each other. [`super::paging`] and
//! [`super::aspace`] re-export them under the names their callers use.

use x86_64::{PhysAddr, VirtAddr};

/// Virtual address of physical address 0 in the direct map (PML4 slot 256).
pub const PHYS_OFFSET: u64 = 0xFFFF_8000_0000_0000;

/// Bytes the direct map covers (one PML4 slot).
pub const DIRECT_MAP_SIZE: u64 = 1 << 39;

/// Kernel virtual address of physical address `phys` through the direct map (`__va()`).
#[must_use]
pub fn phys_to_virt(phys: PhysAddr) -> VirtAddr {
    VirtAddr::new(PHYS_OFFSET + phys.as_u64())
}

/// The first byte of frame `pfn` through the direct map (`pfn_to_kaddr()`), for the fault
/// path's frames: one shift and one addition, as Linux's `__va(PFN_PHYS(pfn))`, without
/// the checks of [`phys_to_virt`] and its `PhysAddr` argument (that the address fits in 52
/// bits, that the sum is canonical: each a compare and a panic path on every fault). Every
/// frame the memmap describes lies inside the direct map; a frame number beyond it would
/// give an address outside, which debug builds assert.
#[inline]
#[must_use]
pub fn pfn_to_kaddr(pfn: u64) -> *mut u8 {
    debug_assert!(
        pfn < DIRECT_MAP_SIZE >> 12,
        "frame {pfn:#x} lies beyond the direct map"
    );
    (PHYS_OFFSET + (pfn << 12)) as *mut u8
}

/// Physical address of a kernel object at `virt` (`__pa()`): through the direct map, or the
/// boot stub's identity map of the first 4 GiB that holds the kernel image; `None` for any
/// other address (an address space's slot, an unmapped one).
#[must_use]
pub fn kernel_virt_to_phys(virt: u64) -> Option<u64> {
    if (PHYS_OFFSET..PHYS_OFFSET + DIRECT_MAP_SIZE).contains(&virt) {
        Some(virt - PHYS_OFFSET)
    } else if virt < 1 << 32 {
        Some(virt)
    } else {
        None
    }
}

/// The PML4 slot the address spaces live in.
pub const MM_SLOT_INDEX: usize = 448;
/// First address of the slot.
pub const MM_SLOT_START: u64 = 0xFFFF_0000_0000_0000 | ((MM_SLOT_INDEX as u64) << 39);
/// One past the slot's last address.
pub const MM_SLOT_END: u64 = MM_SLOT_START + (1 << 39);

const _: () = assert!(MM_SLOT_START == 0xFFFF_E000_0000_0000);
