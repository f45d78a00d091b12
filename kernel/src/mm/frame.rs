//! The early physical frame allocator: free ranges from the memory map, minus what is in use.
//!
//! Built from the bootloader's map with the first MiB (real-mode structures, the AP
//! trampoline), the kernel image and the boot information carved out. Allocation takes the
//! lowest free frames first, so the page tables built while only the boot stub's 4 GiB
//! identity map exists are reachable. It never frees: what it hands out (page tables, stacks,
//! the heap, the memmap) lives as long as the kernel and stays reserved. The page allocator
//! takes over the ranges that remain ([`take_free_ranges`], the handover); from then on
//! [`alloc()`] hands out frames of the page allocator instead ([`hand_over`]), which stay
//! allocated (counted, not reserved).
//!
//! Unsafe code here, and why: the `x86_64` crate's `FrameAllocator` is an unsafe trait: it
//! must hand out unused frames only.
#![allow(unsafe_code)]

use crate::boot_info::{BootInfo, MemKind};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use spin::Mutex;
use x86_64::PhysAddr;
use x86_64::structures::paging::{FrameAllocator, PhysFrame, Size4KiB};

/// Size of a frame.
pub const FRAME_SIZE: u64 = 4096;

/// Most free ranges tracked.
const MAX_RANGES: usize = 128;

/// A half-open physical range `[start, end)`, frame aligned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Range {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl Range {
    /// Frames in the range.
    #[must_use]
    pub fn frames(&self) -> u64 {
        (self.end - self.start) / FRAME_SIZE
    }
}

/// Free physical memory as sorted, disjoint ranges.
pub struct EarlyFrames {
    ranges: [Range; MAX_RANGES],
    n: usize,
    allocated: u64,
}

impl EarlyFrames {
    const fn empty() -> EarlyFrames {
        EarlyFrames {
            ranges: [Range { start: 0, end: 0 }; MAX_RANGES],
            n: 0,
            allocated: 0,
        }
    }

    fn insert(&mut self, r: Range) {
        if r.start >= r.end || self.n == MAX_RANGES {
            return;
        }
        let at = self.ranges[..self.n]
            .iter()
            .position(|x| x.start > r.start)
            .unwrap_or(self.n);
        self.ranges.copy_within(at..self.n, at + 1);
        self.ranges[at] = r;
        self.n += 1;
    }

    /// Removes `[start, end)` from the free ranges.
    fn carve(&mut self, start: u64, end: u64) {
        let mut i = 0;
        while i < self.n {
            let r = self.ranges[i];
            if end <= r.start || start >= r.end {
                i += 1;
                continue;
            }
            self.ranges.copy_within(i + 1..self.n, i);
            self.n -= 1;
            let lo = Range {
                start: r.start,
                end: start.max(r.start),
            };
            let hi = Range {
                start: end.min(r.end),
                end: r.end,
            };
            self.insert(hi);
            self.insert(lo);
            i = 0;
        }
    }

    /// Allocates `count` contiguous frames aligned to `align` bytes inside `[lo, hi)`,
    /// lowest address first.
    fn alloc_contiguous(&mut self, count: u64, align: u64, lo: u64, hi: u64) -> Option<PhysAddr> {
        let bytes = count.checked_mul(FRAME_SIZE)?;
        for i in 0..self.n {
            let r = self.ranges[i];
            let start = r.start.max(lo).div_ceil(align) * align;
            if start.checked_add(bytes)? <= r.end.min(hi) {
                self.carve(start, start + bytes);
                self.allocated += count;
                return Some(PhysAddr::new(start));
            }
        }
        None
    }

    /// The free ranges.
    #[must_use]
    pub fn ranges(&self) -> &[Range] {
        &self.ranges[..self.n]
    }
}

static FRAMES: Mutex<EarlyFrames> = Mutex::new(EarlyFrames::empty());

/// Set once the page allocator owns the free frames.
static HANDED_OVER: AtomicBool = AtomicBool::new(false);
/// Frames [`alloc()`] took from the page allocator since the handover.
static LATE_FRAMES: AtomicU64 = AtomicU64::new(0);
/// What serves [`alloc()`] after the handover: the page allocator's one-frame allocation,
/// passed down by [`hand_over`] (this module sits below the page allocator and never
/// names it).
static LATE_SOURCE: spin::Once<LateFrameSource> = spin::Once::new();

