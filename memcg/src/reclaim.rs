//! memcg reclaim: `memory.reclaim` (`user_proactive_reclaim()`) and
//! `try_to_free_mem_cgroup_pages()` (mm/vmscan.c).
//!
//! Two walks, as in Linux with MGLRU:
//!
//! - Reclaim of the root memcg is *root reclaim*: per node, `lru_gen_shrink_node()` walks
//!   the node's memcg FIFO with `shrink_many()` ([`lru::LruGenMemcg::shrink_many`]): the
//!   old generation is read once, each memcg is pinned with `mem_cgroup_tryget()` (one
//!   that cannot be is released from the FIFO), shrunk by `shrink_one()`, and rotated by
//!   the op `shrink_one()` returns (young after a successful pass, tail or young for a
//!   small or offline one). The walk aborts once the request is met. This is the path of
//!   seed 002: every visited memcg that cannot meet the target is rotated, and each
//!   rotation to the tail walked the whole bin before the seed's patch.
//! - Reclaim of any other memcg walks its subtree (`shrink_node_memcgs()` with
//!   `mem_cgroup_iter()`, resuming where the last walk stopped) and shrinks each lruvec
//!   (`lru_gen_shrink_lruvec()`), rotating it young when it ran out of cold folios.
//!
//! Both walks honour `memory.min` and `memory.low` as Linux does: each memcg's effective
//! protection is computed against the reclaim target (`mem_cgroup_calculate_protection()`,
//! top-down); a memcg whose usage is within its effective min is never reclaimed, one
//! within its effective low only when a first pass that skipped such memcgs reclaimed
//! nothing (`memcg_low_reclaim`). On the FIFO walk a low-protected memcg is first rotated to
//! the tail and reclaimed only when met there again (`shrink_one()`).
//!
//! `memory.reclaim` takes the request's own swappiness (`swappiness=`), retries in batches
//! of a quarter of what is left, and gives up with [`MemcgError::Again`] (EAGAIN) after
//! `MAX_RECLAIM_RETRIES` rounds that reclaimed nothing.

use crate::error::MemcgError;
use crate::memcontrol::MemCgroup;
use crate::pn::MemCgroupPerNode;
use crate::reclaim_req::ReclaimRequest;
use crate::sync::Ordering;
use crate::tree::{MemcgRef, MemcgTree};
use crate::{MAX_RECLAIM_RETRIES, charge::SWAP_CLUSTER_MAX};
use core::ptr::NonNull;
use lru::memcg_lru::{ShrinkStep, seg};
use lru::{LruGenFolio, MemcgLruOp};

/// `DEF_PRIORITY`: a memcg's lruvec is "sizable" for `shrink_one()` if its evictable pages
/// shifted right by the priority are not zero.
pub const DEF_PRIORITY: u32 = 12;

impl<P: MemCgroupPerNode> MemcgTree<P> {
    /// `memory.reclaim`: reclaims `req.nr_pages` from `memcg`'s subtree with the request's
    /// swappiness (the tree's default if none). Returns the pages reclaimed (at least
    /// `nr_pages`), or [`MemcgError::Again`] with what was reclaimed when
    /// `MAX_RECLAIM_RETRIES` rounds made no progress (`user_proactive_reclaim()`).
    pub fn memory_reclaim(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        req: ReclaimRequest,
    ) -> Result<u64, MemcgError> {
        self.check_cpu(cpu)?;
        let mut reclaimed = 0;
        let mut retries = MAX_RECLAIM_RETRIES;
        // Every pass reclaims a page or uses up a retry, so the request is met or given up
        // within this many passes: the bound never ends the loop early, it only keeps a
        // broken progress count from spinning.
        let passes = req.nr_pages.saturating_add(u64::from(MAX_RECLAIM_RETRIES));
        for _ in 0..=passes {
            if reclaimed >= req.nr_pages {
                return Ok(reclaimed);
            }
            // Converges on zero, but reclaim enforces a minimum (SWAP_CLUSTER_MAX).
            let batch = (req.nr_pages - reclaimed) / 4;
            let got = self.try_to_free_mem_cgroup_pages(memcg, cpu, batch, req.swappiness)?;
            if got == 0 {
                if retries == 0 {
                    break;
                }
                retries -= 1;
            }
            reclaimed += got;
        }
        Err(MemcgError::Again {
            requested: req.nr_pages,
            reclaimed,
        })
    }

    /// A write of `buf` to `memory.reclaim` (`"1024M swappiness=0"`): parses it
    /// ([`ReclaimRequest::parse`]) and runs [`Self::memory_reclaim`].
    pub fn memory_reclaim_write(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        buf: &str,
    ) -> Result<u64, MemcgError> {
        let req = ReclaimRequest::parse(buf).map_err(MemcgError::BadRequest)?;
        self.memory_reclaim(memcg, cpu, req)
    }

