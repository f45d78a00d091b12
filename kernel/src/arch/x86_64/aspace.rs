//! The address-space slot: the kernel virtual range where `mm_struct` regions live, carved
//! into per-address-space ranges, with page tables linked in by their owners.
//!
//! This kernel has no user mode; its "address spaces" are ranges of one PML4 slot, 448
//! (`0xFFFF_E000_0000_0000`, 512 GiB; 256 is the direct map, 384 the kernel stacks), shared by
//! every CPU through the one kernel PML4. Benchmark workers touch addresses there
//! ([`super::touch`]) and the platform-neutral fault core fills in the page tables.
//!
//! - [`mm_range_alloc`] / [`mm_range_free`] hand out 1 GiB-aligned ranges, next-fit, so a freed
//!   range is reused as late as possible (stale-translation bugs then show up as faults on
//!   nobody's address instead of silent aliasing). The slot's upper levels are never freed.
//! - [`link_pte_table`] makes the page-directory entry covering the 2 MiB at an address point
//!   at a page table the caller owns (Linux's `pmd_populate_kernel`), allocating the PDPT and
//!   the PD on first use from the caller's [`TableFrames`] the way `__pud_alloc` /
//!   `__pmd_alloc` do: outside the lock, then installed under it, or handed back when another
//!   CPU installed one first. [`unlink_pte_table`] clears the entry and shoots down every
//!   translation the table may have left, in TLBs and paging-structure caches, before it
//!   returns the table to the caller.
//! - The 512 entries of a page table are written by the mm code through the direct map
//!   ([`super::paging::phys_to_virt`], or [`pte_entries`]) under its own per-table lock, with
//!   atomic operations (the MMU sets accessed/dirty bits concurrently); this module only links
//!   tables and flushes. See [`super::pte::Pte`] for the encoding.
//!
//! Locking: one lock ([`AspaceLock`]) for the range bitmap and every PDPT/PD entry change.
//! The PML4 entry is installed once, through the kernel mapper's lock
//! ([`super::paging::install_pml4_table`]); the mapper itself refuses slot addresses, so the
//! two never write the same tables. Readers ([`pte_table`]) and the MMU walk without locks:
//! entries are written with single atomic stores, a new table is zeroed before the store that
//! links it (Release; x86 keeps stores in order, as `pmd_populate` relies on after
//! `smp_wmb`), and an entry that was not present is never cached, so linking needs no flush.
//!
//! Unsafe code here, and why: page-table frames are read and written through the direct map
//! as arrays of atomic entries, which only the callers' ownership of those frames makes
//! sound.
#![allow(unsafe_code)]

use super::paging::{self, phys_to_virt};
use super::pte::{PMD_SIZE, nx_bit};
use super::tlb::{self, TlbError, TlbFlush};
use crate::percpu::{self, CpuSet, cpu_id};
use crate::sync::SpinMutex;
use core::fmt;
use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering};
use x86_64::PhysAddr;

pub use super::vmlayout::{MM_SLOT_END, MM_SLOT_INDEX, MM_SLOT_START};

/// Granularity and alignment of [`mm_range_alloc`] (one PDPT entry: 1 GiB).
pub const MM_RANGE_ALIGN: u64 = 1 << 30;
const BLOCKS: usize = 512;

/// Table-entry bits for the PDPT and PD levels: present, writable (plus NX where the CPU has
/// it: nothing in the slot is ever executed).
const TABLE: u64 = 0b11;
const PRESENT: u64 = 1;
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// An address-space range of the slot, from [`mm_range_alloc`]. Not `Clone`: it is freed once.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a range stays allocated until it is given to mm_range_free"]
pub struct MmRange {
    start: u64,
    end: u64,
}

impl MmRange {
    /// First address.
    #[must_use]
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last address.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The addresses as a `Range`.
    #[must_use]
    pub fn range(&self) -> Range<u64> {
        self.start..self.end
    }
}

