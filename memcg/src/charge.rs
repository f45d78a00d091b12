//! Charging and limits: `try_charge_memcg()`, uncharge, `memory.max` writes,
//! `memory.reclaim` and `try_to_free_mem_cgroup_pages()` (mm/memcontrol.c, mm/vmscan.c).
//!
//! A charge first takes pages from the CPU's stock; otherwise it charges a batch of
//! `MEMCG_CHARGE_BATCH` pages up the hierarchy and stocks the surplus. When a level refuses,
//! the charge retries without the batch, then reclaims from the memcg whose limit was hit
//! (its whole subtree, through `lru`'s eviction), drains the CPUs' stocks of that subtree
//! once, and retries until the charge fits or reclaim has made no progress
//! `MAX_RECLAIM_RETRIES` more times (Linux's `if (nr_retries--) goto retry`); then it fails
//! with [`MemcgError::OutOfMemory`]. A pass that reclaimed something is retried without
//! counting, for charges of any size (Linux counts those of a charge above
//! `1 << PAGE_ALLOC_COSTLY_ORDER` pages too); [`MAX_RECLAIM_PASSES`] bounds all passes.
//! Usage never goes above `max` at any level: the page counter refuses instead of
//! overshooting.
//!
//! A charged folio holds a reference on its memcg (`commit_charge()` keeps the css the
//! charge took), dropped when it is uncharged; so a memcg with charged folios is never
//! reaped, and the folio's memcg id stays valid while the folio is charged.

use crate::error::{MemcgError, MemcgId};
use crate::lru_glue::FolioOwner;
use crate::memcontrol::MemCgroup;
use crate::pn::MemCgroupPerNode;
use crate::stock::MEMCG_CHARGE_BATCH;
use crate::tree::{MemcgRef, MemcgTree};

/// Reclaim rounds without progress before a charge or limit change gives up
/// (`MAX_RECLAIM_RETRIES`).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Reclaim passes of one charge or limit write in all, with progress or without. Not in
/// Linux, whose loops bound only the passes without progress: a charge whose reclaim keeps
/// freeing pages that other CPUs keep taking retries there as long as that goes on, and
/// fails here after this many passes. One that no one races needs a pass to drain the
/// stocks, at most `MAX_RECLAIM_RETRIES + 1` without progress and, each asking for at least
/// what the charge is short of, few with progress.
pub const MAX_RECLAIM_PASSES: u32 = 1024;

/// Smallest reclaim batch (`SWAP_CLUSTER_MAX`): lru's, in page-counter units.
pub const SWAP_CLUSTER_MAX: u64 = lru::swap_cluster::SWAP_CLUSTER_MAX as u64;

