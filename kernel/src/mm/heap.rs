//! The kernel heap: `linked_list_allocator` over one physically contiguous block.
//!
//! The block is taken from the early frame allocator and reached through the direct map;
//! its size is a quarter of usable RAM, capped at 1 GiB and at least 4 MiB (halved until
//! a contiguous range that large exists).

use linked_list_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap = LockedHeap::empty();

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
            unsafe { HEAP.lock().init(virt.as_mut_ptr(), size as usize) };
            return Some(size);
        }
        size /= 2;
    }
    None
}

/// Bytes in use and free.
#[must_use]
pub fn usage() -> (usize, usize) {
    let h = HEAP.lock();
    (h.used(), h.free())
}