    /// Reclaims up to `nr_pages` (at least `SWAP_CLUSTER_MAX`) from `memcg`'s subtree on
    /// every node (`try_to_free_mem_cgroup_pages()`), with `swappiness` or the tree's
    /// default. Root reclaim on MGLRU walks each node's memcg FIFO (`shrink_many()`); any
    /// other walks the subtree. Returns the pages reclaimed.
    pub fn try_to_free_mem_cgroup_pages(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        nr_pages: u64,
        swappiness: Option<u8>,
    ) -> Result<u64, MemcgError> {
        self.check_cpu(cpu)?;
        let target = nr_pages.max(SWAP_CLUSTER_MAX);
        let swappiness = swappiness.unwrap_or_else(|| self.lru.swappiness());
        if memcg.parent().is_none() && self.lru.mglru() {
            return self.shrink_nodes_root(cpu, target, swappiness);
        }
        let (reclaimed, low_skipped) =
            self.shrink_node_memcgs(memcg, cpu, target, swappiness, false);
        // Nothing reclaimed, but untapped memory.low reserves: retry, reclaiming from them
        // too (`do_try_to_free_pages()` returns any progress before it gets there).
        if reclaimed == 0 && low_skipped {
            let (more, _) = self.shrink_node_memcgs(memcg, cpu, target, swappiness, true);
            return Ok(more);
        }
        Ok(reclaimed)
    }

    /// `mem_cgroup_calculate_protection()` + `mem_cgroup_below_min()` /
    /// `mem_cgroup_below_low()`: how reclaim of `target` may treat `m`. The root and the
    /// target itself are unprotected; the caller visits parents before children.
    fn protection(&self, target: &MemCgroup<P>, m: &MemCgroup<P>) -> Protection {
        if m.parent().is_none() || core::ptr::eq(m, target) {
            return Protection::None;
        }
        m.memory.calculate_protection(&target.memory);
        let usage = m.memory.usage();
        if m.memory.emin() >= usage {
            Protection::Min
        } else if m.memory.elow() >= usage {
            Protection::Low
        } else {
            Protection::None
        }
    }

    /// Root reclaim: `lru_gen_shrink_node()` -> `shrink_many()` on every node, inside one
    /// read-side section of the tree's RCU domain on `cpu`.
    fn shrink_nodes_root(
        &self,
        cpu: usize,
        target: u64,
        swappiness: u8,
    ) -> Result<u64, MemcgError> {
        let guard = self.rcu().read_lock(cpu).map_err(MemcgError::Lru)?;
        let mut reclaimed = 0;
        for (node, pgdat) in self.node_data().iter().enumerate() {
            let fifo = pgdat.memcg_lru();
            // get_random_u32_below(MEMCG_NR_BINS) for the first bin.
            let first_bin = fifo.next_random_bin();
            let stats = fifo.shrink_many(&guard, first_bin, |lruvec| {
                let pn = P::from_lruvec(lruvec);
                let ptr = pn.read_mostly().memcg.cast::<MemCgroup<P>>();
                // SAFETY: the back pointer of a `mem_cgroup_per_node` is its memcg, which
                // the read-side section keeps valid (freed only after a grace period).
                let m = unsafe { ptr.as_ref() };
                if !m.css_tryget_on(cpu) {
                    // Dying: take it off the FIFOs now (`lru_gen_release_memcg()`).
                    self.lru.release(m);
                    return None;
                }
                let pinned = MemcgRef::new(self, NonNull::from(m));
                let op = self.shrink_one(
                    &pinned,
                    node,
                    cpu,
                    target - reclaimed,
                    swappiness,
                    &mut reclaimed,
                );
                drop(pinned);
                Some(ShrinkStep {
                    op,
                    // should_abort_scan(): root reclaim stops once the request is met.
                    abort: reclaimed >= target,
                })
            });
            stats.map_err(MemcgError::Lru)?;
            if reclaimed >= target {
                break;
            }
        }
        Ok(reclaimed)
    }

