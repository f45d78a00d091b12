//! The kernel heap's allocator: `kmalloc`'s power-of-two size classes in front of a
//! first-fit heap.
//!
//! Linux serves small `kmalloc()`s from the `kmalloc-16` .. `kmalloc-8k` slab caches and
//! only large ones from the page allocator. A first-fit heap alone (`linked_list_allocator`)
//! keeps every freed block in one address-ordered hole list, so with thousands of live
//! objects (one memcg is a few dozen allocations) each allocation and each free walks a
//! list as long as the heap is fragmented: creating the 10,000th memcg cost milliseconds.
//!
//! [`ClassHeap`] keeps one free list per class, 16 bytes to [`MAX_CLASS`]. A request whose
//! size and alignment round up to a class is served from its list (LIFO, as a slab's per-CPU
//! freelist is); an empty list is refilled with a [`CHUNK`]-byte chunk from the first-fit
//! heap, carved into blocks of the class. Blocks freed go back to their class's list, never
//! to the first-fit heap, so its hole list stays short. Larger requests go to the first-fit
//! heap directly. Every block of a chunk is aligned to its class size (chunks are aligned
//! to [`CHUNK`]), which covers any alignment up to the size.
//!
//! The accounting keeps the two apart: [`ClassHeap::used`] is what callers hold,
//! [`ClassHeap::cached`] what the class lists hold, [`ClassHeap::free`] what the first-fit
//! heap can still hand out (to a request of any size).
//!
//! Unsafe code here, and why: it is an allocator: free lists are raw pointers into the
//! heap's own memory, handed out and taken back by address.
#![allow(unsafe_code)]

use core::alloc::Layout;
use core::ptr::NonNull;
use linked_list_allocator::Heap;

/// Smallest class (two words: a free block holds the list link).
pub const MIN_CLASS: usize = 16;
/// Largest class; larger requests go to the first-fit heap.
pub const MAX_CLASS: usize = 2048;
/// Classes: 16, 32, ..., [`MAX_CLASS`].
pub const NR_CLASSES: usize = (MAX_CLASS / MIN_CLASS).trailing_zeros() as usize + 1;
/// Bytes taken from the first-fit heap to refill one class (aligned to its size).
pub const CHUNK: usize = 16 << 10;

/// A free block: the next one of its class.
struct FreeBlock {
    next: Option<NonNull<FreeBlock>>,
}

/// The class serving `layout`, if one does.
#[must_use]
pub fn class_of(layout: Layout) -> Option<usize> {
    let size = layout
        .size()
        .max(layout.align())
        .max(MIN_CLASS)
        .checked_next_power_of_two()?;
    (size <= MAX_CLASS).then(|| (size / MIN_CLASS).trailing_zeros() as usize)
}

/// Bytes of class `class`.
#[must_use]
pub const fn class_size(class: usize) -> usize {
    MIN_CLASS << class
}

/// Size classes over a first-fit heap (see the module doc).
pub struct ClassHeap {
    heap: Heap,
    free_lists: [Option<NonNull<FreeBlock>>; NR_CLASSES],
    /// Bytes in the class lists.
    cached: usize,
}

// SAFETY: the free lists point into the heap's own memory, which the `ClassHeap` owns like
// the `Heap` does; moving it to another thread moves that ownership.
unsafe impl Send for ClassHeap {}

impl core::fmt::Debug for ClassHeap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClassHeap")
            .field("used", &self.used())
            .field("cached", &self.cached)
            .field("free", &self.free())
            .finish_non_exhaustive()
    }
}

impl ClassHeap {
    /// A heap with no memory yet.
    #[must_use]
    pub const fn empty() -> Self {
        ClassHeap {
            heap: Heap::empty(),
            free_lists: [None; NR_CLASSES],
            cached: 0,
        }
    }

    /// Gives the heap the `size` bytes at `start`.
    ///
    /// # Safety
    /// The memory is valid for reads and writes, owned by the heap from now on, and `init`
    /// is called once.
    pub unsafe fn init(&mut self, start: *mut u8, size: usize) {
        // SAFETY: the caller's contract is the heap's.
        unsafe { self.heap.init(start, size) };
    }

