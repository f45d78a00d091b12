//! The lruvec: one per (memcg, node), its LRU lists and its lru_lock.
//!
//! Models `struct lruvec` and the list helpers of include/linux/mm_inline.h
//! (`lruvec_add_folio`, `lruvec_del_folio`, `lru_gen_add_folio`, `lru_gen_del_folio`) and
//! the locking of mm/memcontrol.c (`folio_lruvec_lock`, `folio_lruvec_relock_irq`). The
//! lock is per memcg per node as in Alex Shi's series (seed 004); its type `R` is any
//! [`lock_api::RawMutex`], so the kernel plugs in its statistics-counting ticket lock.
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
use crate::folio::{Folio, FolioFlags, LRU_GEN_ANON, MAX_NR_ZONES, MAX_NUMNODES, NO_SLOT, Zone};
use crate::layout::{FieldDesc, StructLayout};
use crate::list::{FolioList, folio_list};
use crate::lru_gen::{GenFolioLists, LruGenFolio, MAX_NR_GENS, MIN_NR_GENS, lru_gen_from_seq};
use crate::lru_gen_folio::LruGenFolioGrouped;
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ptr;
use lock_api::RawMutex;

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
pub struct Lruvec<R: RawMutex, G: LruGenFolio = LruGenFolioGrouped> {
    lists: UnsafeCell<[FolioList; NR_LRU_LISTS]>,
    lru_lock: R,
    /// Unique id, recorded in each folio it holds (`Folio::owner`). The identity fields
    /// are read on every add/isolate, mostly under the lock: they sit next to it rather
    /// than after lrugen, whose lockless counters end the struct.
    id: u64,
    memcg_id: u16,
    node: u8,
    lru_zone_size: [[AtomicUsize; MAX_NR_ZONES]; NR_LRU_LISTS],
    /// `nonresident_age`: the classic workingset clock (evictions + activations).
    nonresident_age: AtomicU64,
    lrugen: G,
}

/// Source of lruvec ids; 0 is never handed out. Not part of any modelled protocol, so a
/// plain core atomic even under loom.
static NEXT_LRUVEC_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

// SAFETY: the UnsafeCells (`lists` here, `folios` inside `lrugen`) are only accessed
// through an `LruvecGuard`, i.e. with `lru_lock` held; everything else is atomic or
// immutable. The lists hold `&'static Folio`, which are Send + Sync.
unsafe impl<R: RawMutex + Sync, G: LruGenFolio> Sync for Lruvec<R, G> {}
// SAFETY: as above; moving the lruvec moves list heads, which point at folios only.
unsafe impl<R: RawMutex + Send, G: LruGenFolio> Send for Lruvec<R, G> {}

impl<R: RawMutex, G: LruGenFolio> core::fmt::Debug for Lruvec<R, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lruvec")
            .field("memcg_id", &self.memcg_id)
            .field("node", &self.node)
            .field("layout", &G::LAYOUT)
            .field("nr_folios", &self.nr_folios())
            .finish()
    }
}