    /// `shrink_one()`: a memcg within its effective `memory.min` is only rotated young, one
    /// within its `memory.low` is rotated to the tail unless it is there already; otherwise
    /// reclaim from `m` on `node`, then choose its rotation: young after a
    /// successful pass (the lruvec ran out of cold folios and the memcg is online), none if
    /// it failed but is sizable, otherwise one retry at the tail, then young.
    fn shrink_one(
        &self,
        m: &MemCgroup<P>,
        node: usize,
        cpu: usize,
        nr: u64,
        swappiness: u8,
        reclaimed: &mut u64,
    ) -> MemcgLruOp {
        match self.protection(self.root_memcg(), m) {
            Protection::Min => return MemcgLruOp::Young,
            Protection::Low => {
                // Rotated to the tail first; reclaimed when met there again.
                let at_tail = m.lruvec(node).is_ok_and(|lv| {
                    lv.lrugen().memcg_node().seg.load(Ordering::Relaxed) == seg::TAIL
                });
                if !at_tail {
                    return MemcgLruOp::Tail;
                }
            }
            Protection::None => {}
        }
        let (freed, success) = self.lru.shrink_lruvec(m, node, cpu, nr, swappiness);
        *reclaimed += freed;
        if success && m.is_online() {
            return MemcgLruOp::Young;
        }
        let Ok(lruvec) = m.lruvec(node) else {
            return MemcgLruOp::Nop;
        };
        if !success && lruvec_is_sizable(lruvec, swappiness, m.is_online()) {
            return MemcgLruOp::Nop;
        }
        if lruvec.lrugen().memcg_node().seg.load(Ordering::Relaxed) != seg::TAIL {
            MemcgLruOp::Tail
        } else {
            MemcgLruOp::Young
        }
    }

    /// `shrink_node_memcgs()` for a non-root target: every memcg of the subtree on every
    /// node, resuming where the last walk stopped (the reclaim iterator in
    /// `memcg_pn_write_hot`); a lruvec that ran out of cold folios is rotated young
    /// (`lru_gen_shrink_lruvec()`). Memcgs within their effective `memory.min` are skipped,
    /// those within `memory.low` too unless `low_reclaim`. Returns (pages reclaimed,
    /// whether a low-protected memcg was skipped).
    fn shrink_node_memcgs(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        target: u64,
        swappiness: u8,
        low_reclaim: bool,
    ) -> (u64, bool) {
        let subtree = self.subtree_refs(memcg);
        if subtree.is_empty() {
            return (0, false);
        }
        // Effective protection, parents before children (the subtree is in pre-order).
        let mut low_skipped = false;
        let skip: alloc::vec::Vec<bool> = subtree
            .iter()
            .map(|m| match self.protection(memcg, m) {
                Protection::Min => true,
                Protection::Low if !low_reclaim => {
                    low_skipped = true;
                    true
                }
                _ => false,
            })
            .collect();
        let mut reclaimed = 0;
        for node in 0..memcg.nr_nodes() {
            let Ok(pn) = memcg.nodeinfo(node) else {
                continue;
            };
            let iter = &pn.write_hot().iter;
            // Resume after the memcg the last walk stopped at (`iter->position`), from the
            // start if there is none or it has left the subtree since (Linux's
            // `invalidate_reclaim_iterators()`). Id 0 is never a memcg's.
            let last = iter.position.load(Ordering::Relaxed);
            let start = subtree
                .iter()
                .position(|m| u32::from(m.id()) == last)
                .map_or(0, |i| i + 1);
            for k in 0..subtree.len() {
                let idx = (start + k) % subtree.len();
                if skip[idx] {
                    continue;
                }
                let victim: &MemcgRef<'_, P> = &subtree[idx];
                let (freed, rotate) =
                    self.lru
                        .shrink_lruvec(victim, node, cpu, target - reclaimed, swappiness);
                reclaimed += freed;
                if rotate {
                    self.lru.rotate(victim, node, MemcgLruOp::Young);
                }
                if reclaimed >= target {
                    // `mem_cgroup_iter_break()`: the next walk starts after this one.
                    iter.position
                        .store(u32::from(victim.id()), Ordering::Relaxed);
                    return (reclaimed, low_skipped);
                }
            }
            iter.generation.fetch_add(1, Ordering::Relaxed);
        }
        (reclaimed, low_skipped)
    }
}

/// What memory protection allows reclaim to do with a memcg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protection {
    /// Unprotected, or above its effective protection.
    None,
    /// Usage within its effective `memory.low`: reclaimed only if nothing else is left.
    Low,
    /// Usage within its effective `memory.min`: never reclaimed.
    Min,
}

/// `lruvec_is_sizable()`: the evictable pages at `swappiness`, shifted by `DEF_PRIORITY`
/// for an online memcg, are not zero.
fn lruvec_is_sizable<P: MemCgroupPerNode>(
    lruvec: &lru::Lruvec<P>,
    swappiness: u8,
    online: bool,
) -> bool {
    let mut total: i64 = 0;
    for ty in [lru::folio::LRU_GEN_ANON, lru::folio::LRU_GEN_FILE] {
        let evictable = match ty {
            lru::folio::LRU_GEN_ANON => swappiness != 0,
            _ => swappiness != lru::SWAPPINESS_ANON_ONLY,
        };
        if evictable {
            total += (0..lru::lru_gen::MAX_NR_GENS)
                .map(|g| lruvec.nr_gen_pages(g, ty).max(0))
                .sum::<i64>();
        }
    }
    let total = total as u64;
    if online {
        total >> DEF_PRIORITY != 0
    } else {
        total != 0
    }
}
