//! Everything memcg does to `lru`'s structures: creating a lruvec per (memcg, node),
//! putting it on the node's memcg FIFO (`lru_gen_online_memcg()` /
//! `lru_gen_offline_memcg()` / `lru_gen_release_memcg()`), evicting its coldest folios for
//! memcg reclaim (`shrink_lruvec()` / `lru_gen_shrink_lruvec()`, rotating the memcg in the
//! FIFO when it is out of cold folios), and moving folios to the parent on offline
//! (reparenting).
//!
//! Eviction isolates with lru's TestClearLRU protocol (clear the LRU flag, then unlink under
//! lru_lock), so a folio that another CPU is already moving is skipped, never taken twice.
//! An evicted folio is uncharged from its memcg, counted (`pgscan`, `pgsteal`, its LRU list
//! size) and handed to the owner's free hook (the kernel frees the frame). The FIFO takes
//! `&'static` entries; this module hands it lruvecs that live inside heap-allocated memcgs,
//! which is sound because a memcg is released from every FIFO before it is unlinked and
//! freed only after an RCU grace period (see [`crate::tree`]).

use crate::error::{MemcgError, MemcgId};
use crate::memcontrol::MemCgroup;
use crate::pn::{MemCgroupPerNode, PnLruvec};
use crate::stats::{MemcgEvent, NodeStatItem};
use crate::sync::Ordering;
use alloc::boxed::Box;
use alloc::vec::Vec;
use lock_api::RawMutex;
use lru::lru_gen::{LruGenFolio, MIN_NR_GENS, lru_gen_from_seq};
use lru::memcg_lru::TailMode;
use lru::{Folio, LruGenMemcg, LruList, LruMode, Lruvec, LruvecGuard, MemcgLruOp, Zone};

/// Zones, coldest-first scan order does not depend on them.
const ZONES: [Zone; lru::folio::MAX_NR_ZONES] =
    [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable];

