//! The kernel heap: [`mm::kmalloc::ClassHeap`] (power-of-two size classes in front of
//! `linked_list_allocator`'s first-fit heap) over one physically contiguous block, behind
//! one spin lock.
//!
//! The block is taken from the early frame allocator and reached through the direct map;
//! its size is a quarter of usable RAM, capped at 1 GiB and at least 4 MiB (halved until
//! a contiguous range that large exists).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};
use mm::kmalloc::ClassHeap;
use spin::Mutex;

/// The global allocator.
struct KernelHeap(Mutex<ClassHeap>);

// SAFETY: `allocate` returns blocks of at least the layout's size and alignment that no
// other allocation overlaps until they are deallocated (`ClassHeap`'s contract, checked by
// its tests), and every call holds the lock.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0
            .lock()
            .allocate(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: the caller passes a block `alloc` returned for `layout`.
            unsafe { self.0.lock().deallocate(p, layout) };
        }
    }
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(Mutex::new(ClassHeap::empty()));

/// Largest heap.
const MAX_HEAP: u64 = 1 << 30;
/// Smallest heap worth booting with.
const MIN_HEAP: u64 = 4 << 20;

/// Sets up the heap; returns its size in bytes, or `None` if not even [`MIN_HEAP`] was free.
pub fn init(usable: u64) -> Option<u64> {
    let mut size = (usable / 4).clamp(MIN_HEAP, MAX_HEAP) & !0xfff;
    while size >= MIN_HEAP {
        if let Some(phys) = super::frame::alloc_contiguous(size / 4096, 4096) {
            let virt = crate::arch::x86_64::paging::phys_to_virt(phys);
            // SAFETY: the block is fresh RAM owned by the heap from now on, mapped RW in the
            // direct map; `init` runs once.
            unsafe { HEAP.0.lock().init(virt.as_mut_ptr(), size as usize) };
            return Some(size);
        }
        size /= 2;
    }
    None
}

/// Bytes in use (held by callers) and free (available to a request of any size); the
/// size classes' cached blocks are in neither.
#[must_use]
pub fn usage() -> (usize, usize) {
    let h = HEAP.0.lock();
    (h.used(), h.free())
}

/// Bytes cached in the size classes' free lists.
#[must_use]
pub fn cached() -> usize {
    HEAP.0.lock().cached()
}
