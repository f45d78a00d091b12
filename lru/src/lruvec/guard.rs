//! The held lru_lock: every list operation of a lruvec, and the relock helpers.
//!
//! Models the bodies that Linux runs under `lruvec->lru_lock`: `lruvec_add_folio`,
//! `lruvec_del_folio`, `lru_gen_add_folio`, `lru_gen_del_folio`, `folio_activate_fn`,
//! `lru_deactivate_fn`, and `folio_lruvec_relock_irq` for runs of folios of one lruvec.
//! A [`LruvecGuard`] exists only while the lock is held; it is the only way to reach the
//! lists, which is what makes the `UnsafeCell` accesses below sound.

use super::{
    LruList, LruMode, Lruvec, MGLRU_SLOT_BASE, NR_LRU_LISTS, decode_mglru_slot, mglru_slot,
};
use crate::error::LruError;
use crate::folio::{Folio, FolioFlags, LRU_GEN_ANON, NO_SLOT, Zone};
use crate::list::FolioList;
use crate::lru_gen::{GenFolioLists, LruGenFolio, MAX_NR_GENS, MIN_NR_GENS, lru_gen_from_seq};
use crate::lru_gen_folio::LruGenFolioGrouped;
use crate::sync::Lock;
use crate::sync::atomic::Ordering;
use core::marker::PhantomData;
use core::ptr;
use ksync::LockFamily;
use ksync::class::std_classes::LruLock;
use lock_api::RawMutex;

/// The lruvec's lru_lock, held. All list changes go through it.
pub struct LruvecGuard<'a, F: LockFamily, G: LruGenFolio = LruGenFolioGrouped> {
    pub(super) lruvec: &'a Lruvec<F, G>,
    pub(super) _marker: PhantomData<<Lock<F, LruLock> as RawMutex>::GuardMarker>,
}

impl<F: LockFamily, G: LruGenFolio> Drop for LruvecGuard<'_, F, G> {
    fn drop(&mut self) {
        // SAFETY: a guard exists only after `lru_lock.lock()`/`try_lock()` succeeded, and it
        // is dropped exactly once.
        unsafe { self.lruvec.lru_lock.unlock() };
    }
}

impl<F: LockFamily, G: LruGenFolio> core::fmt::Debug for LruvecGuard<'_, F, G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LruvecGuard")
            .field("lruvec", self.lruvec)
            .finish()
    }
}

impl<'a, F: LockFamily, G: LruGenFolio> LruvecGuard<'a, F, G> {
    /// The locked lruvec.
    #[must_use]
    pub fn lruvec(&self) -> &'a Lruvec<F, G> {
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

    fn self_id(&self) -> u32 {
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

impl<F: LockFamily, G: LruGenFolio> LruvecGuard<'_, F, G> {
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
pub fn lruvec_relock<'a, F: LockFamily, G: LruGenFolio>(
    guard: Option<LruvecGuard<'a, F, G>>,
    lruvec: &'a Lruvec<F, G>,
) -> LruvecGuard<'a, F, G> {
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
pub trait LruvecLookup<F: LockFamily, G: LruGenFolio = LruGenFolioGrouped> {
    /// The lruvec of `folio`'s memcg and node, if that memcg exists.
    fn folio_lruvec(&self, folio: &Folio) -> Option<&Lruvec<F, G>>;
}

/// [`lruvec_relock`] for the lruvec of `folio` (`folio_lruvec_relock_irq`).
pub fn folio_lruvec_relock<'a, F: LockFamily, G: LruGenFolio, L: LruvecLookup<F, G> + ?Sized>(
    guard: Option<LruvecGuard<'a, F, G>>,
    folio: &Folio,
    lookup: &'a L,
) -> Result<LruvecGuard<'a, F, G>, LruError> {
    let lruvec = lookup.folio_lruvec(folio).ok_or(LruError::WrongLruvec)?;
    Ok(lruvec_relock(guard, lruvec))
}