impl<R: RawMutex, G: LruGenFolio> Lruvec<R, G> {
    /// An empty lruvec for memcg `memcg_id` on `node`; `now` stamps the first generations.
    pub fn new(memcg_id: u16, node: u32, mode: LruMode, now: u64) -> Result<Self, LruError> {
        if node >= MAX_NUMNODES {
            return Err(LruError::InvalidNode(node));
        }
        Ok(Lruvec {
            id: NEXT_LRUVEC_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
            memcg_id,
            node: node as u8,
            lists: UnsafeCell::new(core::array::from_fn(|_| folio_list())),
            lru_lock: R::INIT,
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
    pub fn raw_lock(&self) -> &R {
        &self.lru_lock
    }

    /// Whether `folio` belongs here by memcg and node (`folio_lruvec(folio) == lruvec`).
    #[must_use]
    pub fn owns(&self, folio: &Folio) -> bool {
        folio.memcg_id() == self.memcg_id && folio.node() == u32::from(self.node)
    }

    /// Take lru_lock (`spin_lock_irq(&lruvec->lru_lock)`).
    pub fn lock(&self) -> LruvecGuard<'_, R, G> {
        self.lru_lock.lock();
        LruvecGuard {
            lruvec: self,
            _marker: PhantomData,
        }
    }

    /// Try to take lru_lock without spinning.
    pub fn try_lock(&self) -> Option<LruvecGuard<'_, R, G>> {
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

impl<R: RawMutex, G: LruGenFolio> Drop for Lruvec<R, G> {
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

/// The lruvec's lru_lock, held. All list changes go through it.
pub struct LruvecGuard<'a, R: RawMutex, G: LruGenFolio = LruGenFolioGrouped> {
    lruvec: &'a Lruvec<R, G>,
    _marker: PhantomData<R::GuardMarker>,
}

impl<R: RawMutex, G: LruGenFolio> Drop for LruvecGuard<'_, R, G> {
    fn drop(&mut self) {
        // SAFETY: a guard exists only after `lru_lock.lock()`/`try_lock()` succeeded, and it
        // is dropped exactly once.
        unsafe { self.lruvec.lru_lock.unlock() };
    }
}

impl<R: RawMutex, G: LruGenFolio> core::fmt::Debug for LruvecGuard<'_, R, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LruvecGuard")
            .field("lruvec", self.lruvec)
            .finish()
    }
}

