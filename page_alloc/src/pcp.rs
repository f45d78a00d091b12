//! Per-CPU page lists in front of order 0 (`struct per_cpu_pages`).
//!
//! Models the pcp machinery of mm/page_alloc.c as Linux 5.19 to 6.6 has it (the
//! `pcp->lock` spinlock since 5.19, `high` from the low watermark and the adaptive spill
//! size since 5.14), for order 0: each CPU keeps, per zone, a list of free frames that it
//! allocates from and frees to without `zone->lock`. When the list is empty, `batch` frames are taken from the buddy
//! lists in one `zone->lock` section (`rmqueue_bulk()`); when a free brings `count` to
//! `high`, frames go back from the cold end in one section (`free_pcppages_bulk()`). Hot
//! frames are at the head: a free pushes to the head, an allocation pops from the head, a
//! refill appends at the tail and a spill takes from the tail.
//!
//! A free from any CPU goes to the *freeing* CPU's list of the frame's zone
//! (`free_unref_page()`). Exclusive access to a list is by its `pcp->lock`
//! ([`PcpLock`], a ticket lock, as Linux since 5.19): its own CPU takes it uncontended on
//! every operation, a drainer on another CPU takes it to empty the list remotely
//! (`drain_pages_zone()`), which is how `drain_all_pages()` works without an IPI.
//!
//! # `batch` and `high`
//!
//! `zone_batchsize()`: `batch = min(managed >> 10, 1 MiB / PAGE_SIZE) / 4`, at least 1,
//! then `batch = rounddown_pow_of_two(batch + batch / 2) - 1` (a 2^n - 1 value: a power of
//! two was found to alias badly in caches). About 0.1% of the zone, at most 63 frames.
//!
//! `zone_highsize()`: `high = low_wmark / nr_split_cpus`, at least `4 * batch`, where
//! `nr_split_cpus` is the number of CPUs on the zone's node (all CPUs for a node without
//! CPUs), so that full lists on every CPU of the node do not push the zone below its low
//! watermark. The low watermark comes from `__setup_per_zone_wmarks()`:
//! `min_free_kbytes = clamp(int_sqrt(lowmem_kbytes * 16), 128, 262144)`; the zone's
//! `min = pages_min * managed / lowmem_pages`; `low = min + max(min / 4,
//! managed * watermark_scale_factor / 10000)` with `watermark_scale_factor = 10`.
//! (Linux 6.7 made `high` self-tuning between a min and a max; this is the static value
//! before that.) `pcp_batch=` and `pcp_high=` on the command line override both.
//!
//! How much goes back when `count` reaches `high` (`nr_pcp_free()`): `batch <<
//! free_factor`, clamped to `[batch, high - batch]`, where `free_factor` grows by one per
//! spill without an allocation in between and halves on every allocation; everything but
//! one frame when `high < batch` (a list that barely caches).
//!
//! Unsafe code here, and why: the per-CPU page lists are intrusive `folio_list()`s (Linux's
//! `pcp->lists` on `page->pcp_list`), changed only under `pcp->lock`.
#![allow(unsafe_code)]

use crate::buddy::{FreeArea, ZoneFree};
use crate::lock_classes::PcpLock;
use crate::memmap::Memmap;
use crate::stats::PcpStats;
use ksync::SpinMutex;
use page::Folio;
use page::list::{FolioList, folio_list};

/// One CPU's list for one zone, under `pcp->lock`.
#[derive(Debug)]
pub struct PerCpuPages {
    /// Frames on the list.
    pub(crate) count: u32,
    /// Spill when `count` reaches this.
    pub(crate) high: u32,
    /// Frames per refill and the unit of a spill.
    pub(crate) batch: u32,
    /// Spills since the last allocation, as a shift of `batch` (`pcp->free_factor`).
    pub(crate) free_factor: u8,
    /// The frames, hot at the head.
    pub(crate) list: FolioList,
}

/// A CPU's slot in a zone: the list behind `pcp->lock`, and its counters.
#[derive(Debug)]
pub struct Pcp {
    pub(crate) pages: SpinMutex<PcpLock, PerCpuPages>,
    pub(crate) stats: PcpStats,
}

impl Pcp {
    pub(crate) fn new() -> Self {
        Pcp {
            // Linux's boot pageset: no caching until the zone's values are known.
            pages: SpinMutex::new(PerCpuPages {
                count: 0,
                high: 0,
                batch: 1,
                free_factor: 0,
                // SAFETY: the list changes only under `pcp->lock`; a frame is put on it only
                // by the thread that freed it (its last reference dropped) or that took it
                // off the buddy lists under `zone->lock` (`rmqueue_bulk`), so no two
                // threads insert one frame at once.
                list: unsafe { folio_list() },
            }),
            stats: PcpStats::default(),
        }
    }

