//! The lruvec: one per (memcg, node), its LRU lists and its lru_lock.
//!
//! Models `struct lruvec` and the list helpers of include/linux/mm_inline.h
//! (`lruvec_add_folio`, `lruvec_del_folio`, `lru_gen_add_folio`, `lru_gen_del_folio`) and
//! the locking of mm/memcontrol.c (`folio_lruvec_lock`, `folio_lruvec_relock_irq`). The
//! lock is per memcg per node as in Alex Shi's series (seed 004): `F::Lock<LruLock>`, ksync's
//! four-byte ticket lock of class `lruvec->lru_lock` in the kernel and on the host.
//!
//! Isolation follows the same series: clear the folio's LRU flag with one atomic
//! test-and-clear *first*, then take the lock, then unlink. Whoever wins the flag owns the
//! folio's list position; nobody else may move it, so it is never isolated twice nor put
//! on two lists. Every folio records which lruvec and which list holds it, so a buggy
//! caller gets a typed error instead of corrupting a list.
//!
//! This module contains the crate's lruvec unsafe: the lists live in `UnsafeCell`s that
//! are only reached through an [`LruvecGuard`], which exists only while `lru_lock` is held.

use crate::error::LruError;
use crate::folio::{Folio, FolioFlags, MAX_NR_ZONES, MAX_NUMNODES, NO_SLOT, Zone};
use crate::list::{FolioList, folio_list};
use crate::lru_gen::{LruGenFolio, MAX_NR_GENS, lru_gen_from_seq};
use crate::lru_gen_folio::LruGenFolioGrouped;
use crate::sync::Lock;
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::cell::UnsafeCell;
use core::marker::PhantomData;
use ksync::LockFamily;
use ksync::class::std_classes::LruLock;
use lock_api::RawMutex;

mod guard;
mod layout;

pub use guard::{LruvecGuard, LruvecLookup, folio_lruvec_relock, lruvec_relock};
pub use layout::{lruvec_fields, lruvec_fields_expanded, lruvec_layout};

/// Number of classic LRU lists (`NR_LRU_LISTS`).
pub const NR_LRU_LISTS: usize = 5;

/// The classic LRU lists (`enum lru_list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum LruList {
    /// `LRU_INACTIVE_ANON`.
    InactiveAnon = 0,
    /// `LRU_ACTIVE_ANON`.
    ActiveAnon = 1,
    /// `LRU_INACTIVE_FILE`.
    InactiveFile = 2,
    /// `LRU_ACTIVE_FILE`.
    ActiveFile = 3,
    /// `LRU_UNEVICTABLE`.
    Unevictable = 4,
}

impl LruList {
    /// All lists in index order (`for_each_lru`).
    pub const ALL: [LruList; NR_LRU_LISTS] = [
        LruList::InactiveAnon,
        LruList::ActiveAnon,
        LruList::InactiveFile,
        LruList::ActiveFile,
        LruList::Unevictable,
    ];

    /// The list a folio belongs on by its flags (`folio_lru_list`).
    #[must_use]
    pub fn of(folio: &Folio) -> LruList {
        let f = folio.flags();
        if f.contains(FolioFlags::UNEVICTABLE) {
            return LruList::Unevictable;
        }
        match (folio.is_file_lru(), f.contains(FolioFlags::ACTIVE)) {
            (false, false) => LruList::InactiveAnon,
            (false, true) => LruList::ActiveAnon,
            (true, false) => LruList::InactiveFile,
            (true, true) => LruList::ActiveFile,
        }
    }

    /// The list's index.
    #[must_use]
    pub const fn idx(self) -> usize {
        self as usize
    }

    /// Whether this is an active list (`is_active_lru`).
    #[must_use]
    pub const fn is_active(self) -> bool {
        matches!(self, LruList::ActiveAnon | LruList::ActiveFile)
    }

    /// Whether this is a file list (`is_file_lru`).
    #[must_use]
    pub const fn is_file(self) -> bool {
        matches!(self, LruList::InactiveFile | LruList::ActiveFile)
    }
}

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
    MGLRU_SLOT_BASE + (r#gen * 8 + ty * 4 + zone) as u8
}

pub(crate) fn decode_mglru_slot(slot: u8) -> (usize, usize, usize) {
    let s = usize::from(slot - MGLRU_SLOT_BASE);
    (s / 8, (s / 4) % 2, s % 4)
}

/// `struct lruvec`: the lists of one (memcg, node), its lock and its MGLRU state.
#[repr(C)]
pub struct Lruvec<F: LockFamily, G: LruGenFolio = LruGenFolioGrouped> {
    lists: UnsafeCell<[FolioList; NR_LRU_LISTS]>,
    lru_lock: Lock<F, LruLock>,
    /// Unique id, recorded in each folio it holds (`Folio::owner`). The identity fields
    /// are read on every add/isolate, mostly under the lock: they sit next to it rather
    /// than after lrugen, whose lockless counters end the struct.
    id: u32,
    memcg_id: u16,
    node: u8,
    lru_zone_size: [[AtomicUsize; MAX_NR_ZONES]; NR_LRU_LISTS],
    /// `nonresident_age`: the classic workingset clock (evictions + activations).
    nonresident_age: AtomicU64,
    lrugen: G,
}

/// Source of lruvec ids; 0 is never handed out. Not part of any modelled protocol, so a
/// plain core atomic even under loom.
static NEXT_LRUVEC_ID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(1);

