//! Everything memcg does to `lru`'s shared structures: the memcg FIFO of each node
//! (`lru_gen_online_memcg()` / `lru_gen_offline_memcg()` / `lru_gen_release_memcg()` /
//! `lru_gen_rotate_memcg()` on `pgdat->memcg_lru`), memcg reclaim of one lruvec
//! (`shrink_lruvec()` / `lru_gen_shrink_lruvec()`), and moving folios to the parent on
//! offline (reparenting).
//!
//! A reclaimed folio is handed with its shadow entry to the owner of the tree's frames
//! ([`FolioOwner::evict_folio`], see [`owner`]: the kernel unmaps it through the reverse map,
//! freezes its refcount and frees the frame). The owner may decline (the folio is busy: mapped again, or its refcount
//! cannot be frozen); such a folio goes back on its LRU (`folio_putback_lru()`) and is
//! neither uncharged nor counted as reclaimed. A freed folio is uncharged from its memcg,
//! drops the css reference its charge held, and is counted (`pgsteal`, its LRU list size);
//! the batch's freed folios are uncharged together (one page-counter update and one
//! `css_put_many` per lruvec pass). The owner may also leave the frame to be freed later
//! ([`FolioFree::Frozen`]): those folios go back to it in one call once uncharged
//! ([`FolioOwner::free_evicted`]), as `shrink_folio_list()` ends with `free_unref_folios()`.
//!
//! Unsafe code here, and why: putting a memcg's lruvec back on the FIFO calls the FIFO's
//! `unsafe fn online`, whose lifetime promise the tree's release-then-grace-period order
//! keeps.
#![allow(unsafe_code)]

mod lruvec_ops;
pub mod owner;

pub use lruvec_ops::{Isolated, Moved, Reclaimed};
pub(crate) use lruvec_ops::{add_folio, del_folio, reclaim, splice_to};
pub use owner::{FolioFree, FolioFreeBatchFn, FolioFreeFn, FolioHooks, FolioOwner, FolioReleaseFn};

use crate::error::MemcgError;
use crate::memcontrol::MemCgroup;
use crate::pn::MemCgroupPerNode;
use crate::stats::MemcgEvent;
use crate::sync::{AtomicU64, Ordering};
use alloc::vec::Vec;
use lru::NodeId;
use lru::{Folio, FolioRelease, LruMode, MemcgLruOp};

/// Linux's default `vm.swappiness`.
pub const DEFAULT_SWAPPINESS: u8 = 60;

/// memcg's view of `lru` shared by the whole tree: the lruvec mode, reclaim's swappiness
/// and clock, and the owner of the folios' frames (`O`, see [`owner`]). The memcg FIFOs are
/// the nodes' (`pgdat->memcg_lru`).
pub struct TreeLru<O = FolioHooks> {
    owner: O,
    mglru: bool,
    swappiness: u8,
    /// The clock MGLRU aging stamps generations with, set by the owner.
    now: AtomicU64,
}

impl<O> core::fmt::Debug for TreeLru<O> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TreeLru")
            .field("mglru", &self.mglru)
            .field("swappiness", &self.swappiness)
            .finish()
    }
}

impl TreeLru<FolioHooks> {
    /// Lruvecs run MGLRU if `mglru`; reclaimed folios go to `free_folio` (a tree whose
    /// folios are not frames: [`FolioHooks`]).
    pub fn new(mglru: bool, free_folio: FolioFreeFn) -> Self {
        Self::with_owner(mglru, FolioHooks::new(free_folio))
    }

    /// Installs the closure that frees, in one call per reclaim batch, the folios the free
    /// hook returned [`FolioFree::Frozen`] for.
    pub fn with_free_batch(mut self, free_batch: FolioFreeBatchFn) -> Self {
        self.owner = self.owner.with_free_batch(free_batch);
        self
    }

    /// Installs the closure that gets folios whose last reference drops inside memcg or lru.
    pub fn with_release(mut self, release: FolioReleaseFn) -> Self {
        self.owner = self.owner.with_release(release);
        self
    }
}

impl<O> TreeLru<O> {
    /// Lruvecs run MGLRU if `mglru`; the folios' frames are `owner`'s.
    pub fn with_owner(mglru: bool, owner: O) -> Self {
        Self {
            owner,
            mglru,
            swappiness: DEFAULT_SWAPPINESS,
            now: AtomicU64::new(0),
        }
    }

    /// The owner of the folios' frames.
    pub fn owner(&self) -> &O {
        &self.owner
    }

