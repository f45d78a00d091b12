//! The kernel's page allocator: `page_alloc::PageAlloc` over the machine's RAM, and the handover
//! from the early frame allocator.
//!
//! Models `mm_core_init()` -> `mem_init()` -> `memblock_free_all()`: once the CPUs are up
//! and the NUMA layout is known, the memmap is built (each section's array from the early
//! allocator inside that section's node, read and written through the direct map), every
//! frame the early allocator still has free is handed to the buddy allocator, and the
//! per-CPU lists are sized. Everything the early allocator handed out before — the kernel
//! image, the boot information, the first MiB, page tables, stacks, the heap, the memmap
//! itself — stays reserved and is counted as such (`present - managed`). A frame is free in
//! exactly one allocator at a time: the early allocator gives its ranges up
//! ([`frame::take_free_ranges`]) before the buddy allocator gets them, and later early-style
//! requests ([`frame::alloc`]: page tables, stacks) are served by the page allocator.
//!
//! The calls other code makes go through [`get`]; the running CPU and its node come from the
//! per-CPU area.
//!
//! Unsafe code here, and why: the memmap's early storage is an unsafe trait: it hands the
//! page allocator memory that nothing else uses.
#![allow(unsafe_code)]

use super::frame;
use crate::arch::numa;
use crate::arch::vmlayout::phys_to_virt;
use crate::percpu;
use ::page_alloc::numa::PfnRange;
use ::page_alloc::{InitError, MemmapBlock, MemmapStorage, PageAlloc, PcpConfig};
use alloc::vec::Vec;
use core::ptr::NonNull;
use lru::Folio;
use lru::NodeId;
use x86_64::PhysAddr;

static PAGE_ALLOC: spin::Once<PageAlloc> = spin::Once::new();
static BOOT: spin::Once<BootFigures> = spin::Once::new();

/// What the handover produced, kept for the summary and the tests.
#[derive(Clone, Debug, Default)]
pub struct BootFigures {
    /// Frames handed to the buddy allocator.
    pub handed_over: u64,
    /// `NR_FREE_PAGES` right after the handover, per zone as `(node, zone, free)`.
    pub free: Vec<(u32, lru::Zone, u64)>,
    /// Memmap arrays that could not be placed on their own node.
    pub memmap_off_node: NodeId,
}

impl BootFigures {
    /// Free frames right after the handover, all zones.
    #[must_use]
    pub fn total_free(&self) -> u64 {
        self.free.iter().map(|(_, _, f)| f).sum()
    }
}

/// The page allocator (`None` before [`init`]).
#[must_use]
pub fn get() -> Option<&'static PageAlloc> {
    PAGE_ALLOC.get()
}

/// The handover's figures (`None` before [`init`]).
#[must_use]
pub fn boot_figures() -> Option<&'static BootFigures> {
    BOOT.get()
}

/// Memmap storage from the early allocator, inside the asking node's RAM when it can.
struct EarlyStorage<'a> {
    ram: &'a [(u32, PfnRange)],
    off_node: NodeId,
}

impl EarlyStorage<'_> {
    fn take(&self, node: Option<u32>, pages: u64) -> Option<(PhysAddr, u32)> {
        for &(n, r) in self
            .ram
            .iter()
            .filter(|(n, _)| node.is_none_or(|x| x == *n))
        {
            let (lo, hi) = (r.start * frame::FRAME_SIZE, r.end * frame::FRAME_SIZE);
            if let Some(a) = frame::alloc_contiguous_in(pages, frame::FRAME_SIZE, lo, hi) {
                return Some((a, n));
            }
        }
        None
    }
}

// SAFETY: blocks are fresh frames from the early allocator (never handed out twice, never
// freed: they stay reserved), reached through the direct map, which maps all RAM read-write
// for the kernel's whole life; frame alignment exceeds the 64 bytes a folio needs.
unsafe impl MemmapStorage for EarlyStorage<'_> {
    fn alloc(&mut self, node: NodeId, bytes: usize) -> Option<MemmapBlock> {
        let pages = (bytes as u64).div_ceil(frame::FRAME_SIZE);
        let (phys, got) = self
            .take(Some(node), pages)
            .or_else(|| self.take(None, pages))?;
        if got != node {
            self.off_node += 1;
        }
        let ptr = NonNull::new(phys_to_virt(phys).as_mut_ptr::<u8>())?;
        Some(MemmapBlock { ptr, node: got })
    }
}

/// Builds the memmap and zones, hands every free early frame over, sizes the per-CPU lists.
/// Runs once, on the boot CPU, after SMP bring-up and NUMA discovery, while the other CPUs
/// idle.
pub fn init(config: PcpConfig) -> Result<&'static PageAlloc, InitError> {
    if let Some(pa) = PAGE_ALLOC.get() {
        return Ok(pa);
    }
    let info = numa::info().expect("NUMA discovery runs before the page allocator");
    let ram = info.topology.memory();
    let mut storage = EarlyStorage {
        ram: &ram,
        off_node: 0,
    };
    let pa = PageAlloc::new(info.topology.clone(), &mut storage, config)?;
    let off_node = storage.off_node;
    let mut handed_over = 0;
    let mut buf = [frame::Range::default(); 32];
    loop {
        let n = frame::take_free_ranges(&mut buf);
        if n == 0 {
            break;
        }
        for r in &buf[..n] {
            let pfns = PfnRange::new(r.start / frame::FRAME_SIZE, r.end / frame::FRAME_SIZE);
            handed_over += pa.free_range(pfns)?;
        }
    }
    pa.setup_pcp();
    let pa = PAGE_ALLOC.call_once(|| pa);
    frame::hand_over(late_frame);
    BOOT.call_once(|| BootFigures {
        handed_over,
        free: pa
            .zones()
            .map(|z| (z.node(), z.kind(), z.nr_free()))
            .collect(),
        memmap_off_node: off_node,
    });
    Ok(pa)
}

