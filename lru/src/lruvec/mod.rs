//! The lruvec: one per (memcg, node), its LRU lists and its lru_lock.
//!
//! Models `struct lruvec` (include/linux/mmzone.h) and the list helpers of
//! include/linux/mm_inline.h (`lruvec_add_folio`, `lruvec_del_folio`, `lru_gen_add_folio`,
//! `lru_gen_del_folio`, `update_lru_size`) and the locking of mm/memcontrol.c
//! (`folio_lruvec_lock`, `folio_lruvec_relock_irq`).
//!
//! The fields are in Linux's order: the list heads, `lru_lock`, `anon_cost`, `file_cost`,
//! `nonresident_age`, `refaults[]`, `flags`, `lrugen` and, last, `pgdat`. This model keeps
//! two ids of its own in the 8-byte `flags` word (the memcg id, and a lruvec id each folio
//! records so a wrong-lruvec delete is an error, not a corrupted list), so the struct has
//! Linux's offsets. `mm_state` (the page-table walk state of `CONFIG_LRU_GEN_WALKS_MMU`)
//! is not modelled: aging here does not walk page tables, so the struct is Linux's with
//! that option off. The per-zone list sizes are the host's ([`LruvecHost`]), as in Linux
//! they are `mem_cgroup_per_node::lru_zone_size`.
//!
//! The lock is chosen at creation ([`LruvecLock`], seed 004): a lruvec owns its
//! `lru_lock` (per memcg per node, Alex Shi's series) or takes its node's
//! (`pgdat->lru_lock`, one lock for every lruvec of the node, as before the series). Both
//! kinds of lruvec have the same layout (a node-locked lruvec leaves its own lock unused)
//! and run the same code; lock statistics keep the two classes apart.
//!
//! Isolation follows Alex Shi's series: clear the folio's LRU flag with one atomic
//! test-and-clear *first*, then find and lock the lruvec (stable now: the folio cannot move
//! to another memcg while someone owns its LRU flag), then unlink. Whoever wins the flag
//! owns the folio's list position; nobody else may move it, so it is never isolated twice
//! nor put on two lists.
//!
//! This module contains the crate's lruvec unsafe: the lists live in `UnsafeCell`s that
//! are only reached through an [`LruvecGuard`], which exists only while the lruvec's lock
//! is held, and the host is reached by `container_of` under [`LruvecHost`]'s contract.
//!
//! Unsafe code here, and why: an lruvec owns intrusive lists of `&'static Folio` in
//! `UnsafeCell`s that only its lock guard may touch, is built in place by an `unsafe fn
//! new` (its lists must not move once linked), and declares itself `Sync` on that
//! discipline.
#![allow(unsafe_code)]

use crate::error::LruError;
use crate::folio::{ANON_AND_FILE, Folio, FolioFlags, MAX_NR_ZONES, NO_SLOT, Zone};
use crate::list::{FolioList, folio_list};
use crate::lock_classes::LruLock;
use crate::lru_gen::{LruGenFolio, MAX_NR_GENS};
use crate::nid::NodeId;
use crate::sync::Lock;
use crate::sync::atomic::{AtomicU64, Ordering};
use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ptr::NonNull;
use lock_api::RawMutex;

mod guard;
mod host;
mod layout;
mod node;
mod standalone;

pub(crate) use guard::gen_lists;
pub use guard::{LruvecGuard, LruvecLookup, folio_lruvec_relock, lruvec_relock};
pub use host::{LruZoneSize, LruvecHost, new_lru_zone_size, zone_size};
pub use layout::{lruvec_fields, lruvec_fields_expanded, lruvec_layout};
pub use node::LruvecNode;
pub use standalone::LruvecStandalone;

pub use crate::lru_list::{LruList, NR_LRU_LISTS};

/// Which reclaim algorithm the lruvec runs (`lru_gen_enabled()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LruMode {
    /// Active/inactive lists.
    Classic,
    /// Multi-gen LRU; unevictable folios still use the classic list.
    Mglru,
}

const MGLRU_SLOT_BASE: u8 = 8;