    /// Sets the default swappiness memcg reclaim passes to eviction (0 = file only,
    /// [`lru::MAX_SWAPPINESS`] = anon only).
    pub fn with_swappiness(mut self, swappiness: u8) -> Self {
        self.swappiness = swappiness.min(lru::MAX_SWAPPINESS);
        self
    }

    /// The default swappiness.
    pub fn swappiness(&self) -> u8 {
        self.swappiness
    }

    /// Advances the clock MGLRU aging stamps generations with.
    pub fn set_now(&self, now: u64) {
        self.now.fetch_max(now, Ordering::Relaxed);
    }

    /// The aging clock.
    pub fn now(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }

    /// Whether new lruvecs run MGLRU.
    pub fn mglru(&self) -> bool {
        self.mglru
    }

    /// The mode of new lruvecs.
    pub fn mode(&self) -> LruMode {
        if self.mglru {
            LruMode::Mglru
        } else {
            LruMode::Classic
        }
    }

    /// `lru_gen_online_memcg()` on every node.
    pub(crate) fn online<P: MemCgroupPerNode>(&self, m: &MemCgroup<P>) {
        if !self.mglru {
            return;
        }
        for node in 0..m.nr_nodes() as NodeId {
            if let Ok(lruvec) = m.lruvec(node) {
                // SAFETY: the memcg (and with it this lruvec) is released from every FIFO
                // in `release` before the tree unlinks it, and freed only after a grace
                // period of the nodes' RCU domain that starts after the release (the
                // tree's reaper, or an RCU callback when the tree is dropped).
                // A lruvec is onlined once, at creation; an error would mean it already is.
                let _ = unsafe { lruvec.pgdat().memcg_lru().online(lruvec) };
            }
        }
    }

    /// `lru_gen_offline_memcg()`: move to the old generation so it is reclaimed first.
    pub(crate) fn offline<P: MemCgroupPerNode>(&self, m: &MemCgroup<P>) {
        for node in 0..m.nr_nodes() as NodeId {
            if let Ok(lruvec) = m.lruvec(node) {
                // Not on the FIFO (classic mode): nothing to do.
                let _ = lruvec.pgdat().memcg_lru().offline(lruvec);
            }
        }
    }

    /// `lru_gen_release_memcg()`: take it off every FIFO before it is freed.
    pub(crate) fn release<P: MemCgroupPerNode>(&self, m: &MemCgroup<P>) {
        for node in 0..m.nr_nodes() as NodeId {
            if let Ok(lruvec) = m.lruvec(node) {
                lruvec.pgdat().memcg_lru().release(lruvec);
            }
        }
    }

    /// `lru_gen_rotate_memcg(lruvec, op)`.
    pub(crate) fn rotate<P: MemCgroupPerNode>(
        &self,
        m: &MemCgroup<P>,
        node: NodeId,
        op: MemcgLruOp,
    ) {
        if let Ok(lruvec) = m.lruvec(node) {
            // Not on the FIFO (classic mode, or released): nothing to rotate.
            let _ = lruvec.pgdat().memcg_lru().rotate(lruvec, op);
        }
    }