/// One frame for the kernel itself (a page table, a stack page), from the running CPU's
/// node. Never freed.
#[must_use]
pub fn alloc_kernel_frame() -> Option<&'static Folio> {
    let pa = get()?;
    let cpu = percpu::cpu_id();
    pa.alloc_page(cpu, percpu::cpu_to_node(cpu))
}

/// [`frame::alloc`]'s source after the handover: [`alloc_kernel_frame`] as a physical frame.
fn late_frame() -> Option<x86_64::structures::paging::PhysFrame> {
    let f = alloc_kernel_frame()?;
    Some(x86_64::structures::paging::PhysFrame::containing_address(
        PhysAddr::new(f.pfn() * frame::FRAME_SIZE),
    ))
}

/// Empties every CPU's per-CPU lists: each CPU drains its own through `on_each_cpu`
/// (Linux's `drain_local_pages()` on each CPU); when a cross-CPU call is not possible
/// (called on an AP, or from inside a call) the lists are drained remotely under their
/// locks instead. Returns the frames moved.
pub fn drain_all_pages() -> u64 {
    let Some(pa) = get() else { return 0 };
    let moved = core::sync::atomic::AtomicU64::new(0);
    let done = percpu::on_each_cpu(&|cpu| {
        moved.fetch_add(pa.drain_cpu(cpu), core::sync::atomic::Ordering::Relaxed);
    });
    match done {
        Ok(()) => moved.into_inner(),
        Err(_) => moved.into_inner() + pa.drain_all(),
    }
}

/// `bytes` of memmap per frame of `present`, as "64.12".
fn per_frame(bytes: u64, present: u64) -> alloc::string::String {
    let hundredths = (bytes * 100).checked_div(present).unwrap_or(0);
    alloc::format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// Writes the page allocator part of the system summary: per node and per zone the frames
/// in total (present), free, on per-CPU lists, reserved, the per-CPU list sizes, and the
/// memmap in bytes and bytes per frame.
pub fn describe(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
    let Some(pa) = get() else {
        return writeln!(w, "page allocator: not set up");
    };
    let mm = pa.memmap();
    let present: u64 = pa.zones().map(|z| z.present_pages()).sum();
    writeln!(
        w,
        "page allocator: {} frames free of {present}; memmap {} KiB in {} sections ({} bytes per \
         frame)",
        pa.nr_free_pages(),
        mm.bytes() >> 10,
        mm.sections().count(),
        per_frame(mm.bytes(), present)
    )?;
    if let Some(b) = boot_figures() {
        writeln!(
            w,
            "  handover: {} frames to the buddy allocator, {} free after it{}; {} frames taken \
             for page tables and stacks since",
            b.handed_over,
            b.total_free(),
            if b.memmap_off_node > 0 {
                alloc::format!(", {} memmap arrays off their node", b.memmap_off_node)
            } else {
                alloc::string::String::new()
            },
            frame::late_frames()
        )?;
    }
    for node in pa.nodes() {
        let zones: Vec<&::page_alloc::Zone> = node.zones().collect();
        let total: u64 = zones.iter().map(|z| z.present_pages()).sum();
        let free: u64 = zones.iter().map(|z| z.nr_free()).sum();
        let reserved: u64 = zones.iter().map(|z| z.reserved()).sum();
        let memmap: u64 = zones.iter().map(|z| mm.bytes_in(z.span())).sum();
        writeln!(
            w,
            "  node {}: total {total} frames ({} MiB), free {free}, reserved {reserved}, memmap \
             {} KiB ({} bytes per frame, {} KiB stored on this node)",
            node.id(),
            (total << ::page_alloc::pfn::PAGE_SHIFT) >> 20,
            memmap >> 10,
            per_frame(memmap, total),
            mm.bytes_on_node(node.id()) >> 10
        )?;
        for z in zones {
            let (batch, high) = z.pcp_batch_high(0).unwrap_or_default();
            let memmap = mm.bytes_in(z.span());
            writeln!(
                w,
                "    {:<6} pfn {:#x}-{:#x}: total {}, free {}, pcp {}, reserved {}, managed {}; \
                 pcp batch {batch} high {high}; memmap {} KiB ({} bytes per frame)",
                z.name(),
                z.span().start,
                z.span().end,
                z.present_pages(),
                z.nr_free(),
                pa.pcp_pages(z),
                z.reserved(),
                z.managed(),
                memmap >> 10,
                per_frame(memmap, z.present_pages())
            )?;
        }
    }
    Ok(())
}
