//! `lru::Lruvec` as memcg uses it: creation per (memcg, node), reclaim, reparenting, and
//! adding/removing single folios ([`crate::pn::PnLruvec`]).
//!
//! Reclaim on an MGLRU lruvec is lru's own eviction (`evict_folios()`: aging when needed,
//! tier protection, shadow entries). A classic lruvec is reclaimed here from the tails of
//! its inactive lists, then its active lists (`shrink_inactive_list()` without the
//! reference check; lru has no classic reclaim). Both isolate with lru's TestClearLRU
//! protocol (clear the LRU flag, then unlink under lru_lock), so a folio another CPU is
//! already moving is skipped, never taken twice.

use crate::error::{MemcgError, MemcgId};
use crate::pn::PnLruvec;
use crate::stats::NodeStatItem;
use crate::sync::Ordering;
use alloc::vec::Vec;
use ksync::LockFamily;
use lru::lru_gen::{LruGenFolio, lru_gen_from_seq};
use lru::{Folio, LruList, LruMode, Lruvec, LruvecGuard, Shadow, Zone};

/// Every zone, for walks over all generation lists.
const ZONES: [Zone; lru::folio::MAX_NR_ZONES] =
    [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable];

/// The LRU stat item of a folio on `lruvec` (MGLRU: active = one of the two youngest
/// generations, as `lru_gen_is_active()`).
fn lru_item<F: LockFamily, G: LruGenFolio>(
    guard: &LruvecGuard<'_, F, G>,
    folio: &Folio,
) -> NodeStatItem {
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
    match lru {
        LruList::InactiveAnon => NodeStatItem::NrInactiveAnon,
        LruList::ActiveAnon => NodeStatItem::NrActiveAnon,
        LruList::InactiveFile => NodeStatItem::NrInactiveFile,
        LruList::ActiveFile => NodeStatItem::NrActiveFile,
        LruList::Unevictable => NodeStatItem::NrUnevictable,
    }
}

/// A folio taken off a lruvec by reclaim.
#[derive(Debug, Clone, Copy)]
pub struct Reclaimed {
    /// The folio: LRU flag clear, on no list, still charged.
    pub folio: &'static Folio,
    /// The LRU stat item it was counted under.
    pub item: NodeStatItem,
    /// Its shadow entry (MGLRU eviction), for refault detection.
    pub shadow: Option<Shadow>,
}

/// What one reclaim pass over a lruvec took.
#[derive(Debug, Default)]
pub struct Isolated {
    /// The reclaimed folios.
    pub folios: Vec<Reclaimed>,
    /// Whether the lruvec ran out of cold folios (found fewer than asked, or had to take
    /// active ones): memcg reclaim then rotates the memcg young in the FIFO.
    pub out_of_cold: bool,
    /// Folios looked at.
    pub scanned: u64,
}

