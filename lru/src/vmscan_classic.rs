//! Classic (active/inactive) reclaim: `shrink_active_list` and `shrink_inactive_list`.
//!
//! Models the two-list path of mm/vmscan.c for lruvecs in [`LruMode::Classic`]: when the
//! inactive list of a type is smaller than its active list, folios move from the active
//! tail to the inactive head (deactivation marks them `WORKINGSET`, as Linux does); the
//! inactive tail is then reclaimed, giving a folio that was referenced since the last
//! scan a second chance at the inactive head. Evicted folios get a classic shadow
//! (`workingset_eviction`, the lruvec's `nonresident_age`), checked on refault by
//! [`crate::workingset`]. Simplified against Linux: no proportional anon/file scan
//! balance (file first, then anon, per swappiness), no rmap walk, and the active list is
//! deactivated only when the inactive one is low (Linux also deactivates when refaults
//! were seen since the last cycle, `lruvec->refaults` against `WORKINGSET_ACTIVATE`).

use crate::error::LruError;
use crate::folio::{Folio, FolioFlags, LRU_GEN_ANON, LRU_GEN_FILE};
use crate::lruvec::{LruList, LruMode, Lruvec, LruvecGuard, LruvecHost};
use crate::release::{FolioRelease, folio_put};
use crate::vmscan::{EvictStats, SWAP_CLUSTER_MAX, SWAPPINESS_ANON_ONLY};
use crate::workingset::Shadow;

fn lists(ty: usize) -> (LruList, LruList) {
    if ty == LRU_GEN_FILE {
        (LruList::InactiveFile, LruList::ActiveFile)
    } else {
        (LruList::InactiveAnon, LruList::ActiveAnon)
    }
}

impl<H: LruvecHost> LruvecGuard<'_, H> {
    /// `shrink_active_list`: deactivate up to `nr` folios from the active tail of `ty`.
    fn shrink_active_list(
        &mut self,
        ty: usize,
        nr: usize,
        deferred: &mut alloc::vec::Vec<&'static Folio>,
        stats: &mut EvictStats,
    ) -> Result<(), LruError> {
        let (_, active) = lists(ty);
        for _ in 0..nr {
            let Some(folio) = self.lru_tail(active) else {
                break;
            };
            stats.scanned += 1;
            // Pin first, as `isolate_lru_folios()` does: a folio whose last reference is
            // being dropped is its releaser's, which unlinks it only if it can clear the
            // LRU flag; clearing it here without a pin would leave the releaser to free
            // a folio that the re-add below puts back on the list with no reference.
            if !folio.try_get() {
                self.move_to_list_head(folio)?;
                stats.skipped += 1;
                continue;
            }
            // Dropped once the lock is released (it may be the last reference).
            deferred.push(folio);
            if !folio.test_clear_lru() {
                // Someone else is moving it; rotate it out of the way.
                self.move_to_list_head(folio)?;
                stats.skipped += 1;
                continue;
            }
            ksync::race::window();
            self.lruvec_del_folio(folio, false)?;
            folio.clear(FolioFlags::ACTIVE | FolioFlags::REFERENCED);
            folio.set(FolioFlags::WORKINGSET);
            let res = self.lruvec_add_folio(folio, false);
            folio.set(FolioFlags::LRU);
            res?;
        }
        Ok(())
    }

    /// `shrink_inactive_list`: isolate up to `want` folios from the inactive tail of `ty`
    /// into `out`, giving referenced ones a second chance. Looks at most
    /// `want + SWAP_CLUSTER_MAX` (a batch of second chances and busy folios beyond what it
    /// takes, as Linux isolates in batches of `SWAP_CLUSTER_MAX` under one lru_lock hold).
    /// Returns the folios scanned but not isolated (rotated back, for `lru_note_cost()`).
    fn shrink_inactive_list(
        &mut self,
        ty: usize,
        want: usize,
        out: &mut alloc::vec::Vec<&'static Folio>,
        deferred: &mut alloc::vec::Vec<&'static Folio>,
        stats: &mut EvictStats,
    ) -> Result<u64, LruError> {
        let scanned = stats.scanned;
        let (inactive, _) = lists(ty);
        let mut taken = 0;
        // A bounded loop (no budget counter a broken decrement could keep from ending).
        for _ in 0..want + SWAP_CLUSTER_MAX {
            if taken >= want {
                break;
            }
            let Some(folio) = self.lru_tail(inactive) else {
                break;
            };
            stats.scanned += 1;
            // Pin first (a folio being freed is its releaser's), then TestClearLRU.
            if !folio.try_get() {
                self.move_to_list_head(folio)?;
                stats.skipped += 1;
                continue;
            }
            if !folio.test_clear_lru() {
                deferred.push(folio);
                self.move_to_list_head(folio)?;
                stats.skipped += 1;
                continue;
            }
            if folio.test_and_clear(FolioFlags::REFERENCED) {
                let res = self.move_to_list_head(folio);
                folio.set(FolioFlags::LRU);
                deferred.push(folio);
                res?;
                stats.protected += 1;
                continue;
            }
            self.lruvec_del_folio(folio, true)?;
            out.push(folio);
            taken += 1;
        }
        Ok((stats.scanned - scanned) as u64 - taken as u64)
    }
}

