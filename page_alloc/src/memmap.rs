//! The sparse memmap: one [`Folio`] per frame of RAM, in per-section arrays.
//!
//! Models Linux's classic `CONFIG_SPARSEMEM` (include/linux/mmzone.h, mm/sparse.c):
//! physical memory is cut into sections of `1 << SECTION_SIZE_BITS` bytes (128 MiB on
//! x86_64), and every section that holds RAM gets its own array of descriptors, allocated
//! in that section's node ([`crate::storage`]). A hole — the PCI window below 4 GiB, the
//! gap between two nodes, memory that is not there — costs no descriptors unless it
//! shares a section with RAM, so no array ever spans a hole of a section or more.
//!
//! Within a section the array covers the span from the section's first to its last
//! frame of RAM (Linux's sub-section granularity reduced to "trim both ends"); frames in
//! that span that are not RAM (the legacy hole at 640 KiB, firmware pages between two
//! usable ranges) get a descriptor that is never handed out, as Linux's
//! `init_unavailable_range()` does.
//!
//! `pfn_to_folio` is `mem_section[pfn >> PFN_SECTION_SHIFT]` plus an offset, O(1) (a root
//! table of four bytes per section number, then the section); a folio
//! carries its own frame number, so `folio_to_pfn` is one load (Linux's classic sparse
//! model finds the section through bits of `page->flags` and subtracts instead).
//!
//! Every descriptor starts as a reserved frame (`PageReserved`: refcount 1 and
//! [`PRIVATE_RESERVED`], as `__init_single_page()` + `init_reserved_page()` leave it);
//! the handover
//! ([`crate::PageAlloc::free_range`]) frees the frames the platform does not use, which
//! is the only way a descriptor reaches the buddy allocator.
//!
//! Unsafe code here, and why: the memmap is arrays of `Folio` in raw storage, written once
//! before it is shared and read through `'static` references after, on which it declares
//! itself `Send`/`Sync`.
#![allow(unsafe_code)]

use crate::numa::{NumaTopology, PfnRange};
use crate::pfn::{PAGE_SHIFT, zone_for_pfn};
use crate::storage::{MemmapBlock, MemmapStorage};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::ptr::NonNull;
use page::NodeId;
use page::{Folio, FolioError};

/// log2 of the section size in bytes (x86_64's `SECTION_SIZE_BITS`).
pub const SECTION_SIZE_BITS: u32 = 27;
/// log2 of the frames per section (`PFN_SECTION_SHIFT`).
pub const PFN_SECTION_SHIFT: u32 = SECTION_SIZE_BITS - PAGE_SHIFT;
/// Frames per section (`PAGES_PER_SECTION`).
pub const PAGES_PER_SECTION: u64 = 1 << PFN_SECTION_SHIFT;
/// Bytes of memmap per described frame.
pub const FOLIO_BYTES: u64 = core::mem::size_of::<Folio>() as u64;
/// `folio->private` of a reserved frame (`PG_reserved`): never handed to the allocator.
/// Buddy orders are at most 10 and an allocated frame starts with 0, so nothing else
/// looks like this.
pub const PRIVATE_RESERVED: u32 = u32::MAX;

/// Why the memmap could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemmapError {
    /// The description has no memory at all.
    NoMemory,
    /// The storage had no block of `bytes` for a section of `node`.
    OutOfStorage {
        /// The node asked for.
        node: NodeId,
        /// Bytes asked for.
        bytes: usize,
    },
    /// The storage returned a block that is not 64-byte aligned.
    Misaligned(usize),
    /// The memory spans more than [`MAX_SECTION_SPAN`] section numbers.
    TooSparse(u64),
    /// A descriptor could not be made (frame number or node out of range).
    Folio(FolioError),
}

impl fmt::Display for MemmapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemmapError::NoMemory => write!(f, "no memory to describe"),
            MemmapError::OutOfStorage { node, bytes } => {
                write!(f, "no {bytes} bytes of memmap storage for node {node}")
            }
            MemmapError::Misaligned(a) => write!(f, "memmap block at {a:#x} is not aligned"),
            MemmapError::TooSparse(n) => {
                write!(f, "memory spans {n} sections (at most {MAX_SECTION_SPAN})")
            }
            MemmapError::Folio(e) => write!(f, "bad folio: {e:?}"),
        }
    }
}

/// One section's descriptor array (`struct mem_section`).
#[derive(Debug)]
pub struct MemSection {
    nr: u64,
    start_pfn: u64,
    nr_pages: u64,
    present_pages: u64,
    map: NonNull<Folio>,
    node: NodeId,
}

