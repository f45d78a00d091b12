//! Page frames: their size, their numbers, and the frames each zone type may hold.
//!
//! The bottom of the physical memory layer: everything above (the memmap, the buddy
//! lists, the per-CPU lists, the zones, the page tables) speaks in frames of
//! [`PAGE_SIZE`] bytes named by their page frame number, and this module depends on
//! nothing of them (only [`PfnRange`], a plain pair of numbers, and `lru`'s zone type), so
//! a reader can follow the layers from here up: `pfn` < `memmap` < `buddy` < `pcp` <
//! `zone` < `page_alloc`.
//!
//! [`Pfn`] is a frame number as a type of its own (Linux passes `unsigned long pfn` and
//! relies on names): what crosses the platform boundary of the fault core (the layer
//! above: `mm`'s `pgtable::Mmu`) is a `Pfn`, a `VirtAddr` or a `Pte`, so one cannot be
//! passed where another is meant. The
//! allocator's internals and `lru`'s [`Folio::pfn`] still carry the plain number; the
//! conversions are explicit ([`Pfn::new`], [`Pfn::of`], [`Pfn::as_u64`]).
//!
//! Zones: a 64-bit machine without ISA DMA needs two, `ZONE_DMA32` for frames below 4 GiB
//! and `ZONE_NORMAL` above ([`zone_for_pfn`]); Linux's 16 MiB `ZONE_DMA` and
//! `ZONE_MOVABLE` stay empty ([`zone_pfn_limits`]).

use crate::numa::PfnRange;
use page::Folio;
use page::Zone as ZoneType;

/// log2 of the frame size.
pub const PAGE_SHIFT: u32 = 12;
/// Frame size in bytes.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;

/// A page frame number: physical address `>> PAGE_SHIFT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Pfn(u64);

impl Pfn {
    /// Frame number `pfn`.
    #[must_use]
    pub const fn new(pfn: u64) -> Self {
        Pfn(pfn)
    }

    /// The frame `folio` describes (`folio_pfn()`).
    #[must_use]
    pub fn of(folio: &Folio) -> Self {
        Pfn(folio.pfn())
    }

    /// The number.
    #[must_use]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The frame's physical address (`PFN_PHYS()`).
    #[must_use]
    pub const fn phys_addr(self) -> u64 {
        self.0 << PAGE_SHIFT
    }
}

impl core::fmt::LowerHex for Pfn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::LowerHex::fmt(&self.0, f)
    }
}

/// First frame above `ZONE_DMA32` (4 GiB).
pub const DMA32_END_PFN: u64 = 1 << (32 - PAGE_SHIFT);

/// The zone a frame belongs to: `ZONE_DMA32` below 4 GiB, `ZONE_NORMAL` above.
#[must_use]
pub const fn zone_for_pfn(pfn: u64) -> ZoneType {
    if pfn < DMA32_END_PFN {
        ZoneType::Dma32
    } else {
        ZoneType::Normal
    }
}

/// The frames a zone type may hold.
#[must_use]
pub const fn zone_pfn_limits(kind: ZoneType) -> PfnRange {
    match kind {
        ZoneType::Dma => PfnRange::new(0, 0),
        ZoneType::Dma32 => PfnRange::new(0, DMA32_END_PFN),
        ZoneType::Normal => PfnRange::new(DMA32_END_PFN, page::folio::MAX_PFN),
        ZoneType::Movable => PfnRange::new(0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_split_at_4_gib() {
        assert_eq!(zone_for_pfn(DMA32_END_PFN - 1), ZoneType::Dma32);
        assert_eq!(zone_for_pfn(DMA32_END_PFN), ZoneType::Normal);
        assert_eq!(Pfn::new(DMA32_END_PFN).phys_addr(), 4 << 30);
        for pfn in [
            0,
            DMA32_END_PFN - 1,
            DMA32_END_PFN,
            page::folio::MAX_PFN - 1,
        ] {
            assert!(zone_pfn_limits(zone_for_pfn(pfn)).contains(pfn));
        }
    }
}
