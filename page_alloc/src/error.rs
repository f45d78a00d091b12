//! The page allocator's errors: each names what was wrong, and none is a panic.
//!
//! Exhaustion is not an error here: `alloc_pages()` returns `None` (Linux's NULL page);
//! [`AllocError`] separates it from a request that could never succeed. A free of a frame
//! that is not in use, or that is still mapped, on a list or charged, is refused (and in
//! the bad-state case the frame is leaked, as Linux's `bad_page()` leaks it) instead of
//! corrupting the free lists.

use crate::memmap::MemmapError;
use crate::numa::{NumaError, PfnRange};
use core::fmt;

/// Why the allocator could not be set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitError {
    /// The NUMA description was refused.
    Numa(NumaError),
    /// The memmap could not be built.
    Memmap(MemmapError),
    /// Handing free memory over failed.
    Handover(HandoverError),
    /// `pcp_batch` must be at least 1.
    BadBatch,
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Numa(e) => write!(f, "NUMA description: {e}"),
            InitError::Memmap(e) => write!(f, "memmap: {e}"),
            InitError::Handover(e) => write!(f, "handover: {e}"),
            InitError::BadBatch => write!(f, "pcp batch must be at least 1"),
        }
    }
}

impl From<NumaError> for InitError {
    fn from(e: NumaError) -> Self {
        InitError::Numa(e)
    }
}

impl From<MemmapError> for InitError {
    fn from(e: MemmapError) -> Self {
        InitError::Memmap(e)
    }
}

impl From<HandoverError> for InitError {
    fn from(e: HandoverError) -> Self {
        InitError::Handover(e)
    }
}

/// Why frames could not be handed to the buddy allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandoverError {
    /// An empty range.
    Empty(PfnRange),
    /// The frame is not RAM the memmap describes.
    NotRam(u64),
    /// The frame is not reserved (already handed over, or allocated since).
    NotReserved(u64),
}

impl fmt::Display for HandoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandoverError::Empty(r) => write!(f, "empty range {r}"),
            HandoverError::NotRam(p) => write!(f, "pfn {p:#x} is not RAM in the memmap"),
            HandoverError::NotReserved(p) => {
                write!(f, "pfn {p:#x} is not reserved (handed over twice?)")
            }
        }
    }
}

/// Why an allocation request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// Every zone of the zonelist is empty (the only error [`crate::PageAlloc::alloc_pages`]
    /// turns into `None` silently).
    NoMemory,
    /// Order above [`crate::MAX_ORDER`].
    BadOrder(u32),
    /// A CPU id at or above the CPU count.
    BadCpu(usize),
    /// A node that does not exist.
    BadNode(u32),
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::NoMemory => write!(f, "out of memory"),
            AllocError::BadOrder(o) => write!(f, "order {o} above {}", crate::MAX_ORDER),
            AllocError::BadCpu(c) => write!(f, "cpu {c} does not exist"),
            AllocError::BadNode(n) => write!(f, "node {n} does not exist"),
        }
    }
}

/// Why a free was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// Order above [`crate::MAX_ORDER`].
    BadOrder(u32),
    /// A CPU id at or above the CPU count.
    BadCpu(usize),
    /// The folio is not this allocator's descriptor of its frame.
    Foreign(u64),
    /// The frame number is not a multiple of the block size.
    Misaligned(u64, u32),
    /// The folio holds no reference: freed twice, or never allocated.
    NotAllocated(u64),
    /// The last reference was dropped but the folio is still in use; it is leaked
    /// (`bad_page()`).
    BadState(u64, &'static str),
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreeError::BadOrder(o) => write!(f, "order {o} above {}", crate::MAX_ORDER),
            FreeError::BadCpu(c) => write!(f, "cpu {c} does not exist"),
            FreeError::Foreign(p) => write!(f, "pfn {p:#x}: not this allocator's folio"),
            FreeError::Misaligned(p, o) => write!(f, "pfn {p:#x} is not aligned to order {o}"),
            FreeError::NotAllocated(p) => write!(f, "pfn {p:#x} is not allocated (double free?)"),
            FreeError::BadState(p, why) => write!(f, "pfn {p:#x} freed while {why}; leaked"),
        }
    }
}

/// An inconsistency found by [`crate::PageAlloc::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckError {
    /// The frame concerned.
    pub pfn: u64,
    /// What is wrong.
    pub what: &'static str,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pfn {:#x}: {}", self.pfn, self.what)
    }
}