/// A folio moved to the parent: the folio, its stat item before and after the move.
pub type Moved = (&'static Folio, NodeStatItem, NodeStatItem);

/// TestClearLRU + unlink; `None` if another CPU owns the folio right now.
fn isolate<F: LockFamily, G: LruGenFolio>(
    guard: &mut LruvecGuard<'_, F, G>,
    folio: &'static Folio,
) -> Option<NodeStatItem> {
    let item = lru_item(guard, folio);
    if !folio.test_clear_lru() {
        return None;
    }
    match guard.del_folio(folio) {
        Ok(()) => Some(item),
        Err(_) => {
            folio.set(lru::FolioFlags::LRU);
            None
        }
    }
}

impl<F: LockFamily, G: LruGenFolio> PnLruvec for Lruvec<F, G> {
    fn new_for_memcg(node: usize, memcg_id: MemcgId, mglru: bool) -> Result<Self, MemcgError> {
        let mode = if mglru {
            LruMode::Mglru
        } else {
            LruMode::Classic
        };
        let node32 = u32::try_from(node).unwrap_or(u32::MAX);
        Lruvec::new(memcg_id, node32, mode, 0).map_err(|_| MemcgError::InvalidNode {
            node,
            nr_nodes: lru::folio::MAX_NUMNODES as usize,
        })
    }

    #[inline]
    fn node_id(&self) -> usize {
        self.node() as usize
    }

    fn reclaim(&self, nr: usize, swappiness: u8, now: u64) -> Isolated {
        match self.mode() {
            LruMode::Mglru => evict_mglru(self, nr, swappiness, now),
            LruMode::Classic => isolate_classic(self, nr),
        }
    }

    fn splice_to(&self, dst: &Self, dst_memcg: MemcgId) -> Vec<Moved> {
        splice_to(self, dst, dst_memcg)
    }

    fn add_folio(&self, folio: &'static Folio) -> Result<NodeStatItem, MemcgError> {
        let mut guard = self.lock();
        guard.add_folio(folio).map_err(MemcgError::Lru)?;
        Ok(lru_item(&guard, folio))
    }

    fn del_folio(&self, folio: &'static Folio) -> Result<NodeStatItem, MemcgError> {
        let mut guard = self.lock();
        if !self.owns(folio) {
            return Err(MemcgError::Lru(lru::LruError::WrongLruvec));
        }
        let item = lru_item(&guard, folio);
        if !folio.test_clear_lru() {
            return Err(MemcgError::Lru(lru::LruError::NotOnLru));
        }
        if let Err(e) = guard.del_folio(folio) {
            folio.set(lru::FolioFlags::LRU);
            return Err(MemcgError::Lru(e));
        }
        Ok(item)
    }
}

/// MGLRU: lru's `evict_folios()`; evicted folios come from the oldest generation, so they
/// were counted as inactive.
fn evict_mglru<F: LockFamily, G: LruGenFolio>(
    lruvec: &Lruvec<F, G>,
    nr: usize,
    swappiness: u8,
    now: u64,
) -> Isolated {
    let mut out = Isolated::default();
    let res = lruvec.evict_folios(nr, swappiness, now, |folio, shadow| {
        let item = if folio.is_file_lru() {
            NodeStatItem::NrInactiveFile
        } else {
            NodeStatItem::NrInactiveAnon
        };
        out.folios.push(Reclaimed {
            folio,
            item,
            shadow: Some(shadow),
        });
    });
    let stats = res.unwrap_or_default();
    out.scanned = stats.scanned as u64;
    out.out_of_cold = out.folios.len() < nr || stats.aged > 0;
    out
}

/// Classic LRU: tails of the inactive lists, then of the active lists, file before anon.
fn isolate_classic<F: LockFamily, G: LruGenFolio>(lruvec: &Lruvec<F, G>, nr: usize) -> Isolated {
    let mut out = Isolated::default();
    let mut guard = lruvec.lock();
    let mut candidates: Vec<&'static Folio> = Vec::new();
    let mut took_active = false;
    for (lru, active) in [
        (LruList::InactiveFile, false),
        (LruList::InactiveAnon, false),
        (LruList::ActiveFile, true),
        (LruList::ActiveAnon, true),
    ] {
        if out.folios.len() >= nr {
            break;
        }
        candidates.clear();
        guard.for_each_on_list(lru, |f| candidates.push(f));
        for &folio in candidates.iter().rev() {
            if out.folios.len() >= nr {
                break;
            }
            out.scanned += 1;
            if let Some(item) = isolate(&mut guard, folio) {
                took_active |= active;
                out.folios.push(Reclaimed {
                    folio,
                    item,
                    shadow: None,
                });
            }
        }
    }
    out.out_of_cold = took_active || out.folios.len() < nr;
    out
}

/// Moves every folio of `src` to `dst`, relabelled with `dst_memcg`.
fn splice_to<F: LockFamily, G: LruGenFolio>(
    src: &Lruvec<F, G>,
    dst: &Lruvec<F, G>,
    dst_memcg: MemcgId,
) -> Vec<Moved> {
    let mut moved = Vec::new();
    if core::ptr::eq(src, dst) {
        return moved;
    }
    let mut src_guard = src.lock();
    let mut dst_guard = dst.lock();
    let mut all: Vec<&'static Folio> = Vec::new();
    for lru in LruList::ALL {
        src_guard.for_each_on_list(lru, |f| all.push(f));
    }
    let lrugen = src.lrugen();
    let max_seq = lrugen.max_seq().load(Ordering::Relaxed);
    for ty in [lru::folio::LRU_GEN_FILE, lru::folio::LRU_GEN_ANON] {
        let min_seq = lrugen.min_seq()[ty].load(Ordering::Relaxed);
        for seq in min_seq..=max_seq {
            for zone in ZONES {
                src_guard.for_each_in_gen(lru_gen_from_seq(seq), ty, zone, |f| all.push(f));
            }
        }
    }
    // Oldest first, so the parent's lists keep the relative order.
    for f in all.into_iter().rev() {
        let Some(item) = isolate(&mut src_guard, f) else {
            continue;
        };
        if f.set_memcg_id(dst_memcg).is_err() {
            let _ = src_guard.add_folio(f);
            continue;
        }
        match dst_guard.add_folio(f) {
            Ok(()) => {
                let new_item = lru_item(&dst_guard, f);
                moved.push((f, item, new_item));
            }
            Err(_) => {
                // Cannot happen for an isolated folio; keep it where it was.
                let _ = f.set_memcg_id(src.memcg_id());
                let _ = src_guard.add_folio(f);
            }
        }
    }
    moved
}