/// What [`MemcgTree::uncharge_folios`] did (`struct uncharge_gather`'s outcome).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UnchargeBatch {
    /// Pages uncharged.
    pub pages: u64,
    /// Runs of one memcg: page-counter updates and `css_put_many` calls made.
    pub batches: u64,
    /// Pages left charged: their memcg was not found or the uncharge would underflow.
    pub failed: u64,
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> MemcgTree<P, O> {
    /// Charges `nr_pages` to `memcg` on `cpu` (`try_charge_memcg()`), reclaiming from the
    /// memcg over its limit if needed.
    pub fn try_charge(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        nr_pages: u64,
    ) -> Result<(), MemcgError> {
        self.charge_pages(memcg, cpu, nr_pages, false)
    }

    /// [`Self::try_charge`]; with `refs`, the charge also leaves the caller one css
    /// reference per page (old Linux's `css_get_many(&memcg->css, nr_pages)` in
    /// `try_charge()`): pages from the stock bring theirs, others are taken on `cpu` in one
    /// call. Without, the references of consumed stock pages are dropped on `cpu`.
    ///
    /// The stock is tried inline (`consume_stock()`); only a charge it cannot serve calls
    /// [`Self::charge_counters`].
    #[inline(always)]
    fn charge_pages(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        nr_pages: u64,
        refs: bool,
    ) -> Result<(), MemcgError> {
        if !memcg.is_online() {
            return Err(MemcgError::Offline { id: memcg.id() });
        }
        if nr_pages == 0 {
            return Ok(());
        }
        if self.stocks.consume(cpu, memcg, nr_pages)? {
            if !refs {
                memcg.css_put_many_on(cpu, nr_pages as usize);
            }
            return Ok(());
        }
        self.charge_counters(memcg, cpu, nr_pages, refs)
    }

    /// The rest of `try_charge_memcg()` after the stock: the page counters up the tree,
    /// then reclaim and retry.
    #[inline(never)]
    fn charge_counters(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        nr_pages: u64,
        refs: bool,
    ) -> Result<(), MemcgError> {
        // A whole batch first, the surplus to the stock; when that does not fit, only what
        // was asked for (Linux's `batch = nr_pages; goto retry`), reclaiming as needed.
        let batch = nr_pages.max(MEMCG_CHARGE_BATCH);
        if batch > nr_pages && memcg.memory.try_charge(batch).is_ok() {
            self.stocks.refill(cpu, memcg, batch - nr_pages)?;
            if refs {
                memcg.css_get_many_on(cpu, nr_pages as usize);
            }
            return Ok(());
        }
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        let mut over_limit = memcg.id();
        for _ in 0..MAX_RECLAIM_PASSES {
            let over = match memcg.memory.try_charge(nr_pages) {
                Ok(()) => {
                    if refs {
                        memcg.css_get_many_on(cpu, nr_pages as usize);
                    }
                    return Ok(());
                }
                Err(fail) => fail.over_limit,
            };
            // The refusing counter is `memcg`'s or an ancestor's.
            let mut over_memcg = Some(memcg);
            while let Some(m) = over_memcg {
                if core::ptr::eq(&m.memory, over) {
                    break;
                }
                over_memcg = m.parent();
            }
            let Some(over_memcg) = over_memcg else {
                over_limit = memcg.id();
                break;
            };
            over_limit = over_memcg.id();
            if nr_pages > over_memcg.memory.max() {
                // Can never fit: fail without reclaiming anything.
                break;
            }
            let reclaimed = self
                .try_to_free_mem_cgroup_pages(over_memcg, cpu, nr_pages, None)
                .unwrap_or(0);
            if over_memcg.memory.margin() >= nr_pages {
                continue;
            }
            if !drained {
                drained = true;
                self.stocks.drain_all(|c| c.is_descendant(over_memcg));
                continue;
            }
            if reclaimed != 0 {
                continue;
            }
            // Linux's `if (nr_retries--) goto retry;`.
            if retries == 0 {
                break;
            }
            retries -= 1;
        }
        Err(MemcgError::OutOfMemory {
            id: memcg.id(),
            over_limit,
            nr_pages,
        })
    }

    /// Charges one page for `folio` and records the memcg in it (`mem_cgroup_charge()`:
    /// `try_charge()` + `commit_charge()`, which keeps a css reference for the folio). A
    /// page from this CPU's stock brings its reference along: no css write at all.
    #[inline(always)]
    pub fn charge_folio(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        folio: &lru::Folio,
    ) -> Result<(), MemcgError> {
        self.charge_pages(memcg, cpu, 1, true)?;
        match folio.set_memcg_id(memcg.id()) {
            Ok(()) => Ok(()),
            Err(e) => Err(Self::undo_folio_charge(memcg, cpu, e.into())),
        }
    }

    /// The folio would not take the memcg's id: undoes the page's charge and its css
    /// reference. Cold, out of line: kept from between the fault path's hot blocks.
    #[cold]
    #[inline(never)]
    fn undo_folio_charge(memcg: &MemCgroup<P>, cpu: usize, e: lru::LruError) -> MemcgError {
        // Undo the charge we just made; it cannot underflow.
        ksync::warn_on_once!(
            memcg.memory.uncharge(1).is_err(),
            "undoing a folio's charge underflowed"
        );
        memcg.css_put_many_on(cpu, 1);
        MemcgError::Lru(e)
    }

    /// Uncharges the page of `folio` from the memcg it names (`mem_cgroup_uncharge()`),
    /// online or zombie, and drops the reference the charge held. The memcg is found in the
    /// id table under RCU on `cpu` (no lock). Call after the folio left the LRU.
    pub fn uncharge_folio(&self, cpu: usize, folio: &lru::Folio) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        let guard = self
            .rcu()
            .read_lock(cpu)
            .map_err(|e| MemcgError::Lru(e.into()))?;
        let memcg = self.lookup_rcu(&guard, folio.memcg_id())?;
        self.uncharge(memcg, 1)?;
        // The folio's reference; the memcg stays valid until the read section ends.
        memcg.css_put_many_on(cpu, 1);
        Ok(())
    }

    /// Uncharges the pages of `folios` (`__mem_cgroup_uncharge_folios()`, which
    /// `folios_put_refs()` and `release_pages()` call with their whole batch): as Linux's
    /// `uncharge_gather`, each run of consecutive folios charged to one memcg costs one
    /// page-counter update up the hierarchy and one `css_put_many` (`uncharge_batch()`),
    /// instead of one of each per folio. Each charged folio's memcg id is cleared (its
    /// `memcg_data`); uncharged folios (memcg id 0) are skipped. The
    /// memcgs are found in the id table under RCU on `cpu` (no lock). Call after the folios
    /// left the LRU. A run whose memcg cannot be found or whose uncharge would underflow is
    /// counted in [`UnchargeBatch::failed`] and the others are still uncharged.
    pub fn uncharge_folios(
        &self,
        cpu: usize,
        folios: &[&lru::Folio],
    ) -> Result<UnchargeBatch, MemcgError> {
        self.check_cpu(cpu)?;
        let guard = self
            .rcu()
            .read_lock(cpu)
            .map_err(|e| MemcgError::Lru(e.into()))?;
        let mut out = UnchargeBatch::default();
        let flush = |id: MemcgId, nr: u64, out: &mut UnchargeBatch| {
            let done = self.lookup_rcu(&guard, id).and_then(|memcg| {
                self.uncharge(memcg, nr)?;
                // The folios' references; the memcg stays valid until the section ends.
                memcg.css_put_many_on(cpu, nr as usize);
                Ok(())
            });
            match done {
                Ok(()) => {
                    out.pages += nr;
                    out.batches += 1;
                }
                Err(_) => out.failed += nr,
            }
        };
        let mut run: Option<(MemcgId, u64)> = None;
        for f in folios {
            let id = f.memcg_id();
            if id == 0 {
                continue;
            }
            // uncharge_folio(): `folio->memcg_data = 0`; the page and the css reference go
            // with the run's batch below. Off the LRU, as the caller promises: a folio
            // still on one refuses the new id, and is counted failed with its run.
            if f.set_memcg_id(0).is_err() {
                ksync::warn_on_once!(true, "uncharge_folios: a folio still on an LRU list");
                out.failed += 1;
                continue;
            }
            match &mut run {
                Some((rid, n)) if *rid == id => *n += 1,
                _ => {
                    if let Some((rid, n)) = run.replace((id, 1)) {
                        flush(rid, n, &mut out);
                    }
                }
            }
        }
        if let Some((rid, n)) = run {
            flush(rid, n, &mut out);
        }
        Ok(out)
    }

    /// Uncharges `nr_pages` from `memcg` and its ancestors (`memcg_uncharge()`).
    pub fn uncharge(&self, memcg: &MemCgroup<P>, nr_pages: u64) -> Result<(), MemcgError> {
        memcg
            .memory
            .uncharge(nr_pages)
            .map_err(|_| MemcgError::UnchargeUnderflow {
                id: memcg.id(),
                nr_pages,
            })
    }

    /// Writes `memory.max` (`memory_max_write()`, with cgroup v1's refusal instead of the
    /// OOM killer): sets the limit, reclaiming down to it first if the usage is above it.
    /// Fails with [`MemcgError::LimitBelowUsage`] when reclaim cannot get there.
    pub fn set_max(&self, memcg: &MemCgroup<P>, cpu: usize, max: u64) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        if !memcg.is_online() {
            return Err(MemcgError::Offline { id: memcg.id() });
        }
        let mut drained = false;
        let mut retries = MAX_RECLAIM_RETRIES;
        for _ in 0..MAX_RECLAIM_PASSES {
            let usage = match memcg.memory.set_max(max) {
                Ok(()) => return Ok(()),
                Err(usage) => usage,
            };
            if !drained {
                drained = true;
                self.stocks.drain_all(|c| c.is_descendant(memcg));
                continue;
            }
            if retries == 0 {
                break;
            }
            let reclaimed = self
                .try_to_free_mem_cgroup_pages(memcg, cpu, usage - max, None)
                .unwrap_or(0);
            if reclaimed == 0 {
                retries -= 1;
            }
        }
        Err(MemcgError::LimitBelowUsage {
            id: memcg.id(),
            usage: memcg.usage(),
            max,
        })
    }

    pub(crate) fn check_cpu(&self, cpu: usize) -> Result<(), MemcgError> {
        let nr_cpus = self.config().nr_cpus;
        if cpu < nr_cpus {
            Ok(())
        } else {
            Err(MemcgError::InvalidCpu { cpu, nr_cpus })
        }
    }
}

