//! Shadow entries and refault detection (mm/workingset.c), MGLRU and classic.
//!
//! Models `pack_shadow()`/`unpack_shadow()`, `lru_gen_eviction()`, `lru_gen_test_recent()`
//! and `lru_gen_refault()`. When a folio is evicted its page-cache slot keeps a shadow: the
//! memcg id, node, whether it was in the working set, and a token: the oldest generation's
//! sequence and `max(refs - 1, 0)`, where `refs` is `folio_lru_refs()` (the accesses
//! through file descriptors, `REFERENCED` included). The eviction is counted in
//! `evicted[hist][type][tier]` with `tier = lru_tier_from_refs(refs, workingset)`; on
//! refault the token gives back `refs = token + 1`, which maps to the same tier for every
//! count (0 and 1 are tier 0), so each tier's refaults are counted against its own
//! evictions in `refaulted[]` and the PID controller in [`crate::vmscan`] compares like
//! with like. A refault is recent if its generation is within `MAX_NR_GENS` of `max_seq`;
//! only recent refaults in the fault path are activated (buffered reads are not; the fault
//! path's `folio_add_lru()` sets `ACTIVE`). The `evicted[]`/`refaulted[]` counters are
//! updated with lockless atomic adds — the lines seed 000 is about. Classic
//! lruvecs use `workingset_eviction()`/`workingset_refault()`: the shadow keeps the
//! lruvec's `nonresident_age`, and a refault whose distance fits in the working set
//! activates.

use crate::error::LruError;
use crate::folio::{Folio, FolioFlags, LRU_REFS_WIDTH};
use crate::lru_gen::{LruGenFolio, MAX_NR_GENS, lru_hist_from_seq, lru_tier_from_refs};
use crate::lruvec::{LruList, LruMode, Lruvec, LruvecHost};
use crate::nid::MAX_NUMNODES;
use crate::nid::NodeId;
use crate::sync::atomic::Ordering;

const WORKINGSET_SHIFT: u32 = 1;
const NODES_SHIFT: u32 = 6;
const MEM_CGROUP_ID_SHIFT: u32 = 16;
const EVICTION_SHIFT: u32 = 1 + WORKINGSET_SHIFT + NODES_SHIFT + MEM_CGROUP_ID_SHIFT;
/// Bits left for the eviction token (`EVICTION_MASK`).
const EVICTION_BITS: u32 = 64 - EVICTION_SHIFT;
const EVICTION_MASK: u64 = (1 << EVICTION_BITS) - 1;

/// A shadow entry: what a page-cache slot remembers about an evicted folio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shadow(u64);

impl Shadow {
    /// Pack a shadow (`pack_shadow`): `token | memcg | node | workingset | 1`, the low bit
    /// marking an xarray value entry.
    #[must_use]
    pub fn pack(memcg_id: u16, node: NodeId, token: u64, workingset: bool) -> Shadow {
        let mut v = token & EVICTION_MASK;
        v = (v << MEM_CGROUP_ID_SHIFT) | u64::from(memcg_id);
        v = (v << NODES_SHIFT) | u64::from(node % MAX_NUMNODES);
        v = (v << WORKINGSET_SHIFT) | u64::from(workingset);
        Shadow((v << 1) | 1)
    }

    /// Check and wrap a raw value read back from storage.
    pub fn from_raw(raw: u64) -> Result<Shadow, LruError> {
        if raw & 1 == 1 {
            Ok(Shadow(raw))
        } else {
            Err(LruError::InvalidShadow(raw))
        }
    }

    /// The raw value to store.
    #[must_use]
    pub fn raw(self) -> u64 {
        self.0
    }

    /// Whether the folio was in the working set when evicted.
    #[must_use]
    pub fn workingset(self) -> bool {
        (self.0 >> 1) & 1 == 1
    }

    /// The node the folio was evicted from.
    #[must_use]
    pub fn node(self) -> NodeId {
        ((self.0 >> (1 + WORKINGSET_SHIFT)) & ((1 << NODES_SHIFT) - 1)) as u32
    }

    /// The memcg the folio was charged to.
    #[must_use]
    pub fn memcg_id(self) -> u16 {
        ((self.0 >> (1 + WORKINGSET_SHIFT + NODES_SHIFT)) & 0xffff) as u16
    }

    /// The eviction token: `(min_seq << LRU_REFS_WIDTH) | (refs - 1)`.
    #[must_use]
    pub fn token(self) -> u64 {
        self.0 >> EVICTION_SHIFT
    }

    /// The generation sequence the folio was evicted from (masked).
    #[must_use]
    pub fn seq(self) -> u64 {
        self.token() >> LRU_REFS_WIDTH
    }

    /// The access count the refault restores (`(token & refs mask) + 1`; a folio evicted
    /// with 0 or 1 accesses comes back with 1, the same tier).
    #[must_use]
    pub fn refs(self) -> u32 {
        (self.token() & ((1 << LRU_REFS_WIDTH) - 1)) as u32 + 1
    }
}

