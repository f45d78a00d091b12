//! Per-CPU magazines of small heap blocks: SLUB's per-CPU freelists in front of
//! [`ClassHeap`].
//!
//! The kernel heap is one [`ClassHeap`] behind one lock, so every small `kmalloc`/`kfree`
//! of every CPU wrote the same lock line; on the benchmark's measured paths (page-cache
//! nodes, reclaim's batches) that line moved between CPUs as often as the seeds' own fields
//! (found with `kx bench --coherence`). Linux serves those from the slab's per-CPU
//! freelists (`kmem_cache_cpu`), taking the node's list lock only to refill or flush a
//! whole slab's worth. A [`Magazine`] is one CPU's cache: for each of the [`MAG_CLASSES`]
//! smallest classes (16 to 512 bytes) a stack of up to [`MAG_SIZE`] free blocks. An
//! allocation pops from its class's stack; an empty stack is refilled with [`MAG_SIZE`]`/2`
//! blocks from the heap under its lock, once. A free pushes; a full stack first gives
//! [`MAG_SIZE`]`/2` blocks back, once. So at most one lock round trip per
//! [`MAG_SIZE`]`/2` operations of a class, and none for a CPU that allocates and frees
//! about as much.
//!
//! A block freed on another CPU than the one that allocated it joins the freeing CPU's
//! magazine (as a slab object freed remotely joins that CPU's slab); blocks of a class are
//! interchangeable, since every block of a class is aligned to its size. The magazine
//! knows nothing of CPUs or interrupts: its owner keeps one per CPU and touches it only
//! from that CPU with interrupts off (`kernel::mm::heap`).
//!
//! Unsafe code here, and why: the per-CPU magazines hold freed blocks by address and hand
//! them back to the class heap (`unsafe fn deallocate`: the caller promises a block of that
//! class).
#![allow(unsafe_code)]

use crate::kmalloc::{ClassHeap, class_size};
use core::alloc::Layout;
use core::ops::DerefMut;
use core::ptr::NonNull;

/// Classes kept per CPU: 16, 32, ..., 512 bytes.
pub const MAG_CLASSES: usize = 6;
/// Blocks a magazine holds per class.
pub const MAG_SIZE: usize = 16;

/// One CPU's cached blocks of the small classes (see the module doc).
#[derive(Debug)]
pub struct Magazine {
    slots: [[Option<NonNull<u8>>; MAG_SIZE]; MAG_CLASSES],
    len: [u8; MAG_CLASSES],
    /// Bytes of the blocks held, kept as blocks come and go.
    bytes: usize,
}

impl Default for Magazine {
    fn default() -> Self {
        Self::new()
    }
}

/// The layout a block of class `class` is taken from and given back to the heap with.
fn class_layout(class: usize) -> Layout {
    let size = class_size(class);
    // Size and alignment are the same power of two, at most 512: always valid.
    Layout::from_size_align(size, size).unwrap_or(Layout::new::<u128>())
}

impl Magazine {
    /// An empty magazine.
    #[must_use]
    pub const fn new() -> Self {
        Magazine {
            slots: [[None; MAG_SIZE]; MAG_CLASSES],
            len: [0; MAG_CLASSES],
            bytes: 0,
        }
    }

    /// Whether class `class` is kept in magazines.
    #[must_use]
    pub const fn keeps(class: usize) -> bool {
        class < MAG_CLASSES
    }

    /// Bytes of the blocks held (counted as used by the heap, free for its callers).
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// A block of class `class` (< [`MAG_CLASSES`]): from the magazine, or, when its stack
    /// is empty, from `heap` (which it then also refills with [`MAG_SIZE`]`/2 - 1` more).
    /// `heap` is called at most once and gives the heap to work on (a guard of its lock).
    pub fn allocate<G: DerefMut<Target = ClassHeap>>(
        &mut self,
        class: usize,
        heap: impl FnOnce() -> G,
    ) -> Option<NonNull<u8>> {
        if let Some(p) = self.pop(class) {
            return Some(p);
        }
        let mut h = heap();
        let layout = class_layout(class);
        let first = h.allocate(layout)?;
        for _ in 1..MAG_SIZE / 2 {
            match h.allocate(layout) {
                Some(p) => self.push_unchecked(class, p),
                None => break,
            }
        }
        Some(first)
    }

    /// Frees the block `ptr` of class `class` (< [`MAG_CLASSES`]) into the magazine; when
    /// its stack is full, first gives [`MAG_SIZE`]`/2` blocks back to `heap` (called once).
    ///
    /// # Safety
    ///
    /// `ptr` is a block of class `class` of the heap `heap` gives, that nobody uses.
    pub unsafe fn deallocate<G: DerefMut<Target = ClassHeap>>(
        &mut self,
        class: usize,
        ptr: NonNull<u8>,
        heap: impl FnOnce() -> G,
    ) {
        if usize::from(self.len[class]) == MAG_SIZE {
            let mut h = heap();
            let layout = class_layout(class);
            for _ in 0..MAG_SIZE / 2 {
                if let Some(p) = self.pop(class) {
                    // SAFETY: every block in the magazine is a free block of this class of
                    // this heap (the caller's contract when it was pushed).
                    unsafe { h.deallocate(p, layout) };
                }
            }
        }
        self.push_unchecked(class, ptr);
    }

