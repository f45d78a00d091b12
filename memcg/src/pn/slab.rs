//! Slab placement of `mem_cgroup_per_node` (seed 001 depends on where each object lands).
//!
//! Linux allocates each `mem_cgroup_per_node` from a slab cache, so objects sit back to
//! back in slab pages and whether an object's first line starts a 128-byte pair is up to
//! the cache ("depending on where struct mem_cgroup_per_node lands in its slab"). Every
//! line pairs with a neighbour: inside the object for most lines, and for the first line of
//! an object at +64, whatever the cache put before it.
//!
//! [`PnCache`] is that cache for one memcg tree: it carves objects back to back out of
//! 128-byte aligned chunks, the first object of each chunk at [`PnPlacement`]'s offset
//! (the few bytes before it are the chunk's padding), each next one a whole number of
//! 128-byte pairs further, so every object of a cache has the same placement. Every
//! layout is a whole number of lines and, as Linux's struct, an odd one (its lruvec ends in
//! `mm_state`, `pgdat` and `zswap_lruvec_state`), so each object is padded with one line
//! to the next pair, as kmalloc-2k and -4k leave slack after a 1,984- or 2,112-byte object:
//! at +64 an object's first line pairs with the padding after the previous one. A layout
//! of whole pairs would have the previous object's last line there instead. Freed objects
//! are reused LIFO, as slab frees are; a chunk whose objects are all freed is returned to
//! the allocator (as SLUB discards an empty slab), except the one the cache is carving
//! from, and the rest when the cache is dropped. So a tree that offlined and reaped
//! thousands of memcgs (seed002's) holds no more than a chunk of them while it lives on.
//!
//! Unsafe code here, and why: it is a slab cache: it allocates raw chunks, constructs
//! `mem_cgroup_per_node` objects in place at a chosen placement and frees them by hand.
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;

/// Where a `mem_cgroup_per_node` starts relative to a 128-byte pair boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PnPlacement {
    /// On a pair boundary (+0): line 0 of the struct pairs with line 1.
    #[default]
    PairStart,
    /// In the second half of a pair (+64): line 0 pairs with what the cache put before
    /// the object (padding, for this crate's layouts), line 1 with line 2.
    PairMiddle,
}

impl PnPlacement {
    /// Byte offset from the pair boundary.
    pub const fn offset(self) -> usize {
        match self {
            Self::PairStart => 0,
            Self::PairMiddle => 64,
        }
    }
}

/// Objects per chunk (a slab page of order 2 for 2 KiB objects).
pub const PN_PER_CHUNK: usize = 8;

/// A slab cache of `T`s carved back to back from 128-byte aligned chunks.
pub struct PnCache<T> {
    placement: PnPlacement,
    chunks: Vec<Chunk>,
    /// The current chunk and the next unused slot in it.
    cursor: Option<(NonNull<u8>, usize)>,
    /// Freed slots, reused last-in first-out.
    free: Vec<NonNull<T>>,
    live: usize,
}

/// One chunk (a slab): where it is, how it was allocated, and how many objects in it are
/// live.
struct Chunk {
    base: NonNull<u8>,
    layout: Layout,
    live: usize,
}

impl Chunk {
    fn holds<T>(&self, p: NonNull<T>) -> bool {
        let (start, at) = (self.base.as_ptr() as usize, p.as_ptr() as usize);
        (start..start + self.layout.size()).contains(&at)
    }
}

// SAFETY: the cache owns its chunks and the `T`s in them like a `Vec<T>` would; it hands
// out pointers, which the owner (the memcg tree, under its lock) uses.
unsafe impl<T: Send> Send for PnCache<T> {}

impl<T> core::fmt::Debug for PnCache<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PnCache")
            .field("placement", &self.placement)
            .field("chunks", &self.chunks.len())
            .field("live", &self.live)
            .finish()
    }
}

impl<T> PnCache<T> {
    /// An empty cache whose chunks start their first object at `placement`.
    pub const fn new(placement: PnPlacement) -> Self {
        Self {
            placement,
            chunks: Vec::new(),
            cursor: None,
            free: Vec::new(),
            live: 0,
        }
    }

    /// Distance between two neighbouring objects: the size rounded up to the alignment
    /// and to a whole 128-byte pair, so that every object of the cache starts at the
    /// cache's placement (a layout that is not a whole number of pairs, like mainline's,
    /// would otherwise alternate between +0 and +64, and which one the benchmark's memcg
    /// got would depend on how many objects came before it).
    pub const fn stride() -> usize {
        let a = core::mem::align_of::<T>();
        let pair = crate::cacheline::CACHELINE_PAIR;
        (core::mem::size_of::<T>().div_ceil(a) * a).next_multiple_of(pair)
    }

