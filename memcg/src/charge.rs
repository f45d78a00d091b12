//! Charging and limits: `try_charge_memcg()`, uncharge, `memory.max` writes,
//! `memory.reclaim` and `try_to_free_mem_cgroup_pages()` (mm/memcontrol.c, mm/vmscan.c).
//!
//! A charge first takes pages from the CPU's stock; otherwise it charges a batch of
//! `MEMCG_CHARGE_BATCH` pages up the hierarchy and stocks the surplus. When a level refuses,
//! the charge retries without the batch, then reclaims from the memcg whose limit was hit
//! (its whole subtree, through `lru`'s eviction), drains the CPUs' stocks of that subtree
//! once, and retries until the charge fits or reclaim has made no progress
//! `MAX_RECLAIM_RETRIES` times; then it fails with [`MemcgError::OutOfMemory`]. Usage never
//! goes above `max` at any level: the page counter refuses instead of overshooting.

use crate::error::MemcgError;
use crate::memcontrol::MemCgroup;
use crate::pn::MemCgroupPerNode;
use crate::rcu::RcuPoll;
use crate::stock::MEMCG_CHARGE_BATCH;
use crate::sync::Ordering;
use crate::tree::{MemcgRef, MemcgTree};
use ksync::LockFamily;

/// Reclaim rounds without progress before a charge or limit change gives up
/// (`MAX_RECLAIM_RETRIES`).
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Smallest reclaim batch (`SWAP_CLUSTER_MAX`).
pub const SWAP_CLUSTER_MAX: u64 = 32;

impl<F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> MemcgTree<F, P, G> {
    /// Charges `nr_pages` to `memcg` on `cpu` (`try_charge_memcg()`), reclaiming from the
    /// memcg over its limit if needed.
    pub fn try_charge(
        &self,
        memcg: &MemCgroup<F, P>,
        cpu: usize,
        nr_pages: u64,
    ) -> Result<(), MemcgError> {
        if !memcg.is_online() {
            return Err(MemcgError::Offline { id: memcg.id() });
        }
        if nr_pages == 0 {
            return Ok(());
        }
        if self.stocks.consume(cpu, memcg, nr_pages)? {
            return Ok(());
        }
        let mut batch = nr_pages.max(MEMCG_CHARGE_BATCH);
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        loop {
            let over = match memcg.memory.try_charge(batch) {
                Ok(()) => {
                    if batch > nr_pages {
                        self.stocks.refill(cpu, memcg, batch - nr_pages)?;
                    }
                    return Ok(());
                }
                Err(fail) => fail.over_limit,
            };
            if batch > nr_pages {
                batch = nr_pages;
                continue;
            }
            // The refusing counter is `memcg`'s or an ancestor's.
            let mut over_memcg = Some(memcg);
            while let Some(m) = over_memcg {
                if core::ptr::eq(&m.memory, over) {
                    break;
                }
                over_memcg = m.parent();
            }
            let Some(over_memcg) = over_memcg else {
                return Err(MemcgError::OutOfMemory {
                    id: memcg.id(),
                    over_limit: memcg.id(),
                    nr_pages,
                });
            };
            if nr_pages > over_memcg.memory.max() {
                // Can never fit: fail without reclaiming anything.
                return Err(MemcgError::OutOfMemory {
                    id: memcg.id(),
                    over_limit: over_memcg.id(),
                    nr_pages,
                });
            }
            let reclaimed = self.try_to_free_mem_cgroup_pages(over_memcg, cpu, nr_pages);
            if over_memcg.memory.margin() >= nr_pages {
                continue;
            }
            if !drained {
                drained = true;
                if self.stocks.drain_all(|c| c.is_descendant(over_memcg)) > 0 {
                    continue;
                }
            }
            if reclaimed == 0 {
                retries -= 1;
                if retries == 0 {
                    return Err(MemcgError::OutOfMemory {
                        id: memcg.id(),
                        over_limit: over_memcg.id(),
                        nr_pages,
                    });
                }
            }
        }
    }

    /// Charges one page for `folio` and records the memcg in it (`mem_cgroup_charge()`:
    /// `try_charge()` + `commit_charge()`).
    pub fn charge_folio(
        &self,
        memcg: &MemCgroup<F, P>,
        cpu: usize,
        folio: &lru::Folio,
    ) -> Result<(), MemcgError> {
        self.try_charge(memcg, cpu, 1)?;
        if let Err(e) = folio.set_memcg_id(memcg.id()) {
            // Undo the charge we just made; it cannot underflow.
            let _ = memcg.memory.uncharge(1);
            return Err(MemcgError::Lru(e));
        }
        Ok(())
    }

    /// Uncharges the page of `folio` from the memcg it names (`mem_cgroup_uncharge()`),
    /// online or zombie. Call after the folio left the LRU.
    pub fn uncharge_folio(&self, folio: &lru::Folio) -> Result<(), MemcgError> {
        let memcg = self.lookup_any(folio.memcg_id())?;
        self.uncharge(&memcg, 1)
    }