    /// Allocates a block for `layout`, or `None` when there is no memory for it.
    pub fn allocate(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        let Some(class) = class_of(layout) else {
            return self.heap.allocate_first_fit(layout).ok();
        };
        if self.free_lists[class].is_none() {
            self.refill(class)?;
        }
        let block = self.free_lists[class]?;
        // SAFETY: every block on a class list is a free block of that class inside the
        // heap's memory, written by `push` (its first word is the link).
        self.free_lists[class] = unsafe { block.as_ref().next };
        self.cached -= class_size(class);
        Some(block.cast())
    }

    /// Frees a block [`ClassHeap::allocate`] returned for `layout`.
    ///
    /// # Safety
    /// `ptr` came from `allocate(layout)` on this heap and is not used after this call.
    pub unsafe fn deallocate(&mut self, ptr: NonNull<u8>, layout: Layout) {
        match class_of(layout) {
            // SAFETY: the block is of this class (allocate chose the class from the same
            // layout) and its caller is done with it.
            Some(class) => unsafe { self.push(class, ptr) },
            // SAFETY: not a class size, so it came from the first-fit heap.
            None => unsafe { self.heap.deallocate(ptr, layout) },
        }
    }

    /// Carves a new chunk into class `class`'s list.
    fn refill(&mut self, class: usize) -> Option<()> {
        let size = class_size(class);
        let chunk = Layout::from_size_align(CHUNK, CHUNK).ok()?;
        let base = self.heap.allocate_first_fit(chunk).ok()?;
        // Pushed from the end, so the list hands blocks out in address order.
        for i in (0..CHUNK / size).rev() {
            // SAFETY: block `i` lies inside the chunk just taken, which nothing else uses.
            unsafe { self.push(class, base.add(i * size)) };
        }
        Some(())
    }

    /// Puts the block at `ptr` on class `class`'s list.
    ///
    /// # Safety
    /// `ptr` is a block of class `class`, aligned to its size, that nobody uses.
    unsafe fn push(&mut self, class: usize, ptr: NonNull<u8>) {
        let block = ptr.cast::<FreeBlock>();
        // SAFETY: the block is at least `MIN_CLASS` bytes, aligned to at least 16, and
        // unused, so the link fits and may be written.
        unsafe {
            block.write(FreeBlock {
                next: self.free_lists[class],
            });
        }
        self.free_lists[class] = Some(block);
        self.cached += class_size(class);
    }

    /// Bytes the callers hold (blocks of a class count at their class size).
    #[must_use]
    pub fn used(&self) -> usize {
        self.heap.used() - self.cached
    }

    /// Bytes in the class lists, ready for small requests.
    #[must_use]
    pub fn cached(&self) -> usize {
        self.cached
    }