pub(crate) fn mglru_slot(r#gen: usize, ty: usize, zone: usize) -> u8 {
    MGLRU_SLOT_BASE + (r#gen * 2 * MAX_NR_ZONES + ty * MAX_NR_ZONES + zone) as u8
}

pub(crate) fn decode_mglru_slot(slot: u8) -> (usize, usize, usize) {
    let s = usize::from(slot - MGLRU_SLOT_BASE);
    (
        s / (2 * MAX_NR_ZONES),
        (s / MAX_NR_ZONES) % 2,
        s % MAX_NR_ZONES,
    )
}

// Every slot fits below NO_SLOT.
const _: () = assert!(MGLRU_SLOT_BASE as usize + MAX_NR_GENS * 2 * MAX_NR_ZONES < NO_SLOT as usize);

/// Which lock a lruvec takes (seed 004), chosen when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LruvecLock {
    /// Its own `lruvec->lru_lock` (per memcg per node; Linux since 5.11).
    #[default]
    Own,
    /// Its node's `pgdat->lru_lock`, shared by every lruvec of the node (Linux before).
    Node,
}

/// `lruvec->flags` bits (`enum lruvec_flags`). Linux uses bits 0 and 1 for reclaim
/// congestion, which this model does not track; bit 8 is this model's own.
pub mod lruvec_flags {
    /// The lruvec takes its node's `pgdat->lru_lock` ([`super::LruvecLock::Node`]).
    pub const LRUVEC_NODE_LRU_LOCK: u16 = 1 << 8;
}

/// `struct lruvec`: the lists of one (memcg, node), its lock and its MGLRU state, inside
/// host `H` (`mem_cgroup_per_node`, or [`LruvecStandalone`]).
#[repr(C)]
pub struct Lruvec<H: LruvecHost> {
    lists: UnsafeCell<[FolioList; NR_LRU_LISTS]>,
    /// `lruvec->lru_lock` (unused when the lruvec takes its node's lock).
    lru_lock: Lock<H::Family, LruLock>,
    /// `anon_cost`: the recent cost of reclaiming anon (`lru_note_cost`), under the lock.
    anon_cost: AtomicU64,
    /// `file_cost`: the same for file.
    file_cost: AtomicU64,
    /// `nonresident_age`: the classic workingset clock (evictions + activations).
    nonresident_age: AtomicU64,
    /// `refaults[type]`: in Linux, the workingset activations at the end of the last
    /// reclaim cycle (`snapshot_refaults()`), which classic reclaim compares with the
    /// current count to deactivate a stale active list early. Kept for Linux's field
    /// order; this model's classic reclaim deactivates only when the inactive list is low,
    /// so nothing reads or writes it.
    refaults: [AtomicU64; ANON_AND_FILE],
    /// `flags` ([`lruvec_flags`]); immutable here.
    flags: u16,
    /// The memcg this lruvec belongs to (in Linux, `container_of` gives the memcg).
    memcg_id: u16,
    /// Unique id, recorded in each folio it holds (`Folio::owner`).
    id: u32,
    lrugen: H::Gen,
    /// `mm_state` (`struct lru_gen_mm_state`, CONFIG_LRU_GEN_WALKS_MMU: `seq`, `head`,
    /// `tail`, `filters[2]`, `stats[1][6]`): the page-table walk's cursor. This model ages
    /// without walking page tables, so nothing reads or writes it; it is here for its 88
    /// bytes, which keep `pgdat` as far from the end of `lrugen` (its counters and FIFO
    /// node) as Linux's declaration does.
    mm_state: [AtomicU64; 11],
    /// `lruvec->pgdat`: the node.
    pgdat: NonNull<H::Node>,
    /// `zswap_lruvec_state` (CONFIG_ZSWAP: `nr_disk_swapins`): nothing here swaps; kept
    /// for its size, so the lruvec ends where Linux's does.
    zswap_lruvec_state: AtomicU64,
    _host: PhantomData<fn() -> H>,
}

/// Source of lruvec ids; 0 is never handed out. Not part of any modelled protocol, so a
/// plain core atomic even under loom.
static NEXT_LRUVEC_ID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(1);

// SAFETY: the UnsafeCells (`lists` here, `folios` inside `lrugen`) are only accessed
// through an `LruvecGuard`, i.e. with the lruvec's lock held; `pgdat` points at a
// `&'static H::Node`, which is Sync (a bound of `LruvecNode`); everything else is atomic or immutable. The lists hold
// `&'static Folio`, which are Send + Sync.
unsafe impl<H: LruvecHost> Sync for Lruvec<H> {}
// SAFETY: as above; moving the lruvec moves list heads, which point at folios only.
unsafe impl<H: LruvecHost> Send for Lruvec<H> {}

/// A fresh lruvec id: never 0 (which means "on no list"), wrapping after 2^32 - 1. The
/// one caller that draws 0 at the wrap takes the next id instead (nobody else can draw 0
/// again before another 2^32 ids).
fn next_lruvec_id() -> u32 {
    let id = NEXT_LRUVEC_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    if id != 0 {
        id
    } else {
        NEXT_LRUVEC_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
    }
}