/// What a refault check concluded. The caller counts the stats Linux counts here:
/// `WORKINGSET_REFAULT` for every refault into this lruvec, `WORKINGSET_ACTIVATE` for
/// `activated`, `WORKINGSET_RESTORE` for `workingset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefaultOutcome {
    /// Evicted within the last `MAX_NR_GENS` generations: a working-set refault.
    pub recent: bool,
    /// A recent refault in the fault path: activated (it joins the youngest generation).
    pub activated: bool,
    /// The folio was marked `WORKINGSET` (the shadow said so).
    pub workingset: bool,
    /// The tier the refault was counted in (when recent).
    pub tier: usize,
}

impl<H: LruvecHost> Lruvec<H> {
    /// `lru_gen_eviction`: the shadow for `folio`, just evicted from this lruvec, and the
    /// lockless `evicted[hist][type][tier]` count. Reads `min_seq` without the lock.
    pub fn lru_gen_eviction(&self, folio: &Folio) -> Shadow {
        let ty = folio.lru_type();
        let refs = folio.lru_refs_total();
        let workingset = folio.test(FolioFlags::WORKINGSET);
        let tier = lru_tier_from_refs(refs, workingset);
        let min_seq = self.lrugen().min_seq()[ty].load(Ordering::Acquire);
        let token = (min_seq << LRU_REFS_WIDTH) | u64::from(refs.saturating_sub(1));
        let hist = lru_hist_from_seq(min_seq);
        self.lrugen().evicted()[hist][ty][tier].fetch_add(1, Ordering::Relaxed);
        crate::events::count_tier(crate::events::TierCounter::Evicted, ty, tier);
        Shadow::pack(self.memcg_id(), self.node(), token, workingset)
    }

    /// `lru_gen_test_recent`: whether `shadow` was evicted from this lruvec within the
    /// last `MAX_NR_GENS` generations. `None` if the shadow names another lruvec.
    #[must_use]
    pub fn lru_gen_test_recent(&self, shadow: Shadow) -> Option<bool> {
        if shadow.memcg_id() != self.memcg_id() || shadow.node() != self.node() {
            return None;
        }
        let mask = EVICTION_MASK >> LRU_REFS_WIDTH;
        let max_seq = self.lrugen().max_seq().load(Ordering::Acquire) & mask;
        Some(max_seq.abs_diff(shadow.seq()) < MAX_NR_GENS as u64)
    }

    /// `lru_gen_refault`: `folio` (charged to this lruvec, not yet on the LRU) refaults
    /// with `shadow`; `in_fault` says whether the refault happens in the page-fault path
    /// (`lru_gen_in_fault()`) rather than, say, a buffered read. A recent refault is counted
    /// in `refaulted[hist][type][tier]` (lockless) in the tier its eviction was counted in;
    /// in the fault path it is also activated, so [`crate::LruvecGuard::add_folio`] puts it
    /// in the youngest generation. A working-set shadow restores `WORKINGSET`, any other
    /// the access count (`refs - 1` in the refs bits, without `REFERENCED`: as in Linux
    /// it counts for nothing once the folio is accessed again, which starts over at one;
    /// see [`Folio::mark_accessed`]).
    pub fn lru_gen_refault(
        &self,
        folio: &Folio,
        shadow: Shadow,
        in_fault: bool,
    ) -> Result<RefaultOutcome, LruError> {
        if folio.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        if !self.owns(folio) {
            return Err(LruError::WrongLruvec);
        }
        let Some(recent) = self.lru_gen_test_recent(shadow) else {
            return Err(LruError::WrongLruvec);
        };
        let workingset = shadow.workingset();
        let refs = shadow.refs();
        let tier = lru_tier_from_refs(refs, workingset);
        let mut out = RefaultOutcome {
            recent,
            activated: false,
            workingset: false,
            tier,
        };
        if !recent {
            return Ok(out);
        }
        let ty = folio.lru_type();
        let hist = lru_hist_from_seq(self.lrugen().min_seq()[ty].load(Ordering::Acquire));
        let counter = &self.lrugen().refaulted()[hist][ty][tier];
        let old = counter.fetch_add(1, Ordering::Relaxed);
        ksync::handoff::note_write::<crate::lock_classes::RefaultedWord>(
            core::ptr::from_ref(counter) as usize,
            old,
            old.wrapping_add(1),
        );
        crate::events::count_tier(crate::events::TierCounter::Refaulted, ty, tier);
        if in_fault {
            // What folio_add_lru() does for folios added in the fault path.
            folio.set(FolioFlags::ACTIVE);
            out.activated = true;
        }
        if workingset {
            folio.set(FolioFlags::WORKINGSET);
            out.workingset = true;
        } else {
            folio.set_lru_refs(refs - 1);
        }
        Ok(out)
    }
}

impl<H: LruvecHost> Lruvec<H> {
    /// Classic `workingset_eviction`: the shadow records the lruvec's `nonresident_age`
    /// (its token is that age, not an MGLRU sequence), then the clock advances.
    pub fn workingset_eviction(&self, folio: &Folio) -> Shadow {
        let eviction = self.nonresident_age() & EVICTION_MASK;
        self.workingset_age_nonresident(1);
        Shadow::pack(
            self.memcg_id(),
            self.node(),
            eviction,
            folio.test(FolioFlags::WORKINGSET),
        )
    }