    /// Bytes the first-fit heap can still hand out, to a request of any size.
    #[must_use]
    pub fn free(&self) -> usize {
        self.heap.free()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const ARENA: usize = 4 << 20;

    fn heap(arena: &mut Vec<u128>) -> ClassHeap {
        let mut h = ClassHeap::empty();
        // SAFETY: the arena outlives the heap in every test and is used by nothing else.
        unsafe { h.init(arena.as_mut_ptr().cast(), arena.len() * 16) };
        h
    }

    #[test]
    fn classes_round_size_and_alignment_up() {
        let l = |s, a| Layout::from_size_align(s, a).unwrap();
        assert_eq!(class_of(l(1, 1)), Some(0));
        assert_eq!(class_of(l(16, 8)), Some(0));
        assert_eq!(class_of(l(17, 8)), Some(1));
        assert_eq!(
            class_of(l(8, 64)),
            Some(2),
            "alignment 64 needs the 64-byte class"
        );
        assert_eq!(class_of(l(2048, 8)), Some(NR_CLASSES - 1));
        assert_eq!(class_of(l(2049, 8)), None);
        assert_eq!(class_of(l(16, 4096)), None);
        assert_eq!(class_size(NR_CLASSES - 1), MAX_CLASS);
    }

    #[test]
    fn freed_small_blocks_are_reused_and_never_reach_the_hole_list() {
        let mut arena = vec![0u128; ARENA / 16];
        let mut h = heap(&mut arena);
        let l = Layout::from_size_align(100, 8).unwrap();
        let a = h.allocate(l).unwrap();
        assert_eq!(h.used(), 128);
        assert_eq!(h.cached(), CHUNK - 128);
        let free_after_refill = h.free();
        // SAFETY: `a` came from `allocate(l)`.
        unsafe { h.deallocate(a, l) };
        assert_eq!(h.used(), 0);
        assert_eq!(h.cached(), CHUNK);
        assert_eq!(h.free(), free_after_refill, "the block stayed in its class");
        assert_eq!(h.allocate(l), Some(a), "LIFO reuse");
        assert_eq!(h.cached(), CHUNK - 128, "no second refill");
        assert_eq!(h.free(), free_after_refill);
        // SAFETY: as above.
        unsafe { h.deallocate(a, l) };
    }

    #[test]
    fn large_requests_go_to_the_first_fit_heap() {
        let mut arena = vec![0u128; ARENA / 16];
        let mut h = heap(&mut arena);
        let l = Layout::from_size_align(3000, 8).unwrap();
        let free0 = h.free();
        let a = h.allocate(l).unwrap();
        assert_eq!(h.cached(), 0);
        assert!(h.free() <= free0 - 3000);
        // SAFETY: `a` came from `allocate(l)`.
        unsafe { h.deallocate(a, l) };
        assert_eq!(h.free(), free0);
        assert_eq!(h.used(), 0);
    }

    #[test]
    fn exhaustion_is_an_error_not_a_panic() {
        let mut arena = vec![0u128; (64 << 10) / 16];
        let mut h = heap(&mut arena);
        let l = Layout::from_size_align(2048, 8).unwrap();
        let mut got = Vec::new();
        while let Some(p) = h.allocate(l) {
            got.push(p);
            assert!(
                got.len() < 1000,
                "a 64 KiB heap cannot hold 1000 2-KiB blocks"
            );
        }
        assert!(!got.is_empty());
        for p in got {
            // SAFETY: each came from `allocate(l)`.
            unsafe { h.deallocate(p, l) };
        }
        assert_eq!(h.used(), 0);
    }

    proptest! {
        /// Any sequence of allocations and frees: blocks are aligned, inside the arena, never
        /// overlap a live block, keep their contents, and the accounting adds up.
        #[test]
        fn blocks_are_aligned_disjoint_and_accounted(
            ops in proptest::collection::vec((0usize..5000, 0u32..7, any::<bool>()), 1..400)
        ) {
            let mut arena = vec![0u128; ARENA / 16];
            let lo = arena.as_ptr() as usize;
            let hi = lo + ARENA;
            let mut h = heap(&mut arena);
            let mut live: BTreeMap<usize, (Layout, u8)> = BTreeMap::new();
            let mut held = 0usize;
            for (i, &(size, align_log, free_one)) in ops.iter().enumerate() {
                if free_one && !live.is_empty() {
                    let (&addr, &(l, tag)) = live.iter().nth(i % live.len()).unwrap();
                    // SAFETY: the block is live and ours.
                    let bytes = unsafe { core::slice::from_raw_parts(addr as *const u8, l.size()) };
                    prop_assert!(bytes.iter().all(|&b| b == tag), "contents kept");
                    live.remove(&addr);
                    // SAFETY: it came from `allocate(l)` and is dropped from `live`.
                    unsafe { h.deallocate(NonNull::new(addr as *mut u8).unwrap(), l) };
                    held -= class_of(l).map_or(l.size(), class_size);
                    continue;
                }
                let l = Layout::from_size_align(size.max(1), 1 << align_log).unwrap();
                let Some(p) = h.allocate(l) else { continue };
                let a = p.as_ptr() as usize;
                prop_assert_eq!(a % l.align(), 0);
                prop_assert!(a >= lo && a + l.size() <= hi);
                if let Some((&prev, &(pl, _))) = live.range(..=a).next_back() {
                    prop_assert!(prev + pl.size() <= a, "overlaps the block before");
                }
                if let Some((&next, _)) = live.range(a..).next() {
                    prop_assert!(a + l.size() <= next, "overlaps the block after");
                }
                let tag = (i % 251) as u8;
                // SAFETY: the block is ours and `l.size()` bytes long.
                unsafe { core::ptr::write_bytes(p.as_ptr(), tag, l.size()) };
                live.insert(a, (l, tag));
                held += class_of(l).map_or(l.size(), class_size);
                // The first-fit heap rounds large blocks up a little; class blocks count
                // exactly their class size.
                prop_assert!(h.used() >= held);
                if live.values().all(|(l, _)| class_of(*l).is_some()) {
                    prop_assert_eq!(h.used(), held);
                }
            }
            for (addr, (l, _)) in live {
                // SAFETY: every live block came from `allocate(l)`.
                unsafe { h.deallocate(NonNull::new(addr as *mut u8).unwrap(), l) };
            }
            prop_assert_eq!(h.used(), 0);
        }
    }
}
