//! A zone: one node's frames of one kind, with its buddy lists behind `zone->lock`, its
//! free-page counter, watermarks and per-CPU page lists.
//!
//! Models `struct zone` (include/linux/mmzone.h) for the two zones a 64-bit machine without
//! ISA DMA needs: `ZONE_DMA32` for frames below 4 GiB and `ZONE_NORMAL` above
//! ([`zone_for_pfn`](crate::pfn::zone_for_pfn); Linux's 16 MiB `ZONE_DMA` and `ZONE_MOVABLE` stay empty). As in
//! Linux, `spanned` is the pfn range from the zone's first to its last frame, `present`
//! the frames of RAM in it, `managed` the frames the buddy allocator owns (what the
//! handover freed); the difference `present - managed` is reserved (kernel image, boot
//! structures, memmap, heap, page tables, stacks).
//!
//! `zone->lock` is a [`TicketLock`](ksync::TicketLock) of class
//! [`ZoneLock`](crate::lock_classes::ZoneLock): it guards the free lists and
//! `NR_FREE_PAGES` (`ZoneFree`, defined with the lists in [`crate::buddy`]), and its
//! statistics appear in every benchmark report. The lock, the lists and the free counter
//! share one 128-byte-aligned group, apart from the read-mostly fields, as Linux pads
//! `zone->lock` onto its own lines. The per-CPU lists ([`crate::pcp`]) sit below the zone:
//! the zone hands each operation its CPU's list and its `ZoneFree`.
//!
//! Watermarks are computed as `__setup_per_zone_wmarks()` does (the allocator itself does
//! not check them yet: with no reclaim a zone is used until empty); the per-CPU lists'
//! `high` is derived from the low watermark ([`crate::pcp`]).

use crate::buddy::ZoneFree;
use crate::memmap::Memmap;
use crate::numa::PfnRange;
use crate::pcp::{self, Pcp};
use crate::stats::PcpStats;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use ksync::{CachePadded, PerCpu};
use page::Folio;
use page::NodeId;
use page::Zone as ZoneType;

/// Linux's short zone names (`zone_names[]`).
#[must_use]
pub const fn zone_name(kind: ZoneType) -> &'static str {
    match kind {
        ZoneType::Dma => "DMA",
        ZoneType::Dma32 => "DMA32",
        ZoneType::Normal => "Normal",
        ZoneType::Movable => "Movable",
    }
}

/// The watermarks (`zone->_watermark[]`), in frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermarks {
    /// `WMARK_MIN`.
    pub min: u64,
    /// `WMARK_LOW`.
    pub low: u64,
    /// `WMARK_HIGH`.
    pub high: u64,
}

/// One zone of one node.
pub struct Zone {
    node: NodeId,
    kind: ZoneType,
    span: PfnRange,
    present: u64,
    managed: AtomicU64,
    watermark_min: AtomicU64,
    watermark_low: AtomicU64,
    watermark_high: AtomicU64,
    /// `zone->lock`, the free lists and `NR_FREE_PAGES`, on their own 128-byte pair.
    pub(crate) free: CachePadded<ZoneFree>,
    /// `zone->per_cpu_pageset`: one slot per CPU, each on its own pair.
    pub(crate) pcp: PerCpu<Pcp>,
}

impl core::fmt::Debug for Zone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zone")
            .field("node", &self.node)
            .field("kind", &zone_name(self.kind))
            .field("span", &self.span)
            .field("present", &self.present)
            .field("managed", &self.managed())
            .field("free", &self.nr_free())
            .finish_non_exhaustive()
    }
}

impl Zone {
    /// A zone of `node` spanning `span` with `present` frames of RAM, nothing managed yet,
    /// and per-CPU lists for `nr_cpus` CPUs.
    pub(crate) fn new(
        node: NodeId,
        kind: ZoneType,
        span: PfnRange,
        present: u64,
        nr_cpus: usize,
    ) -> Self {
        Zone {
            node,
            kind,
            span,
            present,
            managed: AtomicU64::new(0),
            watermark_min: AtomicU64::new(0),
            watermark_low: AtomicU64::new(0),
            watermark_high: AtomicU64::new(0),
            free: CachePadded(ZoneFree::new()),
            pcp: PerCpu::new(nr_cpus, |_| Pcp::new()),
        }
    }

    /// The node (`zone_to_nid()`).
    #[must_use]
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The zone type (`zone_idx()`).
    #[must_use]
    pub fn kind(&self) -> ZoneType {
        self.kind
    }

