//! Bringing the allocator up: the handover of free frames, then watermarks and per-CPU
//! list sizes.
//!
//! The handover is Linux's `memblock_free_all()`: every frame the boot allocator did not
//! hand out is freed into the buddy lists in the largest aligned blocks that fit
//! (`__free_pages_memory()`: `order = min(MAX_ORDER, __ffs(start))`, shrunk until the block
//! ends inside the range), each counted as managed (`__free_pages_core()`). A frame must be
//! reserved to be handed over — refcount one and `PageReserved`
//! ([`crate::memmap::PRIVATE_RESERVED`]), on no list — and the whole range is
//! checked before anything is freed, so a range that overlaps memory in use (or that was
//! handed over already) is refused as a whole instead of creating a frame that is both
//! free and in use.
//!
//! Then `init_per_zone_wmark_min()` (watermarks from `min_free_kbytes`) and
//! `setup_per_cpu_pageset()` (`batch`, `high`; formulas in [`crate::pcp`]).

use crate::MAX_ORDER;
use crate::buddy::{FreeArea, is_linked};
use crate::error::{HandoverError, InitError};
use crate::memmap::{Memmap, PRIVATE_RESERVED};
use crate::numa::{NumaTopology, PfnRange};
use crate::page_alloc::{PageAlloc, PcpConfig};
use crate::pcp::{zone_batchsize, zone_highsize};
use crate::pfn::zone_pfn_limits;
use crate::storage::MemmapStorage;
use crate::zone::Watermarks;
use crate::zonelist::ZONES_HIGH_TO_LOW;
use alloc::vec::Vec;
use page::FolioFlags;

/// `watermark_scale_factor`'s default (in 1/10000 of the zone).
const WATERMARK_SCALE_FACTOR: u64 = 10;

/// Integer square root (`int_sqrt()`, the same bit-by-bit method as lib/math/int_sqrt.c).
fn int_sqrt(mut x: u64) -> u64 {
    if x <= 1 {
        return x;
    }
    let mut m = 1u64 << ((63 - x.leading_zeros()) & !1);
    let mut y = 0;
    while m != 0 {
        let b = y + m;
        y >>= 1;
        if x >= b {
            x -= b;
            y += m;
        }
        m >>= 2;
    }
    y
}

impl PageAlloc {
    /// [`PageAlloc::new`], then every frame of `numa`'s memory handed over and the lists
    /// sized: the whole machine free, as host tests and the host benchmark want it.
    pub fn with_all_free(
        numa: NumaTopology,
        storage: &mut impl MemmapStorage,
        config: PcpConfig,
    ) -> Result<Self, InitError> {
        let pa = PageAlloc::new(numa, storage, config)?;
        for (_, r) in pa.memmap().present().to_vec() {
            pa.free_range(r)?;
        }
        pa.setup_pcp();
        Ok(pa)
    }

    /// Hands the reserved frames of `range` to the buddy allocator; returns how many.
    /// Refused as a whole (nothing freed) when a frame is not RAM or not reserved.
    pub fn free_range(&self, range: PfnRange) -> Result<u64, HandoverError> {
        if range.start >= range.end {
            return Err(HandoverError::Empty(range));
        }
        // Split by node (present ranges) and by zone, and check every frame first.
        let mut chunks: Vec<(u32, page::Zone, PfnRange)> = Vec::new();
        let mut covered = 0;
        for &(node, r) in self.memmap().present() {
            let Some(part) = r.intersect(&range) else {
                continue;
            };
            for kind in ZONES_HIGH_TO_LOW {
                if let Some(c) = part.intersect(&zone_pfn_limits(kind)) {
                    chunks.push((node, kind, c));
                    covered += c.pages();
                }
            }
        }
        if covered != range.pages() {
            let missing = (range.start..range.end)
                .find(|&p| !self.memmap().is_present(p))
                .unwrap_or(range.start);
            return Err(HandoverError::NotRam(missing));
        }
        for &(_, _, c) in &chunks {
            for pfn in c.start..c.end {
                let f = self.pfn_to_folio(pfn).ok_or(HandoverError::NotRam(pfn))?;
                if !Memmap::is_reserved(f) || f.test(FolioFlags::BUDDY) || is_linked(f) {
                    return Err(HandoverError::NotReserved(pfn));
                }
            }
        }
        let mut freed = 0;
        for (node, kind, c) in chunks {
            let zone = self
                .zone(node, kind)
                .ok_or(HandoverError::NotRam(c.start))?;
            let mut area = zone.free.area.lock();
            let mut start = c.start;
            while start < c.end {
                let mut order = start.trailing_zeros().min(MAX_ORDER);
                while start + (1 << order) > c.end {
                    order -= 1;
                }
                let block = PfnRange::new(start, start + (1 << order));
                self.freeze_block(block)?;
                let head = self
                    .pfn_to_folio(start)
                    .ok_or(HandoverError::NotRam(start))?;
                FreeArea::free_one(&mut area, self.memmap(), head, order);
                zone.add_free(block.pages());
                start = block.end;
            }
            drop(area);
            zone.add_managed(c.pages());
            freed += c.pages();
        }
        Ok(freed)
    }

    /// Drops the reserved reference of every frame of `block` (`__free_pages_core()`
    /// sets their counts to zero), all or none.
    fn freeze_block(&self, block: PfnRange) -> Result<(), HandoverError> {
        for pfn in block.start..block.end {
            let ok = self
                .pfn_to_folio(pfn)
                .is_some_and(|f| f.private() == PRIVATE_RESERVED && f.ref_freeze(1));
            if !ok {
                for undo in block.start..pfn {
                    if let Some(f) = self.pfn_to_folio(undo) {
                        f.ref_unfreeze(1);
                    }
                }
                return Err(HandoverError::NotReserved(pfn));
            }
        }
        for pfn in block.start..block.end {
            if let Some(f) = self.pfn_to_folio(pfn) {
                f.set_private(0);
            }
        }
        Ok(())
    }

    /// Computes every zone's watermarks and sets its per-CPU lists' `batch` and `high`
    /// from its managed size (or the overrides). Call after the handover; calling again
    /// recomputes (`zone_pcp_update()`).
    pub fn setup_pcp(&self) {
        let lowmem_pages: u64 = self.zones().map(|z| z.managed()).sum();
        let min_free_kbytes = int_sqrt(lowmem_pages * 4 * 16).clamp(128, 262_144);
        let pages_min = min_free_kbytes >> 2;
        let nr_cpus = self.nr_cpus();
        for zone in self.zones() {
            let managed = zone.managed();
            let min = (pages_min * managed).checked_div(lowmem_pages).unwrap_or(0);
            let tmp = (min >> 2).max(managed * WATERMARK_SCALE_FACTOR / 10_000);
            let w = Watermarks {
                min,
                low: min + tmp,
                high: min + 2 * tmp,
            };
            zone.set_watermarks(w);
            let cfg = self.config();
            let batch = cfg.batch.unwrap_or_else(|| zone_batchsize(managed)).max(1);
            let local = self.numa().node(zone.node()).map_or(0, |n| n.cpus().len());
            let split = if local == 0 { nr_cpus } else { local };
            let high = cfg
                .high
                .unwrap_or_else(|| zone_highsize(w.low, batch, split));
            zone.set_high_and_batch(batch, high);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_sqrt_is_floor() {
        for x in [0u64, 1, 2, 3, 4, 15, 16, 17, 1 << 40, u32::MAX as u64] {
            let r = int_sqrt(x);
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}: {r}");
        }
    }
}