/// Why a slot operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AspaceError {
    /// [`mm_range_alloc`] of 0 bytes or of more than the slot.
    BadSize(u64),
    /// No free run of 1 GiB blocks that long.
    NoSpace,
    /// The address is outside the slot.
    OutsideSlot(u64),
    /// The address is in no allocated range.
    NotAllocated(u64),
    /// The page-table frame is not a 4 KiB-aligned physical address.
    BadFrame(u64),
    /// The 2 MiB at this address already has a page table (at `pt`).
    AlreadyLinked {
        /// The address asked for.
        vaddr: u64,
        /// The table linked there.
        pt: u64,
    },
    /// [`mm_range_free`]: a page table is still linked at this address.
    StillLinked(u64),
    /// The frame source had no frame for a PDPT or PD.
    OutOfFrames,
    /// The kernel page tables are not built yet (or PML4 slot 448 is taken, which the
    /// kernel mapper's refusal of slot addresses rules out).
    NotReady,
    /// [`unlink_pte_table`]: the entry is cleared, but the shootdown failed; the table
    /// (at `pt`) may still be cached by some CPU and must not be reused.
    Flush {
        /// The unlinked table.
        pt: u64,
        /// Why the shootdown failed.
        error: TlbError,
    },
}

impl fmt::Display for AspaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AspaceError::BadSize(s) => write!(f, "bad range size {s:#x}"),
            AspaceError::NoSpace => write!(f, "no free range that large in the mm slot"),
            AspaceError::OutsideSlot(a) => write!(f, "{a:#x} is outside the mm slot"),
            AspaceError::NotAllocated(a) => write!(f, "{a:#x} is in no allocated range"),
            AspaceError::BadFrame(a) => write!(f, "{a:#x} is not a frame address"),
            AspaceError::AlreadyLinked { vaddr, pt } => {
                write!(f, "{vaddr:#x} already has the page table {pt:#x}")
            }
            AspaceError::StillLinked(a) => write!(f, "a page table is still linked at {a:#x}"),
            AspaceError::OutOfFrames => write!(f, "no frame for an upper-level table"),
            AspaceError::NotReady => write!(f, "kernel page tables not built"),
            AspaceError::Flush { pt, error } => {
                write!(f, "table {pt:#x} unlinked but not flushed: {error}")
            }
        }
    }
}

/// Where [`link_pte_table`] gets frames for the slot's PDPT and PDs.
pub trait TableFrames {
    /// A free 4 KiB frame (its contents do not matter: it is zeroed before use).
    fn alloc(&mut self) -> Option<PhysAddr>;
    /// A frame from [`Self::alloc`] that was not needed after all (another CPU linked the
    /// same level first).
    fn free(&mut self, frame: PhysAddr);
}

ksync::lock_class!(
    /// The address-space slot's range bitmap and its PDPT/PD entries.
    pub AspaceLock, "aspace_slot"
);

struct State {
    /// 1 GiB blocks in use.
    used: [u64; BLOCKS / 64],
    /// Where the next-fit search starts.
    next: usize,
}

impl State {
    fn is_used(&self, b: usize) -> bool {
        self.used[b / 64] & (1 << (b % 64)) != 0
    }

    fn set(&mut self, b: usize, on: bool) {
        if on {
            self.used[b / 64] |= 1 << (b % 64);
        } else {
            self.used[b / 64] &= !(1 << (b % 64));
        }
    }
}

static STATE: SpinMutex<AspaceLock, State> = SpinMutex::new(State {
    used: [0; BLOCKS / 64],
    next: 0,
});

/// Physical address of the slot's PDPT (0 until the first link); written once, under the
/// lock, read without it.
static PDPT: AtomicU64 = AtomicU64::new(0);

fn block_of(vaddr: u64) -> usize {
    ((vaddr - MM_SLOT_START) / MM_RANGE_ALIGN) as usize
}

fn pd_index(vaddr: u64) -> usize {
    ((vaddr >> 21) & 511) as usize
}

/// The 512 entries of an upper-level table of the slot.
fn upper_table(phys: u64) -> &'static [AtomicU64; 512] {
    // SAFETY: `phys` is the slot's PDPT or one of its PDs: a frame this module zeroed and
    // linked, never freed while the kernel runs, reached through the always-mapped direct
    // map and only ever accessed through atomics (the MMU sets accessed bits in it).
    unsafe { &*phys_to_virt(PhysAddr::new(phys)).as_ptr::<[AtomicU64; 512]>() }
}

/// The 512 entries of the page table at `pt`, through the direct map.
///
/// # Safety
/// `pt` must be a 4 KiB page-table frame that the caller owns (linked with
/// [`link_pte_table`] or about to be) for as long as the reference is used.
pub unsafe fn pte_entries<'a>(pt: PhysAddr) -> &'a [AtomicU64; 512] {
    // SAFETY: per the contract the frame is a live page table owned by the caller, reached
    // through the direct map, whose entries are only accessed atomically.
    unsafe { &*phys_to_virt(pt).as_ptr::<[AtomicU64; 512]>() }
}