    /// Offset of a chunk's first object: the placement's (0 or 64), or 0 for types aligned
    /// to more than 64 bytes, which cannot start at +64 of a pair.
    fn first_offset(&self) -> usize {
        if core::mem::align_of::<T>() <= 64 {
            self.placement.offset()
        } else {
            0
        }
    }

    fn chunk_layout(&self) -> Layout {
        let off = self.first_offset();
        let size = (off + PN_PER_CHUNK * Self::stride()).max(1);
        let align = core::mem::align_of::<T>().max(128);
        match Layout::from_size_align(size, align) {
            Ok(l) => l,
            Err(_) => alloc::alloc::handle_alloc_error(Layout::new::<T>()),
        }
    }

    fn slot(&mut self) -> NonNull<T> {
        if let Some(p) = self.free.pop() {
            return p;
        }
        let (base, next) = match self.cursor {
            Some((base, next)) if next < PN_PER_CHUNK => (base, next),
            _ => {
                let layout = self.chunk_layout();
                // SAFETY: `layout` has a non-zero size.
                let raw = unsafe { alloc::alloc::alloc(layout) };
                let Some(base) = NonNull::new(raw) else {
                    alloc::alloc::handle_alloc_error(layout)
                };
                self.chunks.push(Chunk {
                    base,
                    layout,
                    live: 0,
                });
                (base, 0)
            }
        };
        self.cursor = Some((base, next + 1));
        let off = self.first_offset();
        // SAFETY: `off + (next + 1) * stride <= chunk size` (next < PN_PER_CHUNK), so the
        // slot lies inside the chunk; the chunk is 128-aligned, `off` is 0 or 64 and used
        // only when `T` is at most 64-aligned, and `stride` is a multiple of `T`'s
        // alignment, so the slot is aligned for `T`.
        unsafe { base.add(off + next * Self::stride()) }.cast::<T>()
    }

    /// The index of the chunk holding `p`.
    fn chunk_of(&self, p: NonNull<T>) -> usize {
        self.chunks
            .iter()
            .position(|c| c.holds(p))
            .expect("every slot lies in a chunk of its cache")
    }

    /// Moves `value` into a free slot and returns it (`kmem_cache_alloc()` + init).
    pub fn alloc(&mut self, value: T) -> NonNull<T> {
        let p = self.slot();
        // SAFETY: `slot` returns an aligned, unused slot inside a live chunk.
        unsafe { p.as_ptr().write(value) };
        self.live += 1;
        let c = self.chunk_of(p);
        self.chunks[c].live += 1;
        p
    }

    /// Drops the object at `p` and makes its slot free (`kmem_cache_free()`).
    ///
    /// # Safety
    ///
    /// `p` came from [`PnCache::alloc`] of this cache and was not freed since; nothing
    /// uses the object afterwards.
    pub unsafe fn free(&mut self, p: NonNull<T>) {
        // SAFETY: by the contract, `p` holds a live `T` that nobody uses any more.
        unsafe { core::ptr::drop_in_place(p.as_ptr()) };
        self.live -= 1;
        let c = self.chunk_of(p);
        self.chunks[c].live -= 1;
        let carving = self
            .cursor
            .is_some_and(|(base, _)| base == self.chunks[c].base);
        if self.chunks[c].live != 0 || carving {
            self.free.push(p);
            return;
        }
        // The chunk is empty and not the one being carved: forget its free slots and
        // return it.
        let chunk = self.chunks.swap_remove(c);
        self.free.retain(|&q| !chunk.holds(q));
        // SAFETY: the chunk was allocated with exactly this layout, no object in it is
        // live, and no free slot points into it any more: it is freed once.
        unsafe { alloc::alloc::dealloc(chunk.base.as_ptr(), chunk.layout) };
    }

    /// Chunks the cache holds.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Objects allocated and not freed.
    pub fn live(&self) -> usize {
        self.live
    }
}

