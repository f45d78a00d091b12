//! Page allocator counters: per zone per CPU, summed when read.
//!
//! Models Linux's `vm_event_states` counters that the page allocator bumps (`PGALLOC`,
//! `PGFREE`) and the pcp bookkeeping `/proc/zoneinfo` shows, reduced to what the issue's
//! experiments read: order-0 allocations and frees through the per-CPU lists, refills
//! (`rmqueue_bulk()` calls) and spills (`free_pcppages_bulk()` because `count` reached
//! `high`) with their page counts, drains, and allocations and frees that went straight to
//! the buddy lists. `NR_FREE_PAGES` itself is a zone counter ([`crate::zone::Zone`]).
//!
//! Every field has exactly one lock that guards its updates — `pcp->lock` of its
//! (zone, CPU) for the list counters, `zone->lock` for the buddy ones — so an update is a
//! relaxed load and store (no locked instruction on the hot path) and the counts are exact;
//! readers load without locks and see exact figures once the allocator is quiet.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One counter whose every update happens under one lock.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. The caller holds the lock that guards this counter.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }

    /// The value.
    #[inline]
    #[must_use]
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// One CPU's counters for one zone; lives in that CPU's pcp slot of the zone.
#[derive(Debug, Default)]
pub struct PcpStats {
    /// Order-0 allocations served by the list (under `pcp->lock`).
    pub(crate) alloc: Counter,
    /// Order-0 frees onto the list (under `pcp->lock`).
    pub(crate) free: Counter,
    /// `pcp->lock` acquisitions by frees: one per page freed alone, one per run of a
    /// batch (`free_unref_folios()`) (under `pcp->lock`).
    pub(crate) free_rounds: Counter,
    /// `rmqueue_bulk()` calls: the list was empty (under `pcp->lock`).
    pub(crate) refill: Counter,
    /// Pages those refills moved from the buddy lists (under `pcp->lock`).
    pub(crate) refill_pages: Counter,
    /// `free_pcppages_bulk()` calls because `count` reached `high` (under `pcp->lock`).
    pub(crate) spill: Counter,
    /// Pages those spills gave back (under `pcp->lock`).
    pub(crate) spill_pages: Counter,
    /// Drains that found pages on the list (under `pcp->lock`).
    pub(crate) drain: Counter,
    /// Pages drains gave back (under `pcp->lock`).
    pub(crate) drain_pages: Counter,
    /// Blocks allocated straight from the buddy lists (under `zone->lock`).
    pub(crate) buddy_alloc: Counter,
    /// Pages in those blocks (under `zone->lock`).
    pub(crate) buddy_alloc_pages: Counter,
    /// Blocks freed straight to the buddy lists (under `zone->lock`).
    pub(crate) buddy_free: Counter,
    /// Pages in those blocks (under `zone->lock`).
    pub(crate) buddy_free_pages: Counter,
}

impl PcpStats {
    /// The counters as plain numbers.
    #[must_use]
    pub fn snapshot(&self) -> PageStats {
        PageStats {
            alloc: self.alloc.get(),
            free: self.free.get(),
            free_rounds: self.free_rounds.get(),
            refill: self.refill.get(),
            refill_pages: self.refill_pages.get(),
            spill: self.spill.get(),
            spill_pages: self.spill_pages.get(),
            drain: self.drain.get(),
            drain_pages: self.drain_pages.get(),
            buddy_alloc: self.buddy_alloc.get(),
            buddy_alloc_pages: self.buddy_alloc_pages.get(),
            buddy_free: self.buddy_free.get(),
            buddy_free_pages: self.buddy_free_pages.get(),
            alloc_fail: 0,
        }
    }
}