/// Reserves a range of at least `size` bytes (rounded up to 1 GiB), 1 GiB aligned.
pub fn mm_range_alloc(size: u64) -> Result<MmRange, AspaceError> {
    if size == 0 || size > MM_SLOT_END - MM_SLOT_START {
        return Err(AspaceError::BadSize(size));
    }
    let blocks = size.div_ceil(MM_RANGE_ALIGN) as usize;
    let mut st = STATE.lock();
    for i in 0..BLOCKS {
        let first = (st.next + i) % BLOCKS;
        if first + blocks > BLOCKS {
            continue;
        }
        if (first..first + blocks).all(|b| !st.is_used(b)) {
            for b in first..first + blocks {
                st.set(b, true);
            }
            st.next = (first + blocks) % BLOCKS;
            let start = MM_SLOT_START + first as u64 * MM_RANGE_ALIGN;
            return Ok(MmRange {
                start,
                end: start + blocks as u64 * MM_RANGE_ALIGN,
            });
        }
    }
    Err(AspaceError::NoSpace)
}

/// Returns a range. Refused (and the range handed back) while a page table is still linked
/// in it: the owner unlinks its tables first.
pub fn mm_range_free(range: MmRange) -> Result<(), (MmRange, AspaceError)> {
    let mut st = STATE.lock();
    let pdpt = PDPT.load(Ordering::Acquire);
    let blocks = block_of(range.start)..block_of(range.end);
    if let Some(b) = blocks.clone().find(|&b| !st.is_used(b)) {
        let a = MM_SLOT_START + b as u64 * MM_RANGE_ALIGN;
        return Err((range, AspaceError::NotAllocated(a)));
    }
    if pdpt != 0 {
        for b in blocks.clone() {
            let pdpte = upper_table(pdpt)[b].load(Ordering::Acquire);
            if pdpte & PRESENT == 0 {
                continue;
            }
            let pd = upper_table(pdpte & ADDR_MASK);
            if let Some(i) = pd
                .iter()
                .position(|e| e.load(Ordering::Acquire) & PRESENT != 0)
            {
                let a = MM_SLOT_START + b as u64 * MM_RANGE_ALIGN + i as u64 * PMD_SIZE;
                return Err((range, AspaceError::StillLinked(a)));
            }
        }
    }
    for b in blocks {
        st.set(b, false);
    }
    Ok(())
}

fn check_vaddr(vaddr: u64) -> Result<(), AspaceError> {
    if (MM_SLOT_START..MM_SLOT_END).contains(&vaddr) {
        Ok(())
    } else {
        Err(AspaceError::OutsideSlot(vaddr))
    }
}

fn zeroed(frames: &mut dyn TableFrames) -> Result<u64, AspaceError> {
    let f = frames.alloc().ok_or(AspaceError::OutOfFrames)?;
    if f.as_u64() & !ADDR_MASK != 0 {
        return Err(AspaceError::BadFrame(f.as_u64()));
    }
    // SAFETY: the frame source hands us a free frame; it becomes ours to zero, reached
    // through the direct map.
    unsafe { core::ptr::write_bytes(phys_to_virt(f).as_mut_ptr::<u8>(), 0, 4096) };
    Ok(f.as_u64())
}