impl<'a, R: RawMutex, G: LruGenFolio> LruvecGuard<'a, R, G> {
    /// The locked lruvec.
    #[must_use]
    pub fn lruvec(&self) -> &'a Lruvec<R, G> {
        self.lruvec
    }

    fn classic_lists(&mut self) -> &mut [FolioList; NR_LRU_LISTS] {
        // SAFETY: `self` proves lru_lock is held, and `&mut self` proves no other reference
        // derived from this guard is live; nothing else touches the cell.
        unsafe { &mut *self.lruvec.lists.get() }
    }

    pub(crate) fn gen_lists(&mut self) -> &mut GenFolioLists {
        // SAFETY: as `classic_lists`: the lrugen lists are protected by the same lock.
        unsafe { &mut *self.lruvec.lrugen.folios().get() }
    }

    fn list_for_slot(&mut self, slot: u8) -> &mut FolioList {
        if slot < MGLRU_SLOT_BASE {
            &mut self.classic_lists()[usize::from(slot)]
        } else {
            let (r#gen, ty, zone) = decode_mglru_slot(slot);
            &mut self.gen_lists()[r#gen][ty][zone]
        }
    }

    fn self_id(&self) -> u64 {
        self.lruvec.id
    }

    /// Link `folio` on list `slot`, head (`list_add`) or tail (`list_add_tail`).
    pub(crate) fn link(
        &mut self,
        folio: &'static Folio,
        slot: u8,
        tail: bool,
    ) -> Result<(), LruError> {
        if folio.lru.is_linked() {
            return Err(LruError::AlreadyOnLru);
        }
        let id = self.self_id();
        let list = self.list_for_slot(slot);
        if tail {
            list.push_back(folio);
        } else {
            list.push_front(folio);
        }
        folio.owner.store(id, Ordering::Release);
        folio.slot.store(slot, Ordering::Release);
        Ok(())
    }

    /// Unlink `folio` from whichever of this lruvec's lists holds it; returns the slot.
    pub(crate) fn unlink(&mut self, folio: &'static Folio) -> Result<u8, LruError> {
        if folio.owner.load(Ordering::Acquire) != self.self_id() {
            return Err(if folio.lru.is_linked() {
                LruError::WrongLruvec
            } else {
                LruError::NotOnLru
            });
        }
        let slot = folio.slot.load(Ordering::Acquire);
        let list = self.list_for_slot(slot);
        // SAFETY: `owner` (this lruvec's unique id, stable across moves) and `slot` are
        // written only under this lruvec's lock when the folio is linked onto exactly this
        // list, and cleared when it is unlinked; the lock is held, so the folio is on
        // `list` right now.
        let mut cursor = unsafe { list.cursor_mut_from_ptr(ptr::from_ref(folio)) };
        cursor.remove();
        folio.owner.store(0, Ordering::Release);
        folio.slot.store(NO_SLOT, Ordering::Release);
        Ok(slot)
    }

    fn update_lru_size(&self, lru: LruList, zone: Zone, delta: isize) {
        let c = &self.lruvec.lru_zone_size[lru.idx()][zone.idx()];
        c.store(
            c.load(Ordering::Relaxed).wrapping_add_signed(delta),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn update_gen_size(&self, r#gen: usize, ty: usize, zone: usize, delta: i64) {
        let c = &self.lruvec.lrugen.nr_pages()[r#gen][ty][zone];
        c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    }

    /// Whether generation slot `gen` is one of the two youngest (`lru_gen_is_active`).
    #[must_use]
    pub fn lru_gen_is_active(&self, r#gen: usize) -> bool {
        let max_seq = self.lruvec.lrugen.max_seq().load(Ordering::Relaxed);
        r#gen == lru_gen_from_seq(max_seq) || r#gen == lru_gen_from_seq(max_seq - 1)
    }

    /// The sequence a folio joins (`lru_gen_folio_seq`): active folios the youngest,
    /// anon the second youngest, file the second oldest (or oldest when reclaiming).
    fn lru_gen_folio_seq(&self, folio: &Folio, reclaiming: bool) -> u64 {
        let lrugen = &self.lruvec.lrugen;
        let ty = folio.lru_type();
        let max_seq = lrugen.max_seq().load(Ordering::Relaxed);
        let min_seq = lrugen.min_seq()[ty].load(Ordering::Relaxed);
        if folio.test(FolioFlags::ACTIVE) {
            max_seq
        } else if ty == LRU_GEN_ANON {
            max_seq - 1
        } else if reclaiming || min_seq + MIN_NR_GENS >= max_seq {
            min_seq
        } else {
            min_seq + 1
        }
    }

    /// `lru_gen_add_folio`: returns false when the folio goes on a classic list instead.
    fn lru_gen_add_folio(
        &mut self,
        folio: &'static Folio,
        reclaiming: bool,
    ) -> Result<bool, LruError> {
        if self.lruvec.mode() == LruMode::Classic || folio.test(FolioFlags::UNEVICTABLE) {
            return Ok(false);
        }
        let seq = self.lru_gen_folio_seq(folio, reclaiming);
        let r#gen = lru_gen_from_seq(seq);
        let (ty, zone) = (folio.lru_type(), folio.zone().idx());
        self.link(folio, mglru_slot(r#gen, ty, zone), reclaiming)?;
        folio.clear(FolioFlags::ACTIVE);
        folio.set_lru_gen(Some(r#gen));
        self.update_gen_size(r#gen, ty, zone, 1);
        Ok(true)
    }

    /// `lruvec_add_folio` (head) or `lruvec_add_folio_tail` without touching the LRU flag.
    pub(crate) fn lruvec_add_folio(
        &mut self,
        folio: &'static Folio,
        tail: bool,
    ) -> Result<(), LruError> {
        if !self.lruvec.owns(folio) {
            return Err(LruError::WrongLruvec);
        }
        if self.lru_gen_add_folio(folio, tail)? {
            return Ok(());
        }
        let lru = LruList::of(folio);
        self.link(folio, lru.idx() as u8, tail)?;
        self.update_lru_size(lru, folio.zone(), 1);
        Ok(())
    }

    /// `lruvec_del_folio` without touching the LRU flag. On MGLRU, a folio leaving one
    /// of the two youngest generations keeps `ACTIVE` (unless `reclaiming`) so it goes back
    /// to the youngest generation when re-added, as `lru_gen_del_folio` does.
    pub(crate) fn lruvec_del_folio(
        &mut self,
        folio: &'static Folio,
        reclaiming: bool,
    ) -> Result<(), LruError> {
        let slot = self.unlink(folio)?;
        if slot >= MGLRU_SLOT_BASE {
            let (r#gen, ty, zone) = decode_mglru_slot(slot);
            let active = !reclaiming && self.lru_gen_is_active(r#gen);
            folio.set_lru_gen(None);
            if active {
                folio.set(FolioFlags::ACTIVE);
            } else {
                folio.clear(FolioFlags::ACTIVE);
            }
            self.update_gen_size(r#gen, ty, zone, -1);
        } else {
            let lru = LruList::ALL[usize::from(slot)];
            self.update_lru_size(lru, folio.zone(), -1);
        }
        Ok(())
    }

    /// Add a folio that is on no list and set its LRU flag (`lru_add_fn`).
    pub fn add_folio(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        if folio.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        self.lruvec_add_folio(folio, false)?;
        folio.set(FolioFlags::LRU);
        Ok(())
    }

    /// Unlink a folio whose LRU flag the caller has already cleared (the isolation step
    /// after `folio_test_clear_lru`).
    pub fn del_folio(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        if folio.test_lru() {
            return Err(LruError::NotIsolated);
        }
        self.lruvec_del_folio(folio, false)
    }

    /// Move a folio the caller owns (LRU flag cleared by it) with `f` between an unlink
    /// and a re-add, then hand the folio back to the LRU (`folio_batch_move_lru` step).
    fn move_isolated(
        &mut self,
        folio: &'static Folio,
        f: impl FnOnce(&Folio),
    ) -> Result<(), LruError> {
        let res = self.lruvec_del_folio(folio, false).and_then(|()| {
            f(folio);
            self.lruvec_add_folio(folio, false)
        });
        folio.set(FolioFlags::LRU);
        res
    }

    /// `folio_activate_fn`: TestClearLRU; if not active and evictable, move the folio to
    /// the active list (MGLRU: the youngest generation). Returns whether it moved.
    pub fn activate(&mut self, folio: &'static Folio) -> Result<bool, LruError> {
        if !self.lruvec.owns(folio) {
            return Err(LruError::WrongLruvec);
        }
        if !folio.test_clear_lru() {
            return Ok(false);
        }
        self.activate_isolated(folio)
    }

    /// The body of `folio_activate_fn` for a folio whose LRU flag the caller cleared;
    /// sets LRU again before returning.
    pub(crate) fn activate_isolated(&mut self, folio: &'static Folio) -> Result<bool, LruError> {
        let max_gen = lru_gen_from_seq(self.lruvec.lrugen.max_seq().load(Ordering::Relaxed));
        let young = folio.lru_gen() == Some(max_gen);
        let listed_active = folio.lru_gen().is_none() && folio.test(FolioFlags::ACTIVE);
        if young || listed_active || folio.test(FolioFlags::UNEVICTABLE) {
            folio.set(FolioFlags::LRU);
            return Ok(false);
        }
        self.move_isolated(folio, |f| f.set(FolioFlags::ACTIVE))?;
        if self.lruvec.mode() == LruMode::Classic {
            // workingset_activation(): activations age the classic workingset clock.
            self.lruvec.workingset_age_nonresident(1);
        }
        Ok(true)
    }

    /// `lru_deactivate_fn`: TestClearLRU; move an active folio to the inactive list (MGLRU:
    /// an older generation), clearing `ACTIVE` and `REFERENCED`. Returns whether it moved.
    pub fn deactivate(&mut self, folio: &'static Folio) -> Result<bool, LruError> {
        if !self.lruvec.owns(folio) {
            return Err(LruError::WrongLruvec);
        }
        if !folio.test_clear_lru() {
            return Ok(false);
        }
        self.deactivate_isolated(folio)
    }

    /// The body of `lru_deactivate_fn` for a folio whose LRU flag the caller cleared;
    /// sets LRU again before returning.
    pub(crate) fn deactivate_isolated(&mut self, folio: &'static Folio) -> Result<bool, LruError> {
        let active = match folio.lru_gen() {
            Some(g) => self.lru_gen_is_active(g),
            None => folio.test(FolioFlags::ACTIVE),
        };
        if !active || folio.test(FolioFlags::UNEVICTABLE) {
            folio.set(FolioFlags::LRU);
            return Ok(false);
        }
        self.move_isolated(folio, |f| {
            f.clear(FolioFlags::ACTIVE | FolioFlags::REFERENCED);
            f.set_lru_refs(0);
        })
        .map(|()| true)
    }

    /// Folios on list `lru`, head first (for tests, reports and classic reclaim).
    pub fn for_each_on_list(&mut self, lru: LruList, mut f: impl FnMut(&'static Folio)) {
        for_each_static(&self.classic_lists()[lru.idx()], &mut f);
    }

    /// Folios in MGLRU generation slot `gen`, type `ty`, `zone`, head (youngest) first.
    pub fn for_each_in_gen(
        &mut self,
        r#gen: usize,
        ty: usize,
        zone: Zone,
        mut f: impl FnMut(&'static Folio),
    ) {
        for_each_static(
            &self.gen_lists()[r#gen % MAX_NR_GENS][ty % 2][zone.idx()],
            &mut f,
        );
    }
}

impl<R: RawMutex, G: LruGenFolio> LruvecGuard<'_, R, G> {
    /// The tail (next to reclaim) of classic list `lru`, if any.
    pub(crate) fn lru_tail(&mut self, lru: LruList) -> Option<&'static Folio> {
        self.classic_lists()[lru.idx()].back().clone_pointer()
    }

    /// Move a folio this guard's caller owns (LRU clear) to the head of `lru`'s list,
    /// fixing the sizes, without touching the LRU flag.
    pub(crate) fn move_to_list_head(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        self.lruvec_del_folio(folio, false)?;
        self.lruvec_add_folio(folio, false)
    }
}

fn for_each_static(list: &FolioList, f: &mut impl FnMut(&'static Folio)) {
    let mut cursor = list.front();
    while let Some(folio) = cursor.clone_pointer() {
        f(folio);
        cursor.move_next();
    }
}

/// Keep `guard` if it already locks `lruvec`, otherwise drop it and lock `lruvec`
/// (`folio_lruvec_relock_irq`: consecutive folios of one lruvec share one lock hold).
pub fn lruvec_relock<'a, R: RawMutex, G: LruGenFolio>(
    guard: Option<LruvecGuard<'a, R, G>>,
    lruvec: &'a Lruvec<R, G>,
) -> LruvecGuard<'a, R, G> {
    match guard {
        Some(g) if ptr::eq(g.lruvec, lruvec) => g,
        other => {
            drop(other);
            lruvec.lock()
        }
    }
}

/// How the caller finds a folio's lruvec (`folio_lruvec`: memcg from the folio, then
/// `mem_cgroup_lruvec(memcg, folio_pgdat(folio))`). Implemented by the memcg crate.
pub trait LruvecLookup<R: RawMutex, G: LruGenFolio = LruGenFolioGrouped> {
    /// The lruvec of `folio`'s memcg and node, if that memcg exists.
    fn folio_lruvec(&self, folio: &Folio) -> Option<&Lruvec<R, G>>;
}

/// [`lruvec_relock`] for the lruvec of `folio` (`folio_lruvec_relock_irq`).
pub fn folio_lruvec_relock<'a, R: RawMutex, G: LruGenFolio, L: LruvecLookup<R, G> + ?Sized>(
    guard: Option<LruvecGuard<'a, R, G>>,
    folio: &Folio,
    lookup: &'a L,
) -> Result<LruvecGuard<'a, R, G>, LruError> {
    let lruvec = lookup.folio_lruvec(folio).ok_or(LruError::WrongLruvec)?;
    Ok(lruvec_relock(guard, lruvec))
}

/// The pahole table of `Lruvec<R, G>`.
pub fn lruvec_fields<R: RawMutex, G: LruGenFolio>() -> [FieldDesc; 8] {
    use crate::cacheline::field_size;
    use core::mem::offset_of;
    type L<R, G> = Lruvec<R, G>;
    [
        FieldDesc {
            name: "lists",
            offset: offset_of!(L<R, G>, lists),
            size: field_size(|l: &L<R, G>| &l.lists),
            group: "lists",
        },
        FieldDesc {
            name: "lru_lock",
            offset: offset_of!(L<R, G>, lru_lock),
            size: field_size(|l: &L<R, G>| &l.lru_lock),
            group: "lists",
        },
        FieldDesc {
            name: "id",
            offset: offset_of!(L<R, G>, id),
            size: field_size(|l: &L<R, G>| &l.id),
            group: "lists",
        },
        FieldDesc {
            name: "memcg_id",
            offset: offset_of!(L<R, G>, memcg_id),
            size: field_size(|l: &L<R, G>| &l.memcg_id),
            group: "lists",
        },
        FieldDesc {
            name: "node",
            offset: offset_of!(L<R, G>, node),
            size: field_size(|l: &L<R, G>| &l.node),
            group: "lists",
        },
        FieldDesc {
            name: "lru_zone_size",
            offset: offset_of!(L<R, G>, lru_zone_size),
            size: field_size(|l: &L<R, G>| &l.lru_zone_size),
            group: "lists",
        },
        FieldDesc {
            name: "nonresident_age",
            offset: offset_of!(L<R, G>, nonresident_age),
            size: field_size(|l: &L<R, G>| &l.nonresident_age),
            group: "lists",
        },
        FieldDesc {
            name: "lrugen",
            offset: offset_of!(L<R, G>, lrugen),
            size: field_size(|l: &L<R, G>| &l.lrugen),
            group: G::LAYOUT,
        },
    ]
}

/// [`lruvec_fields`] with `lrugen` expanded into its own fields at their offsets inside
/// the lruvec, so the report shows which lruvec line each MGLRU field lands on.
pub fn lruvec_fields_expanded<R: RawMutex, G: LruGenFolio>() -> alloc::vec::Vec<FieldDesc> {
    let mut v = alloc::vec::Vec::new();
    for f in lruvec_fields::<R, G>() {
        if f.name == "lrugen" {
            v.extend(G::layout_fields().iter().map(|g| FieldDesc {
                offset: f.offset + g.offset,
                ..*g
            }));
        } else {
            v.push(f);
        }
    }
    v
}

/// Wrap [`lruvec_fields`] as a [`StructLayout`].
pub fn lruvec_layout<'a, R: RawMutex, G: LruGenFolio>(
    name: &'a str,
    fields: &'a [FieldDesc],
) -> StructLayout<'a> {
    StructLayout {
        name,
        size: core::mem::size_of::<Lruvec<R, G>>(),
        align: core::mem::align_of::<Lruvec<R, G>>(),
        fields,
    }
}

impl<R: RawMutex, G: LruGenFolio> Lruvec<R, G> {
    /// Byte offset of the memcg FIFO node inside `Lruvec<R, G>`.
    pub const MEMCG_NODE_OFFSET: usize = core::mem::offset_of!(Self, lrugen) + G::MEMCG_NODE_OFFSET;
}

// Placement checks with the host lock (the kernel's lock changes only `lru_lock`'s size):
// the list heads, lock and identity share the first lines; the grouped lrugen starts on
// its own line and its lockless counters stay off every line of the lock group.
#[cfg(not(loom))]
mod layout_asserts {
    use super::Lruvec;
    use crate::lru_gen_folio::{LruGenFolioBase, LruGenFolioGrouped};
    use crate::sync::RawSpinlock;
    use core::mem::offset_of;

    type Grouped = Lruvec<RawSpinlock, LruGenFolioGrouped>;
    type Base = Lruvec<RawSpinlock, LruGenFolioBase>;

    crate::cacheline_assert_pair!(Grouped, lists, 0);
    crate::cacheline_assert_pair!(Grouped, lru_lock, 0);
    crate::cacheline_assert_pair!(Grouped, id, 0);
    crate::cacheline_assert_pair!(Base, lists, 0);
    crate::cacheline_assert_pair!(Base, memcg_id, 0);
    const _: () = assert!(offset_of!(Grouped, lrugen) % crate::cacheline::CACHELINE == 0);
    crate::cacheline_assert_apart!(Grouped, lrugen; lru_zone_size);
    crate::cacheline_assert_apart!(Grouped, lru_lock; lrugen);
}