impl<T> Drop for PnCache<T> {
    fn drop(&mut self) {
        // Objects still live are leaked rather than dropped behind their owners' backs;
        // the chunks' memory then stays too.
        if self.live != 0 {
            return;
        }
        for c in &self.chunks {
            // SAFETY: each chunk was allocated with exactly this layout and is freed once.
            unsafe { alloc::alloc::dealloc(c.base.as_ptr(), c.layout) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    struct Two([u64; 16]);

    #[test]
    fn objects_sit_back_to_back_at_the_placement() {
        for placement in [PnPlacement::PairStart, PnPlacement::PairMiddle] {
            let mut c = PnCache::<Two>::new(placement);
            let p: Vec<_> = (0..PN_PER_CHUNK + 2)
                .map(|i| c.alloc(Two([i as u64; 16])))
                .collect();
            for w in p[..PN_PER_CHUNK].windows(2) {
                assert_eq!(w[1].as_ptr() as usize - w[0].as_ptr() as usize, 128);
            }
            for x in &p {
                assert_eq!(x.as_ptr() as usize % 128, placement.offset());
            }
            // SAFETY: allocated above, not used again.
            unsafe { c.free(p[3]) };
            let again = c.alloc(Two([7; 16]));
            assert_eq!(again, p[3], "freed slots are reused first");
            for x in p.iter().filter(|x| **x != p[3]).chain([&again]) {
                // SAFETY: each allocated once, freed once.
                unsafe { c.free(*x) };
            }
            assert_eq!(c.live(), 0);
        }
    }

    /// Three lines: not a whole number of pairs, as mainline's struct. Every object still
    /// starts at the placement, the next pair boundary after the previous one's end.
    #[repr(C, align(64))]
    struct Three([u64; 24]);

    #[test]
    fn objects_of_odd_lines_keep_the_placement() {
        for placement in [PnPlacement::PairStart, PnPlacement::PairMiddle] {
            let mut c = PnCache::<Three>::new(placement);
            let p: Vec<_> = (0..PN_PER_CHUNK + 2)
                .map(|i| c.alloc(Three([i as u64; 24])))
                .collect();
            for x in &p {
                assert_eq!(
                    x.as_ptr() as usize % 128,
                    placement.offset(),
                    "{placement:?}"
                );
            }
            for w in p[..PN_PER_CHUNK].windows(2) {
                assert_eq!(w[1].as_ptr() as usize - w[0].as_ptr() as usize, 256);
            }
            for x in p {
                // SAFETY: each allocated once, freed once.
                unsafe { c.free(x) };
            }
        }
    }

    #[test]
    fn an_empty_chunk_goes_back_unless_the_cache_carves_from_it() {
        let mut c = PnCache::<Two>::new(PnPlacement::PairMiddle);
        let p: Vec<_> = (0..3 * PN_PER_CHUNK + 1)
            .map(|i| c.alloc(Two([i as u64; 16])))
            .collect();
        assert_eq!(c.chunks(), 4);
        // Empty the second chunk: it goes, and none of its slots is handed out again.
        let second = &p[PN_PER_CHUNK..2 * PN_PER_CHUNK];
        for x in second {
            // SAFETY: each allocated once, freed once.
            unsafe { c.free(*x) };
        }
        assert_eq!(c.chunks(), 3);
        // With no free slot left, the next object is carved from the last chunk.
        let next = c.alloc(Two([0; 16]));
        assert_eq!(
            next.as_ptr() as usize,
            p[3 * PN_PER_CHUNK].as_ptr() as usize + 128
        );
        // A free slot of a chunk still held is reused first.
        // SAFETY: allocated above, not used again.
        unsafe { c.free(p[1]) };
        assert_eq!(c.alloc(Two([0; 16])), p[1]);
        // SAFETY: allocated above, not used again.
        unsafe { c.free(next) };
        // The carved chunk (the last) stays even when empty.
        // SAFETY: allocated above, not used again.
        unsafe { c.free(p[3 * PN_PER_CHUNK]) };
        assert_eq!(c.chunks(), 3);
        for x in p[..PN_PER_CHUNK]
            .iter()
            .chain(&p[2 * PN_PER_CHUNK..3 * PN_PER_CHUNK])
        {
            // SAFETY: each allocated once (p[1] again above), freed once.
            unsafe { c.free(*x) };
        }
        assert_eq!((c.live(), c.chunks()), (0, 1));
    }

    #[test]
    fn drops_its_values() {
        let rc = std::rc::Rc::new(());
        let mut c = PnCache::new(PnPlacement::PairMiddle);
        let p = c.alloc(rc.clone());
        assert_eq!(std::rc::Rc::strong_count(&rc), 2);
        // SAFETY: allocated above, not used again.
        unsafe { c.free(p) };
        assert_eq!(std::rc::Rc::strong_count(&rc), 1);
    }
}
