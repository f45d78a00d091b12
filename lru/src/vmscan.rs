//! MGLRU aging and eviction (mm/vmscan.c).
//!
//! Aging (`inc_max_seq`) opens a new youngest generation; if a type already has
//! `MAX_NR_GENS` generations its oldest is first folded into the next one (`inc_min_seq`).
//! Eviction (`evict_folios`) scans the oldest generation from its tail under lru_lock:
//! `sort_folio` moves folios of protected tiers one generation up, `isolate_folio` takes
//! the rest (TestClearLRU, unlink). The lock is dropped before the evicted folios and
//! their shadow entries are handed to the caller. `try_to_inc_min_seq` retires empty
//! generations. The tier PID controller (`read_ctrl_pos`, `positive_ctrl_err`,
//! `get_tier_idx`, `get_type_to_scan`) compares refault rates per tier, fed by the
//! lockless `evicted[]`/`refaulted[]` counters.

use crate::folio::{ANON_AND_FILE, Folio, FolioFlags, LRU_GEN_ANON, LRU_GEN_FILE, MAX_NR_ZONES};
use crate::lru_gen::{
    LruGenFolio, MAX_NR_GENS, MAX_NR_TIERS, MIN_LRU_BATCH, MIN_NR_GENS, NR_HIST_GENS,
    lru_gen_from_seq, lru_hist_from_seq, lru_tier_from_refs,
};
use crate::lruvec::{Lruvec, LruvecGuard, LruvecHost, decode_mglru_slot, mglru_slot};
use crate::release::{FolioRelease, folio_put};
use crate::sync::atomic::Ordering;
use crate::workingset::Shadow;
use crate::{LruError, LruMode};

/// Largest swappiness weight (`MAX_SWAPPINESS`): 0 means file only, 200 weighs anon most.
pub const MAX_SWAPPINESS: u8 = 200;

/// The reclaim batch, defined in a leaf below the lruvec (re-exported here, where reclaim
/// reads it).
pub use crate::swap_cluster::SWAP_CLUSTER_MAX;
/// `SWAPPINESS_ANON_ONLY` (`memory.reclaim`'s `swappiness=max`): anon only.
pub const SWAPPINESS_ANON_ONLY: u8 = MAX_SWAPPINESS + 1;

/// Folios isolated per lock hold (`MIN_LRU_BATCH`).
const EVICT_BATCH: usize = MIN_LRU_BATCH as usize;

/// What one `evict_folios` call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvictStats {
    /// Folios looked at on generation lists.
    pub scanned: usize,
    /// Folios moved to a younger generation because their tier is protected.
    pub protected: usize,
    /// Folios skipped because someone else isolated them first.
    pub skipped: usize,
    /// Folios evicted and handed to the caller with a shadow.
    pub evicted: usize,
    /// Generations created by aging on the way.
    pub aged: usize,
}

#[derive(Debug, Clone, Copy)]
struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

/// `positive_ctrl_err`: true if `pv` has few refaults or a refault rate not above `sp`'s.
fn positive_ctrl_err(sp: CtrlPos, pv: CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted * (sp.total + MIN_LRU_BATCH) * sp.gain
            <= (sp.refaulted + 1) * pv.total * pv.gain
}

/// Whether type `ty` is evictable at `swappiness` (`for_each_evictable_type`: anon unless
/// 0, file unless [`SWAPPINESS_ANON_ONLY`]).
fn eligible(swappiness: u8, ty: usize) -> bool {
    match ty {
        LRU_GEN_ANON => swappiness != 0,
        _ => swappiness != SWAPPINESS_ANON_ONLY,
    }
}