impl MemSection {
    /// Whether the array describes frame `pfn`. Below the array's first frame
    /// `pfn - start_pfn` wraps past `nr_pages`: one compare.
    #[inline]
    fn describes(&self, pfn: u64) -> bool {
        pfn.wrapping_sub(self.start_pfn) < self.nr_pages
    }

    /// The descriptor of frame `pfn`.
    ///
    /// # Safety
    ///
    /// The array describes `pfn` ([`Self::describes`]).
    #[inline]
    unsafe fn folio(&self, pfn: u64) -> &'static Folio {
        let off = pfn - self.start_pfn;
        debug_assert!(off < self.nr_pages);
        // SAFETY: `off < nr_pages` (the caller's promise): inside the array, which
        // `Memmap::new` fully initialised and which is never freed (the storage contract),
        // so the folio lives forever.
        unsafe { self.map.add(off as usize).as_ref() }
    }

    /// The section number (`pfn_to_section_nr()`).
    #[must_use]
    pub fn nr(&self) -> u64 {
        self.nr
    }

    /// Frames the array describes, `[start, end)`.
    #[must_use]
    pub fn span(&self) -> PfnRange {
        PfnRange::new(self.start_pfn, self.start_pfn + self.nr_pages)
    }

    /// Frames of RAM among them.
    #[must_use]
    pub fn present_pages(&self) -> u64 {
        self.present_pages
    }

    /// The node whose memory holds the array.
    #[must_use]
    pub fn map_node(&self) -> u32 {
        self.node
    }

    /// Bytes of the array.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.nr_pages * FOLIO_BYTES
    }

    /// Address of the array (where the platform's storage put it).
    #[must_use]
    pub fn map_addr(&self) -> usize {
        self.map.as_ptr() as usize
    }
}

/// Most section numbers one memmap spans, first to last (2^24 sections: 2 PiB of
/// physical address space; the root table costs four bytes per section number).
pub const MAX_SECTION_SPAN: u64 = 1 << 24;

/// Root entry of a section without an array.
const NO_SECTION: u32 = u32::MAX;

/// The memmap of the whole machine (`mem_section[]`): a root table indexed by section
/// number (4 bytes per number, as `SPARSEMEM_EXTREME`'s roots keep holes cheap) pointing
/// into the dense list of sections that have arrays.
pub struct Memmap {
    first_section: u64,
    root: Box<[u32]>,
    sections: Box<[MemSection]>,
    /// RAM with its node, sorted, disjoint.
    present: Vec<(u32, PfnRange)>,
}

// SAFETY: the arrays are written once in `new`, before the `Memmap` exists, and only read
// through shared references afterwards; `Folio` itself is `Sync` (atomics and an atomic
// link), so sharing the pointers between threads is sharing `&'static Folio`s.
unsafe impl Send for Memmap {}
// SAFETY: as above.
unsafe impl Sync for Memmap {}

impl fmt::Debug for Memmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memmap")
            .field("sections", &self.sections().count())
            .field("bytes", &self.bytes())
            .finish_non_exhaustive()
    }
}

impl Memmap {
    /// Describes every frame of `numa`'s memory, one array per section with RAM, each
    /// taken from `storage` on the node of the section's first frame.
    pub fn new(numa: &NumaTopology, storage: &mut impl MemmapStorage) -> Result<Self, MemmapError> {
        let present = numa.memory();
        let (Some(first), Some(last)) = (present.first(), present.last()) else {
            return Err(MemmapError::NoMemory);
        };
        let first_section = first.1.start >> PFN_SECTION_SHIFT;
        let last_section = (last.1.end - 1) >> PFN_SECTION_SHIFT;
        let span = last_section - first_section + 1;
        if span > MAX_SECTION_SPAN {
            return Err(MemmapError::TooSparse(span));
        }
        let mut root: Vec<u32> = alloc::vec![NO_SECTION; span as usize];
        let mut sections: Vec<MemSection> = Vec::new();
        // Sections that hold RAM, ascending, each once.
        let mut touched: Vec<u64> = present
            .iter()
            .flat_map(|(_, r)| (r.start >> PFN_SECTION_SHIFT)..=((r.end - 1) >> PFN_SECTION_SHIFT))
            .collect();
        touched.dedup();
        for nr in touched {
            let sec = PfnRange::new(nr << PFN_SECTION_SHIFT, (nr + 1) << PFN_SECTION_SHIFT);
            let section = Self::populate(nr, sec, &present, storage)?;
            root[(nr - first_section) as usize] = sections.len() as u32;
            sections.push(section);
        }
        Ok(Memmap {
            first_section,
            root: root.into_boxed_slice(),
            sections: sections.into_boxed_slice(),
            present,
        })
    }

