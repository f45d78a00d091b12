//! Kernel stacks, each above an unmapped guard page.
//!
//! Stacks live in their own area of the address space ([`STACK_AREA`]); each slot is one
//! guard page followed by the stack's pages, so running off the bottom of any stack touches
//! an unmapped page. The page-fault handler then cannot push its frame on that same stack and
//! the CPU raises a double fault, which runs on its own IST stack and is reported.
//!
//! Unsafe code here, and why: a stack's pages are mapped by writing page-table entries for
//! fresh frames in its own never-used slot, below an unmapped guard page.
#![allow(unsafe_code)]

use crate::arch::paging;
use core::sync::atomic::{AtomicU64, Ordering};
use x86_64::VirtAddr;
use x86_64::structures::paging::PageTableFlags as F;

/// Start of the kernel stack area (PML4 slot 384).
pub const STACK_AREA: u64 = 0xFFFF_C000_0000_0000;
/// Size of the stack area (512 GiB: one PML4 slot).
const STACK_AREA_SIZE: u64 = 1 << 39;

static NEXT: AtomicU64 = AtomicU64::new(STACK_AREA);

pub use super::stack_range::KernelStack;

/// Why a stack could not be made.
#[derive(Clone, Copy, Debug)]
pub enum StackError {
    /// No physical frames left.
    OutOfMemory,
    /// The stack area is exhausted.
    OutOfAddressSpace,
    /// Page tables could not be changed.
    Paging(paging::PagingError),
}

/// Maps a stack of `pages` 4 KiB pages above a fresh guard page.
pub fn alloc(pages: u64) -> Result<KernelStack, StackError> {
    let span = (pages + 1) * 4096;
    let guard = NEXT.fetch_add(span, Ordering::Relaxed);
    if guard + span > STACK_AREA + STACK_AREA_SIZE {
        return Err(StackError::OutOfAddressSpace);
    }
    let bottom = guard + 4096;
    let nx = if crate::arch::cpu::nx_enabled() {
        F::NO_EXECUTE
    } else {
        F::empty()
    };
    for i in 0..pages {
        let frame = super::frame::alloc().ok_or(StackError::OutOfMemory)?;
        // SAFETY: the page lies in this stack's private, never-before-used slot, and the
        // frame is fresh; no alias exists.
        unsafe {
            paging::map_page(
                VirtAddr::new(bottom + i * 4096),
                frame.start_address(),
                F::PRESENT | F::WRITABLE | nx,
            )
        }
        .map_err(StackError::Paging)?;
    }
    Ok(KernelStack {
        guard: VirtAddr::new(guard),
        bottom: VirtAddr::new(bottom),
        top: VirtAddr::new(bottom + pages * 4096),
    })
}