impl<H: LruvecHost> core::fmt::Debug for Lruvec<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lruvec")
            .field("memcg_id", &self.memcg_id)
            .field("node", &self.node())
            .field("lock", &self.lock_kind())
            .field("layout", &<H::Gen as LruGenFolio>::LAYOUT)
            .field("nr_folios", &self.nr_folios())
            .finish()
    }
}

impl<H: LruvecHost> Lruvec<H> {
    /// An empty lruvec for memcg `memcg_id` on `pgdat`'s node, taking the lock `lock`;
    /// `now` stamps the first generations.
    ///
    /// # Safety
    ///
    /// The result is moved into the lruvec field of an `H` (at [`LruvecHost::LRUVEC_OFFSET`])
    /// before any of its methods is called, and stays there while it is used: the list code
    /// reaches the host's zone sizes by `container_of`.
    pub unsafe fn new(
        memcg_id: u16,
        pgdat: &'static H::Node,
        mode: LruMode,
        lock: LruvecLock,
        now: u64,
    ) -> Self {
        let flags = match lock {
            LruvecLock::Own => 0,
            LruvecLock::Node => lruvec_flags::LRUVEC_NODE_LRU_LOCK,
        };
        Lruvec {
            // SAFETY: these lists are changed only under this lruvec's lru_lock
            // (`LruvecGuard::link`/`unlink`), and a folio is linked onto them only by the
            // thread that owns it: newly added from a per-CPU batch, or isolated with
            // `folio_test_clear_lru` (or moved under this lock from another of its lists).
            lists: UnsafeCell::new(core::array::from_fn(|_| unsafe { folio_list() })),
            lru_lock: <Lock<H::Family, LruLock> as RawMutex>::INIT,
            anon_cost: AtomicU64::new(0),
            file_cost: AtomicU64::new(0),
            nonresident_age: AtomicU64::new(0),
            refaults: core::array::from_fn(|_| AtomicU64::new(0)),
            flags,
            memcg_id,
            id: next_lruvec_id(),
            lrugen: <H::Gen as LruGenFolio>::new(mode == LruMode::Mglru, now),
            mm_state: Default::default(),
            pgdat: NonNull::from(pgdat),
            zswap_lruvec_state: AtomicU64::new(0),
            _host: PhantomData,
        }
    }

    /// The host this lruvec is embedded in (`container_of`).
    #[inline]
    #[must_use]
    pub fn host(&self) -> &H {
        let p = core::ptr::from_ref(self).cast::<u8>();
        // SAFETY: by `LruvecHost`'s contract (and `Lruvec::new`'s) a used lruvec is the
        // field at `LRUVEC_OFFSET` of a live `H`; stepping back lands on that `H`, which
        // lives at least as long as `&self`.
        unsafe { &*p.sub(H::LRUVEC_OFFSET).cast::<H>() }
    }

