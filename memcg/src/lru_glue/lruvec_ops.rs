//! `lru::Lruvec` as memcg uses it: reclaim, reparenting, and adding/removing single folios.
//!
//! Reclaim is lru's own eviction (`evict_folios()`: MGLRU aging and tier protection, or
//! the classic active/inactive lists with second chance), with shadow entries. Every
//! isolation uses lru's TestClearLRU protocol (clear the LRU flag, then unlink under the
//! lock), so a folio another CPU is already moving is skipped, never taken twice.
//!
//! Reparenting takes no lock inside another: it isolates the child's folios under the
//! child lruvec's lock, then relocks to the parent's lruvec (`lruvec_relock`, which keeps
//! the lock when both take their node's lock, seed 004's "before") and adds them there.

use crate::error::{MemcgError, MemcgId};
use crate::stats::NodeStatItem;
use crate::sync::Ordering;
use alloc::vec::Vec;
use lru::lru_gen::{LruGenFolio, lru_gen_from_seq};
use lru::lruvec::lruvec_relock;
use lru::{Folio, FolioRelease, LruList, Lruvec, LruvecGuard, LruvecHost, Shadow, Zone};

/// Every zone a folio can be in, for walks over all generation lists.
const ZONES: [Zone; 4] = [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable];

/// The LRU stat item of a folio on `guard`'s lruvec (MGLRU: active = one of the two
/// youngest generations, as `lru_gen_is_active()`).
pub(crate) fn lru_item<H: LruvecHost>(guard: &LruvecGuard<'_, H>, folio: &Folio) -> NodeStatItem {
    let lru = match folio.lru_gen() {
        Some(g) if !folio.test(lru::FolioFlags::UNEVICTABLE) => {
            let active = guard.lru_gen_is_active(g);
            match (folio.is_file_lru(), active) {
                (false, false) => LruList::InactiveAnon,
                (false, true) => LruList::ActiveAnon,
                (true, false) => LruList::InactiveFile,
                (true, true) => LruList::ActiveFile,
            }
        }
        _ => LruList::of(folio),
    };
    NodeStatItem::lru(lru)
}

/// A folio taken off a lruvec by reclaim.
#[derive(Debug, Clone, Copy)]
pub struct Reclaimed {
    /// The folio: LRU flag clear, on no list, still charged.
    pub folio: &'static Folio,
    /// The LRU stat item it was counted under.
    pub item: NodeStatItem,
    /// Its shadow entry, for refault detection.
    pub shadow: Shadow,
}

/// What one reclaim pass over a lruvec took.
#[derive(Debug, Default)]
pub struct Isolated {
    /// The reclaimed folios.
    pub folios: Vec<Reclaimed>,
    /// Whether the lruvec ran out of cold folios (found fewer than asked, or had to age):
    /// `try_to_shrink_lruvec()`'s "rotate this lruvec" answer.
    pub out_of_cold: bool,
    /// Folios looked at.
    pub scanned: u64,
}