/// The page allocator's side of [`alloc()`] after the handover: one frame, or `None` when
/// it has none left.
pub type LateFrameSource = fn() -> Option<PhysFrame>;

/// Fills the allocator from the memory map, minus `reserved` physical ranges.
pub fn init(info: &BootInfo, reserved: &[(u64, u64)]) {
    let mut f = FRAMES.lock();
    for r in info.regions().iter().filter(|r| r.kind == MemKind::Usable) {
        let start = r.start.div_ceil(FRAME_SIZE) * FRAME_SIZE;
        let end = r.end() / FRAME_SIZE * FRAME_SIZE;
        f.insert(Range { start, end });
    }
    // Overlapping map entries are possible on real firmware: merge by carving each
    // non-usable entry out again.
    for r in info.regions().iter().filter(|r| r.kind != MemKind::Usable) {
        f.carve(
            r.start / FRAME_SIZE * FRAME_SIZE,
            r.end().div_ceil(FRAME_SIZE) * FRAME_SIZE,
        );
    }
    f.carve(0, 0x10_0000);
    for &(s, e) in reserved {
        f.carve(
            s / FRAME_SIZE * FRAME_SIZE,
            e.div_ceil(FRAME_SIZE) * FRAME_SIZE,
        );
    }
}

/// Allocates one frame: from the free ranges until the handover, then from the page
/// allocator (this CPU's node first).
#[must_use]
pub fn alloc() -> Option<PhysFrame> {
    if HANDED_OVER.load(Ordering::Acquire) {
        let source = LATE_SOURCE.get().expect("set before HANDED_OVER");
        let f = source()?;
        LATE_FRAMES.fetch_add(1, Ordering::Relaxed);
        return Some(f);
    }
    alloc_contiguous(1, FRAME_SIZE).map(PhysFrame::containing_address)
}

/// Allocates `count` physically contiguous frames aligned to `align` bytes (before the
/// handover only; `None` after it).
#[must_use]
pub fn alloc_contiguous(count: u64, align: u64) -> Option<PhysAddr> {
    alloc_contiguous_in(count, align, 0, u64::MAX)
}

/// [`alloc_contiguous`] inside the physical range `[lo, hi)` (the memmap of a node is
/// placed in that node's memory this way).
#[must_use]
pub fn alloc_contiguous_in(count: u64, align: u64, lo: u64, hi: u64) -> Option<PhysAddr> {
    if HANDED_OVER.load(Ordering::Acquire) {
        return None;
    }
    FRAMES
        .lock()
        .alloc_contiguous(count, align.max(FRAME_SIZE), lo, hi)
}

/// Marks the handover done: [`alloc()`] now takes frames from `source` (the page
/// allocator). A second handover keeps the first source.
pub fn hand_over(source: LateFrameSource) {
    LATE_SOURCE.call_once(|| source);
    HANDED_OVER.store(true, Ordering::Release);
}

/// Whether the page allocator owns the free frames.
#[must_use]
pub fn handed_over() -> bool {
    HANDED_OVER.load(Ordering::Acquire)
}

/// Frames [`alloc()`] has taken from the page allocator since the handover (page tables and
/// stacks made later; they are never freed).
#[must_use]
pub fn late_frames() -> u64 {
    LATE_FRAMES.load(Ordering::Relaxed)
}

/// Frames handed out so far and frames still free.
#[must_use]
pub fn stats() -> (u64, u64) {
    let f = FRAMES.lock();
    (f.allocated, f.ranges().iter().map(Range::frames).sum())
}

/// Calls `f` with the free ranges (for the summary and tests).
pub fn with_ranges<R>(f: impl FnOnce(&[Range]) -> R) -> R {
    f(FRAMES.lock().ranges())
}

/// Removes and returns every free range: the page allocator takes over from here.
pub fn take_free_ranges(out: &mut [Range]) -> usize {
    let mut f = FRAMES.lock();
    let n = f.n.min(out.len());
    out[..n].copy_from_slice(&f.ranges[..n]);
    let total = f.n;
    f.ranges.copy_within(n..total, 0);
    f.n = total - n;
    n
}

/// The allocator as the `x86_64` crate's page-table code wants it.
pub struct Frames;

// SAFETY: `alloc` returns frames that are free RAM, never returned twice.
unsafe impl FrameAllocator<Size4KiB> for Frames {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size4KiB>> {
        alloc()
    }
}