    /// The node (`lruvec_pgdat()`).
    #[inline]
    #[must_use]
    pub fn pgdat(&self) -> &'static H::Node {
        // SAFETY: built from a `&'static H::Node` in `new` and never changed.
        unsafe { self.pgdat.as_ref() }
    }

    /// The memcg this lruvec belongs to.
    #[inline]
    #[must_use]
    pub fn memcg_id(&self) -> u16 {
        self.memcg_id
    }

    /// The node this lruvec belongs to (`lruvec_pgdat(lruvec)->node_id`).
    #[inline]
    #[must_use]
    pub fn node(&self) -> NodeId {
        self.pgdat().node_id()
    }

    /// `lruvec->flags`.
    #[inline]
    #[must_use]
    pub fn flags(&self) -> u16 {
        self.flags
    }

    /// Which lock this lruvec takes.
    #[inline]
    #[must_use]
    pub fn lock_kind(&self) -> LruvecLock {
        if self.flags & lruvec_flags::LRUVEC_NODE_LRU_LOCK != 0 {
            LruvecLock::Node
        } else {
            LruvecLock::Own
        }
    }

    /// Whether MGLRU runs here (`lrugen->enabled`).
    #[must_use]
    pub fn mode(&self) -> LruMode {
        if self.lrugen.memcg_node().enabled.load(Ordering::Relaxed) {
            LruMode::Mglru
        } else {
            LruMode::Classic
        }
    }

    /// The MGLRU state.
    #[must_use]
    pub fn lrugen(&self) -> &H::Gen {
        &self.lrugen
    }

    /// The lruvec's own lru_lock (unused by a [`LruvecLock::Node`] lruvec).
    #[must_use]
    pub fn raw_lock(&self) -> &Lock<H::Family, LruLock> {
        &self.lru_lock
    }

    /// The address of the lock this lruvec takes: lruvecs that share a lock have the same.
    #[inline]
    #[must_use]
    pub fn lock_addr(&self) -> usize {
        match self.lock_kind() {
            LruvecLock::Own => core::ptr::from_ref(&self.lru_lock) as usize,
            LruvecLock::Node => core::ptr::from_ref(self.pgdat().lru_lock()) as usize,
        }
    }

    /// Whether `folio` belongs here by memcg and node (`folio_matches_lruvec`).
    #[inline]
    #[must_use]
    pub fn owns(&self, folio: &Folio) -> bool {
        folio.memcg_id() == self.memcg_id && folio.node() == self.node()
    }

    #[inline]
    fn raw_lock_acquire(&self) {
        match self.lock_kind() {
            LruvecLock::Own => self.lru_lock.lock(),
            LruvecLock::Node => self.pgdat().lru_lock().lock(),
        }
    }

    #[inline]
    fn raw_try_lock(&self) -> bool {
        match self.lock_kind() {
            LruvecLock::Own => self.lru_lock.try_lock(),
            LruvecLock::Node => self.pgdat().lru_lock().try_lock(),
        }
    }

    /// Releases the lock this lruvec takes.
    ///
    /// # Safety
    ///
    /// The caller holds it (a guard of a lruvec with the same [`Lruvec::lock_addr`]).
    #[inline]
    unsafe fn raw_unlock(&self) {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self.lock_kind() {
                LruvecLock::Own => self.lru_lock.unlock(),
                LruvecLock::Node => self.pgdat().lru_lock().unlock(),
            }
        }
    }

    /// Take the lruvec's lock (`spin_lock_irq(&lruvec->lru_lock)`, or the node's).
    pub fn lock(&self) -> LruvecGuard<'_, H> {
        self.raw_lock_acquire();
        LruvecGuard {
            lruvec: self,
            _marker: PhantomData,
        }
    }

    /// Try to take the lock without spinning.
    pub fn try_lock(&self) -> Option<LruvecGuard<'_, H>> {
        // `then`, not `then_some`: a guard built for a failed attempt would unlock on drop.
        self.raw_try_lock().then(|| LruvecGuard {
            lruvec: self,
            _marker: PhantomData,
        })
    }

    /// Folios on `lru` in `zone` (`mem_cgroup_get_zone_lru_size`: the host's
    /// `lru_zone_size`; for MGLRU, the two youngest generations count as active, kept up to
    /// date by aging as Linux does "for compatibility"). A lockless snapshot.
    #[must_use]
    pub fn zone_lru_size(&self, lru: LruList, zone: Zone) -> usize {
        zone_size(self.host().lru_zone_size(), lru, zone.idx())
    }

    /// Folios on `lru` over all zones (`lruvec_lru_size`).
    #[must_use]
    pub fn lru_size(&self, lru: LruList) -> usize {
        (0..MAX_NR_ZONES)
            .map(|z| zone_size(self.host().lru_zone_size(), lru, z))
            .sum()
    }

    /// Folios on all lists.
    #[must_use]
    pub fn nr_folios(&self) -> usize {
        LruList::ALL.iter().map(|&l| self.lru_size(l)).sum()
    }

    /// Folios in MGLRU generation slot `gen` of type `ty` (all zones), lockless snapshot.
    #[must_use]
    pub fn nr_gen_pages(&self, r#gen: usize, ty: usize) -> i64 {
        self.lrugen.nr_pages()[r#gen % MAX_NR_GENS][ty % 2]
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .sum()
    }

    /// `lruvec->nonresident_age`, the classic workingset clock.
    #[must_use]
    pub fn nonresident_age(&self) -> u64 {
        self.nonresident_age.load(Ordering::Acquire)
    }

    /// `workingset_age_nonresident`: advance the classic workingset clock.
    pub fn workingset_age_nonresident(&self, nr: u64) {
        self.nonresident_age.fetch_add(nr, Ordering::AcqRel);
    }

    /// `lruvec->anon_cost` and `file_cost`.
    #[must_use]
    pub fn costs(&self) -> (u64, u64) {
        (
            self.anon_cost.load(Ordering::Relaxed),
            self.file_cost.load(Ordering::Relaxed),
        )
    }

    /// `lru_note_cost()`: reclaim of `file` (else anon) folios cost `nr_io` pages of I/O
    /// and `nr_rotated` folios put back; the cost, `nr_io * SWAP_CLUSTER_MAX +
    /// nr_rotated`, is added to this lruvec's and every ancestor's (the host's
    /// [`LruvecHost::parent_lruvec`]) `file_cost` or `anon_cost`, each under that lruvec's
    /// lru_lock taken on its own (never nested). Nothing is done (no lock taken) for a zero
    /// cost. Called with no lru_lock held.
    pub fn lru_note_cost(&self, file: bool, nr_io: u64, nr_rotated: u64) {
        let cost = nr_io * crate::swap_cluster::SWAP_CLUSTER_MAX as u64 + nr_rotated;
        if cost == 0 {
            return;
        }
        self.lock().note_cost(file, cost);
        self.note_cost_ancestors(file, cost);
    }

    /// The ancestors' part of [`Self::lru_note_cost`], for callers that noted the cost on
    /// this lruvec under a lock they held (`lru_note_cost_unlock_irq()`).
    pub(crate) fn note_cost_ancestors(&self, file: bool, cost: u64) {
        let mut lruvec = self.host().parent_lruvec();
        while let Some(lv) = lruvec {
            lv.lock().note_cost(file, cost);
            lruvec = lv.host().parent_lruvec();
        }
    }

    /// `lru_note_cost_refault()`: a folio that was in the working set when evicted came
    /// back; its reclaim cost one page of I/O per page.
    pub fn lru_note_cost_refault(&self, folio: &Folio) {
        self.lru_note_cost(folio.is_file_lru(), 1, 0);
    }

    /// Isolate `folio` from this lruvec (`folio_isolate_lru`): test-and-clear LRU first,
    /// then lock, then unlink. The caller holds a reference to the folio, as every caller
    /// of Linux's `folio_isolate_lru()` does: clearing the flag of a folio whose count
    /// already reached zero would take it from its releaser. Fails with [`LruError::NotOnLru`] if someone else isolated
    /// it, with [`LruError::WrongLruvec`] (and the flag restored) if it is not this
    /// lruvec's.
    pub fn isolate_folio(&self, folio: &'static Folio) -> Result<(), LruError> {
        if !folio.test_clear_lru() {
            return Err(LruError::NotOnLru);
        }
        // The LRU flag is ours: the folio's memcg and node are stable now.
        if !self.owns(folio) {
            folio.set(FolioFlags::LRU);
            return Err(LruError::WrongLruvec);
        }
        let mut guard = self.lock();
        guard
            .del_folio(folio)
            .inspect_err(|_| folio.set(FolioFlags::LRU))
    }

    /// Put an isolated folio back (`folio_putback_lru`): lock, add, set LRU.
    pub fn putback_folio(&self, folio: &'static Folio) -> Result<(), LruError> {
        self.lock().add_folio(folio)
    }
}