// SAFETY: the UnsafeCells (`lists` here, `folios` inside `lrugen`) are only accessed
// through an `LruvecGuard`, i.e. with `lru_lock` held; everything else is atomic or
// immutable. The lists hold `&'static Folio`, which are Send + Sync.
unsafe impl<F: LockFamily, G: LruGenFolio> Sync for Lruvec<F, G> {}
// SAFETY: as above; moving the lruvec moves list heads, which point at folios only.
unsafe impl<F: LockFamily, G: LruGenFolio> Send for Lruvec<F, G> {}

/// A fresh lruvec id: never 0 (which means "on no list"), wrapping after 2^32 - 1.
fn next_lruvec_id() -> u32 {
    loop {
        let id = NEXT_LRUVEC_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        if id != 0 {
            return id;
        }
    }
}

impl<F: LockFamily, G: LruGenFolio> core::fmt::Debug for Lruvec<F, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lruvec")
            .field("memcg_id", &self.memcg_id)
            .field("node", &self.node)
            .field("layout", &G::LAYOUT)
            .field("nr_folios", &self.nr_folios())
            .finish()
    }
}

impl<F: LockFamily, G: LruGenFolio> Lruvec<F, G> {
    /// An empty lruvec for memcg `memcg_id` on `node`; `now` stamps the first generations.
    pub fn new(memcg_id: u16, node: u32, mode: LruMode, now: u64) -> Result<Self, LruError> {
        if node >= MAX_NUMNODES {
            return Err(LruError::InvalidNode(node));
        }
        Ok(Lruvec {
            id: next_lruvec_id(),
            memcg_id,
            node: node as u8,
            lists: UnsafeCell::new(core::array::from_fn(|_| folio_list())),
            lru_lock: <Lock<F, LruLock> as RawMutex>::INIT,
            lru_zone_size: core::array::from_fn(|_| core::array::from_fn(|_| AtomicUsize::new(0))),
            nonresident_age: AtomicU64::new(0),
            lrugen: G::new(mode == LruMode::Mglru, now),
        })
    }

    /// The memcg this lruvec belongs to.
    #[must_use]
    pub fn memcg_id(&self) -> u16 {
        self.memcg_id
    }

    /// The node this lruvec belongs to.
    #[must_use]
    pub fn node(&self) -> u32 {
        u32::from(self.node)
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
    pub fn lrugen(&self) -> &G {
        &self.lrugen
    }

    /// The lru_lock itself, e.g. to read the kernel lock's statistics.
    #[must_use]
    pub fn raw_lock(&self) -> &Lock<F, LruLock> {
        &self.lru_lock
    }

    /// Whether `folio` belongs here by memcg and node (`folio_lruvec(folio) == lruvec`).
    #[must_use]
    pub fn owns(&self, folio: &Folio) -> bool {
        folio.memcg_id() == self.memcg_id && folio.node() == u32::from(self.node)
    }

    /// Take lru_lock (`spin_lock_irq(&lruvec->lru_lock)`).
    pub fn lock(&self) -> LruvecGuard<'_, F, G> {
        self.lru_lock.lock();
        LruvecGuard {
            lruvec: self,
            _marker: PhantomData,
        }
    }

    /// Try to take lru_lock without spinning.
    pub fn try_lock(&self) -> Option<LruvecGuard<'_, F, G>> {
        self.lru_lock.try_lock().then_some(LruvecGuard {
            lruvec: self,
            _marker: PhantomData,
        })
    }

    /// Folios on `lru` in `zone` (`mem_cgroup_get_zone_lru_size`); for MGLRU, the two
    /// youngest generations count as active. A lockless snapshot.
    #[must_use]
    pub fn zone_lru_size(&self, lru: LruList, zone: Zone) -> usize {
        if self.mode() == LruMode::Classic || lru == LruList::Unevictable {
            return self.lru_zone_size[lru.idx()][zone.idx()].load(Ordering::Relaxed);
        }
        let ty = usize::from(lru.is_file());
        let max_seq = self.lrugen.max_seq().load(Ordering::Acquire);
        let min_seq = self.lrugen.min_seq()[ty].load(Ordering::Acquire);
        let mut n: i64 = 0;
        for seq in min_seq..=max_seq {
            let active = seq + 1 >= max_seq;
            if active == lru.is_active() {
                let r#gen = lru_gen_from_seq(seq);
                n += self.lrugen.nr_pages()[r#gen][ty][zone.idx()].load(Ordering::Relaxed);
            }
        }
        usize::try_from(n).unwrap_or(0)
    }

    /// Folios on `lru` over all zones (`lruvec_lru_size`).
    #[must_use]
    pub fn lru_size(&self, lru: LruList) -> usize {
        [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable]
            .iter()
            .map(|&z| self.zone_lru_size(lru, z))
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

    /// Isolate `folio` from this lruvec (`folio_isolate_lru`): test-and-clear LRU, then
    /// lock, then unlink. Fails with [`LruError::NotOnLru`] if someone else isolated it.
    pub fn isolate_folio(&self, folio: &'static Folio) -> Result<(), LruError> {
        if !self.owns(folio) {
            return Err(LruError::WrongLruvec);
        }
        if !folio.test_clear_lru() {
            return Err(LruError::NotOnLru);
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

impl<F: LockFamily, G: LruGenFolio> Drop for Lruvec<F, G> {
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