/// The LRU stat item of a folio on `lruvec` (MGLRU: active = one of the two youngest
/// generations, as `lru_gen_is_active()`).
fn lru_item<R: RawMutex, G: LruGenFolio>(
    guard: &LruvecGuard<'_, R, G>,
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

/// Folios taken off a lruvec for reclaim, with the LRU stat item each was counted under.
#[derive(Debug, Default)]
pub struct Isolated {
    /// The isolated folios (LRU flag clear, on no list).
    pub folios: Vec<(&'static Folio, NodeStatItem)>,
    /// Whether the lruvec ran out of cold folios (had to take young ones or found too
    /// few): the memcg is rotated to the young generation of the FIFO.
    pub out_of_cold: bool,
    /// Folios looked at.
    pub scanned: u64,
}

/// A folio moved to the parent: the folio, its stat item before and after the move.
pub type Moved = (&'static Folio, NodeStatItem, NodeStatItem);

/// TestClearLRU + unlink; `None` if another CPU owns the folio right now.
fn isolate<R: RawMutex, G: LruGenFolio>(
    guard: &mut LruvecGuard<'_, R, G>,
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

impl<R: RawMutex + Send + Sync + 'static, G: LruGenFolio> PnLruvec for Lruvec<R, G> {
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

    fn isolate_coldest(&self, nr: usize) -> Isolated {
        isolate_coldest(self, nr)
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

/// Isolates up to `nr` of `lruvec`'s coldest evictable folios for reclaim.
fn isolate_coldest<R: RawMutex, G: LruGenFolio>(lruvec: &Lruvec<R, G>, nr: usize) -> Isolated {
    let mut out = Isolated {
        folios: Vec::new(),
        out_of_cold: false,
        scanned: 0,
    };
    let mut guard = lruvec.lock();
    let mut candidates: Vec<&'static Folio> = Vec::new();
    let mut took_young = false;
    // Classic lists: inactive before active, file before anon, tail (oldest) first.
    for (lru, young) in [
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
        for &f in candidates.iter().rev() {
            if out.folios.len() >= nr {
                break;
            }
            out.scanned += 1;
            if let Some(item) = isolate(&mut guard, f) {
                took_young |= young;
                out.folios.push((f, item));
            }
        }
    }
    // MGLRU generations, oldest sequence first; the two youngest only when the rest ran out.
    if out.folios.len() < nr && lruvec.mode() == LruMode::Mglru {
        let lrugen = lruvec.lrugen();
        let max_seq = lrugen.max_seq().load(Ordering::Relaxed);
        for ty in [lru::folio::LRU_GEN_FILE, lru::folio::LRU_GEN_ANON] {
            let min_seq = lrugen.min_seq()[ty].load(Ordering::Relaxed);
            for seq in min_seq..=max_seq {
                let young = seq + MIN_NR_GENS > max_seq;
                for zone in ZONES {
                    if out.folios.len() >= nr {
                        break;
                    }
                    candidates.clear();
                    guard.for_each_in_gen(lru_gen_from_seq(seq), ty, zone, |f| candidates.push(f));
                    for &f in candidates.iter().rev() {
                        if out.folios.len() >= nr {
                            break;
                        }
                        out.scanned += 1;
                        if let Some(item) = isolate(&mut guard, f) {
                            took_young |= young;
                            out.folios.push((f, item));
                        }
                    }
                }
            }
        }
    }
    out.out_of_cold = took_young || out.folios.len() < nr;
    out
}

/// Hook receiving reclaimed folios (`cpu`, folio); the kernel frees the frame.
pub type FolioFreeFn = Box<dyn Fn(usize, &'static Folio) + Send + Sync>;

/// memcg's view of `lru` shared by the whole tree: one memcg FIFO per node
/// (`pgdat->memcg_lru`) and the hook that frees reclaimed folios.
pub struct TreeLru<R: RawMutex, V: PnLruvec> {
    memcg_lru: Box<[LruGenMemcg<R, V>]>,
    free_folio: FolioFreeFn,
    mglru: bool,
}

impl<R: RawMutex, V: PnLruvec> core::fmt::Debug for TreeLru<R, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TreeLru")
            .field("nr_nodes", &self.memcg_lru.len())
            .field("mglru", &self.mglru)
            .finish()
    }
}

impl<R: RawMutex, V: PnLruvec> TreeLru<R, V> {
    /// FIFOs for `nr_nodes` nodes with seed 002's `tail_mode`; lruvecs run MGLRU if
    /// `mglru`; reclaimed folios go to `free_folio`.
    pub fn new(nr_nodes: usize, tail_mode: TailMode, mglru: bool, free_folio: FolioFreeFn) -> Self {
        Self {
            memcg_lru: (0..nr_nodes)
                .map(|n| LruGenMemcg::new(tail_mode, n as u32 + 1))
                .collect(),
            free_folio,
            mglru,
        }
    }

    /// Whether new lruvecs run MGLRU.
    pub fn mglru(&self) -> bool {
        self.mglru
    }

    /// The memcg FIFO of `node` (global reclaim walks it under RCU).
    pub fn memcg_lru(&self, node: usize) -> Option<&LruGenMemcg<R, V>> {
        self.memcg_lru.get(node)
    }

    /// The lruvec of `m` on `node` as the `'static` entry the FIFO stores.
    fn entry<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        m: &MemCgroup<R2, P>,
        node: usize,
    ) -> Option<&'static V> {
        let lruvec = m.lruvec(node).ok()?;
        // SAFETY: the memcg (and with it this lruvec) is released from every FIFO in
        // `release` before the tree unlinks it, and freed only after an RCU grace period
        // that starts after the release; FIFO readers are RCU readers, so no reader can
        // still hold this reference when the memory goes away.
        Some(unsafe { &*(lruvec as *const V) })
    }

    /// `lru_gen_online_memcg()` on every node.
    pub(crate) fn online<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<R2, P>,
    ) {
        if !self.mglru {
            return;
        }
        for (node, fifo) in self.memcg_lru.iter().enumerate() {
            if let Some(e) = Self::entry(m, node) {
                // A lruvec is onlined once, at creation; an error would mean it already is.
                let _ = fifo.online(e);
            }
        }
    }

    /// `lru_gen_offline_memcg()`: move to the old generation so it is reclaimed first.
    pub(crate) fn offline<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<R2, P>,
    ) {
        for (node, fifo) in self.memcg_lru.iter().enumerate() {
            if let Some(e) = Self::entry(m, node) {
                let _ = fifo.offline(e);
            }
        }
    }

    /// `lru_gen_release_memcg()`: take it off every FIFO before it is freed.
    pub(crate) fn release<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<R2, P>,
    ) {
        for (node, fifo) in self.memcg_lru.iter().enumerate() {
            if let Some(e) = Self::entry(m, node) {
                fifo.release(e);
            }
        }
    }

    /// `lru_gen_rotate_memcg(lruvec, MEMCG_LRU_YOUNG)`.
    pub(crate) fn rotate_young<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<R2, P>,
        node: usize,
    ) {
        if let (Some(fifo), Some(e)) = (self.memcg_lru.get(node), Self::entry(m, node)) {
            // Not on the FIFO (classic mode, or released): nothing to rotate.
            let _ = fifo.rotate(e, MemcgLruOp::Young);
        }
    }

    pub(crate) fn free(&self, cpu: usize, folio: &'static Folio) {
        (self.free_folio)(cpu, folio);
    }
}

