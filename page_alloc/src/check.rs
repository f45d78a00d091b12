//! The invariant checker: walks every free list and per-CPU list and proves the
//! allocator's bookkeeping against the memmap.
//!
//! What Linux checks piecemeal under `CONFIG_DEBUG_VM` (`__free_one_page()`'s
//! `VM_BUG_ON_PAGE`s, `check_new_page()`, `page_expected_state()`), done all at once for
//! tests: each buddy list entry is `PageBuddy` with its list's order in `private`, aligned,
//! inside its zone and made of RAM, every frame of a free block unreferenced; the per-order
//! and zone counters match the lists; per-CPU list entries are unreferenced, not
//! `PageBuddy`, of the right zone, and counted; and no frame is on two lists or in two
//! blocks. It takes every lock in turn, so its answer is exact only while nothing
//! allocates or frees.

use crate::buddy::NR_PAGE_ORDERS;
use crate::error::CheckError;
use crate::page_alloc::PageAlloc;
use crate::pfn::zone_for_pfn;
use crate::zone::Zone;
use alloc::vec::Vec;
use page::{Folio, FolioFlags};

/// What [`PageAlloc::check`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Frames on buddy lists.
    pub free_pages: u64,
    /// Blocks on buddy lists.
    pub blocks: u64,
    /// Frames on per-CPU lists.
    pub pcp_pages: u64,
}

fn bad(pfn: u64, what: &'static str) -> CheckError {
    CheckError { pfn, what }
}

fn in_zone(zone: &Zone, f: &Folio) -> bool {
    f.node() == zone.node() && f.zone() == zone.kind() && zone_for_pfn(f.pfn()) == zone.kind()
}

impl PageAlloc {
    /// Every free block of `zone` as `(pfn, order)`, sorted by pfn (takes `zone->lock`).
    #[must_use]
    pub fn free_blocks(&self, zone: &Zone) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = zone.free.area.lock().blocks().collect();
        v.sort_unstable();
        v
    }

    /// Checks every list against the memmap; see the module documentation.
    pub fn check(&self) -> Result<Census, CheckError> {
        let mut census = Census::default();
        // Every free frame as a half-open interval, to find overlaps at the end.
        let mut intervals: Vec<(u64, u64)> = Vec::new();
        for zone in self.zones() {
            let area = zone.free.area.lock();
            let mut per_order = [0u64; NR_PAGE_ORDERS];
            let mut zone_free = 0;
            for (pfn, order) in area.blocks() {
                let head = self
                    .pfn_to_folio(pfn)
                    .ok_or(bad(pfn, "free block outside the memmap"))?;
                if !head.test(FolioFlags::BUDDY) {
                    return Err(bad(pfn, "free block without PageBuddy"));
                }
                if head.private() != order {
                    return Err(bad(pfn, "free block's order differs from its list"));
                }
                if pfn & ((1 << order) - 1) != 0 {
                    return Err(bad(pfn, "free block not aligned to its order"));
                }
                for p in pfn..pfn + (1 << order) {
                    let f = self
                        .pfn_to_folio(p)
                        .ok_or(bad(p, "free block frame outside the memmap"))?;
                    if !self.memmap().is_present(p) {
                        return Err(bad(p, "free block frame is not RAM"));
                    }
                    if !in_zone(zone, f) {
                        return Err(bad(p, "free block frame in another zone"));
                    }
                    if f.refcount() != 0 {
                        return Err(bad(p, "free frame is referenced"));
                    }
                    if f.mapcount() != 0 {
                        return Err(bad(p, "free frame is mapped"));
                    }
                    if p != pfn && f.test(FolioFlags::BUDDY) {
                        return Err(bad(p, "PageBuddy inside a free block"));
                    }
                }
                per_order[order as usize] += 1;
                zone_free += 1 << order;
                census.blocks += 1;
                intervals.push((pfn, pfn + (1 << order)));
            }
            for (o, &n) in per_order.iter().enumerate() {
                if area.nr_free(o as u32) != n {
                    return Err(bad(zone.span().start, "nr_free differs from the list"));
                }
            }
            if zone.nr_free() != zone_free {
                return Err(bad(
                    zone.span().start,
                    "NR_FREE_PAGES differs from the lists",
                ));
            }
            census.free_pages += zone_free;
            drop(area);
            for (_, pcp) in zone.pcp.iter() {
                let p = pcp.pages.lock();
                let mut n = 0;
                for f in p.list.iter() {
                    let pfn = f.pfn();
                    if !in_zone(zone, f) || !self.memmap().owns(f) {
                        return Err(bad(pfn, "per-CPU list frame of another zone"));
                    }
                    if f.refcount() != 0 {
                        return Err(bad(pfn, "per-CPU list frame is referenced"));
                    }
                    if f.mapcount() != 0 {
                        return Err(bad(pfn, "per-CPU list frame is mapped"));
                    }
                    if f.test(FolioFlags::BUDDY) {
                        return Err(bad(pfn, "PageBuddy on a per-CPU list"));
                    }
                    intervals.push((pfn, pfn + 1));
                    n += 1;
                }
                if n != p.count {
                    return Err(bad(zone.span().start, "pcp count differs from its list"));
                }
                census.pcp_pages += u64::from(n);
            }
        }
        intervals.sort_unstable();
        for w in intervals.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(bad(w[1].0, "frame on two free lists"));
            }
        }
        Ok(census)
    }
}
