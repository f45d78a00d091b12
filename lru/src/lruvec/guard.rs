//! The held lru_lock: every list operation of a lruvec, and the relock helpers.
//!
//! Models the bodies that Linux runs under `lruvec->lru_lock`: `lruvec_add_folio`,
//! `lruvec_del_folio`, `lru_gen_add_folio`, `lru_gen_del_folio`, `folio_activate_fn`,
//! `lru_deactivate_fn`, and `folio_lruvec_relock_irq` for runs of folios of one lruvec.
//! A [`LruvecGuard`] exists only while the lruvec's lock is held; it is the only way to
//! reach the lists, which is what makes the `UnsafeCell` accesses below sound. Under
//! seed 004's node lock one hold covers every lruvec of the node: relocking to another
//! lruvec of the same node keeps the lock and only retargets the guard.
//!
//! Sizes are kept as Linux keeps them: `lru_zone_size` in the host (`update_lru_size`) for
//! classic and MGLRU lists alike, plus `lrugen->nr_pages` for generations
//! (`lru_gen_update_size`), so both views agree under the lock.
//!
//! Unsafe code here, and why: the guard releases the raw lock its constructor took, and its
//! relock retargets it only to lruvecs under the same lock: the lock's `unsafe fn release`
//! is called here and nowhere else.
#![allow(unsafe_code)]

use super::{
    LruList, LruMode, Lruvec, LruvecHost, MGLRU_SLOT_BASE, NR_LRU_LISTS, decode_mglru_slot,
    mglru_slot,
};
use crate::error::LruError;
use crate::folio::{Folio, FolioFlags, LRU_GEN_ANON, LRU_GEN_FILE, NO_SLOT, Zone};
use crate::list::FolioList;
use crate::lock_classes::LruLock;
use crate::lru_gen::{GenFolioLists, LruGenFolio, MAX_NR_GENS, MIN_NR_GENS, lru_gen_from_seq};
use crate::sync::Lock;
use crate::sync::atomic::Ordering;
use core::marker::PhantomData;
use core::ptr;
use lock_api::RawMutex;

/// The lruvec's lock, held. All list changes go through it.
pub struct LruvecGuard<'a, H: LruvecHost> {
    pub(super) lruvec: &'a Lruvec<H>,
    pub(super) _marker: PhantomData<<Lock<H::Family, LruLock> as RawMutex>::GuardMarker>,
}

impl<H: LruvecHost> Drop for LruvecGuard<'_, H> {
    fn drop(&mut self) {
        // SAFETY: a guard exists only after the lock of its lruvec was taken (`lock`,
        // `try_lock`), and it is retargeted only to lruvecs with the same lock
        // (`lruvec_relock`); it is dropped exactly once.
        unsafe { self.lruvec.raw_unlock() };
    }
}

impl<H: LruvecHost> core::fmt::Debug for LruvecGuard<'_, H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LruvecGuard")
            .field("lruvec", self.lruvec)
            .finish()
    }
}

