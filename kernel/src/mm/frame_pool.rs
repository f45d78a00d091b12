//! A pool of recycled 4 KiB frames for the kernel's own fixtures: the `limit` floor's page
//! tables and frames (`bench::limit`) and the fault tests' address spaces
//! (`tests::fault_arch::harness`).
//!
//! Both build page tables by hand and map frames of their own into the address-space slot,
//! then take everything down again, many times in one boot: an instance per bench run, a
//! space per test. [`super::frame::alloc`] never frees (before the handover it carves the
//! early ranges; after it, its frames stay allocated for the kernel's lifetime), so what a
//! fixture gives back is kept here, on one list, for the next one: [`zeroed_frame`] takes
//! from the list first and from the frame allocator when the list is empty, [`recycle`]
//! puts a frame back. The list only grows to the most frames that fixtures held at once.
//!
//! A frame is zeroed when it is handed out, not when it is recycled, so a frame on the list
//! may hold stale PTEs or data; nothing reads it until [`zeroed_frame`] has cleared it. A
//! frame must be recycled only once nothing maps it and no CPU can reach it through a
//! translation or a paging-structure cache (the callers unlink and shoot down first).
//!
//! [`PoolFrames`] lends the pool to `aspace`'s [`TableFrames`], the frame source of the
//! slot's upper levels (the `__pud_alloc`/`__pmd_alloc` side of a link).
//!
//! Unsafe code here, and why: a frame is zeroed through the direct map before the pool
//! hands it out.
#![allow(unsafe_code)]

use super::frame::{self, FRAME_SIZE};
use super::phys_to_virt;
use crate::arch::aspace::TableFrames;
use crate::sync::{KernelLock, SpinMutex};
use alloc::vec::Vec;
use x86_64::PhysAddr;

/// Frames handed back by the fixtures, by physical address.
static POOL: SpinMutex<KernelLock, Vec<u64>> = SpinMutex::new(Vec::new());

/// A zeroed 4 KiB frame, from the pool or (when it is empty) the frame allocator; `None`
/// when both are out of frames. The caller owns it until it [`recycle`]s it.
#[must_use]
pub fn zeroed_frame() -> Option<PhysAddr> {
    let f = POOL
        .lock()
        .pop()
        .map(PhysAddr::new)
        .or_else(|| frame::alloc().map(|f| f.start_address()))?;
    // SAFETY: a free frame (from the pool or the allocator) that the caller owns from now
    // on: nothing maps it but the always-mapped direct map it is written through.
    unsafe { core::ptr::write_bytes(phys_to_virt(f).as_mut_ptr::<u8>(), 0, FRAME_SIZE as usize) };
    Some(f)
}

/// Hands `f` back for the next [`zeroed_frame`]: nothing may map it or reach it through a
/// cached translation any more.
pub fn recycle(f: PhysAddr) {
    POOL.lock().push(f.as_u64());
}

/// The pool as a [`TableFrames`] source for the slot's upper-level tables.
pub struct PoolFrames;

impl TableFrames for PoolFrames {
    fn alloc(&mut self) -> Option<PhysAddr> {
        zeroed_frame()
    }
    fn free(&mut self, frame: PhysAddr) {
        recycle(frame);
    }
}