    /// Classic `workingset_test_recent`: the refault distance (evictions and activations
    /// since this folio's eviction) is within the working set this lruvec could have kept.
    /// `file` is the refaulting folio's type. `None` if the shadow names another lruvec.
    #[must_use]
    pub fn workingset_test_recent(&self, shadow: Shadow, file: bool) -> Option<bool> {
        if shadow.memcg_id() != self.memcg_id() || shadow.node() != self.node() {
            return None;
        }
        let distance = self.nonresident_age().wrapping_sub(shadow.token()) & EVICTION_MASK;
        let mut size = self.lru_size(LruList::ActiveFile) + self.lru_size(LruList::ActiveAnon);
        size += if file {
            self.lru_size(LruList::InactiveAnon)
        } else {
            self.lru_size(LruList::InactiveFile)
        };
        Some(distance <= size as u64)
    }

    /// Classic `workingset_refault`: a recent refault activates the folio (and ages the
    /// clock, as an activation); a working-set shadow restores `WORKINGSET` and notes the
    /// refault as reclaim cost (`lru_note_cost_refault()`: this lruvec's lru_lock, then
    /// each ancestor's).
    pub fn workingset_refault(
        &self,
        folio: &Folio,
        shadow: Shadow,
    ) -> Result<RefaultOutcome, LruError> {
        if folio.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        if !self.owns(folio) {
            return Err(LruError::WrongLruvec);
        }
        let recent = self
            .workingset_test_recent(shadow, folio.is_file_lru())
            .ok_or(LruError::WrongLruvec)?;
        let mut out = RefaultOutcome {
            recent,
            activated: false,
            workingset: false,
            tier: 0,
        };
        if recent {
            folio.set(FolioFlags::ACTIVE);
            self.workingset_age_nonresident(1);
            out.activated = true;
            if shadow.workingset() {
                folio.set(FolioFlags::WORKINGSET);
                self.lru_note_cost_refault(folio);
                out.workingset = true;
            }
        }
        Ok(out)
    }

    /// `workingset_refault` for either mode: [`Lruvec::lru_gen_refault`] on MGLRU,
    /// [`Lruvec::workingset_refault`] on classic lruvecs. `in_fault`: see
    /// [`Lruvec::lru_gen_refault`] (classic activation does not depend on it).
    pub fn refault(
        &self,
        folio: &Folio,
        shadow: Shadow,
        in_fault: bool,
    ) -> Result<RefaultOutcome, LruError> {
        match self.mode() {
            LruMode::Mglru => self.lru_gen_refault(folio, shadow, in_fault),
            LruMode::Classic => self.workingset_refault(folio, shadow),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn shadow_round_trip() {
        let s = Shadow::pack(0xbeef, 63, (12345 << LRU_REFS_WIDTH) | 2, true);
        assert_eq!(s.memcg_id(), 0xbeef);
        assert_eq!(s.node(), 63);
        assert!(s.workingset());
        assert_eq!(s.seq(), 12345);
        assert_eq!(s.refs(), 3);
        assert_eq!(Shadow::from_raw(s.raw()), Ok(s));
        assert_eq!(Shadow::from_raw(4), Err(LruError::InvalidShadow(4)));
        let z = Shadow::pack(0, 0, 0, false);
        assert_eq!(
            (z.memcg_id(), z.node(), z.workingset(), z.refs()),
            (0, 0, false, 1)
        );
    }

    #[test]
    fn shadow_layout_is_linuxs() {
        // pack_shadow(): token | memcg id (16 bits) | node (6 bits) | workingset | 1.
        let s = Shadow::pack(0x1234, 2, 3, true);
        assert_eq!(s.raw(), (3 << 24) | (0x1234 << 8) | (2 << 2) | (1 << 1) | 1);
        assert_eq!(Shadow::pack(0, 0, 0, false).raw(), 1);
        // The token keeps 64 - 24 bits.
        assert_eq!(Shadow::pack(0, 0, u64::MAX, false).token(), (1 << 40) - 1);
        assert_eq!(Shadow::pack(0, 0, 1 << 40, false).token(), 0);
        // A node beyond MAX_NUMNODES wraps instead of spilling into the memcg id.
        let s = Shadow::pack(0x1234, 64 + 5, 7, false);
        assert_eq!((s.memcg_id(), s.node(), s.token()), (0x1234, 5, 7));
        let s = Shadow::pack(0xffff, 63, 0, false);
        assert_eq!(
            (s.memcg_id(), s.node(), s.workingset()),
            (0xffff, 63, false)
        );
        // Only values with the low tag bit are shadows.
        assert_eq!(Shadow::from_raw(7), Ok(Shadow(7)));
        assert_eq!(Shadow::from_raw(6), Err(LruError::InvalidShadow(6)));
    }

    #[test]
    fn token_is_masked_not_overflowing() {
        let s = Shadow::pack(1, 1, u64::MAX, false);
        assert_eq!(s.memcg_id(), 1);
        assert_eq!(s.node(), 1);
        assert_eq!(s.token(), EVICTION_MASK);
    }
}