impl<'a, H: LruvecHost> LruvecGuard<'a, H> {
    /// The locked lruvec.
    #[must_use]
    pub fn lruvec(&self) -> &'a Lruvec<H> {
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
    #[inline(always)]
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
        if slot < MGLRU_SLOT_BASE {
            // list_add / list_add_tail write the head.
            crate::events::count(crate::events::LruEvent::ListHeadWrite, 1);
        }
        folio.owner.store(id, Ordering::Release);
        folio.slot.store(slot, Ordering::Release);
        Ok(())
    }

    /// Unlink `folio` from whichever of this lruvec's lists holds it; returns the slot.
    #[inline(always)]
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
        let head_writes = unsafe { list.remove(folio) };
        // list_del writes the head when the folio is first (head->next) or last
        // (head->prev); both when it was alone.
        if slot < MGLRU_SLOT_BASE && head_writes > 0 {
            crate::events::count(
                crate::events::LruEvent::ListHeadWrite,
                u64::from(head_writes),
            );
        }
        folio.owner.store(0, Ordering::Release);
        folio.slot.store(NO_SLOT, Ordering::Release);
        Ok(slot)
    }

    /// `update_lru_size()`: the host's `lru_zone_size[zone][lru]` (Linux's
    /// `mem_cgroup_update_lru_size()`, reached through the host). `__always_inline`, as
    /// Linux's.
    #[inline(always)]
    pub(crate) fn update_lru_size(&self, lru: LruList, zone: usize, delta: isize) {
        let c = &self.lruvec.host().lru_zone_size()[zone][lru.idx()];
        c.store(
            c.load(Ordering::Relaxed).wrapping_add_signed(delta),
            Ordering::Relaxed,
        );
        H::lru_size_changed(self.lruvec, lru, zone, delta);
    }

    fn update_gen_size(&self, r#gen: usize, ty: usize, zone: usize, delta: i64) {
        let c = &self.lruvec.lrugen.nr_pages()[r#gen][ty][zone];
        c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    }

    /// `lru_gen_update_size()`: one folio of type `ty` in `zone` moves from generation
    /// `old` to `new` (`None` = off the generation lists). Updates `nr_pages` and, for
    /// the active/inactive view, the host's `lru_zone_size`: an addition or deletion counts
    /// against the list its generation stands for, a promotion from an inactive to an
    /// active generation moves it between the two.
    pub(crate) fn lru_gen_update_size(
        &self,
        ty: usize,
        zone: usize,
        old: Option<usize>,
        new: Option<usize>,
    ) {
        let (inactive, active) = gen_lists(ty);
        let lru_of = |g: usize| {
            if self.lru_gen_is_active(g) {
                active
            } else {
                inactive
            }
        };
        if let Some(o) = old {
            self.update_gen_size(o, ty, zone, -1);
        }
        if let Some(n) = new {
            self.update_gen_size(n, ty, zone, 1);
        }
        match (old, new) {
            (None, Some(n)) => self.update_lru_size(lru_of(n), zone, 1),
            (Some(o), None) => self.update_lru_size(lru_of(o), zone, -1),
            (Some(o), Some(n)) if !self.lru_gen_is_active(o) && self.lru_gen_is_active(n) => {
                self.update_lru_size(inactive, zone, -1);
                self.update_lru_size(active, zone, 1);
            }
            // Demotion needs isolation (`lru_deactivate_fn`); moves between two inactive
            // or two active generations leave the view unchanged.
            _ => {}
        }
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
    #[inline(always)]
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
        folio.set_lru_gen_active(Some(r#gen), false);
        self.lru_gen_update_size(ty, zone, None, Some(r#gen));
        Ok(true)
    }

    /// `lruvec_add_folio` (head) or `lruvec_add_folio_tail` without touching the LRU flag.
    #[inline(always)]
    pub(crate) fn lruvec_add_folio(
        &mut self,
        folio: &'static Folio,
        tail: bool,
    ) -> Result<(), LruError> {
        if !self.lruvec.owns(folio) {
            return Err(LruError::WrongLruvec);
        }
        self.lruvec_add_owned_folio(folio, tail)
    }

    /// [`Self::lruvec_add_folio`] for a folio this lruvec owns ([`Lruvec::owns`]), which
    /// the caller has established: Linux's `lruvec_add_folio` checks nothing, its callers
    /// having found the lruvec from the folio.
    #[inline(always)]
    fn lruvec_add_owned_folio(
        &mut self,
        folio: &'static Folio,
        tail: bool,
    ) -> Result<(), LruError> {
        debug_assert!(self.lruvec.owns(folio), "a folio added to another lruvec");
        if self.lru_gen_add_folio(folio, tail)? {
            return Ok(());
        }
        let lru = LruList::of(folio);
        self.link(folio, lru.idx() as u8, tail)?;
        self.update_lru_size(lru, folio.zone().idx(), 1);
        Ok(())
    }

    /// `lruvec_del_folio` without touching the LRU flag. On MGLRU, a folio leaving one
    /// of the two youngest generations keeps `ACTIVE` (unless `reclaiming`) so it goes back
    /// to the youngest generation when re-added, as `lru_gen_del_folio` does.
    #[inline(always)]
    pub(crate) fn lruvec_del_folio(
        &mut self,
        folio: &'static Folio,
        reclaiming: bool,
    ) -> Result<(), LruError> {
        let slot = self.unlink(folio)?;
        if slot >= MGLRU_SLOT_BASE {
            let (r#gen, ty, zone) = decode_mglru_slot(slot);
            let active = !reclaiming && self.lru_gen_is_active(r#gen);
            folio.set_lru_gen_active(None, active);
            self.lru_gen_update_size(ty, zone, Some(r#gen), None);
        } else {
            let lru = LruList::ALL[usize::from(slot)];
            self.update_lru_size(lru, folio.zone().idx(), -1);
        }
        Ok(())
    }

    /// Add a folio that is on no list and set its LRU flag (`lru_add_fn`).
    #[inline(always)]
    pub fn add_folio(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        if folio.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        self.lruvec_add_folio(folio, false)?;
        folio.set(FolioFlags::LRU);
        Ok(())
    }

    /// [`Self::add_folio`] as `folio_batch_move_lru` calls it (`lru_add_fn`), on the guard
    /// [`folio_lruvec_relock`] returned for `folio`: that guard's lruvec owns the folio (the
    /// relock checked it, on the locked lruvec or the one it looked up), so it is not asked
    /// again per folio.
    #[inline(always)]
    pub(crate) fn add_relocked_folio(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        if folio.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        self.lruvec_add_owned_folio(folio, false)?;
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

    /// Unlink a folio whose last reference is gone and clear its LRU flag with a plain
    /// load and store (`__page_cache_release`: `lruvec_del_folio()`, then
    /// `__folio_clear_lru_flags()`), no locked read-modify-write. Sound only because the
    /// count is zero, so no one else can pin the folio to isolate it (every isolation
    /// pins first), and because this guard is held, which every other writer of the flags
    /// of a listed folio holds too (a generation move, an activation). The caller saw the
    /// flag set ([`Folio::test_lru`]) before taking the lock, as `folio_test_lru()` does.
    #[inline(always)]
    pub fn del_released_folio(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        if !folio.test_lru() {
            return Err(LruError::NotOnLru);
        }
        folio.clear_unshared(FolioFlags::LRU);
        self.lruvec_del_folio(folio, false)
            .inspect_err(|_| folio.set_unshared(FolioFlags::LRU))
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

impl<H: LruvecHost> LruvecGuard<'_, H> {
    /// The tail (next to reclaim) of classic list `lru`, if any.
    pub(crate) fn lru_tail(&mut self, lru: LruList) -> Option<&'static Folio> {
        self.classic_lists()[lru.idx()].back()
    }

    /// Move a folio this guard's caller owns (LRU clear) to the head of `lru`'s list,
    /// fixing the sizes, without touching the LRU flag.
    pub(crate) fn move_to_list_head(&mut self, folio: &'static Folio) -> Result<(), LruError> {
        self.lruvec_del_folio(folio, false)?;
        self.lruvec_add_folio(folio, false)
    }
}

fn for_each_static(list: &FolioList, f: &mut impl FnMut(&'static Folio)) {
    for folio in list.iter() {
        f(folio);
    }
}

/// The inactive and active list of LRU type `ty`.
pub(crate) fn gen_lists(ty: usize) -> (LruList, LruList) {
    if ty == LRU_GEN_FILE {
        (LruList::InactiveFile, LruList::ActiveFile)
    } else {
        (LruList::InactiveAnon, LruList::ActiveAnon)
    }
}

/// Keep `guard` if it already locks `lruvec`, otherwise drop it and lock `lruvec`
/// (`folio_lruvec_relock_irq`: consecutive folios of one lruvec share one lock hold).
/// Under seed 004's node lock, lruvecs of one node share the lock: the guard is kept and
/// only retargeted, so a run of folios of one node is one lock hold whatever their memcgs.
#[inline(always)]
pub fn lruvec_relock<'a, H: LruvecHost>(
    guard: Option<LruvecGuard<'a, H>>,
    lruvec: &'a Lruvec<H>,
) -> LruvecGuard<'a, H> {
    match guard {
        Some(g) if ptr::eq(g.lruvec, lruvec) => g,
        Some(mut g) if g.lruvec.lock_addr() == lruvec.lock_addr() => {
            // Same lock (the node's): keep it held; the guard now unlocks it through
            // `lruvec`, whose `raw_unlock` releases that same lock.
            g.lruvec = lruvec;
            g
        }
        other => {
            drop(other);
            lruvec.lock()
        }
    }
}

/// How the caller finds a folio's lruvec (`folio_lruvec`: memcg from the folio, then
/// `mem_cgroup_lruvec(memcg, folio_pgdat(folio))`). Implemented by the memcg crate, whose
/// lookup by memcg id is lockless under RCU: the lruvecs it returns are valid while the
/// caller holds the lookup's read guard (memcgs are freed only after a grace period), and
/// finding them takes no lock, so the relock path (which looks up while holding the
/// previous lruvec's lock) nests no lock under `lru_lock`.
pub trait LruvecLookup<H: LruvecHost> {
    /// What bounds the returned references: an RCU read-side section for memcg, `()` for
    /// lookups whose lruvecs live forever.
    type Guard<'a>
    where
        Self: 'a;

    /// Enter the read side on `cpu` (`rcu_read_lock()`).
    fn read_lock(&self, cpu: usize) -> Result<Self::Guard<'_>, LruError>;

    /// The lruvec of `folio`'s memcg and node, if that memcg exists.
    fn folio_lruvec<'g>(
        &'g self,
        guard: &'g Self::Guard<'_>,
        folio: &Folio,
    ) -> Option<&'g Lruvec<H>>;

    /// Drops a reference a folio batch held (`folios_put`); the last one releases the folio
    /// (`__folio_put`, through the lookup's owner of the frames: [`crate::release`]). By
    /// default the reference is just dropped: lookups whose folios are not frames (tests)
    /// have nothing to release.
    fn folio_put(&self, _cpu: usize, folio: &'static Folio) -> Result<(), LruError> {
        folio.put().map(|_| ()).map_err(LruError::from)
    }
}

/// [`lruvec_relock`] for the lruvec of `folio` (`folio_lruvec_relock_irq`). Inlined, as
/// Linux's `static inline`: consecutive folios of one lruvec keep the lock without a call;
/// taking another lock goes out of line ([`Lruvec::lock`]'s acquisition).
///
/// As Linux's, it first asks whether the locked lruvec is the folio's
/// (`folio_matches_lruvec()`: [`Lruvec::owns`], the folio's memcg id and node against the
/// lruvec's) and looks the lruvec up only when it is not. That answer is the lookup's: the
/// guard was taken, in this walk, for an earlier folio charged to the lruvec's memcg and
/// still held (on the list under this lock, or off it and not yet uncharged), so that memcg
/// cannot be unlinked meanwhile and its id not handed to another. The lruvec the lookup
/// returns is checked the same way (once per lock switch), so the guard this returns always
/// owns `folio`, and the folio batches add it without asking again (`lru_add_fn`).
#[inline(always)]
pub fn folio_lruvec_relock<'g, H: LruvecHost, L: LruvecLookup<H> + ?Sized>(
    guard: Option<LruvecGuard<'g, H>>,
    folio: &Folio,
    lookup: &'g L,
    rcu: &'g L::Guard<'_>,
) -> Result<LruvecGuard<'g, H>, LruError> {
    let guard = match guard {
        Some(g) if g.lruvec.owns(folio) => return Ok(g),
        other => other,
    };
    let lruvec = lookup
        .folio_lruvec(rcu, folio)
        .filter(|lruvec| lruvec.owns(folio))
        .ok_or(LruError::WrongLruvec)?;
    Ok(lruvec_relock(guard, lruvec))
}

impl<H: LruvecHost> LruvecGuard<'_, H> {
    /// One lruvec's step of `lru_note_cost()`, under its lru_lock: add `cost` to
    /// `file_cost` (else `anon_cost`); halve both once their sum exceeds a quarter of the
    /// evictable LRU size, so they follow recent reclaim.
    pub(crate) fn note_cost(&mut self, file: bool, cost: u64) {
        let lv = self.lruvec();
        let (add, other) = if file {
            (&lv.file_cost, &lv.anon_cost)
        } else {
            (&lv.anon_cost, &lv.file_cost)
        };
        let a = add.load(Ordering::Relaxed) + cost;
        let o = other.load(Ordering::Relaxed);
        let lrusize = [
            LruList::InactiveAnon,
            LruList::ActiveAnon,
            LruList::InactiveFile,
            LruList::ActiveFile,
        ]
        .iter()
        .map(|&l| lv.lru_size(l) as u64)
        .sum::<u64>();
        if a + o > lrusize / 4 {
            add.store(a / 2, Ordering::Relaxed);
            other.store(o / 2, Ordering::Relaxed);
        } else {
            add.store(a, Ordering::Relaxed);
        }
    }
}
