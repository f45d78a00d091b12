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
//! `MAX_RECLAIM_RETRIES` rounds that reclaimed nothing: `MAX_RECLAIM_RETRIES + 1` calls of
//! `try_to_free_mem_cgroup_pages()`.
//!
//! Root reclaim models `do_try_to_free_pages()` whole: the priority loop from
//! `DEF_PRIORITY` down to 0, one `shrink_zones()` per priority (per node
//! `lru_gen_shrink_node()`, a `shrink_many()` each), stopping once the target is met; the
//! first `lru_gen_shrink_node()` of a loop lowers the priority with
//! `set_initial_priority()` (from the node's inactive pages and the target, clamped to
//! `DEF_PRIORITY / 2..=DEF_PRIORITY`); a loop that reclaimed nothing is run once more with
//! `memcg_full_walk` set (`goto retry`). A call that reclaims nothing therefore runs
//! 2 x 7 `shrink_many()`s per node when the node holds fewer inactive pages than
//! `target << 7` (seed 002's case; up to 2 x 13 on a node with far more). [`ReclaimStats`]
//! counts all of it per request. The subtree walk (non-root targets) is still one
//! priority pass per call (plus the `memory.low` retry).
//!
//! Unsafe code here, and why: the reclaim walk turns a lruvec's back pointer into its memcg
//! inside an RCU read-side section, which keeps the memcg from being freed.
#![allow(unsafe_code)]

use crate::error::MemcgError;
use crate::lru_glue::FolioOwner;
use crate::memcontrol::MemCgroup;
use crate::pn::MemCgroupPerNode;
use crate::reclaim_req::ReclaimRequest;
use crate::sync::Ordering;
use crate::tree::{MemcgRef, MemcgTree};
use crate::{MAX_RECLAIM_RETRIES, charge::SWAP_CLUSTER_MAX};
use core::ptr::NonNull;
use lru::NodeId;
use lru::memcg_lru::{ShrinkManyStats, ShrinkStep, seg};
use lru::vmstat::NodeStatItem;
use lru::{LruGenFolio, MemcgLruOp, PgData};

/// `DEF_PRIORITY`: reclaim's first (gentlest) priority; a memcg's lruvec is "sizable" for
/// `shrink_one()` if its evictable pages shifted right by the priority are not zero.
pub const DEF_PRIORITY: u32 = 12;

/// `MIN_LRU_BATCH` (`BITS_PER_LONG`): targets below it keep `DEF_PRIORITY` in
/// `set_initial_priority()`.
pub const MIN_LRU_BATCH: u64 = 64;

/// What reclaim did, summed over one or more calls (counts only; for tests and the
/// benchmark's per-request figures).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimStats {
    /// `try_to_free_mem_cgroup_pages()` calls (a request's tries).
    pub tries: u64,
    /// `do_try_to_free_pages()` loops: the first of each call, then each `goto retry`.
    pub walks: u64,
    /// Priority-loop iterations (`shrink_zones()` calls).
    pub priorities: u64,
    /// `shrink_many()` calls (root reclaim: one per node per priority).
    pub shrink_many_calls: u64,
    /// Memcgs `shrink_many()` handed to `shrink_one()` (tryget attempted).
    pub visited: u64,
    /// FIFO entries skipped because their generation differed.
    pub skipped: u64,
    /// Memcgs that could not be pinned (dying; released from the FIFO).
    pub unpinned: u64,
    /// FIFO rotations applied (`lru_gen_rotate_memcg()`).
    pub rotations: u64,
    /// Bin walks restarted after ending on another generation's nulls.
    pub restarts: u64,
    /// Pages reclaimed.
    pub reclaimed: u64,
}

impl ReclaimStats {
    fn add_shrink_many(&mut self, s: &ShrinkManyStats) {
        self.shrink_many_calls += 1;
        self.visited += s.visited as u64;
        self.skipped += s.skipped as u64;
        self.unpinned += s.unpinned as u64;
        self.rotations += s.rotated as u64;
        self.restarts += s.restarts as u64;
    }
}