    /// Frames on the list (takes `pcp->lock`).
    #[must_use]
    pub fn count(&self) -> u32 {
        self.pages.lock().count
    }

    /// `(batch, high)` (takes `pcp->lock`).
    #[must_use]
    pub fn batch_high(&self) -> (u32, u32) {
        let p = self.pages.lock();
        (p.batch, p.high)
    }

    /// Sets `batch` (at least 1) and `high` (`pageset_update()`).
    pub(crate) fn set_high_and_batch(&self, batch: u32, high: u32) {
        let mut p = self.pages.lock();
        p.batch = batch.max(1);
        p.high = high;
    }
}

/// `zone_batchsize()` for a zone of `managed` frames.
#[must_use]
pub fn zone_batchsize(managed: u64) -> u32 {
    let mut batch = (managed >> 10).min((1 << 20) / crate::pfn::PAGE_SIZE);
    batch /= 4;
    // `if (batch < 1) batch = 1;`
    batch = batch.max(1);
    let x = batch + batch / 2;
    let pow = 1u64 << (63 - x.leading_zeros());
    (pow - 1).max(1) as u32
}

/// `zone_highsize()`: the low watermark split over the node's CPUs, at least `4 * batch`.
#[must_use]
pub fn zone_highsize(low_wmark: u64, batch: u32, nr_split_cpus: usize) -> u32 {
    let high = low_wmark / nr_split_cpus.max(1) as u64;
    high.max(u64::from(batch) << 2).min(u64::from(u32::MAX)) as u32
}

/// `nr_pcp_free()`: how many frames a spill gives back.
fn nr_pcp_free(p: &mut PerCpuPages) -> u32 {
    let (high, batch) = (p.high, p.batch);
    if high < batch {
        return 1;
    }
    let min_nr_free = batch;
    let max_nr_free = high - batch;
    let scaled = u64::from(batch) << p.free_factor;
    if scaled < u64::from(max_nr_free) {
        p.free_factor = p.free_factor.saturating_add(1);
    }
    (scaled.min(u64::from(max_nr_free)) as u32).max(min_nr_free)
}

/// Moves up to `count` frames from the buddy lists to the tail of `list`
/// (`rmqueue_bulk()`); returns how many. Takes `zone->lock` once.
fn rmqueue_bulk(zone: &ZoneFree, memmap: &Memmap, count: u32, list: &mut FolioList) -> u32 {
    let mut area = zone.area.lock();
    let mut got = 0;
    while got < count {
        let Some(folio) = area.rmqueue_smallest(memmap, 0) else {
            break;
        };
        list.push_back(folio);
        got += 1;
    }
    zone.sub_free(u64::from(got));
    drop(area);
    got
}

/// Gives `count` frames from the cold end of the list back to the buddy lists
/// (`free_pcppages_bulk()`); returns how many went. Takes `zone->lock` once.
fn free_pcppages_bulk(zone: &ZoneFree, memmap: &Memmap, count: u32, p: &mut PerCpuPages) -> u32 {
    let count = count.min(p.count);
    if count == 0 {
        return 0;
    }
    let mut area = zone.area.lock();
    let mut freed = 0;
    while freed < count {
        let Some(folio) = p.list.pop_back() else {
            break;
        };
        FreeArea::free_one(&mut area, memmap, folio, 0);
        freed += 1;
    }
    p.count -= freed;
    zone.add_free(u64::from(freed));
    drop(area);
    freed
}

/// Allocates an order-0 frame from the list `pcp` of the zone whose buddy lists are
/// `zone`, refilling it from them when empty (`rmqueue_pcplist()` /
/// `__rmqueue_pcplist()`). `None` when the list and the zone are both empty.
#[inline(always)]
pub(crate) fn rmqueue_pcplist(
    pcp: &Pcp,
    zone: &ZoneFree,
    memmap: &Memmap,
) -> Option<&'static Folio> {
    let mut p = pcp.pages.lock();
    p.free_factor >>= 1;
    if p.list.is_empty() {
        let batch = p.batch;
        let got = rmqueue_bulk(zone, memmap, batch, &mut p.list);
        p.count += got;
        pcp.stats.refill.add(1);
        pcp.stats.refill_pages.add(u64::from(got));
    }
    let folio = p.list.pop_front()?;
    p.count -= 1;
    pcp.stats.alloc.add(1);
    drop(p);
    Some(folio)
}