/// Links the page table `pt` as the page-directory entry covering the 2 MiB that contain
/// `vaddr` (which must lie in an allocated range), creating the slot's PDPT and the PD on
/// first use with frames from `frames` (allocated outside the lock; one that loses a race
/// goes back through [`TableFrames::free`]). No flush is needed: the entry was not present.
///
/// # Safety
/// `pt` must be a page-table frame that the caller owns until [`unlink_pte_table`] returns
/// it, zeroed or holding only entries that map frames no Rust reference covers (frames the
/// mm code owns for as long as they are mapped): once linked, the touch routines read and
/// write whatever those entries map.
pub unsafe fn link_pte_table(
    vaddr: u64,
    pt: PhysAddr,
    frames: &mut dyn TableFrames,
) -> Result<(), AspaceError> {
    check_vaddr(vaddr)?;
    let pt = pt.as_u64();
    if pt == 0 || pt & !ADDR_MASK != 0 {
        return Err(AspaceError::BadFrame(pt));
    }
    let mut spare: Option<u64> = None;
    let result = loop {
        let st = STATE.lock();
        if !st.is_used(block_of(vaddr)) {
            break Err(AspaceError::NotAllocated(vaddr));
        }
        let mut pdpt = PDPT.load(Ordering::Relaxed);
        if pdpt == 0 {
            let Some(f) = spare.take() else {
                drop(st);
                spare = Some(zeroed(frames)?);
                continue;
            };
            // SAFETY: `f` is a zeroed frame that becomes the slot's PDPT for good.
            let installed = unsafe { paging::install_pml4_table(MM_SLOT_INDEX, PhysAddr::new(f)) };
            if !matches!(installed, Ok(true)) {
                spare = Some(f);
                break Err(AspaceError::NotReady);
            }
            PDPT.store(f, Ordering::Release);
            pdpt = f;
        }
        let pdpte = &upper_table(pdpt)[block_of(vaddr)];
        let mut pd = pdpte.load(Ordering::Acquire) & ADDR_MASK;
        if pd == 0 {
            let Some(f) = spare.take() else {
                drop(st);
                spare = Some(zeroed(frames)?);
                continue;
            };
            pdpte.store(f | TABLE | nx_bit(), Ordering::Release);
            pd = f;
        }
        let pde = &upper_table(pd)[pd_index(vaddr)];
        let old = pde.load(Ordering::Acquire);
        if old & PRESENT != 0 {
            break Err(AspaceError::AlreadyLinked {
                vaddr,
                pt: old & ADDR_MASK,
            });
        }
        pde.store(pt | TABLE | nx_bit(), Ordering::Release);
        break Ok(());
    };
    if let Some(f) = spare {
        frames.free(PhysAddr::new(f));
    }
    result
}

/// The page table linked for the 2 MiB containing `vaddr`, if any. A lock-free snapshot:
/// whoever owns that 2 MiB must keep it from being unlinked while it uses the answer.
#[must_use]
pub fn pte_table(vaddr: u64) -> Option<PhysAddr> {
    check_vaddr(vaddr).ok()?;
    let pdpt = PDPT.load(Ordering::Acquire);
    if pdpt == 0 {
        return None;
    }
    let pdpte = upper_table(pdpt)[block_of(vaddr)].load(Ordering::Acquire);
    if pdpte & PRESENT == 0 {
        return None;
    }
    let pde = upper_table(pdpte & ADDR_MASK)[pd_index(vaddr)].load(Ordering::Acquire);
    (pde & PRESENT != 0).then(|| PhysAddr::new(pde & ADDR_MASK))
}

/// Unlinks the page table of the 2 MiB containing `vaddr` and returns it (`None`: there was
/// none), after flushing this CPU and every CPU in `cpus` (those that may have used it): no
/// TLB or paging-structure cache still refers to the table, so the caller may free it.
pub fn unlink_pte_table(vaddr: u64, cpus: &CpuSet) -> Result<Option<PhysAddr>, AspaceError> {
    check_vaddr(vaddr)?;
    let old = {
        let st = STATE.lock();
        if !st.is_used(block_of(vaddr)) {
            return Err(AspaceError::NotAllocated(vaddr));
        }
        let pdpt = PDPT.load(Ordering::Relaxed);
        if pdpt == 0 {
            return Ok(None);
        }
        let pdpte = upper_table(pdpt)[block_of(vaddr)].load(Ordering::Acquire);
        if pdpte & PRESENT == 0 {
            return Ok(None);
        }
        upper_table(pdpte & ADDR_MASK)[pd_index(vaddr)].swap(0, Ordering::AcqRel)
    };
    if old & PRESENT == 0 {
        return Ok(None);
    }
    let pt = old & ADDR_MASK;
    let start = vaddr & !(PMD_SIZE - 1);
    // A CPU that is not online never ran, so it caches nothing: flush the online ones only
    // (then the shootdown cannot fail for a bad target after the entry is gone).
    let mut all = CpuSet::new();
    for c in cpus.iter().filter(|&c| percpu::area(c).is_some()) {
        all.insert(c);
    }
    all.insert(cpu_id());
    tlb::flush_tlb_cpus(
        &all,
        &TlbFlush::Range {
            start,
            end: start + PMD_SIZE,
        },
    )
    .map_err(|error| AspaceError::Flush { pt, error })?;
    Ok(Some(PhysAddr::new(pt)))
}