impl<'t, P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> MemcgRef<'t, P, O> {
    /// [`MemcgTree::try_charge`] on this memcg.
    pub fn try_charge(&self, cpu: usize, nr_pages: u64) -> Result<(), MemcgError> {
        self.tree.try_charge(self, cpu, nr_pages)
    }

    /// [`MemcgTree::uncharge`] on this memcg.
    pub fn uncharge(&self, nr_pages: u64) -> Result<(), MemcgError> {
        self.tree.uncharge(self, nr_pages)
    }

    /// [`MemcgTree::set_max`] on this memcg.
    pub fn set_max(&self, cpu: usize, max: u64) -> Result<(), MemcgError> {
        self.tree.set_max(self, cpu, max)
    }

    /// [`MemcgTree::memory_reclaim`] on this memcg.
    pub fn memory_reclaim(
        &self,
        cpu: usize,
        req: crate::reclaim_req::ReclaimRequest,
    ) -> Result<u64, MemcgError> {
        self.tree.memory_reclaim(self, cpu, req)
    }

    /// [`MemcgTree::memory_reclaim_write`] on this memcg.
    pub fn memory_reclaim_write(&self, cpu: usize, buf: &str) -> Result<u64, MemcgError> {
        self.tree.memory_reclaim_write(self, cpu, buf)
    }

    /// Creates a child memcg.
    pub fn create_child(&self) -> Result<MemcgRef<'t, P, O>, MemcgError> {
        self.tree.create_under(self.id())
    }

    /// Flushes this subtree's statistics.
    pub fn flush_stats(&self) {
        self.tree.flush_stats(self)
    }

    /// Flushes if the threshold is exceeded, then reads a node item's hierarchical total
    /// (`memory.stat`).
    pub fn memory_stat(&self, item: crate::stats::NodeStatItem) -> i64 {
        self.tree.flush_stats_if_needed(self);
        self.vmstats().page_state(item)
    }

    /// Flushes if the threshold is exceeded, then reads an event's hierarchical count.
    pub fn memory_events(&self, ev: crate::stats::MemcgEvent) -> u64 {
        self.tree.flush_stats_if_needed(self);
        self.vmstats().events(ev)
    }
}
