//! Where the memmap lives: memory the platform hands out for folio arrays.
//!
//! Linux allocates each section's `struct page` array from memblock on the section's own
//! node (`sparse_init_nid()` -> `__populate_section_memmap()` -> `memmap_alloc()`), falling
//! back to any node when that one has no room (`memblock_alloc_try_nid_raw()`). Here the
//! platform does the same through [`MemmapStorage`]: the kernel takes the frames from its
//! early allocator inside the node's ranges and reaches them through the direct map; host
//! tests and the host benchmark use [`HeapStorage`], which leaks blocks of the global
//! allocator (the "physical memory" the host pretends to have is just frame numbers: the
//! allocator never touches a frame's contents).
//!
//! Unsafe code here, and why: the memmap's backing store is raw memory: `unsafe trait
//! MemmapStorage` makes each store promise fresh, aligned, never-moving blocks, and the
//! heap's store allocates them with the global allocator.
#![allow(unsafe_code)]

use core::alloc::Layout;
use core::ptr::NonNull;
use page::NodeId;

/// A block of memory for folio descriptors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemmapBlock {
    /// Start of the block: at least 64-byte aligned, `bytes` long.
    pub ptr: NonNull<u8>,
    /// The node whose memory it is (the requested one unless the platform fell back).
    pub node: NodeId,
}

/// A source of memmap memory.
///
/// # Safety
///
/// A block returned by [`MemmapStorage::alloc`] must be valid for reads and writes of
/// `bytes` bytes, 64-byte aligned, used by nothing else, and never freed or reused: the
/// folios written into it are handed out as `&'static`.
pub unsafe trait MemmapStorage {
    /// `bytes` bytes for the memmap of frames on `node`, preferably in `node`'s memory.
    /// `None` when no memory is left.
    fn alloc(&mut self, node: NodeId, bytes: usize) -> Option<MemmapBlock>;
}

/// Host storage: leaked blocks of the global allocator, attributed to the node asked for.
#[derive(Debug, Default)]
pub struct HeapStorage {
    bytes: usize,
}

impl HeapStorage {
    /// A new source.
    #[must_use]
    pub fn new() -> Self {
        HeapStorage { bytes: 0 }
    }

    /// Bytes handed out so far.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

// SAFETY: every block is a fresh allocation of the global allocator, 64-byte aligned, that
// is never deallocated (leaked), so it stays valid and unaliased forever.
unsafe impl MemmapStorage for HeapStorage {
    fn alloc(&mut self, node: NodeId, bytes: usize) -> Option<MemmapBlock> {
        let layout = Layout::from_size_align(bytes.max(64), 64).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc::alloc(layout) })?;
        self.bytes += layout.size();
        Some(MemmapBlock { ptr, node })
    }
}