/// A folio moved to the parent: the folio, its stat item before and after the move.
pub type Moved = (&'static Folio, NodeStatItem, NodeStatItem);

/// Pin, TestClearLRU, unlink; `None` if the folio is being released (its releaser unlinks
/// it) or another CPU owns it right now. A pin taken is pushed on `pins`, for the caller to
/// drop once its locks are released (the drop may be the last reference).
///
/// The pin comes first, as in `isolate_lru_folios()`: a folio whose count reached zero is
/// its releaser's, which unlinks it only if it wins TestClearLRU. Winning it here instead,
/// with no pin, would leave the releaser to free a frame this caller then puts back on a
/// list.
fn isolate<H: LruvecHost>(
    guard: &mut LruvecGuard<'_, H>,
    folio: &'static Folio,
    pins: &mut Vec<&'static Folio>,
) -> Option<NodeStatItem> {
    let item = lru_item(guard, folio);
    if !folio.try_get() {
        return None;
    }
    pins.push(folio);
    if !folio.test_clear_lru() {
        return None;
    }
    ksync::race::window();
    match guard.del_folio(folio) {
        Ok(()) => Some(item),
        Err(_) => {
            // Its LRU flag was set and we hold its lruvec's lock: it must be on a list.
            ksync::warn_on_once!(
                true,
                "reparenting: a folio with its LRU flag was on no list"
            );
            folio.set(lru::FolioFlags::LRU);
            None
        }
    }
}

/// Evicts up to `nr` of the coldest folios of `lruvec` (lru's `evict_folios()`, either
/// mode); evicted folios come from the oldest generation or the inactive lists, so they
/// were counted as inactive. A folio whose last reference reclaim drops goes to `release`.
pub(crate) fn reclaim<H: LruvecHost, R: FolioRelease + ?Sized>(
    lruvec: &Lruvec<H>,
    nr: usize,
    swappiness: u8,
    now: u64,
    release: &R,
) -> Isolated {
    let mut out = Isolated::default();
    let res = lruvec.evict_folios(nr, swappiness, now, release, |folio, shadow| {
        let item = if folio.is_file_lru() {
            NodeStatItem::NrInactiveFile
        } else {
            NodeStatItem::NrInactiveAnon
        };
        out.folios.push(Reclaimed {
            folio,
            item,
            shadow,
        });
    });
    ksync::warn_on_once!(res.is_err(), "evict_folios failed on a lruvec's own lists");
    let stats = res.unwrap_or_default();
    out.scanned = stats.scanned as u64;
    out.out_of_cold = out.folios.len() < nr || stats.aged > 0;
    out
}

/// Adds a folio that is on no list; returns the stat item it is counted under.
pub(crate) fn add_folio<H: LruvecHost>(
    lruvec: &Lruvec<H>,
    folio: &'static Folio,
) -> Result<NodeStatItem, MemcgError> {
    let mut guard = lruvec.lock();
    guard.add_folio(folio).map_err(MemcgError::Lru)?;
    Ok(lru_item(&guard, folio))
}

/// Isolates and unlinks a folio (TestClearLRU first, then the lock); returns the stat item
/// it was counted under.
pub(crate) fn del_folio<H: LruvecHost>(
    lruvec: &Lruvec<H>,
    folio: &'static Folio,
) -> Result<NodeStatItem, MemcgError> {
    if !folio.test_clear_lru() {
        return Err(MemcgError::Lru(lru::LruError::NotOnLru));
    }
    if !lruvec.owns(folio) {
        folio.set(lru::FolioFlags::LRU);
        return Err(MemcgError::Lru(lru::LruError::WrongLruvec));
    }
    let mut guard = lruvec.lock();
    let item = lru_item(&guard, folio);
    if let Err(e) = guard.del_folio(folio) {
        folio.set(lru::FolioFlags::LRU);
        return Err(MemcgError::Lru(e));
    }
    Ok(item)
}

/// Moves every folio of `src` to `dst`, relabelled with `dst_memcg`: isolate all under
/// `src`'s lock, then relock to `dst` and add them there (oldest first, so the parent's
/// lists keep their relative order). Folios being released stay where they are (their
/// releaser unlinks them). Every folio looked at is pinned on `pins`, for the caller to
/// drop with `folio_put` once it holds no lock.
pub(crate) fn splice_to<H: LruvecHost>(
    src: &Lruvec<H>,
    dst: &Lruvec<H>,
    dst_memcg: MemcgId,
    pins: &mut Vec<&'static Folio>,
) -> Vec<Moved> {
    let mut moved = Vec::new();
    if core::ptr::eq(src, dst) {
        return moved;
    }
    let mut guard = src.lock();
    let mut all: Vec<&'static Folio> = Vec::new();
    for lru in LruList::ALL {
        guard.for_each_on_list(lru, |f| all.push(f));
    }
    let lrugen = src.lrugen();
    let max_seq = lrugen.max_seq().load(Ordering::Relaxed);
    for ty in [lru::folio::LRU_GEN_FILE, lru::folio::LRU_GEN_ANON] {
        let min_seq = lrugen.min_seq()[ty].load(Ordering::Relaxed);
        for seq in min_seq..=max_seq {
            for zone in ZONES {
                guard.for_each_in_gen(lru_gen_from_seq(seq), ty, zone, |f| all.push(f));
            }
        }
    }
    let mut taken: Vec<(&'static Folio, NodeStatItem)> = Vec::with_capacity(all.len());
    for f in all.into_iter().rev() {
        if let Some(item) = isolate(&mut guard, f, pins) {
            taken.push((f, item));
        }
    }
    // The folios are isolated (LRU clear, owned by us): relabel, then add to the parent.
    let mut guard = lruvec_relock(Some(guard), dst);
    for (f, item) in taken {
        if f.set_memcg_id(dst_memcg).is_err() {
            continue;
        }
        match guard.add_folio(f) {
            Ok(()) => {
                let new_item = lru_item(&guard, f);
                moved.push((f, item, new_item));
            }
            Err(_) => {
                // Cannot happen for an isolated folio; put it back where it was.
                ksync::warn_on_once!(
                    f.set_memcg_id(src.memcg_id()).is_err(),
                    "reparenting: a folio could not get its memcg back"
                );
                let mut back = lruvec_relock(Some(guard), src);
                ksync::warn_on_once!(
                    back.add_folio(f).is_err(),
                    "reparenting: a folio could not go back on its LRU"
                );
                guard = lruvec_relock(Some(back), dst);
            }
        }
    }
    moved
}