    /// `zone->name`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        zone_name(self.kind)
    }

    /// `[zone_start_pfn, zone_end_pfn)`: `spanned_pages` frames.
    #[must_use]
    pub fn span(&self) -> PfnRange {
        self.span
    }

    /// `present_pages`: frames of RAM in the span.
    #[must_use]
    pub fn present_pages(&self) -> u64 {
        self.present
    }

    /// `managed_pages`: frames the buddy allocator owns.
    #[must_use]
    pub fn managed(&self) -> u64 {
        self.managed.load(Relaxed)
    }

    /// Frames present but never given to the allocator.
    #[must_use]
    pub fn reserved(&self) -> u64 {
        self.present.saturating_sub(self.managed())
    }

    /// `NR_FREE_PAGES`: frames on the buddy lists.
    #[must_use]
    pub fn nr_free(&self) -> u64 {
        self.free.nr_free.load(Relaxed)
    }

    /// The watermarks.
    #[must_use]
    pub fn watermarks(&self) -> Watermarks {
        Watermarks {
            min: self.watermark_min.load(Relaxed),
            low: self.watermark_low.load(Relaxed),
            high: self.watermark_high.load(Relaxed),
        }
    }

    pub(crate) fn set_watermarks(&self, w: Watermarks) {
        self.watermark_min.store(w.min, Relaxed);
        self.watermark_low.store(w.low, Relaxed);
        self.watermark_high.store(w.high, Relaxed);
    }

    pub(crate) fn add_managed(&self, pages: u64) {
        self.managed.fetch_add(pages, Relaxed);
    }

    /// Frames on `cpu`'s list of this zone (takes its `pcp->lock`).
    #[must_use]
    pub fn pcp_count(&self, cpu: usize) -> Option<u32> {
        self.pcp.get(cpu).map(Pcp::count)
    }

    /// `(batch, high)` of `cpu`'s list of this zone (takes its `pcp->lock`).
    #[must_use]
    pub fn pcp_batch_high(&self, cpu: usize) -> Option<(u32, u32)> {
        self.pcp.get(cpu).map(Pcp::batch_high)
    }

    /// `cpu`'s counters for this zone.
    #[must_use]
    pub fn pcp_stats(&self, cpu: usize) -> Option<crate::stats::PageStats> {
        self.pcp.get(cpu).map(|p| p.stats.snapshot())
    }

    /// The per-CPU slot of `cpu`.
    pub(crate) fn pcp(&self, cpu: usize) -> Option<&Pcp> {
        self.pcp.get(cpu)
    }

    /// Frees a block straight to the buddy lists under `zone->lock`, counting it for `cpu`
    /// when given.
    pub(crate) fn free_block(
        &self,
        memmap: &Memmap,
        folio: &'static Folio,
        order: u32,
        stats: Option<&PcpStats>,
    ) {
        let mut area = self.free.area.lock();
        area.free_one(memmap, folio, order);
        self.add_free(1 << order);
        if let Some(s) = stats {
            s.buddy_free.add(1);
            s.buddy_free_pages.add(1 << order);
        }
        drop(area);
    }

    /// Allocates a block straight from the buddy lists under `zone->lock`
    /// (`rmqueue_buddy()`).
    pub(crate) fn rmqueue_buddy(
        &self,
        memmap: &Memmap,
        order: u32,
        stats: &PcpStats,
    ) -> Option<&'static Folio> {
        let mut area = self.free.area.lock();
        let folio = area.rmqueue_smallest(memmap, order)?;
        self.sub_free(1 << order);
        stats.buddy_alloc.add(1);
        stats.buddy_alloc_pages.add(1 << order);
        drop(area);
        Some(folio)
    }

    /// `NR_FREE_PAGES += n`; the caller holds `zone->lock`.
    pub(crate) fn add_free(&self, n: u64) {
        self.free.add_free(n);
    }

    /// `NR_FREE_PAGES -= n`; the caller holds `zone->lock`.
    pub(crate) fn sub_free(&self, n: u64) {
        self.free.sub_free(n);
    }

    /// Sets `batch` and `high` of every CPU's list in this zone
    /// (`zone_set_pageset_high_and_batch()`).
    pub(crate) fn set_high_and_batch(&self, batch: u32, high: u32) {
        for (_, pcp) in self.pcp.iter() {
            pcp.set_high_and_batch(batch, high);
        }
    }

    /// Allocates an order-0 frame from `pcp`, a CPU's list of this zone ([`Self::pcp`]),
    /// refilling it from the buddy lists when empty (`rmqueue_pcplist()`). `None` when the
    /// list and the zone are both empty.
    #[inline(always)]
    pub(crate) fn rmqueue_pcplist(&self, memmap: &Memmap, pcp: &Pcp) -> Option<&'static Folio> {
        pcp::rmqueue_pcplist(pcp, &self.free, memmap)
    }

    /// Frees an order-0 frame of this zone to `cpu`'s list (`free_unref_page()`); `false`
    /// when `cpu` has no slot (nothing was done).
    pub(crate) fn free_unref_page(
        &self,
        memmap: &Memmap,
        cpu: usize,
        folio: &'static Folio,
    ) -> bool {
        self.free_unref_folios(memmap, cpu, &[folio], |_| true) == Some(1)
    }

    /// Frees order-0 frames of this zone to `cpu`'s list under one hold of its
    /// `pcp->lock` ([`pcp::free_unref_folios`]); `None` when `cpu` has no slot.
    pub(crate) fn free_unref_folios(
        &self,
        memmap: &Memmap,
        cpu: usize,
        folios: &[&'static Folio],
        prepare: impl FnMut(&'static Folio) -> bool,
    ) -> Option<u32> {
        Some(pcp::free_unref_folios(
            self.pcp(cpu)?,
            &self.free,
            memmap,
            folios,
            prepare,
        ))
    }

    /// Empties `cpu`'s list of this zone into the buddy lists (`drain_pages_zone()`);
    /// callable from any CPU. Returns the frames moved.
    pub(crate) fn drain_pages_zone(&self, memmap: &Memmap, cpu: usize) -> u32 {
        self.pcp(cpu)
            .map_or(0, |pcp| pcp::drain_pages(pcp, &self.free, memmap))
    }
}