struct Isolated {
    folios: [Option<&'static Folio>; EVICT_BATCH],
    nr: usize,
    limit: usize,
    /// Folios pinned by `isolate_folio` that someone else isolated first: their references
    /// are dropped after the lock (a drop may be the last one and release the folio).
    deferred: [Option<&'static Folio>; 2 * EVICT_BATCH],
    nr_deferred: usize,
}

impl Isolated {
    fn new(limit: usize) -> Self {
        Isolated {
            folios: [None; EVICT_BATCH],
            nr: 0,
            limit,
            deferred: [None; 2 * EVICT_BATCH],
            nr_deferred: 0,
        }
    }

    fn defer_put(&mut self, folio: &'static Folio) {
        // At most one per scanned folio, and a lock hold scans at most 2 * EVICT_BATCH.
        if let Some(slot) = self.deferred.get_mut(self.nr_deferred) {
            *slot = Some(folio);
            self.nr_deferred += 1;
        }
    }
}

impl<H: LruvecHost> LruvecGuard<'_, H> {
    fn lrugen(&self) -> &H::Gen {
        self.lruvec().lrugen()
    }

    fn max_seq(&self) -> u64 {
        self.lrugen().max_seq().load(Ordering::Relaxed)
    }

    fn min_seq(&self, ty: usize) -> u64 {
        self.lrugen().min_seq()[ty].load(Ordering::Relaxed)
    }

    /// Generations of type `ty` (`get_nr_gens`).
    #[must_use]
    pub fn nr_gens(&self, ty: usize) -> u64 {
        self.max_seq() - self.min_seq(ty) + 1
    }

    /// `read_ctrl_pos`: tier `tier`'s refaults and total (evicted + protected, plus the
    /// averages); `tier == MAX_NR_TIERS` sums every tier.
    fn read_ctrl_pos(&self, ty: usize, tier: usize, gain: u64) -> CtrlPos {
        let g = self.lrugen();
        let hist = lru_hist_from_seq(self.min_seq(ty));
        let (mut refaulted, mut total) = (0, 0);
        for i in tier % MAX_NR_TIERS..=tier.min(MAX_NR_TIERS - 1) {
            refaulted += g.avg_refaulted()[ty][i].load(Ordering::Relaxed)
                + g.refaulted()[hist][ty][i].load(Ordering::Relaxed);
            total += g.avg_total()[ty][i].load(Ordering::Relaxed)
                + g.protected()[hist][ty][i].load(Ordering::Relaxed)
                + g.evicted()[hist][ty][i].load(Ordering::Relaxed);
        }
        CtrlPos {
            refaulted,
            total,
            gain,
        }
    }

    /// `get_tier_idx`: the highest tier still evicted; tiers above it are protected. The
    /// 2:3 gain leaves a margin for fluctuations.
    fn get_tier_idx(&self, ty: usize) -> usize {
        let sp = self.read_ctrl_pos(ty, 0, 2);
        let first_negative = (1..MAX_NR_TIERS)
            .find(|&tier| !positive_ctrl_err(sp, self.read_ctrl_pos(ty, tier, 3)))
            .unwrap_or(MAX_NR_TIERS);
        first_negative - 1
    }

    /// `get_type_to_scan`: file at swappiness 0 or 1, anon at 200 and above; otherwise
    /// compare the sum of all tiers of anon with that of file, weighted by swappiness.
    fn get_type_to_scan(&self, swappiness: u8) -> usize {
        if swappiness <= 1 {
            return LRU_GEN_FILE;
        }
        if swappiness >= MAX_SWAPPINESS {
            return LRU_GEN_ANON;
        }
        let sp = self.read_ctrl_pos(LRU_GEN_ANON, MAX_NR_TIERS, u64::from(swappiness));
        let pv = self.read_ctrl_pos(
            LRU_GEN_FILE,
            MAX_NR_TIERS,
            u64::from(MAX_SWAPPINESS - swappiness),
        );
        usize::from(positive_ctrl_err(sp, pv))
    }

    /// `reset_ctrl_pos`: on carryover (min_seq advancing) fold the retiring history slot
    /// into the averages; clear the slot on carryover with one history generation
    /// (`NR_HIST_GENS == 1`), or the slot `max_seq + 1` reuses otherwise.
    fn reset_ctrl_pos(&self, ty: usize, carryover: bool) {
        let clear = if carryover {
            NR_HIST_GENS == 1
        } else {
            NR_HIST_GENS > 1
        };
        if !carryover && !clear {
            return;
        }
        let g = self.lrugen();
        let seq = if carryover {
            self.min_seq(ty)
        } else {
            self.max_seq() + 1
        };
        let hist = lru_hist_from_seq(seq);
        for tier in 0..MAX_NR_TIERS {
            if carryover {
                let avg_r = &g.avg_refaulted()[ty][tier];
                let sum = avg_r.load(Ordering::Relaxed)
                    + g.refaulted()[hist][ty][tier].load(Ordering::Relaxed);
                avg_r.store(sum / 2, Ordering::Relaxed);
                let avg_t = &g.avg_total()[ty][tier];
                let sum = avg_t.load(Ordering::Relaxed)
                    + g.protected()[hist][ty][tier].load(Ordering::Relaxed)
                    + g.evicted()[hist][ty][tier].load(Ordering::Relaxed);
                avg_t.store(sum / 2, Ordering::Relaxed);
            }
            if clear {
                g.refaulted()[hist][ty][tier].store(0, Ordering::Relaxed);
                g.evicted()[hist][ty][tier].store(0, Ordering::Relaxed);
                g.protected()[hist][ty][tier].store(0, Ordering::Relaxed);
            }
        }
    }

    /// Count a folio of tier `tier` protected (under the lock).
    fn count_protected(&self, ty: usize, tier: usize) {
        let hist = lru_hist_from_seq(self.min_seq(ty));
        let p = &self.lrugen().protected()[hist][ty][tier];
        p.store(p.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Move a folio of the oldest generation one generation up, to the tail (oldest end)
    /// of that list, dropping its access count (`folio_inc_gen` clears `LRU_REFS_FLAGS`,
    /// the refs bits and `REFERENCED`, + `list_move_tail`).
    fn folio_inc_gen(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        let slot = self.unlink(folio)?;
        let (old_gen, ty, zone) = decode_mglru_slot(slot);
        let new_gen = (old_gen + 1) % MAX_NR_GENS;
        folio.clear(FolioFlags::REFERENCED);
        folio.set_lru_refs(0);
        folio.set_lru_gen(Some(new_gen));
        self.link(folio, mglru_slot(new_gen, ty, zone), true)?;
        self.lru_gen_update_size(ty, zone, Some(old_gen), Some(new_gen));
        Ok(())
    }

    /// `inc_min_seq`: fold the oldest generation of `ty` into the next one, counting its
    /// folios as protected in their tier, as Linux does (but not the working set being
    /// lazily promoted: all refs bits and `WORKINGSET`).
    fn inc_min_seq(&mut self, ty: usize) -> Result<(), LruError> {
        let old_gen = lru_gen_from_seq(self.min_seq(ty));
        for zone in 0..MAX_NR_ZONES {
            while let Some(folio) = self.gen_lists()[old_gen][ty][zone].back() {
                let refs = folio.lru_refs_total();
                let workingset = folio.test(FolioFlags::WORKINGSET);
                self.folio_inc_gen(folio)?;
                // Each round moves one folio off the list, or the loop would never end.
                if folio.lru_gen() == Some(old_gen) {
                    return Err(LruError::CorruptList);
                }
                if !lazily_promoted(refs, workingset) {
                    self.count_protected(ty, lru_tier_from_refs(refs, workingset));
                }
            }
        }
        self.reset_ctrl_pos(ty, true);
        let m = &self.lrugen().min_seq()[ty];
        m.store(m.load(Ordering::Relaxed) + 1, Ordering::Release);
        Ok(())
    }

    /// Aging (`inc_max_seq`): open a new youngest generation stamped `now`; returns the
    /// new `max_seq`. Fails only on a corrupted list.
    pub fn inc_max_seq(&mut self, now: u64) -> Result<u64, LruError> {
        if self.lruvec().mode() != LruMode::Mglru {
            return Err(LruError::MglruDisabled);
        }
        for ty in (0..ANON_AND_FILE).rev() {
            if self.nr_gens(ty) == MAX_NR_GENS as u64 {
                self.inc_min_seq(ty)?;
            }
        }
        // Update the active/inactive sizes "for compatibility" (Linux's inc_max_seq): the
        // generation behind max_seq turns inactive, the one that max_seq + 1 reuses turns
        // active.
        let prev = lru_gen_from_seq(self.max_seq() - 1);
        let next_gen = lru_gen_from_seq(self.max_seq() + 1);
        for ty in 0..ANON_AND_FILE {
            let (inactive, active) = crate::lruvec::gen_lists(ty);
            for zone in 0..MAX_NR_ZONES {
                let nr = self.lrugen().nr_pages();
                let delta = nr[prev][ty][zone].load(Ordering::Relaxed)
                    - nr[next_gen][ty][zone].load(Ordering::Relaxed);
                if delta != 0 {
                    self.update_lru_size(inactive, zone, delta as isize);
                    self.update_lru_size(active, zone, -delta as isize);
                }
            }
        }
        for ty in 0..ANON_AND_FILE {
            self.reset_ctrl_pos(ty, false);
        }
        let next = self.max_seq() + 1;
        self.lrugen().timestamps()[lru_gen_from_seq(next)].store(now, Ordering::Relaxed);
        self.lrugen().max_seq().store(next, Ordering::Release);
        Ok(next)
    }

    /// `try_to_inc_min_seq`: retire empty oldest generations while more than
    /// `MIN_NR_GENS` remain. Returns whether any `min_seq` moved.
    pub fn try_to_inc_min_seq(&mut self) -> bool {
        let max_seq = self.max_seq();
        let mut moved = false;
        for ty in 0..ANON_AND_FILE {
            let min_seq = self.min_seq(ty);
            // The first sequence that is not empty or must stay (`seq + MIN_NR_GENS >
            // max_seq`), searched over a bounded range.
            let keep = (max_seq + 1).saturating_sub(MIN_NR_GENS).max(min_seq);
            let seq = (min_seq..keep)
                .find(|&seq| {
                    let r#gen = lru_gen_from_seq(seq);
                    self.gen_lists()[r#gen][ty].iter().any(|l| !l.is_empty())
                })
                .unwrap_or(keep);
            if seq > min_seq {
                self.reset_ctrl_pos(ty, true);
                self.lrugen().min_seq()[ty].store(seq, Ordering::Release);
                moved = true;
            }
        }
        moved
    }

    /// Whether eviction must age first (`should_run_aging`): the oldest eligible type
    /// is down to `MIN_NR_GENS` generations.
    #[must_use]
    pub fn should_run_aging(&self, swappiness: u8) -> bool {
        let max_seq = self.max_seq();
        (0..ANON_AND_FILE)
            .filter(|&ty| eligible(swappiness, ty))
            .map(|ty| self.min_seq(ty))
            .min()
            .is_some_and(|min_seq| min_seq + MIN_NR_GENS > max_seq)
    }

    /// `sort_folio`: handle folios that must not be isolated. True if it moved `folio`.
    /// Unevictable ones go to their list; a tier above `tier_idx` (or the working set at
    /// the top of the refs count) is protected: moved one generation up, and counted in
    /// its tier unless it is the working set being lazily promoted.
    fn sort_folio(&mut self, folio: &'static Folio, tier_idx: usize) -> Result<bool, LruError> {
        if folio.test(FolioFlags::UNEVICTABLE) {
            self.lruvec_del_folio(folio, true)?;
            self.lruvec_add_folio(folio, false)?;
            return Ok(true);
        }
        let refs = folio.lru_refs_total();
        let workingset = folio.test(FolioFlags::WORKINGSET);
        let tier = lru_tier_from_refs(refs, workingset);
        if tier > tier_idx || lazily_promoted(refs, workingset) {
            if !lazily_promoted(refs, workingset) {
                self.count_protected(folio.lru_type(), tier);
            }
            self.folio_inc_gen(folio)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// `isolate_folio` under the lock: pin the folio (`folio_try_get`: a folio whose last
    /// reference is being dropped is left to its releaser), TestClearLRU, then unlink. False
    /// if the folio is being freed or someone else owns it (it is moved to the list head so
    /// the scan goes on). An isolated folio carries the reference taken here.
    fn isolate_folio(
        &mut self,
        folio: &'static Folio,
        out: &mut Isolated,
    ) -> Result<bool, LruError> {
        if !folio.try_get() {
            let slot = self.unlink(folio)?;
            self.link(folio, slot, false)?;
            return Ok(false);
        }
        if !folio.test_clear_lru() {
            out.defer_put(folio);
            let slot = self.unlink(folio)?;
            self.link(folio, slot, false)?;
            return Ok(false);
        }
        if !folio.test(FolioFlags::REFERENCED) {
            folio.set_lru_refs(0);
        }
        folio.clear(FolioFlags::RECLAIM);
        self.lruvec_del_folio(folio, true)?;
        Ok(true)
    }

    /// `scan_folios`: walk the oldest generation of `ty` from its tail, looking at each folio
    /// at most once and at most `2 * MIN_LRU_BATCH` folios per lock hold.
    fn scan_folios(
        &mut self,
        ty: usize,
        tier_idx: usize,
        out: &mut Isolated,
        stats: &mut EvictStats,
    ) -> Result<usize, LruError> {
        let r#gen = lru_gen_from_seq(self.min_seq(ty));
        let mut remaining = 2 * EVICT_BATCH;
        let mut scanned = 0;
        let mut isolated = 0;
        for zone in (0..MAX_NR_ZONES).rev() {
            // Each folio is looked at once per scan: a skipped one goes back to the head of
            // the list it came from (Linux collects them on a private list and splices it
            // back afterwards), so the scan stops after the folios the list held.
            let mut left = self.lrugen().nr_pages()[r#gen][ty][zone].load(Ordering::Relaxed);
            while out.nr < out.limit && remaining > 0 && left > 0 {
                let Some(folio) = self.gen_lists()[r#gen][ty][zone].back() else {
                    break;
                };
                left -= 1;
                remaining -= 1;
                scanned += 1;
                if self.sort_folio(folio, tier_idx)? {
                    stats.protected += 1;
                } else if self.isolate_folio(folio, out)? {
                    out.folios[out.nr] = Some(folio);
                    out.nr += 1;
                    isolated += 1;
                } else {
                    stats.skipped += 1;
                }
            }
        }
        stats.scanned += scanned;
        Ok(if isolated > 0 || remaining == 0 {
            scanned
        } else {
            0
        })
    }

    /// `isolate_folios`: scan the evictable types, starting with `get_type_to_scan`'s, each
    /// with its own tier (`get_tier_idx`); fall back to the other type if nothing came of
    /// the first.
    fn isolate_folios(
        &mut self,
        swappiness: u8,
        out: &mut Isolated,
        stats: &mut EvictStats,
    ) -> Result<usize, LruError> {
        let mut ty = self.get_type_to_scan(swappiness);
        for _ in 0..ANON_AND_FILE {
            if eligible(swappiness, ty) {
                let tier_idx = self.get_tier_idx(ty);
                let scanned = self.scan_folios(ty, tier_idx, out, stats)?;
                if scanned > 0 {
                    return Ok(scanned);
                }
            }
            ty = 1 - ty;
        }
        Ok(0)
    }
}

/// `refs + workingset == BIT(LRU_REFS_WIDTH) + 1`: every refs bit and `WORKINGSET` set,
/// the working set MGLRU promotes lazily (moved up without counting it as protected).
fn lazily_promoted(refs: u32, workingset: bool) -> bool {
    refs + u32::from(workingset) == (1 << crate::folio::LRU_REFS_WIDTH) + 1
}

impl<H: LruvecHost> Lruvec<H> {
    /// Age under the lock (`try_to_inc_max_seq` with a forced scan): a new generation.
    pub fn age(&self, now: u64) -> Result<u64, LruError> {
        self.lock().inc_max_seq(now)
    }

    fn eligible_pages(&self, swappiness: u8) -> i64 {
        (0..ANON_AND_FILE)
            .filter(|&ty| eligible(swappiness, ty))
            .map(|ty| {
                (0..MAX_NR_GENS)
                    .map(|g| self.nr_gen_pages(g, ty))
                    .sum::<i64>()
            })
            .sum()
    }

    /// Evict up to `nr_to_evict` folios from the oldest generations (`evict_folios`,
    /// looped as `try_to_shrink_lruvec` does), aging when only `MIN_NR_GENS` are left.
    /// Each folio reaches `sink` with a reference reclaim took when it isolated it (Linux's
    /// `folio_try_get` in `isolate_folio`), which the caller drops when it is done with the
    /// folio (its free hook freezes it away, or a putback drops it).
    /// On a classic lruvec this runs the active/inactive path instead
    /// ([`crate::vmscan_classic`]), with classic shadows.
    /// `swappiness` 0 = file only, [`SWAPPINESS_ANON_ONLY`] = anon only, in between a weight
    /// (anon vs file, out of [`MAX_SWAPPINESS`]). Each evicted folio is
    /// off every list with LRU clear, and is passed with its shadow to `sink` after
    /// lru_lock is dropped; the caller frees it. A folio isolated and then kept (deferred)
    /// drops reclaim's reference again; if that was the last one (a truncation raced with
    /// reclaim) the folio goes to `release` (`__folio_put`, see [`crate::release`]).
    pub fn evict_folios<R: FolioRelease + ?Sized>(
        &self,
        nr_to_evict: usize,
        swappiness: u8,
        now: u64,
        release: &R,
        mut sink: impl FnMut(&'static Folio, Shadow),
    ) -> Result<EvictStats, LruError> {
        let swappiness = swappiness.min(SWAPPINESS_ANON_ONLY);
        if self.mode() != LruMode::Mglru {
            return self.shrink_classic(nr_to_evict, swappiness, release, sink);
        }
        let mut stats = EvictStats::default();
        let total = usize::try_from(self.eligible_pages(swappiness)).unwrap_or(0);
        let max_rounds = 16 + (total / EVICT_BATCH + 1) * (MAX_NR_GENS + 2) + nr_to_evict;
        let mut rounds = 0;
        while stats.evicted < nr_to_evict && rounds < max_rounds {
            rounds += 1;
            if self.eligible_pages(swappiness) <= 0 {
                break;
            }
            let mut out = Isolated::new((nr_to_evict - stats.evicted).min(EVICT_BATCH));
            let mut aged = false;
            let (scanned, retired) = {
                let mut g = self.lock();
                if g.should_run_aging(swappiness) {
                    g.inc_max_seq(now)?;
                    stats.aged += 1;
                    aged = true;
                }
                let scanned = g.isolate_folios(swappiness, &mut out, &mut stats)?;
                (scanned, g.try_to_inc_min_seq())
            };
            let cpu = ksync::this_cpu();
            for folio in out.deferred[..out.nr_deferred].iter().flatten() {
                folio_put(release, cpu, folio)?;
            }
            for folio in out.folios[..out.nr].iter().flatten() {
                let shadow = self.lru_gen_eviction(folio);
                folio.clear(FolioFlags::ACTIVE | FolioFlags::REFERENCED);
                sink(folio, shadow);
                stats.evicted += 1;
            }
            if scanned == 0 && out.nr == 0 && !aged && !retired {
                break;
            }
        }
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_err_prefers_fewer_refaults() {
        let sp = CtrlPos {
            refaulted: 100,
            total: 1000,
            gain: 1,
        };
        let few = CtrlPos {
            refaulted: 10,
            total: 1000,
            gain: 1,
        };
        let many = CtrlPos {
            refaulted: 900,
            total: 1000,
            gain: 1,
        };
        assert!(positive_ctrl_err(sp, few));
        assert!(!positive_ctrl_err(sp, many));
        assert!(eligible(0, LRU_GEN_FILE) && !eligible(0, LRU_GEN_ANON));
        assert!(eligible(MAX_SWAPPINESS, LRU_GEN_ANON) && eligible(MAX_SWAPPINESS, LRU_GEN_FILE));
        assert!(
            eligible(SWAPPINESS_ANON_ONLY, LRU_GEN_ANON)
                && !eligible(SWAPPINESS_ANON_ONLY, LRU_GEN_FILE)
        );
    }

    #[test]
    fn ctrl_err_at_its_boundaries() {
        let pos = |refaulted, total, gain| CtrlPos {
            refaulted,
            total,
            gain,
        };
        // Fewer than MIN_LRU_BATCH refaults: never judged worse, whatever the rate.
        assert!(positive_ctrl_err(pos(0, 0, 1), pos(63, 63, 1)));
        assert!(!positive_ctrl_err(pos(0, 0, 1), pos(64, 64, 1)));
        // Equal rates once smoothed (sp.total + MIN_LRU_BATCH, sp.refaulted + 1):
        // 100 * (36 + 64) == (99 + 1) * 100 is still positive, one refault less is not.
        assert!(positive_ctrl_err(pos(99, 36, 1), pos(100, 100, 1)));
        assert!(!positive_ctrl_err(pos(98, 36, 1), pos(100, 100, 1)));
        // 64 * 164 = 10496 <= 11 * 1000.
        assert!(positive_ctrl_err(pos(10, 100, 1), pos(64, 1000, 1)));
        // The gains weigh each side: 64 * 164 * 3 > 11 * 1000 * 2, and
        // 64 * 164 * 2 <= 11 * 1000 * 3.
        assert!(!positive_ctrl_err(pos(10, 100, 3), pos(64, 1000, 2)));
        assert!(positive_ctrl_err(pos(10, 100, 2), pos(64, 1000, 3)));
    }
}