/// `set_initial_priority()`: the priority at which `(reclaimable >> priority)` is about
/// `nr_to_reclaim`, clamped to `DEF_PRIORITY / 2..=DEF_PRIORITY`, where `reclaimable` is
/// the node's inactive file pages plus, when anon may be reclaimed, its inactive anon
/// pages. The model has no swap device: anon counts when the swappiness lets reclaim scan
/// it (Linux asks `can_reclaim_anon_pages()`, i.e. free swap or demotion). Only called at
/// `DEF_PRIORITY` with a target of at least [`MIN_LRU_BATCH`].
#[must_use]
pub fn initial_priority(reclaimable: u64, nr_to_reclaim: u64) -> u32 {
    // fls_long(): the 1-based index of the highest set bit, 0 for 0.
    let fls = |x: u64| 64 - i64::from(x.leading_zeros());
    let p = fls(reclaimable) - 1 - fls(nr_to_reclaim.saturating_sub(1));
    p.clamp(i64::from(DEF_PRIORITY / 2), i64::from(DEF_PRIORITY)) as u32
}

fn node_reclaimable<H: lru::LruvecHost>(pgdat: &PgData<H>, swappiness: u8) -> u64 {
    let mut r = pgdat.node_page_state(NodeStatItem::NrInactiveFile).max(0) as u64;
    if swappiness != 0 {
        r += pgdat.node_page_state(NodeStatItem::NrInactiveAnon).max(0) as u64;
    }
    r
}