    /// Allocates and fills the array of section `nr` (frames `sec`) for the parts of the
    /// sorted RAM `ranges` that fall into it.
    fn populate(
        nr: u64,
        sec: PfnRange,
        ranges: &[(u32, PfnRange)],
        storage: &mut impl MemmapStorage,
    ) -> Result<MemSection, MemmapError> {
        let clipped: Vec<(u32, PfnRange)> = ranges
            .iter()
            .filter_map(|(n, r)| r.intersect(&sec).map(|r| (*n, r)))
            .collect();
        let (Some(&(node, lo)), Some(&(_, hi))) = (clipped.first(), clipped.last()) else {
            return Err(MemmapError::NoMemory);
        };
        let span = PfnRange::new(lo.start, hi.end);
        let bytes = (span.pages() * FOLIO_BYTES) as usize;
        let MemmapBlock {
            ptr,
            node: map_node,
        } = storage
            .alloc(node, bytes)
            .ok_or(MemmapError::OutOfStorage { node, bytes })?;
        if !(ptr.as_ptr() as usize).is_multiple_of(core::mem::align_of::<Folio>()) {
            return Err(MemmapError::Misaligned(ptr.as_ptr() as usize));
        }
        let map = ptr.cast::<Folio>();
        let mut cur = 0;
        let mut hole_node = node;
        for (i, pfn) in (span.start..span.end).enumerate() {
            while cur < clipped.len() && clipped[cur].1.end <= pfn {
                hole_node = clipped[cur].0;
                cur += 1;
            }
            let node = match clipped.get(cur) {
                Some((n, r)) if r.contains(pfn) => *n,
                _ => hole_node,
            };
            let folio = Folio::new(pfn, node, zone_for_pfn(pfn)).map_err(MemmapError::Folio)?;
            // SAFETY: the block holds `span.pages()` folios (checked size and alignment
            // above) and belongs to us alone; slot `i` is written once, before any reference
            // to it exists.
            unsafe { map.add(i).write(folio) };
            // SAFETY: just initialised.
            let f = unsafe { map.add(i).as_ref() };
            // Reserved until the handover frees it (`init_reserved_page`).
            f.get();
            f.set_private(PRIVATE_RESERVED);
        }
        Ok(MemSection {
            nr,
            start_pfn: span.start,
            nr_pages: span.pages(),
            present_pages: clipped.iter().map(|(_, r)| r.pages()).sum(),
            map,
            node: map_node,
        })
    }