impl<H: LruvecHost> Lruvec<H> {
    /// Classic reclaim of up to `nr_to_reclaim` folios (`shrink_lruvec` without MGLRU).
    /// `swappiness` 0 = file only, [`SWAPPINESS_ANON_ONLY`] = anon only, otherwise file
    /// first.
    /// `EvictStats::protected` counts second chances. Evicted folios are off every list
    /// with LRU clear and are passed with their shadow to `sink` after lru_lock is dropped.
    /// Each round notes its rotations as reclaim cost (`lru_note_cost()`: on this lruvec
    /// before its lock is dropped, then on the ancestors'; no writeback, so no I/O cost).
    pub(crate) fn shrink_classic<R: FolioRelease + ?Sized>(
        &self,
        nr_to_reclaim: usize,
        swappiness: u8,
        release: &R,
        mut sink: impl FnMut(&'static Folio, Shadow),
    ) -> Result<EvictStats, LruError> {
        debug_assert_eq!(self.mode(), LruMode::Classic);
        let types: &[usize] = match swappiness {
            0 => &[LRU_GEN_FILE],
            SWAPPINESS_ANON_ONLY => &[LRU_GEN_ANON],
            _ => &[LRU_GEN_FILE, LRU_GEN_ANON],
        };
        let mut stats = EvictStats::default();
        let total: usize = types
            .iter()
            .map(|&t| self.lru_size(lists(t).0) + self.lru_size(lists(t).1))
            .sum();
        let max_rounds = 8 + 4 * (total / SWAP_CLUSTER_MAX + 1) + nr_to_reclaim;
        let mut out = alloc::vec::Vec::with_capacity(SWAP_CLUSTER_MAX);
        let mut deferred = alloc::vec::Vec::new();
        for _ in 0..max_rounds {
            if stats.evicted >= nr_to_reclaim {
                break;
            }
            let before = (stats.scanned, stats.evicted);
            let mut rotated = [0u64; 2];
            {
                let mut g = self.lock();
                for &ty in types {
                    let want = (nr_to_reclaim - stats.evicted - out.len()).min(SWAP_CLUSTER_MAX);
                    if want == 0 {
                        break;
                    }
                    let (inactive, active) = lists(ty);
                    let (ni, na) = (self.lru_size(inactive), self.lru_size(active));
                    if ni < na {
                        // inactive_is_low(): deactivate just enough to even the lists.
                        let nr = (na - ni).div_ceil(2).min(SWAP_CLUSTER_MAX);
                        g.shrink_active_list(ty, nr, &mut deferred, &mut stats)?;
                    }
                    rotated[ty] =
                        g.shrink_inactive_list(ty, want, &mut out, &mut deferred, &mut stats)?;
                }
                for ty in [LRU_GEN_ANON, LRU_GEN_FILE] {
                    if rotated[ty] > 0 {
                        g.note_cost(ty == LRU_GEN_FILE, rotated[ty]);
                    }
                }
            }
            for ty in [LRU_GEN_ANON, LRU_GEN_FILE] {
                if rotated[ty] > 0 {
                    self.note_cost_ancestors(ty == LRU_GEN_FILE, rotated[ty]);
                }
            }
            let cpu = ksync::this_cpu();
            for folio in deferred.drain(..) {
                folio_put(release, cpu, folio)?;
            }
            for folio in out.drain(..) {
                let shadow = self.workingset_eviction(folio);
                folio.clear(FolioFlags::ACTIVE | FolioFlags::REFERENCED);
                sink(folio, shadow);
                stats.evicted += 1;
            }
            if (stats.scanned, stats.evicted) == before {
                break;
            }
        }
        Ok(stats)
    }
}
