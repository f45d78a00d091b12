//! The page allocator: nodes of zones, the zonelists, and the calls every CPU makes.
//!
//! Models the entry points of mm/page_alloc.c: `alloc_pages_node()` walks the preferred
//! node's zonelist (`get_page_from_freelist()`) and takes order-0 frames from the calling
//! CPU's list of each zone (`rmqueue_pcplist()`), larger blocks from the zone's buddy
//! lists (`rmqueue_buddy()`); `__free_pages()` drops a reference and, on the last one,
//! checks the frame (`free_pages_prepare()`) and gives it to the freeing CPU's list
//! (order 0) or the buddy lists; `drain_local_pages()` / `drain_all_pages()` empty the
//! per-CPU lists. An allocation that finds every zone empty drains all per-CPU lists and
//! tries once more before it fails, as Linux's slow path does. An allocation leaves the frame with a reference count of one
//! (`set_page_refcounted()`); the frame's contents are the caller's business (the fault
//! path zeroes).
//!
//! The CPU is an argument of every call, as in `lru` and `memcg`: the kernel passes the
//! running CPU, host threads the CPU they stand for. Nothing here waits except on a
//! `zone->lock` or a `pcp->lock`, and running out of memory is `None`, never a panic.
//!
//! Construction: [`PageAlloc::new`] builds the memmap (every frame reserved) and the zones
//! from a [`NumaTopology`]; the platform then frees what it does not use
//! ([`PageAlloc::free_range`], the handover) and computes the per-CPU list sizes
//! ([`PageAlloc::setup_pcp`]). [`PageAlloc::with_all_free`] does all three for host use.

use crate::MAX_ORDER;
use crate::buddy::is_linked;
use crate::error::{AllocError, FreeError, InitError};
use crate::memmap::Memmap;
use crate::numa::NumaTopology;
use crate::pfn::zone_pfn_limits;
use crate::stats::PageStats;
use crate::storage::MemmapStorage;
use crate::zone::Zone;
use crate::zonelist::{ZONES_HIGH_TO_LOW, Zonelist, build_all_zonelists};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use ksync::PerCpu;
use page::NodeId;
use page::folio::MAX_NR_ZONES;
use page::{Folio, FolioFlags, Zone as ZoneType};

/// What [`PageAlloc::free_frozen_folios`] did with a batch.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FrozenFree {
    /// Frames freed to a per-CPU list.
    pub freed: usize,
    /// Frames left alone: foreign, still referenced or in a bad state.
    pub failed: usize,
    /// `pcp->lock` holds taken: one per run of frames of one zone.
    pub rounds: usize,
}

/// Overrides of the per-CPU list sizes (`pcp_batch=` / `pcp_high=` on the command line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcpConfig {
    /// Replaces `zone_batchsize()` (at least 1); `high` is then derived from it unless
    /// also given.
    pub batch: Option<u32>,
    /// Replaces `zone_highsize()` (0: every free spills at once).
    pub high: Option<u32>,
}

/// One node (`pg_data_t`): its zones, indexed by zone type.
#[derive(Debug)]
pub struct PgData {
    id: u32,
    zones: [Option<Zone>; MAX_NR_ZONES],
}

impl PgData {
    /// The node id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Its populated zones, lowest first.
    pub fn zones(&self) -> impl Iterator<Item = &Zone> {
        self.zones.iter().flatten()
    }
}

/// The page allocator of a machine (or of a host arena).
pub struct PageAlloc {
    numa: NumaTopology,
    memmap: Memmap,
    nodes: Box<[PgData]>,
    zonelists: Box<[Zonelist]>,
    config: PcpConfig,
    /// Per CPU: allocations that found every zone empty.
    fails: PerCpu<AtomicU64>,
    /// Frames leaked because they were found in a bad state.
    bad_pages: AtomicU64,
}

impl core::fmt::Debug for PageAlloc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageAlloc")
            .field("nodes", &self.nodes.len())
            .field("cpus", &self.nr_cpus())
            .field("free", &self.nr_free_pages())
            .finish_non_exhaustive()
    }
}