    /// Evicts up to `nr` pages from `m`'s lruvec on `node` with `swappiness`, hands them to
    /// the owner, and for the freed ones uncharges, drops their css references and counts;
    /// busy ones go back on the LRU. Returns (pages reclaimed, whether the lruvec is out of
    /// cold folios). `tree` is the tree this is the LRU view of (the owner works on it).
    pub(crate) fn shrink_lruvec<P: MemCgroupPerNode, T: FolioRelease>(
        &self,
        tree: &T,
        m: &MemCgroup<P>,
        node: NodeId,
        cpu: usize,
        nr: u64,
        swappiness: u8,
    ) -> (u64, bool)
    where
        O: FolioOwner<T>,
    {
        let Ok(lruvec) = m.lruvec(node) else {
            return (0, false);
        };
        let nr = usize::try_from(nr).unwrap_or(usize::MAX);
        let iso = reclaim(lruvec, nr, swappiness, self.now(), tree);
        let mut freed = 0u64;
        let mut frozen: Vec<&'static Folio> = Vec::new();
        for r in &iso.folios {
            match self.owner.evict_folio(tree, cpu, r.folio, r.shadow) {
                FolioFree::Freed => freed += 1,
                FolioFree::Frozen => {
                    freed += 1;
                    frozen.push(r.folio);
                }
                FolioFree::Busy => {
                    // folio_putback_lru(): back on the LRU, still charged, and the
                    // reference reclaim took to isolate it dropped (maybe the last one:
                    // truncation may have raced; then the node releases it).
                    ksync::warn_on_once!(
                        add_folio(lruvec, r.folio).is_err(),
                        "reclaim could not put a busy folio back on its LRU"
                    );
                    ksync::warn_on_once!(
                        lru::folio_put(tree, cpu, r.folio).is_err(),
                        "reclaim's putback dropped a reference the folio did not hold"
                    );
                }
            }
        }
        if let Ok(pn) = m.nodeinfo(node) {
            let wh = pn.write_hot();
            wh.nr_scanned.fetch_add(iso.scanned, Ordering::Relaxed);
            wh.nr_reclaimed.fetch_add(freed, Ordering::Relaxed);
        }
        if freed > 0 {
            // Each freed folio carried one page of charge and one css reference.
            ksync::warn_on_once!(
                m.memory.uncharge(freed).is_err(),
                "reclaim uncharged more than was charged"
            );
            m.css_put_many_on(cpu, freed as usize);
            ksync::warn_on_once!(
                m.count_events(cpu, MemcgEvent::PgSteal, freed).is_err(),
                "reclaim counted on a CPU the memcg does not have"
            );
        }
        // Uncharged: now their frames, in one batch.
        if !frozen.is_empty() {
            self.owner.free_evicted(tree, cpu, &frozen);
        }
        if iso.scanned > 0 {
            ksync::warn_on_once!(
                m.count_events(cpu, MemcgEvent::PgScan, iso.scanned)
                    .is_err(),
                "reclaim counted on a CPU the memcg does not have"
            );
        }
        (freed, iso.out_of_cold)
    }

    /// Moves `child`'s folios on `node` to `parent`, with their charge, their css
    /// references and LRU stats. The folios it pinned to move them go on `pins`, for the
    /// caller to drop (`folio_put`) once it holds no lock.
    pub(crate) fn reparent_node<P: MemCgroupPerNode>(
        &self,
        child: &MemCgroup<P>,
        parent: &MemCgroup<P>,
        node: NodeId,
        pins: &mut Vec<&'static Folio>,
    ) {
        let (Ok(src), Ok(dst), Ok(pn)) = (
            child.lruvec(node),
            parent.lruvec(node),
            child.nodeinfo(node),
        ) else {
            return;
        };
        let moved = splice_to(src, dst, parent.id(), pins);
        let n = moved.len() as u64;
        pn.cold().reparent_passes.fetch_add(1, Ordering::Relaxed);
        if n == 0 {
            return;
        }
        // The LRU size statistics moved with the list operations themselves.
        // The pages stay charged at the parent and above: drop only the child's level. The
        // folios' css references move with them.
        ksync::warn_on_once!(
            child.memory.cancel_local(n).is_err(),
            "reparenting cancelled more than the child had charged"
        );
        parent.css_get_many(n as usize);
        child.css_put_many(n as usize);
        pn.cold().reparented_folios.fetch_add(n, Ordering::Relaxed);
        pn.cold().reparented_pages.fetch_add(n, Ordering::Relaxed);
    }
}

impl<O> TreeLru<O> {
    /// Puts a charged folio on its memcg's lruvec and counts it under its LRU list
    /// (`lru_add_fn()` + `update_lru_size()`), for callers that do not batch.
    pub fn lru_add_folio<P: MemCgroupPerNode>(
        &self,
        m: &MemCgroup<P>,
        folio: &'static Folio,
    ) -> Result<(), MemcgError> {
        let node = folio.node();
        if folio.memcg_id() != m.id() {
            return Err(MemcgError::NoSuchMemcg {
                id: folio.memcg_id(),
            });
        }
        // The LRU size statistics are the list code's (`update_lru_size`, through the
        // lruvec host), as in Linux.
        add_folio(m.lruvec(node)?, folio).map(|_| ())
    }

    /// Takes a folio off its memcg's lruvec (TestClearLRU, unlink) and uncounts it; the
    /// caller then uncharges it. Fails if the folio is not on `m`'s LRU.
    pub fn lru_del_folio<P: MemCgroupPerNode>(
        &self,
        m: &MemCgroup<P>,
        folio: &'static Folio,
    ) -> Result<(), MemcgError> {
        let node = folio.node();
        del_folio(m.lruvec(node)?, folio).map(|_| ())
    }
}