/// Moves every folio of `src` to `dst`, relabelled with `dst_memcg`.
fn splice_to<R: RawMutex, G: LruGenFolio>(
    src: &Lruvec<R, G>,
    dst: &Lruvec<R, G>,
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

impl<R: RawMutex, V: PnLruvec> TreeLru<R, V> {
    /// Evicts up to `nr` pages from `m`'s lruvec on `node`: uncharges them, counts them and
    /// frees them through the hook; rotates the memcg young in the FIFO when the lruvec is
    /// out of cold folios (`lru_gen_shrink_lruvec()`). Returns pages reclaimed.
    pub(crate) fn shrink_lruvec<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<R2, P>,
        node: usize,
        cpu: usize,
        nr: u64,
    ) -> u64 {
        let Ok(lruvec) = m.lruvec(node) else { return 0 };
        let iso = lruvec.isolate_coldest(usize::try_from(nr).unwrap_or(usize::MAX));
        let n = iso.folios.len() as u64;
        for &(folio, item) in &iso.folios {
            let _ = m.mod_lruvec_state(cpu, node, item, -1);
            self.free(cpu, folio);
        }
        if let Ok(pn) = m.nodeinfo(node) {
            let wh = pn.write_hot();
            wh.nr_scanned.fetch_add(iso.scanned, Ordering::Relaxed);
            wh.nr_reclaimed.fetch_add(n, Ordering::Relaxed);
        }
        if n > 0 {
            // Each evicted folio carried one page of charge on this memcg.
            let _ = m.memory.uncharge(n);
            let _ = m.count_events(cpu, MemcgEvent::PgSteal, n);
        }
        if iso.scanned > 0 {
            let _ = m.count_events(cpu, MemcgEvent::PgScan, iso.scanned);
        }
        if iso.out_of_cold {
            self.rotate_young(m, node);
        }
        n
    }

    /// Moves `child`'s folios on `node` to `parent`, with their charge and LRU stats.
    pub(crate) fn reparent_node<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        child: &MemCgroup<R2, P>,
        parent: &MemCgroup<R2, P>,
        node: usize,
        cpu: usize,
    ) {
        let (Ok(src), Ok(dst), Ok(pn)) = (
            child.lruvec(node),
            parent.lruvec(node),
            child.nodeinfo(node),
        ) else {
            return;
        };
        let moved = src.splice_to(dst, parent.id());
        let n = moved.len() as u64;
        pn.cold().reparent_passes.fetch_add(1, Ordering::Relaxed);
        if n == 0 {
            return;
        }
        for &(_, old, new) in &moved {
            let _ = child.mod_lruvec_state(cpu, node, old, -1);
            let _ = parent.mod_lruvec_state(cpu, node, new, 1);
        }
        // The pages stay charged at the parent and above: drop only the child's level.
        let _ = child.memory.cancel_local(n);
        pn.cold().reparented_folios.fetch_add(n, Ordering::Relaxed);
        pn.cold().reparented_pages.fetch_add(n, Ordering::Relaxed);
    }
}

impl<R: RawMutex, V: PnLruvec> TreeLru<R, V> {
    /// Puts a charged folio on its memcg's lruvec and counts it under its LRU list
    /// (`lru_add_fn()` + `update_lru_size()`), for callers that do not batch.
    pub fn lru_add_folio<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<R2, P>,
        cpu: usize,
        folio: &'static Folio,
    ) -> Result<(), MemcgError> {
        let node = folio.node() as usize;
        if folio.memcg_id() != m.id() {
            return Err(MemcgError::NoSuchMemcg {
                id: folio.memcg_id(),
            });
        }
        let item = m.lruvec(node)?.add_folio(folio)?;
        m.mod_lruvec_state(cpu, node, item, 1)
    }

    /// Takes a folio off its memcg's lruvec (TestClearLRU, unlink) and uncounts it; the
    /// caller then uncharges it. Fails if the folio is not on `m`'s LRU.
    pub fn lru_del_folio<R2: RawMutex, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<R2, P>,
        cpu: usize,
        folio: &'static Folio,
    ) -> Result<(), MemcgError> {
        let node = folio.node() as usize;
        let item = m.lruvec(node)?.del_folio(folio)?;
        m.mod_lruvec_state(cpu, node, item, -1)
    }
}