impl PageAlloc {
    /// The memmap and zones for `numa`, every frame reserved; memmap arrays come from
    /// `storage`. Free memory with [`Self::free_range`], then call [`Self::setup_pcp`].
    pub fn new(
        numa: NumaTopology,
        storage: &mut impl MemmapStorage,
        config: PcpConfig,
    ) -> Result<Self, InitError> {
        if config.batch == Some(0) {
            return Err(InitError::BadBatch);
        }
        let memmap = Memmap::new(&numa, storage)?;
        let nr_cpus = numa.nr_cpus();
        let nodes: Box<[PgData]> = numa
            .nodes()
            .iter()
            .map(|n| PgData {
                id: n.id(),
                zones: core::array::from_fn(|idx| {
                    let kind = ZONES_HIGH_TO_LOW.iter().copied().find(|k| k.idx() == idx)?;
                    let limits = zone_pfn_limits(kind);
                    let parts: Vec<_> = n
                        .ranges()
                        .iter()
                        .filter_map(|r| r.intersect(&limits))
                        .collect();
                    let (first, last) = (parts.first()?, parts.last()?);
                    let span = crate::numa::PfnRange::new(first.start, last.end);
                    let present = parts.iter().map(|r| r.pages()).sum();
                    Some(Zone::new(n.id(), kind, span, present, nr_cpus))
                }),
            })
            .collect();
        let zonelists = build_all_zonelists(&numa, |node, kind| {
            nodes[node as usize].zones[kind.idx()].is_some()
        })
        .into_boxed_slice();
        Ok(PageAlloc {
            memmap,
            nodes,
            zonelists,
            config,
            fails: PerCpu::new(nr_cpus, |_| AtomicU64::new(0)),
            bad_pages: AtomicU64::new(0),
            numa,
        })
    }

    /// The NUMA description it was built from.
    #[must_use]
    pub fn numa(&self) -> &NumaTopology {
        &self.numa
    }

    /// The memmap.
    #[must_use]
    pub fn memmap(&self) -> &Memmap {
        &self.memmap
    }

    /// The list-size overrides in force.
    #[must_use]
    pub fn config(&self) -> PcpConfig {
        self.config
    }

    /// CPUs with per-CPU lists.
    #[must_use]
    pub fn nr_cpus(&self) -> usize {
        self.numa.nr_cpus()
    }

    /// The nodes.
    #[must_use]
    pub fn nodes(&self) -> &[PgData] {
        &self.nodes
    }

    /// Every populated zone, node by node, lowest zone first.
    pub fn zones(&self) -> impl Iterator<Item = &Zone> {
        self.nodes.iter().flat_map(PgData::zones)
    }

    /// Zone `kind` of `node`, if populated.
    #[must_use]
    pub fn zone(&self, node: NodeId, kind: ZoneType) -> Option<&Zone> {
        self.nodes
            .get(node as usize)?
            .zones
            .get(kind.idx())?
            .as_ref()
    }

    /// The zone a folio's frame belongs to (`folio_zone()`).
    #[must_use]
    pub fn folio_zone(&self, folio: &Folio) -> Option<&Zone> {
        self.zone(folio.node(), folio.zone())
    }

    /// `node`'s zonelist.
    #[must_use]
    pub fn zonelist(&self, node: NodeId) -> Option<&Zonelist> {
        self.zonelists.get(node as usize)
    }