    /// Gives every block back to `heap` (the magazine is empty afterwards).
    ///
    /// # Safety
    ///
    /// The magazine's blocks came from `heap`.
    pub unsafe fn drain(&mut self, heap: &mut ClassHeap) {
        for class in 0..MAG_CLASSES {
            while let Some(p) = self.pop(class) {
                // SAFETY: as in `deallocate`.
                unsafe { heap.deallocate(p, class_layout(class)) };
            }
        }
    }

    fn pop(&mut self, class: usize) -> Option<NonNull<u8>> {
        let n = usize::from(self.len[class]);
        if n == 0 {
            return None;
        }
        self.len[class] -= 1;
        self.bytes -= class_size(class);
        self.slots[class][n - 1].take()
    }

    fn push_unchecked(&mut self, class: usize, p: NonNull<u8>) {
        let n = usize::from(self.len[class]);
        self.slots[class][n] = Some(p);
        self.len[class] += 1;
        self.bytes += class_size(class);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::kmalloc::class_of;
    use proptest::prelude::*;

    fn heap(arena: &mut Vec<u128>) -> ClassHeap {
        let mut h = ClassHeap::empty();
        // SAFETY: the arena outlives the heap in every test and is used by nothing else.
        unsafe { h.init(arena.as_mut_ptr().cast(), arena.len() * 16) };
        h
    }

    #[test]
    fn the_heap_is_visited_once_per_half_magazine() {
        let mut arena = vec![0u128; (1 << 20) / 16];
        let mut h = heap(&mut arena);
        let mut m = Magazine::new();
        let mut visits = 0;
        let mut blocks = Vec::new();
        for _ in 0..MAG_SIZE / 2 {
            let p = m.allocate(2, || {
                visits += 1;
                &mut h
            });
            blocks.push(p.expect("a block"));
        }
        assert_eq!(visits, 1, "one refill serves half a magazine");
        assert_eq!(m.bytes(), 0);
        for p in blocks.drain(..) {
            // SAFETY: allocated above from this heap, class 2, unused.
            unsafe {
                m.deallocate(2, p, || {
                    visits += 1;
                    &mut h
                });
            }
        }
        assert_eq!(visits, 1, "frees into a magazine with room take no lock");
        assert_eq!(m.bytes(), MAG_SIZE / 2 * class_size(2));
        let used = h.used();
        // SAFETY: its blocks came from `h`.
        unsafe { m.drain(&mut h) };
        assert_eq!(m.bytes(), 0);
        assert_eq!(h.used(), used - MAG_SIZE / 2 * class_size(2));
        // The layout a magazine takes blocks with is its class's own.
        for c in 0..MAG_CLASSES {
            assert_eq!(class_of(class_layout(c)), Some(c));
        }
    }

    proptest! {
        /// Any sequence of allocations and frees through a magazine: blocks never overlap,
        /// keep their class's size and alignment, the magazine never holds more than
        /// MAG_SIZE per class, and after a drain the heap's use is back where it started.
        #[test]
        fn blocks_stay_distinct_and_aligned_and_the_heap_balances(
            ops in proptest::collection::vec((0usize..MAG_CLASSES, any::<bool>()), 1..400)
        ) {
            let mut arena = vec![0u128; (4 << 20) / 16];
            let mut h = heap(&mut arena);
            let used0 = h.used();
            let mut m = Magazine::new();
            let mut live: Vec<(usize, NonNull<u8>)> = Vec::new();
            for (class, alloc) in ops {
                if alloc || live.is_empty() {
                    let p = m.allocate(class, || &mut h).expect("room");
                    prop_assert_eq!(p.as_ptr() as usize % class_size(class), 0);
                    live.push((class, p));
                } else {
                    let (c, p) = live.swap_remove(class % live.len());
                    // SAFETY: allocated from this heap for class `c`, unused since.
                    unsafe { m.deallocate(c, p, || &mut h) };
                }
                prop_assert!(m.len.iter().all(|&n| usize::from(n) <= MAG_SIZE));
                let held: usize = (0..MAG_CLASSES)
                    .map(|c| usize::from(m.len[c]) * class_size(c))
                    .sum();
                prop_assert_eq!(m.bytes(), held);
                let mut spans: Vec<(usize, usize)> = live
                    .iter()
                    .map(|&(c, p)| (p.as_ptr() as usize, class_size(c)))
                    .collect();
                spans.sort_unstable();
                for w in spans.windows(2) {
                    prop_assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping blocks: {:?}", w);
                }
            }
            for (c, p) in live.drain(..) {
                // SAFETY: as above.
                unsafe { m.deallocate(c, p, || &mut h) };
            }
            // SAFETY: its blocks came from `h`.
            unsafe { m.drain(&mut h) };
            prop_assert_eq!(h.used(), used0);
        }
    }
}