/// Frees the order-0 frames of `folios` (all of the zone whose buddy lists are `zone`)
/// to the list `pcp` under one hold of its `pcp->lock` (`free_unref_folios()`, whose loop
/// keeps the lock while the zone stays the same; `free_unref_page_commit()` for one),
/// spilling to the buddy lists whenever the list reaches `high`. `prepare` is run on each
/// frame under the lock and says whether it may be freed (a frame it refuses is left
/// alone). Returns how many were freed.
pub(crate) fn free_unref_folios(
    pcp: &Pcp,
    zone: &ZoneFree,
    memmap: &Memmap,
    folios: &[&'static Folio],
    mut prepare: impl FnMut(&'static Folio) -> bool,
) -> u32 {
    let mut p = pcp.pages.lock();
    pcp.stats.free_rounds.add(1);
    let mut n = 0;
    for &folio in folios {
        if !prepare(folio) {
            continue;
        }
        p.list.push_front(folio);
        p.count += 1;
        n += 1;
        pcp.stats.free.add(1);
        if p.count >= p.high {
            let nr = nr_pcp_free(&mut p);
            let freed = free_pcppages_bulk(zone, memmap, nr, &mut p);
            pcp.stats.spill.add(1);
            pcp.stats.spill_pages.add(u64::from(freed));
        }
    }
    drop(p);
    n
}

/// Empties the list `pcp` into the buddy lists `zone` (`drain_pages_zone()`); callable
/// from any CPU. Returns the frames moved.
pub(crate) fn drain_pages(pcp: &Pcp, zone: &ZoneFree, memmap: &Memmap) -> u32 {
    let mut p = pcp.pages.lock();
    let count = p.count;
    if count == 0 {
        return 0;
    }
    let freed = free_pcppages_bulk(zone, memmap, count, &mut p);
    pcp.stats.drain.add(1);
    pcp.stats.drain_pages.add(u64::from(freed));
    drop(p);
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formulas against figures worked out by hand from Linux's definitions.
    #[test]
    fn batch_and_high_follow_linux() {
        // 1 GiB zone: min(262144 >> 10, 256) / 4 = 64 -> rounddown_pow2(96) - 1 = 63.
        assert_eq!(zone_batchsize(262_144), 63);
        // 256 MiB: 64 / 4 = 16 -> rounddown_pow2(24) - 1 = 15.
        assert_eq!(zone_batchsize(65_536), 15);
        // 47 000 frames: 45 / 4 = 11 -> rounddown_pow2(16) - 1 = 15.
        assert_eq!(zone_batchsize(47_000), 15);
        // Tiny zones: at least 1 -> rounddown_pow2(1) - 1 = 0 -> kept at 1.
        assert_eq!(zone_batchsize(100), 1);
        assert_eq!(zone_batchsize(4096), 1);
        // Huge zones are capped at 1 MiB worth: 256 / 4 = 64 -> 63.
        assert_eq!(zone_batchsize(1 << 30), 63);
        assert_eq!(zone_highsize(1000, 15, 2), 500);
        assert_eq!(zone_highsize(100, 15, 2), 60, "at least 4 * batch");
        assert_eq!(
            zone_highsize(1000, 15, 0),
            1000,
            "a CPU-less node splits by 1"
        );
    }

    #[test]
    fn spill_size_grows_and_is_clamped() {
        let mut p = PerCpuPages {
            count: 0,
            high: 100,
            batch: 10,
            free_factor: 0,
            // SAFETY: nothing is ever inserted into this test's list.
            list: unsafe { folio_list() },
        };
        assert_eq!(nr_pcp_free(&mut p), 10);
        assert_eq!(nr_pcp_free(&mut p), 20);
        assert_eq!(nr_pcp_free(&mut p), 40);
        assert_eq!(nr_pcp_free(&mut p), 80);
        assert_eq!(nr_pcp_free(&mut p), 90, "at most high - batch");
        p.high = 5;
        assert_eq!(nr_pcp_free(&mut p), 1, "high below batch frees one");
        p.high = 10;
        assert_eq!(
            nr_pcp_free(&mut p),
            10,
            "high == batch still leaves batch on the list"
        );
    }

    /// The factor stops growing once the spill reaches its clamp, so the halving an
    /// allocation does (`rmqueue_pcplist`) brings the next spill straight back to `batch`.
    #[test]
    fn spill_factor_stops_at_the_clamp() {
        let mut p = PerCpuPages {
            count: 0,
            high: 30,
            batch: 10,
            free_factor: 0,
            // SAFETY: nothing is ever inserted into this test's list.
            list: unsafe { folio_list() },
        };
        assert_eq!(nr_pcp_free(&mut p), 10);
        assert_eq!(nr_pcp_free(&mut p), 20, "batch << 1 == high - batch");
        assert_eq!(nr_pcp_free(&mut p), 20);
        p.free_factor >>= 1;
        assert_eq!(nr_pcp_free(&mut p), 10, "one allocation halved the factor");
    }
}