    /// The descriptor of frame `pfn` (`pfn_to_page()`).
    #[inline]
    #[must_use]
    pub fn pfn_to_folio(&self, pfn: u64) -> Option<&'static Folio> {
        self.memmap.pfn_to_folio(pfn)
    }

    /// The frame of `folio` (`folio_pfn()`).
    #[inline]
    #[must_use]
    pub fn folio_to_pfn(&self, folio: &Folio) -> u64 {
        Memmap::folio_to_pfn(folio)
    }

    /// A block of 2^`order` frames for `cpu`, from `node`'s zonelist: order 0 through
    /// `cpu`'s per-CPU lists, larger orders from the buddy lists.
    pub fn try_alloc_pages(
        &self,
        cpu: usize,
        node: NodeId,
        order: u32,
    ) -> Result<&'static Folio, AllocError> {
        self.alloc_inner(cpu, node, order, true)
    }

    /// [`Self::try_alloc_pages`], `None` on any failure (`alloc_pages_node()`).
    #[inline]
    #[must_use]
    pub fn alloc_pages(&self, cpu: usize, node: NodeId, order: u32) -> Option<&'static Folio> {
        self.alloc_inner(cpu, node, order, true).ok()
    }

    /// One frame through `cpu`'s per-CPU lists (`alloc_page()`).
    #[inline]
    #[must_use]
    pub fn alloc_page(&self, cpu: usize, node: NodeId) -> Option<&'static Folio> {
        self.alloc_inner(cpu, node, 0, true).ok()
    }

    /// A block straight from the buddy lists, bypassing the per-CPU lists even at order 0
    /// (what every allocation costs without them; the benchmark's baseline).
    #[must_use]
    pub fn alloc_pages_buddy(
        &self,
        cpu: usize,
        node: NodeId,
        order: u32,
    ) -> Option<&'static Folio> {
        self.alloc_inner(cpu, node, order, false).ok()
    }

    /// `__alloc_pages()`: the zonelist inline ([`Self::get_page_from_freelist`]), the
    /// slow path ([`Self::alloc_slowpath`]) only when every zone came back empty.
    #[inline(always)]
    fn alloc_inner(
        &self,
        cpu: usize,
        node: NodeId,
        order: u32,
        use_pcp: bool,
    ) -> Result<&'static Folio, AllocError> {
        if order > MAX_ORDER {
            return Err(AllocError::BadOrder(order));
        }
        let zonelist = self
            .zonelists
            .get(node as usize)
            .ok_or(AllocError::BadNode(node))?;
        match self.get_page_from_freelist(zonelist, cpu, order, use_pcp)? {
            Some(folio) => Ok(folio),
            None => self.alloc_slowpath(zonelist, cpu, order, use_pcp),
        }
    }

    /// `get_page_from_freelist()`: the first zone of `zonelist` with a free block, from
    /// `cpu`'s per-CPU list at order 0 (with `use_pcp`), else from the buddy lists.
    #[inline(always)]
    fn get_page_from_freelist(
        &self,
        zonelist: &Zonelist,
        cpu: usize,
        order: u32,
        use_pcp: bool,
    ) -> Result<Option<&'static Folio>, AllocError> {
        for z in zonelist.zones() {
            let Some(zone) = self.zone(z.node, z.kind) else {
                continue;
            };
            // `cpu`'s list of the zone, looked up once for both ways to allocate.
            let pcp = zone.pcp(cpu).ok_or(AllocError::BadCpu(cpu))?;
            loop {
                let got = if order == 0 && use_pcp {
                    zone.rmqueue_pcplist(&self.memmap, pcp)
                } else {
                    zone.rmqueue_buddy(&self.memmap, order, &pcp.stats)
                };
                match got {
                    None => break,
                    Some(folio) if self.prep_new_page(folio) => return Ok(Some(folio)),
                    Some(_) => {}
                }
            }
        }
        Ok(None)
    }

    /// `__alloc_pages_slowpath()`: as it does before giving up
    /// (`__alloc_pages_direct_reclaim()` drains every per-CPU list once and retries), with
    /// no reclaim yet, so the drain's retry is the only one.
    #[cold]
    #[inline(never)]
    fn alloc_slowpath(
        &self,
        zonelist: &Zonelist,
        cpu: usize,
        order: u32,
        use_pcp: bool,
    ) -> Result<&'static Folio, AllocError> {
        let fails = self.fails.get(cpu).ok_or(AllocError::BadCpu(cpu))?;
        self.drain_all();
        if let Some(folio) = self.get_page_from_freelist(zonelist, cpu, order, use_pcp)? {
            return Ok(folio);
        }
        fails.fetch_add(1, Relaxed);
        Err(AllocError::NoMemory)
    }

    /// `check_new_page()` + `set_page_refcounted()`: a frame coming off a free list must be
    /// unreferenced, unmapped and flag-free; one that is not was corrupted by a user after
    /// its free and is leaked (Linux's `bad_page()`), and the allocation tries the next.
    fn prep_new_page(&self, folio: &'static Folio) -> bool {
        if folio.refcount() != 0 || folio.mapcount() != 0 || !folio.flags().is_empty() {
            self.bad_pages.fetch_add(1, Relaxed);
            return false;
        }
        folio.set_private(0);
        folio.ref_unfreeze(1);
        true
    }

    /// Drops a reference to the block of 2^`order` frames at `folio`, and when it was the
    /// last, gives the block back: order 0 to `cpu`'s per-CPU list, larger orders to the
    /// buddy lists (`__free_pages()`). Returns whether the block went back.
    pub fn free_pages(
        &self,
        cpu: usize,
        folio: &'static Folio,
        order: u32,
    ) -> Result<bool, FreeError> {
        self.free_inner(cpu, folio, order, true)
    }

    /// [`Self::free_pages`] at order 0.
    #[inline]
    pub fn free_page(&self, cpu: usize, folio: &'static Folio) -> Result<bool, FreeError> {
        self.free_inner(cpu, folio, 0, true)
    }

    /// [`Self::free_pages`] straight to the buddy lists, bypassing the per-CPU lists even
    /// at order 0.
    pub fn free_pages_buddy(
        &self,
        cpu: usize,
        folio: &'static Folio,
        order: u32,
    ) -> Result<bool, FreeError> {
        self.free_inner(cpu, folio, order, false)
    }

    /// Gives back an order-0 frame whose reference count the caller already dropped to
    /// zero itself (`free_frozen_pages()`): it froze the count to prove nobody else holds
    /// the frame (reclaim removing a page-cache folio), or its `put` was the last one and
    /// it released the folio (off the LRU, uncharged). To `cpu`'s per-CPU list.
    pub fn free_frozen_page(&self, cpu: usize, folio: &'static Folio) -> Result<(), FreeError> {
        let pfn = folio.pfn();
        if cpu >= self.nr_cpus() {
            return Err(FreeError::BadCpu(cpu));
        }
        if !self.memmap.owns_ram(folio) {
            return Err(FreeError::Foreign(pfn));
        }
        let zone = self.folio_zone(folio).ok_or(FreeError::Foreign(pfn))?;
        self.free_frozen_prepare(folio)?;
        zone.free_unref_page(&self.memmap, cpu, folio);
        Ok(())
    }

    /// `free_pages_prepare()` for a frame whose count its caller dropped to zero: checks
    /// it is unreferenced and in a clean state (a bad one is counted and leaked, as
    /// `bad_page()` does) and clears what a free list must not see.
    fn free_frozen_prepare(&self, folio: &'static Folio) -> Result<(), FreeError> {
        let pfn = folio.pfn();
        if folio.refcount() != 0 {
            return Err(FreeError::NotAllocated(pfn));
        }
        if let Some(why) = bad_state(folio) {
            self.bad_pages.fetch_add(1, Relaxed);
            return Err(FreeError::BadState(pfn, why));
        }
        let _ = folio.reset_lru_state();
        folio.set_private(0);
        Ok(())
    }

    /// [`Self::free_frozen_page`] for a batch (`free_unref_folios()`): each run of
    /// consecutive frames of one zone goes to `cpu`'s list of that zone under one hold of
    /// its `pcp->lock`, instead of one hold per frame. A frame that fails the checks of
    /// `free_frozen_page` is left alone (counted in [`FrozenFree::failed`]); the others
    /// are freed.
    pub fn free_frozen_folios(
        &self,
        cpu: usize,
        folios: &[&'static Folio],
    ) -> Result<FrozenFree, FreeError> {
        if cpu >= self.nr_cpus() {
            return Err(FreeError::BadCpu(cpu));
        }
        // The batch's folios are nearly always of one section and one zone: one root-table
        // lookup, and one zone lookup per change of `page_zone_id()`, as Linux's
        // `free_unref_folios` compares each folio's zone with the locked one.
        let mut memmap = self.memmap.cursor();
        let mut last: Option<(u32, &Zone)> = None;
        let mut zone_of = |f: &Folio| {
            if !memmap.owns_ram(f) {
                return None;
            }
            let id = f.zone_id();
            if let Some((at, zone)) = last
                && at == id
            {
                return Some(zone);
            }
            let zone = self.folio_zone(f)?;
            last = Some((id, zone));
            Some(zone)
        };
        let mut out = FrozenFree::default();
        let mut rest = folios;
        while let Some(&first) = rest.first() {
            let zone = zone_of(first);
            let run = 1 + rest[1..]
                .iter()
                .take_while(|f| match (zone, zone_of(f)) {
                    (Some(a), Some(b)) => core::ptr::eq(a, b),
                    _ => false,
                })
                .count();
            let (now, later) = rest.split_at(run);
            rest = later;
            let Some(zone) = zone else {
                out.failed += now.len();
                continue;
            };
            let freed = zone
                .free_unref_folios(&self.memmap, cpu, now, |f| {
                    self.free_frozen_prepare(f).is_ok()
                })
                .ok_or(FreeError::BadCpu(cpu))? as usize;
            out.freed += freed;
            out.failed += now.len() - freed;
            out.rounds += 1;
        }
        Ok(out)
    }

    fn free_inner(
        &self,
        cpu: usize,
        folio: &'static Folio,
        order: u32,
        use_pcp: bool,
    ) -> Result<bool, FreeError> {
        let pfn = folio.pfn();
        if order > MAX_ORDER {
            return Err(FreeError::BadOrder(order));
        }
        if cpu >= self.nr_cpus() {
            return Err(FreeError::BadCpu(cpu));
        }
        if !self.memmap.owns_ram(folio) {
            return Err(FreeError::Foreign(pfn));
        }
        if pfn & ((1 << order) - 1) != 0 {
            return Err(FreeError::Misaligned(pfn, order));
        }
        let zone = self.folio_zone(folio).ok_or(FreeError::Foreign(pfn))?;
        match folio.put() {
            Err(_) => return Err(FreeError::NotAllocated(pfn)),
            Ok(false) => return Ok(false),
            Ok(true) => {}
        }
        if let Some(why) = bad_state(folio) {
            self.bad_pages.fetch_add(1, Relaxed);
            return Err(FreeError::BadState(pfn, why));
        }
        // Not on an LRU (checked just above), so this cannot fail.
        let _ = folio.reset_lru_state();
        folio.set_private(0);
        if order == 0 && use_pcp {
            zone.free_unref_page(&self.memmap, cpu, folio);
        } else {
            let stats = zone.pcp(cpu).map(|p| &p.stats);
            zone.free_block(&self.memmap, folio, order, stats);
        }
        Ok(true)
    }

    /// Empties `cpu`'s per-CPU lists of every zone (`drain_local_pages()`, or
    /// `drain_pages()` for a remote CPU: safe from any CPU). Returns the frames moved.
    pub fn drain_cpu(&self, cpu: usize) -> u64 {
        self.zones()
            .map(|z| u64::from(z.drain_pages_zone(&self.memmap, cpu)))
            .sum()
    }

    /// Empties every CPU's per-CPU lists from the calling CPU (`drain_all_pages()`, which
    /// since Linux 5.19 drains remote lists under their `pcp->lock`).
    pub fn drain_all(&self) -> u64 {
        (0..self.nr_cpus()).map(|cpu| self.drain_cpu(cpu)).sum()
    }

    /// `NR_FREE_PAGES` summed over every zone (frames on per-CPU lists are not free).
    #[must_use]
    pub fn nr_free_pages(&self) -> u64 {
        self.zones().map(Zone::nr_free).sum()
    }

    /// `NR_FREE_PAGES` of `node`.
    #[must_use]
    pub fn nr_free_node(&self, node: NodeId) -> u64 {
        self.nodes
            .get(node as usize)
            .map_or(0, |n| n.zones().map(Zone::nr_free).sum())
    }

    /// Frames on every CPU's list of `zone` (takes each `pcp->lock` in turn).
    #[must_use]
    pub fn pcp_pages(&self, zone: &Zone) -> u64 {
        zone.pcp.iter().map(|(_, p)| u64::from(p.count())).sum()
    }

    /// Frames that were found in a bad state and leaked.
    #[must_use]
    pub fn bad_pages(&self) -> u64 {
        self.bad_pages.load(Relaxed)
    }

    /// `cpu`'s counters, summed over zones.
    #[must_use]
    pub fn cpu_stats(&self, cpu: usize) -> PageStats {
        let mut s = PageStats::default();
        for z in self.zones() {
            if let Some(p) = z.pcp(cpu) {
                s.add(&p.stats.snapshot());
            }
        }
        s.alloc_fail = self.fails.get(cpu).map_or(0, |f| f.load(Relaxed));
        s
    }

    /// `zone`'s counters, summed over CPUs.
    #[must_use]
    pub fn zone_stats(&self, zone: &Zone) -> PageStats {
        let mut s = PageStats::default();
        for (_, p) in zone.pcp.iter() {
            s.add(&p.stats.snapshot());
        }
        s
    }

    /// Every counter summed.
    #[must_use]
    pub fn total_stats(&self) -> PageStats {
        let mut s = PageStats::default();
        for cpu in 0..self.nr_cpus() {
            s.add(&self.cpu_stats(cpu));
        }
        s
    }
}

/// What `free_pages_prepare()` refuses in a frame whose last reference is gone.
fn bad_state(folio: &Folio) -> Option<&'static str> {
    // Always: what would corrupt the allocator's own lists (a double free, a frame still
    // linked somewhere).
    if folio.test(FolioFlags::BUDDY) {
        return Some("already free in the buddy allocator");
    }
    if is_linked(folio) {
        return Some("still linked on a list");
    }
    // The rest is `free_page_is_bad()`, which Linux runs only when `check_pages_enabled`
    // (CONFIG_DEBUG_VM, init_on_free, debug_pagealloc): here in debug builds. In every
    // build a frame on an LRU is still linked (refused above), the invariant checker
    // (`mm::check`) finds a mapped free frame, and memcg's finds usage no folio holds.
    if cfg!(debug_assertions) {
        if folio.mapcount() != 0 {
            return Some("still mapped");
        } else if folio.test_lru() {
            return Some("still on an LRU list");
        } else if folio.memcg_id() != 0 {
            return Some("still charged to a memcg");
        }
    }
    None
}
