//! Everything memcg does to `lru`'s shared structures: the memcg FIFO of each node
//! (`lru_gen_online_memcg()` / `lru_gen_offline_memcg()` / `lru_gen_release_memcg()` /
//! `lru_gen_rotate_memcg()`), memcg reclaim of one lruvec (`shrink_lruvec()` /
//! `lru_gen_shrink_lruvec()`), and moving folios to the parent on offline (reparenting).
//!
//! A reclaimed folio is uncharged from its memcg, counted (`pgscan`, `pgsteal`, its LRU
//! list size) and handed with its shadow entry to the owner's free hook (the kernel frees
//! the frame). The FIFO takes `&'static` entries; this module hands it lruvecs that live
//! inside heap-allocated memcgs, which is sound because a memcg is released from every FIFO
//! before it is unlinked and freed only after an RCU grace period (see [`crate::tree`]).

mod lruvec_ops;

pub use lruvec_ops::{Isolated, Moved, Reclaimed};

use crate::error::MemcgError;
use crate::memcontrol::MemCgroup;
use crate::pn::{MemCgroupPerNode, PnLruvec};
use crate::stats::MemcgEvent;
use crate::sync::{AtomicU64, Ordering};
use alloc::boxed::Box;
use ksync::LockFamily;
use lru::memcg_lru::TailMode;
use lru::{Folio, LruGenMemcg, MemcgLruOp, Shadow};

/// Linux's default `vm.swappiness`.
pub const DEFAULT_SWAPPINESS: u8 = 60;

/// Hook receiving reclaimed folios (`cpu`, folio, shadow entry if MGLRU evicted it); the
/// kernel frees the frame and keeps the shadow for refault detection.
pub type FolioFreeFn = Box<dyn Fn(usize, &'static Folio, Option<Shadow>) + Send + Sync>;

/// memcg's view of `lru` shared by the whole tree: one memcg FIFO per node
/// (`pgdat->memcg_lru`) and the hook that frees reclaimed folios.
pub struct TreeLru<F: LockFamily, V: PnLruvec> {
    memcg_lru: Box<[LruGenMemcg<F, V>]>,
    free_folio: FolioFreeFn,
    mglru: bool,
    swappiness: u8,
    /// The clock MGLRU aging stamps generations with, set by the owner.
    now: AtomicU64,
}

impl<F: LockFamily, V: PnLruvec> core::fmt::Debug for TreeLru<F, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TreeLru")
            .field("nr_nodes", &self.memcg_lru.len())
            .field("mglru", &self.mglru)
            .finish()
    }
}

impl<F: LockFamily, V: PnLruvec> TreeLru<F, V> {
    /// FIFOs for `nr_nodes` nodes with seed 002's `tail_mode`; lruvecs run MGLRU if
    /// `mglru`; reclaimed folios go to `free_folio`.
    pub fn new(nr_nodes: usize, tail_mode: TailMode, mglru: bool, free_folio: FolioFreeFn) -> Self {
        Self {
            memcg_lru: (0..nr_nodes)
                .map(|n| LruGenMemcg::new(tail_mode, n as u32 + 1))
                .collect(),
            free_folio,
            mglru,
            swappiness: DEFAULT_SWAPPINESS,
            now: AtomicU64::new(0),
        }
    }

    /// Sets the swappiness memcg reclaim passes to MGLRU eviction (0 = file only,
    /// 200 = anon only).
    pub fn with_swappiness(mut self, swappiness: u8) -> Self {
        self.swappiness = swappiness.min(lru::MAX_SWAPPINESS);
        self
    }

    /// Advances the clock MGLRU aging stamps generations with.
    pub fn set_now(&self, now: u64) {
        self.now.fetch_max(now, Ordering::Relaxed);
    }

    /// Whether new lruvecs run MGLRU.
    pub fn mglru(&self) -> bool {
        self.mglru
    }

    /// The memcg FIFO of `node` (global reclaim walks it under RCU).
    pub fn memcg_lru(&self, node: usize) -> Option<&LruGenMemcg<F, V>> {
        self.memcg_lru.get(node)
    }

    /// The lruvec of `m` on `node` as the `'static` entry the FIFO stores.
    fn entry<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        m: &MemCgroup<F2, P>,
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
    pub(crate) fn online<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<F2, P>,
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
    pub(crate) fn offline<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<F2, P>,
    ) {
        for (node, fifo) in self.memcg_lru.iter().enumerate() {
            if let Some(e) = Self::entry(m, node) {
                let _ = fifo.offline(e);
            }
        }
    }

    /// `lru_gen_release_memcg()`: take it off every FIFO before it is freed.
    pub(crate) fn release<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<F2, P>,
    ) {
        for (node, fifo) in self.memcg_lru.iter().enumerate() {
            if let Some(e) = Self::entry(m, node) {
                fifo.release(e);
            }
        }
    }

    /// `lru_gen_rotate_memcg(lruvec, MEMCG_LRU_YOUNG)`.
    pub(crate) fn rotate_young<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<F2, P>,
        node: usize,
    ) {
        if let (Some(fifo), Some(e)) = (self.memcg_lru.get(node), Self::entry(m, node)) {
            // Not on the FIFO (classic mode, or released): nothing to rotate.
            let _ = fifo.rotate(e, MemcgLruOp::Young);
        }
    }

    pub(crate) fn free(&self, cpu: usize, folio: &'static Folio, shadow: Option<Shadow>) {
        (self.free_folio)(cpu, folio, shadow);
    }
}

impl<F: LockFamily, V: PnLruvec> TreeLru<F, V> {
    /// Evicts up to `nr` pages from `m`'s lruvec on `node`: uncharges them, counts them and
    /// frees them through the hook; rotates the memcg young in the FIFO when the lruvec is
    /// out of cold folios (`lru_gen_shrink_lruvec()`). Returns pages reclaimed.
    pub(crate) fn shrink_lruvec<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<F2, P>,
        node: usize,
        cpu: usize,
        nr: u64,
    ) -> u64 {
        let Ok(lruvec) = m.lruvec(node) else { return 0 };
        let nr = usize::try_from(nr).unwrap_or(usize::MAX);
        let iso = lruvec.reclaim(nr, self.swappiness, self.now.load(Ordering::Relaxed));
        let n = iso.folios.len() as u64;
        for r in &iso.folios {
            let _ = m.mod_lruvec_state(cpu, node, r.item, -1);
            self.free(cpu, r.folio, r.shadow);
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
    pub(crate) fn reparent_node<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        child: &MemCgroup<F2, P>,
        parent: &MemCgroup<F2, P>,
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

impl<F: LockFamily, V: PnLruvec> TreeLru<F, V> {
    /// Puts a charged folio on its memcg's lruvec and counts it under its LRU list
    /// (`lru_add_fn()` + `update_lru_size()`), for callers that do not batch.
    pub fn lru_add_folio<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<F2, P>,
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
    pub fn lru_del_folio<F2: LockFamily, P: MemCgroupPerNode<Lruvec = V>>(
        &self,
        m: &MemCgroup<F2, P>,
        cpu: usize,
        folio: &'static Folio,
    ) -> Result<(), MemcgError> {
        let node = folio.node() as usize;
        let item = m.lruvec(node)?.del_folio(folio)?;
        m.mod_lruvec_state(cpu, node, item, -1)
    }
}