impl<H: LruvecHost> Drop for Lruvec<H> {
    fn drop(&mut self) {
        // Leave no folio claiming to be on a list that no longer exists.
        let release = |list: &mut FolioList| {
            while let Some(folio) = list.pop_front() {
                folio.clear(FolioFlags::LRU);
                folio.set_lru_gen(None);
                folio.owner.store(0, Ordering::Release);
                folio.slot.store(NO_SLOT, Ordering::Release);
            }
        };
        self.lists.get_mut().iter_mut().for_each(release);
        // SAFETY: `&mut self` is exclusive, so no guard (and no other access to the cell)
        // exists.
        let gens = unsafe { &mut *self.lrugen.folios().get() };
        gens.iter_mut().flatten().flatten().for_each(release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn list_kinds() {
        let kinds: [(bool, bool); NR_LRU_LISTS] =
            LruList::ALL.map(|l| (l.is_active(), l.is_file()));
        assert_eq!(
            kinds,
            [
                (false, false),
                (true, false),
                (false, true),
                (true, true),
                (false, false)
            ]
        );
        for (i, l) in LruList::ALL.iter().enumerate() {
            assert_eq!(l.idx(), i);
        }
    }

    #[test]
    fn mglru_slots_are_distinct_and_decode_back() {
        let mut seen = alloc::vec::Vec::new();
        for r#gen in 0..MAX_NR_GENS {
            for ty in 0..ANON_AND_FILE {
                for zone in 0..MAX_NR_ZONES {
                    let slot = mglru_slot(r#gen, ty, zone);
                    assert!((MGLRU_SLOT_BASE..NO_SLOT).contains(&slot));
                    assert_eq!(decode_mglru_slot(slot), (r#gen, ty, zone));
                    seen.push(slot);
                }
            }
        }
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n, "two lists share a slot");
    }
}