/// A snapshot of page allocator counters (one CPU and zone, or any sum of them).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PageStats {
    /// Order-0 allocations served by a per-CPU list.
    pub alloc: u64,
    /// Order-0 frees onto a per-CPU list.
    pub free: u64,
    /// `pcp->lock` rounds those frees took (one per page freed alone, one per run of a
    /// batch freed together).
    pub free_rounds: u64,
    /// Per-CPU list refills (`rmqueue_bulk()` calls).
    pub refill: u64,
    /// Pages moved to per-CPU lists by refills.
    pub refill_pages: u64,
    /// Per-CPU list spills (`count` reached `high`).
    pub spill: u64,
    /// Pages given back by spills.
    pub spill_pages: u64,
    /// Drains that found pages.
    pub drain: u64,
    /// Pages given back by drains.
    pub drain_pages: u64,
    /// Blocks allocated straight from the buddy lists.
    pub buddy_alloc: u64,
    /// Pages in them.
    pub buddy_alloc_pages: u64,
    /// Blocks freed straight to the buddy lists.
    pub buddy_free: u64,
    /// Pages in them.
    pub buddy_free_pages: u64,
    /// Allocations that found no memory in any zone of the zonelist.
    pub alloc_fail: u64,
}

impl PageStats {
    /// Adds another snapshot.
    pub fn add(&mut self, o: &PageStats) {
        self.alloc += o.alloc;
        self.free += o.free;
        self.free_rounds += o.free_rounds;
        self.refill += o.refill;
        self.refill_pages += o.refill_pages;
        self.spill += o.spill;
        self.spill_pages += o.spill_pages;
        self.drain += o.drain;
        self.drain_pages += o.drain_pages;
        self.buddy_alloc += o.buddy_alloc;
        self.buddy_alloc_pages += o.buddy_alloc_pages;
        self.buddy_free += o.buddy_free;
        self.buddy_free_pages += o.buddy_free_pages;
        self.alloc_fail += o.alloc_fail;
    }

    /// The change from `earlier` to `self`.
    #[must_use]
    pub fn since(&self, e: &PageStats) -> PageStats {
        PageStats {
            alloc: self.alloc.wrapping_sub(e.alloc),
            free: self.free.wrapping_sub(e.free),
            free_rounds: self.free_rounds.wrapping_sub(e.free_rounds),
            refill: self.refill.wrapping_sub(e.refill),
            refill_pages: self.refill_pages.wrapping_sub(e.refill_pages),
            spill: self.spill.wrapping_sub(e.spill),
            spill_pages: self.spill_pages.wrapping_sub(e.spill_pages),
            drain: self.drain.wrapping_sub(e.drain),
            drain_pages: self.drain_pages.wrapping_sub(e.drain_pages),
            buddy_alloc: self.buddy_alloc.wrapping_sub(e.buddy_alloc),
            buddy_alloc_pages: self.buddy_alloc_pages.wrapping_sub(e.buddy_alloc_pages),
            buddy_free: self.buddy_free.wrapping_sub(e.buddy_free),
            buddy_free_pages: self.buddy_free_pages.wrapping_sub(e.buddy_free_pages),
            alloc_fail: self.alloc_fail.wrapping_sub(e.alloc_fail),
        }
    }

    /// `zone->lock` acquisitions these operations made: one per refill, spill, drain
    /// and buddy allocation or free.
    #[must_use]
    pub fn zone_lock_ops(&self) -> u64 {
        self.refill + self.spill + self.drain + self.buddy_alloc + self.buddy_free
    }

    /// Pages now sitting on per-CPU lists because of these operations (refilled and
    /// freed onto the lists minus allocated from them and given back).
    #[must_use]
    pub fn pcp_pages(&self) -> i64 {
        (self.refill_pages + self.free) as i64
            - (self.alloc + self.spill_pages + self.drain_pages) as i64
    }
}

impl fmt::Display for PageStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pcp alloc={} free={} refill={}/{}p spill={}/{}p drain={}/{}p; buddy alloc={}/{}p \
             free={}/{}p; failed={}",
            self.alloc,
            self.free,
            self.refill,
            self.refill_pages,
            self.spill,
            self.spill_pages,
            self.drain,
            self.drain_pages,
            self.buddy_alloc,
            self.buddy_alloc_pages,
            self.buddy_free,
            self.buddy_free_pages,
            self.alloc_fail
        )
    }
}