impl<P: MemCgroupPerNode, O: FolioOwner<MemcgTree<P, O>>> MemcgTree<P, O> {
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
        self.memory_reclaim_counted(memcg, cpu, req, &mut ReclaimStats::default())
    }

    /// [`Self::memory_reclaim`], adding what it did to `stats`.
    pub fn memory_reclaim_counted(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        req: ReclaimRequest,
        stats: &mut ReclaimStats,
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
            let got = self.try_to_free_mem_cgroup_pages_counted(
                memcg,
                cpu,
                batch,
                req.swappiness,
                stats,
            )?;
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
        let mut stats = ReclaimStats::default();
        self.try_to_free_mem_cgroup_pages_counted(memcg, cpu, nr_pages, swappiness, &mut stats)
    }

    /// [`Self::try_to_free_mem_cgroup_pages`], adding what it did to `stats`.
    pub fn try_to_free_mem_cgroup_pages_counted(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        nr_pages: u64,
        swappiness: Option<u8>,
        stats: &mut ReclaimStats,
    ) -> Result<u64, MemcgError> {
        self.check_cpu(cpu)?;
        stats.tries += 1;
        let target = nr_pages.max(SWAP_CLUSTER_MAX);
        let swappiness = swappiness.unwrap_or_else(|| self.lru.swappiness());
        if memcg.parent().is_none() && self.lru.mglru() {
            let got = self.do_try_to_free_pages_root(cpu, target, swappiness, stats)?;
            stats.reclaimed += got;
            return Ok(got);
        }
        stats.walks += 1;
        stats.priorities += 1;
        let (reclaimed, low_skipped) =
            self.shrink_node_memcgs(memcg, cpu, target, swappiness, false);
        // Nothing reclaimed, but untapped memory.low reserves: retry, reclaiming from them
        // too (`do_try_to_free_pages()` returns any progress before it gets there).
        if reclaimed == 0 && low_skipped {
            stats.walks += 1;
            stats.priorities += 1;
            let (more, _) = self.shrink_node_memcgs(memcg, cpu, target, swappiness, true);
            stats.reclaimed += more;
            return Ok(more);
        }
        stats.reclaimed += reclaimed;
        Ok(reclaimed)
    }

    /// `do_try_to_free_pages()` for root reclaim on MGLRU: the priority loop from
    /// `DEF_PRIORITY` down to 0, each priority a `shrink_zones()` (`lru_gen_shrink_node()`
    /// on every node), until `target` is met; the first node of a loop at `DEF_PRIORITY`
    /// lowers the priority (`set_initial_priority()`). A loop that reclaimed nothing is run
    /// once more (`memcg_full_walk`; the `memcg_low_skipped` retry never applies, root
    /// reclaim on MGLRU does not set it).
    fn do_try_to_free_pages_root(
        &self,
        cpu: usize,
        target: u64,
        swappiness: u8,
        stats: &mut ReclaimStats,
    ) -> Result<u64, MemcgError> {
        let mut reclaimed = 0;
        // `memcg_full_walk` clear, then the one `goto retry` with it set.
        for _full_walk in [false, true] {
            stats.walks += 1;
            let mut priority = DEF_PRIORITY;
            loop {
                stats.priorities += 1;
                // shrink_zones(): shrink_node() -> lru_gen_shrink_node() per node.
                for (node, pgdat) in (0..).zip(self.node_data().iter()) {
                    if priority == DEF_PRIORITY && target >= MIN_LRU_BATCH {
                        priority = initial_priority(node_reclaimable(pgdat, swappiness), target);
                    }
                    self.shrink_many(
                        node,
                        pgdat,
                        cpu,
                        target,
                        priority,
                        swappiness,
                        &mut reclaimed,
                        stats,
                    )?;
                    if reclaimed >= target {
                        break;
                    }
                }
                if reclaimed >= target || priority == 0 {
                    break;
                }
                priority -= 1;
            }
            if reclaimed > 0 {
                return Ok(reclaimed);
            }
        }
        Ok(0)
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

    /// `shrink_many()` on `node` at `priority`, inside one read-side section of the tree's
    /// RCU domain on `cpu`: every memcg of the FIFO's old generation is pinned, shrunk
    /// (`shrink_one()`) and rotated by the op it returns, until `target` is met.
    #[allow(clippy::too_many_arguments)]
    fn shrink_many(
        &self,
        node: NodeId,
        pgdat: &PgData<P>,
        cpu: usize,
        target: u64,
        priority: u32,
        swappiness: u8,
        reclaimed: &mut u64,
        stats: &mut ReclaimStats,
    ) -> Result<(), MemcgError> {
        let guard = self
            .rcu()
            .read_lock(cpu)
            .map_err(|e| MemcgError::Lru(e.into()))?;
        let fifo = pgdat.memcg_lru();
        // get_random_u32_below(MEMCG_NR_BINS) for the first bin.
        let first_bin = fifo.next_random_bin();
        let walked = fifo.shrink_many(&guard, first_bin, |lruvec| {
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
                target - *reclaimed,
                priority,
                swappiness,
                reclaimed,
            );
            // The pin was taken on this CPU's slot: dropped there too, so a reclaim visit
            // writes no shared count while the memcg is online.
            pinned.put_on(cpu);
            Some(ShrinkStep {
                op,
                // should_abort_scan(): root reclaim stops once the request is met.
                abort: *reclaimed >= target,
            })
        });
        drop(guard);
        stats.add_shrink_many(&walked.map_err(MemcgError::Lru)?);
        Ok(())
    }

    /// `shrink_one()`: a memcg within its effective `memory.min` is only rotated young, one
    /// within its `memory.low` is rotated to the tail unless it is there already; otherwise
    /// reclaim from `m` on `node`, then choose its rotation: young after a
    /// successful pass (the lruvec ran out of cold folios and the memcg is online), none if
    /// it failed but is sizable at `priority`, otherwise one retry at the tail, then young.
    #[allow(clippy::too_many_arguments)]
    fn shrink_one(
        &self,
        m: &MemCgroup<P>,
        node: NodeId,
        cpu: usize,
        nr: u64,
        priority: u32,
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
        let (freed, success) = self.lru.shrink_lruvec(self, m, node, cpu, nr, swappiness);
        *reclaimed += freed;
        if success && m.is_online() {
            return MemcgLruOp::Young;
        }
        let Ok(lruvec) = m.lruvec(node) else {
            return MemcgLruOp::Nop;
        };
        if !success && lruvec_is_sizable(lruvec, swappiness, m.is_online(), priority) {
            return MemcgLruOp::Nop;
        }
        if lruvec.lrugen().memcg_node().seg.load(Ordering::Relaxed) != seg::TAIL {
            MemcgLruOp::Tail
        } else {
            MemcgLruOp::Young
        }
    }

    /// `shrink_node_memcgs()` for a non-root target: every memcg of the subtree on every
    /// node, resuming after the memcg the last walk stopped at (the reclaim iterator in
    /// `memcg_pn_write_hot`) and wrapping around to it; a lruvec that ran out of cold folios
    /// is rotated young (`lru_gen_shrink_lruvec()`). Memcgs within their effective
    /// `memory.min` are skipped, those within `memory.low` too unless `low_reclaim`; the
    /// effective protection is computed as each memcg is visited, parents before their
    /// children within a walk (`mem_cgroup_calculate_protection()`). Returns (pages
    /// reclaimed, whether a low-protected memcg was skipped).
    ///
    /// The walk is `mem_cgroup_iter()`'s ([`MemcgTree::iter_next`]): no tree lock, no
    /// allocation, each visited memcg pinned on this CPU's slot of its css count.
    fn shrink_node_memcgs(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        target: u64,
        swappiness: u8,
        low_reclaim: bool,
    ) -> (u64, bool) {
        let mut low_skipped = false;
        let mut reclaimed = 0;
        for node in 0..memcg.nr_nodes() as NodeId {
            let Ok(pn) = memcg.nodeinfo(node) else {
                continue;
            };
            let iter = &pn.write_hot().iter;
            // Resume after the memcg the last walk stopped at (`iter->position`) if it is
            // still in the subtree; from the start otherwise (Linux's
            // `invalidate_reclaim_iterators()`). Id 0 is never a memcg's.
            let last = iter.position.load(Ordering::Relaxed);
            let mut pos = self.resume_at(memcg, last, cpu);
            // With a resume point the walk goes to the end, then from the start up to and
            // including that point; without one, once from the start.
            let mut wrapped = pos.is_none();
            loop {
                let Some(victim) = self.iter_next(memcg, pos.take(), cpu) else {
                    if wrapped {
                        break;
                    }
                    wrapped = true;
                    continue;
                };
                let last_of_walk = wrapped && u32::from(victim.id()) == last;
                let skip = match self.protection(memcg, &victim) {
                    Protection::Min => true,
                    Protection::Low if !low_reclaim => {
                        low_skipped = true;
                        true
                    }
                    _ => false,
                };
                if !skip {
                    let (freed, rotate) = self.lru.shrink_lruvec(
                        self,
                        &victim,
                        node,
                        cpu,
                        target - reclaimed,
                        swappiness,
                    );
                    reclaimed += freed;
                    if rotate {
                        self.lru.rotate(&victim, node, MemcgLruOp::Young);
                    }
                    if reclaimed >= target {
                        // `mem_cgroup_iter_break()`: the next walk starts after this one.
                        iter.position
                            .store(u32::from(victim.id()), Ordering::Relaxed);
                        victim.put_on(cpu);
                        return (reclaimed, low_skipped);
                    }
                }
                if last_of_walk {
                    victim.put_on(cpu);
                    break;
                }
                pos = Some(victim);
            }
            iter.generation.fetch_add(1, Ordering::Relaxed);
        }
        (reclaimed, low_skipped)
    }

    /// The memcg with id `last`, pinned on `cpu`, if it is still linked in `root`'s subtree
    /// (where the last reclaim walk of a node stopped).
    fn resume_at(&self, root: &MemCgroup<P>, last: u32, cpu: usize) -> Option<MemcgRef<'_, P, O>> {
        let id = crate::MemcgId::try_from(last).ok().filter(|&id| id != 0)?;
        let guard = self.rcu().read_lock(cpu).ok()?;
        let m = self.lookup_rcu(&guard, id).ok()?;
        if !m.is_descendant(root) || !m.css_tryget_on(cpu) {
            return None;
        }
        Some(MemcgRef::new(self, core::ptr::NonNull::from(m)))
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

/// `lruvec_is_sizable()`: the evictable pages at `swappiness`, shifted by the reclaim
/// priority for an online memcg, are not zero.
fn lruvec_is_sizable<P: MemCgroupPerNode>(
    lruvec: &lru::Lruvec<P>,
    swappiness: u8,
    online: bool,
    priority: u32,
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
        total >> priority != 0
    } else {
        total != 0
    }
}