    /// The descriptor of frame `pfn` (`pfn_to_page()`), if the memmap describes it.
    #[inline]
    #[must_use]
    pub fn pfn_to_folio(&self, pfn: u64) -> Option<&'static Folio> {
        // SAFETY: `section_of` returns only a section that describes `pfn`.
        Some(unsafe { self.section_of(pfn)?.folio(pfn) })
    }

    /// A walk over frames that lie close together (the PTEs of one table, a batch of
    /// folios being freed): see [`MemmapCursor`].
    #[must_use]
    pub fn cursor(&self) -> MemmapCursor<'_> {
        MemmapCursor {
            memmap: self,
            last: None,
        }
    }

    /// The frame number of `folio` (`folio_pfn()`).
    #[inline]
    #[must_use]
    pub fn folio_to_pfn(folio: &Folio) -> u64 {
        folio.pfn()
    }

    /// Whether `folio` is this memmap's descriptor of its frame (not a copy, not another
    /// machine's).
    #[must_use]
    pub fn owns(&self, folio: &Folio) -> bool {
        self.pfn_to_folio(folio.pfn())
            .is_some_and(|f| core::ptr::eq(f, folio))
    }

    /// Whether `folio` is reserved: never handed over to the allocator.
    #[must_use]
    pub fn is_reserved(folio: &Folio) -> bool {
        folio.private() == PRIVATE_RESERVED && folio.refcount() == 1
    }

    /// Whether `folio` is this memmap's descriptor of a frame of RAM: [`Self::owns`] and
    /// [`Self::is_present`] of its frame in one section lookup, what the free paths check
    /// before a frame goes back to a list. A section without holes (every section of a
    /// machine whose RAM ends on section boundaries) answers the second question by
    /// itself; only a section with holes searches the RAM ranges.
    #[inline]
    #[must_use]
    pub fn owns_ram(&self, folio: &Folio) -> bool {
        self.section_of(folio.pfn())
            // SAFETY: `section_of` returns only a section that describes the frame.
            .is_some_and(|s| unsafe { self.owns_ram_in(s, folio) })
    }

    /// [`Self::owns_ram`] of `folio`, given the section of this memmap that describes its
    /// frame.
    ///
    /// # Safety
    ///
    /// `s` describes `folio.pfn()` ([`MemSection::describes`]).
    #[inline]
    unsafe fn owns_ram_in(&self, s: &MemSection, folio: &Folio) -> bool {
        let pfn = folio.pfn();
        // SAFETY: the caller's promise.
        let own = unsafe { s.folio(pfn) };
        core::ptr::eq(own, folio) && (s.present_pages == s.nr_pages || self.is_present(pfn))
    }

    /// The section whose array describes frame `pfn`.
    #[inline]
    fn section_of(&self, pfn: u64) -> Option<&MemSection> {
        // Below the first section the subtraction wraps to an index no root has (at most
        // `MAX_SECTION_SPAN` entries), so the root's bounds check refuses it; below a
        // section's first frame `pfn - start_pfn` wraps past `nr_pages` the same way. One
        // compare each instead of two, on every `pfn_to_folio` of the unmap and the free.
        let nr = (pfn >> PFN_SECTION_SHIFT).wrapping_sub(self.first_section);
        let idx = *self.root.get(nr as usize)?;
        let s = self.sections.get(idx as usize)?;
        s.describes(pfn).then_some(s)
    }

    /// Whether frame `pfn` is RAM (not a hole inside a described span).
    #[must_use]
    pub fn is_present(&self, pfn: u64) -> bool {
        let i = self.present.partition_point(|(_, r)| r.end <= pfn);
        self.present.get(i).is_some_and(|(_, r)| r.contains(pfn))
    }

    /// RAM with its node, sorted.
    #[must_use]
    pub fn present(&self) -> &[(u32, PfnRange)] {
        &self.present
    }

    /// The sections that have an array.
    pub fn sections(&self) -> impl Iterator<Item = &MemSection> {
        self.sections.iter()
    }

    /// Bytes of all arrays.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.sections().map(MemSection::bytes).sum()
    }

    /// Bytes of descriptors for frames inside `range` (holes in spans included).
    #[must_use]
    pub fn bytes_in(&self, range: PfnRange) -> u64 {
        self.sections()
            .filter_map(|s| s.span().intersect(&range))
            .map(|r| r.pages() * FOLIO_BYTES)
            .sum()
    }

    /// Bytes of arrays stored in `node`'s memory.
    #[must_use]
    pub fn bytes_on_node(&self, node: NodeId) -> u64 {
        self.sections()
            .filter(|s| s.node == node)
            .map(MemSection::bytes)
            .sum()
    }
}

/// A walk over frames that lie close together: it keeps the section it found last and
/// tries the next frame there first, one compare, before the root table's lookup.
///
/// Linux's `pfn_to_page` is an addition into the virtually contiguous vmemmap
/// (`CONFIG_SPARSEMEM_VMEMMAP`, x86_64's default); this memmap's arrays are per section,
/// so each [`Memmap::pfn_to_folio`] finds the section through the root table and checks
/// both indexes. The unmap (a PTE table's frames) and the batched free (a gather's folios)
/// look up hundreds of frames in a row, nearly always of one section: a cursor pays the
/// root table's lookup once per section change instead of once per frame.
#[derive(Debug)]
pub struct MemmapCursor<'a> {
    memmap: &'a Memmap,
    last: Option<&'a MemSection>,
}

impl<'a> MemmapCursor<'a> {
    /// The section describing `pfn`, the last one found if it does.
    #[inline]
    fn section(&mut self, pfn: u64) -> Option<&'a MemSection> {
        if let Some(s) = self.last
            && s.describes(pfn)
        {
            return Some(s);
        }
        let s = self.memmap.section_of(pfn)?;
        self.last = Some(s);
        Some(s)
    }

    /// [`Memmap::pfn_to_folio`].
    #[inline]
    #[must_use]
    pub fn pfn_to_folio(&mut self, pfn: u64) -> Option<&'static Folio> {
        // SAFETY: `section` returns only a section that describes `pfn`.
        Some(unsafe { self.section(pfn)?.folio(pfn) })
    }

    /// [`Memmap::owns_ram`].
    #[inline]
    #[must_use]
    pub fn owns_ram(&mut self, folio: &Folio) -> bool {
        self.section(folio.pfn())
            // SAFETY: `section` returns only a section that describes the frame.
            .is_some_and(|s| unsafe { self.memmap.owns_ram_in(s, folio) })
    }
}
