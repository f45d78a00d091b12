//! The kernel heap: [`page_alloc::kmalloc::ClassHeap`] (power-of-two size classes in front of
//! `linked_list_allocator`'s first-fit heap) over one physically contiguous block, behind
//! one spin lock, with a [`Magazine`] per CPU in front of its small classes (16 to 512
//! bytes), as SLUB's per-CPU freelists are in front of a slab cache's node lists: a small
//! allocation or free on a CPU takes the heap's lock only to refill or flush half a
//! magazine, so the lock's line no longer moves between CPUs with every `kmalloc`. A CPU
//! touches only its own magazine, with interrupts off (an interrupt handler that allocates
//! cannot find it half updated).
//!
//! The block is taken from the early frame allocator and reached through the direct map;
//! its size is a quarter of usable RAM, capped at 1 GiB and at least 4 MiB (halved until
//! a contiguous range that large exists).
//!
//! Unsafe code here, and why: the kernel heap is the global allocator (an unsafe trait),
//! with per-CPU magazines in `UnsafeCell`s each touched only by its own CPU.
#![allow(unsafe_code)]

use ::page_alloc::kmalloc::{ClassHeap, class_of};
use ::page_alloc::magazine::Magazine;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicUsize, Ordering};
use ksync::{CachePadded, MAX_CPUS};
use spin::Mutex;

/// One CPU's magazine, and the bytes it holds (for [`usage`], read by any CPU).
struct CpuMagazine {
    mag: UnsafeCell<Magazine>,
    bytes: AtomicUsize,
}

/// The global allocator: the heap and a magazine per CPU.
struct KernelHeap {
    heap: Mutex<ClassHeap>,
    mags: [CachePadded<CpuMagazine>; MAX_CPUS],
}

// SAFETY: the heap is behind its lock; a magazine is only touched by its own CPU, with
// interrupts off (`with_magazine`), so no two references to one exist at a time; `bytes`
// is atomic.
unsafe impl Sync for KernelHeap {}

impl KernelHeap {
    /// Runs `f` on the running CPU's magazine with interrupts off, or returns `None` when
    /// the CPU has none (an id past [`MAX_CPUS`]).
    fn with_magazine<R>(&self, f: impl FnOnce(&mut Magazine) -> R) -> Option<R> {
        crate::arch::without_interrupts(|| {
            let slot = self.mags.get(ksync::this_cpu())?;
            // SAFETY: only this CPU touches its slot, and with interrupts off nothing else
            // runs on it until `f` returns: the reference is unique.
            let mag = unsafe { &mut *slot.mag.get() };
            let r = f(mag);
            slot.bytes.store(mag.bytes(), Ordering::Relaxed);
            Some(r)
        })
    }

    /// Bytes the magazines hold.
    fn magazine_bytes(&self) -> usize {
        self.mags
            .iter()
            .map(|m| m.bytes.load(Ordering::Relaxed))
            .sum()
    }
}

// SAFETY: `allocate` returns blocks of at least the layout's size and alignment that no
// other allocation overlaps until they are deallocated (`ClassHeap`'s contract, checked by
// its tests); a magazine hands out only blocks of the layout's class that were freed (or
// taken from the heap) and not handed out since (`Magazine`'s tests); the heap's every use
// holds its lock.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(class) = class_of(layout).filter(|&c| Magazine::keeps(c))
            && let Some(p) = self.with_magazine(|m| m.allocate(class, || self.heap.lock()))
        {
            return p.map_or(ptr::null_mut(), NonNull::as_ptr);
        }
        self.heap
            .lock()
            .allocate(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(p) = NonNull::new(ptr) else { return };
        if let Some(class) = class_of(layout).filter(|&c| Magazine::keeps(c))
            && self
                .with_magazine(|m| {
                    // SAFETY: the caller passes a block `alloc` returned for `layout`, so
                    // of `class`, from this heap (directly or through a magazine).
                    unsafe { m.deallocate(class, p, || self.heap.lock()) }
                })
                .is_some()
        {
            return;
        }
        // SAFETY: the caller passes a block `alloc` returned for `layout`.
        unsafe { self.heap.lock().deallocate(p, layout) };
    }
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap {
    heap: Mutex::new(ClassHeap::empty()),
    mags: [const {
        CachePadded(CpuMagazine {
            mag: UnsafeCell::new(Magazine::new()),
            bytes: AtomicUsize::new(0),
        })
    }; MAX_CPUS],
};

/// Largest heap.
const MAX_HEAP: u64 = 1 << 30;
/// Smallest heap worth booting with.
const MIN_HEAP: u64 = 4 << 20;

/// Sets up the heap; returns its size in bytes, or `None` if not even [`MIN_HEAP`] was free.
pub fn init(usable: u64) -> Option<u64> {
    let mut size = (usable / 4).clamp(MIN_HEAP, MAX_HEAP) & !0xfff;
    while size >= MIN_HEAP {
        if let Some(phys) = super::frame::alloc_contiguous(size / 4096, 4096) {
            let virt = crate::arch::paging::phys_to_virt(phys);
            // SAFETY: the block is fresh RAM owned by the heap from now on, mapped RW in the
            // direct map; `init` runs once.
            unsafe { HEAP.heap.lock().init(virt.as_mut_ptr(), size as usize) };
            return Some(size);
        }
        size /= 2;
    }
    None
}

/// Bytes in use (held by callers) and free (available to a request of any size); the
/// size classes' cached blocks and the per-CPU magazines' are in neither. Exact while no
/// CPU allocates.
#[must_use]
pub fn usage() -> (usize, usize) {
    let (used, free) = {
        let h = HEAP.heap.lock();
        (h.used(), h.free())
    };
    (used.saturating_sub(HEAP.magazine_bytes()), free)
}

/// Bytes cached in the size classes' free lists and the per-CPU magazines.
#[must_use]
pub fn cached() -> usize {
    HEAP.heap.lock().cached() + HEAP.magazine_bytes()
}