    /// Uncharges `nr_pages` from `memcg` and its ancestors (`memcg_uncharge()`).
    pub fn uncharge(&self, memcg: &MemCgroup<F, P>, nr_pages: u64) -> Result<(), MemcgError> {
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
    pub fn set_max(&self, memcg: &MemCgroup<F, P>, cpu: usize, max: u64) -> Result<(), MemcgError> {
        self.check_cpu(cpu)?;
        if !memcg.is_online() {
            return Err(MemcgError::Offline { id: memcg.id() });
        }
        let mut drained = false;
        let mut retries = MAX_RECLAIM_RETRIES;
        loop {
            let usage = match memcg.memory.set_max(max) {
                Ok(()) => return Ok(()),
                Err(usage) => usage,
            };
            if !drained {
                drained = true;
                self.stocks.drain_all(|c| c.is_descendant(memcg));
                continue;
            }
            let reclaimed = self.try_to_free_mem_cgroup_pages(memcg, cpu, usage - max);
            if reclaimed == 0 {
                retries -= 1;
                if retries == 0 {
                    return Err(MemcgError::LimitBelowUsage {
                        id: memcg.id(),
                        usage: memcg.usage(),
                        max,
                    });
                }
            }
        }
    }

    /// `memory.reclaim`: reclaims `nr_pages` from `memcg`'s subtree. Returns the pages
    /// reclaimed (at least `nr_pages`), or [`MemcgError::Again`] with what was reclaimed
    /// when `MAX_RECLAIM_RETRIES` rounds made no progress (`memory_reclaim()`).
    pub fn memory_reclaim(
        &self,
        memcg: &MemCgroup<F, P>,
        cpu: usize,
        nr_pages: u64,
    ) -> Result<u64, MemcgError> {
        self.check_cpu(cpu)?;
        let mut reclaimed = 0;
        let mut retries = MAX_RECLAIM_RETRIES;
        while reclaimed < nr_pages {
            let got = self.try_to_free_mem_cgroup_pages(memcg, cpu, nr_pages - reclaimed);
            if got == 0 {
                retries -= 1;
                if retries == 0 {
                    return Err(MemcgError::Again {
                        requested: nr_pages,
                        reclaimed,
                    });
                }
            }
            reclaimed += got;
        }
        Ok(reclaimed)
    }

    fn check_cpu(&self, cpu: usize) -> Result<(), MemcgError> {
        let nr_cpus = self.config().nr_cpus;
        if cpu < nr_cpus {
            Ok(())
        } else {
            Err(MemcgError::InvalidCpu { cpu, nr_cpus })
        }
    }

    /// Reclaims up to `nr_pages` (at least `SWAP_CLUSTER_MAX`) from `memcg`'s subtree,
    /// every node (`try_to_free_mem_cgroup_pages()` -> `shrink_node_memcgs()`). The walk
    /// resumes where the last one stopped (the reclaim iterator in `memcg_pn_write_hot`).
    /// Returns pages reclaimed (0 for an out-of-range `cpu`).
    pub fn try_to_free_mem_cgroup_pages(
        &self,
        memcg: &MemCgroup<F, P>,
        cpu: usize,
        nr_pages: u64,
    ) -> u64 {
        if self.check_cpu(cpu).is_err() {
            return 0;
        }
        let target = nr_pages.max(SWAP_CLUSTER_MAX);
        let subtree = self.subtree_refs(memcg);
        if subtree.is_empty() {
            return 0;
        }
        let mut reclaimed = 0;
        for node in 0..memcg.nr_nodes() {
            let Ok(pn) = memcg.nodeinfo(node) else {
                continue;
            };
            let iter = &pn.write_hot().iter;
            let start = iter.position.load(Ordering::Relaxed) as usize % subtree.len();
            for k in 0..subtree.len() {
                let idx = (start + k) % subtree.len();
                let victim: &MemcgRef<'_, F, P, G> = &subtree[idx];
                reclaimed += self
                    .lru
                    .shrink_lruvec(victim, node, cpu, target - reclaimed);
                if reclaimed >= target {
                    iter.position
                        .store(((idx + 1) % subtree.len()) as u32, Ordering::Relaxed);
                    return reclaimed;
                }
            }
            iter.generation.fetch_add(1, Ordering::Relaxed);
        }
        reclaimed
    }
}

impl<'t, F: LockFamily, P: MemCgroupPerNode, G: RcuPoll> MemcgRef<'t, F, P, G> {
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
    pub fn memory_reclaim(&self, cpu: usize, nr_pages: u64) -> Result<u64, MemcgError> {
        self.tree.memory_reclaim(self, cpu, nr_pages)
    }

    /// Creates a child memcg.
    pub fn create_child(&self) -> Result<MemcgRef<'t, F, P, G>, MemcgError> {
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
