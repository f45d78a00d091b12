//! `struct pglist_data`, the part the LRU needs: one per NUMA node.
//!
//! Models, from include/linux/mmzone.h: `node_id`; the node-wide `lru_lock` that every
//! lruvec of the node shared before Alex Shi's per-memcg lru_lock series (seed 004's
//! "before": a lruvec built with [`LruvecLock::Node`](crate::LruvecLock::Node) takes this
//! lock instead of its own); the node's memcg FIFO `memcg_lru` (`struct lru_gen_memcg`,
//! which global reclaim walks, seed 002); and the node's vmstat counters (`vm_stat[]` with
//! `per_cpu_nodestats`, [`crate::vmstat`]).
//!
//! Every lruvec points back at its node's `PgData` (`lruvec->pgdat`, near the end of
//! `struct lruvec`), so a `PgData` must outlive its lruvecs: they take `&'static PgData`.
//! The lruvec names it only as its host's node type, through
//! [`LruvecNode`] (the id and `lru_lock` it reads), which
//! `PgData` implements: the node is built on the lruvec, and the lruvec code does not
//! import it.
//! Zones, the buddy allocator and per-CPU page lists are the page allocator's (the `mm`
//! crate holds these `PgData`s next to its own per-node state); nothing here allocates.
//!
//! A node holds no hook into the layer above: a folio whose last reference drops inside lru
//! or memcg goes to the releaser its caller passed ([`crate::release`]).
//!
//! The groups follow Linux's placement: `node_id` read-mostly at the start, then
//! `lru_lock` on its own line (5.x's `ZONE_PADDING(_pad1_)` before it, "write-intensive
//! fields used by page reclaim"), the memcg FIFO, and the vmstat counters on lines of their
//! own at the end.
//!
//! Unsafe code here, and why: `PgData` declares itself `Send`/`Sync`: its lock and its FIFO
//! synchronise themselves, and it holds lruvecs only through `'static` links.
#![allow(unsafe_code)]

use crate::cacheline::CacheAligned;
use crate::error::LruError;
use crate::lock_classes::PgdatLruLock;
use crate::lruvec::{Lruvec, LruvecHost, LruvecNode};
use crate::memcg_lru::{LruGenMemcg, TailMode};
use crate::nid::MAX_NUMNODES;
use crate::nid::NodeId;
use crate::rcu::Rcu;
use crate::sync::Lock;
use crate::vmstat::{NodeStatItem, NodeVmstat, stat_threshold};
use lock_api::RawMutex;

/// A node's LRU state (`struct pglist_data`, LRU part), for lruvecs hosted by `H`.
#[repr(C)]
pub struct PgData<H: LruvecHost> {
    node_id: NodeId,
    /// `pgdat->lru_lock`: one lock for every lruvec of the node in seed 004's "before".
    lru_lock: CacheAligned<Lock<H::Family, PgdatLruLock>>,
    /// `pgdat->memcg_lru`: the node's memcg FIFO.
    memcg_lru: CacheAligned<LruGenMemcg<H::Family, Lruvec<H>>>,
    /// `vm_stat[]` and `per_cpu_nodestats`.
    vmstat: CacheAligned<NodeVmstat>,
}

// SAFETY: the lock and the FIFO synchronise themselves; everything else is atomic or
// immutable.
unsafe impl<H: LruvecHost> Sync for PgData<H> {}
// SAFETY: as above; the FIFO refers to lruvecs only through `'static`-valid links.
unsafe impl<H: LruvecHost> Send for PgData<H> {}

impl<H: LruvecHost> core::fmt::Debug for PgData<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PgData")
            .field("node_id", &self.node_id)
            .field("stat_threshold", &self.vmstat.threshold())
            .field("memcg_lru", &*self.memcg_lru)
            .finish()
    }
}

// The lruvec reaches its node through this trait (`lruvec->pgdat`), so lruvec code does not
// import the node, which is built on top of it.
impl<H: LruvecHost> LruvecNode<H::Family> for PgData<H> {
    #[inline]
    fn node_id(&self) -> NodeId {
        self.node_id
    }

    #[inline]
    fn lru_lock(&self) -> &Lock<H::Family, PgdatLruLock> {
        &self.lru_lock
    }
}

impl<H: LruvecHost> PgData<H> {
    /// Node `node_id` for `nr_cpus` CPUs with `managed_pages` pages (which sets the vmstat
    /// fold threshold as Linux does), its memcg FIFO inserting at the tail by `tail_mode`
    /// (seed 002's variants) and freeing entries after grace periods of `rcu`.
    pub fn new(
        node_id: NodeId,
        nr_cpus: usize,
        managed_pages: u64,
        tail_mode: TailMode,
        rcu: &'static Rcu<H::Family>,
    ) -> Result<Self, LruError> {
        if node_id >= MAX_NUMNODES {
            return Err(LruError::InvalidNode(node_id));
        }
        Ok(PgData {
            node_id,
            lru_lock: CacheAligned(<Lock<H::Family, PgdatLruLock> as RawMutex>::INIT),
            memcg_lru: CacheAligned(LruGenMemcg::new(tail_mode, node_id + 1, rcu)),
            vmstat: CacheAligned(NodeVmstat::new(
                nr_cpus,
                stat_threshold(nr_cpus, managed_pages),
            )),
        })
    }

    /// `pgdat->node_id`.
    #[inline]
    #[must_use]
    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    /// `pgdat->lru_lock` (taken by lruvecs built with
    /// [`LruvecLock::Node`](crate::LruvecLock::Node)).
    #[inline]
    #[must_use]
    pub fn lru_lock(&self) -> &Lock<H::Family, PgdatLruLock> {
        &self.lru_lock
    }

    /// The RCU domain lruvecs of this node are freed by (the memcg FIFO's).
    #[inline]
    #[must_use]
    pub fn rcu(&self) -> &'static Rcu<H::Family> {
        self.memcg_lru.rcu()
    }

    /// `pgdat->memcg_lru`.
    #[inline]
    #[must_use]
    pub fn memcg_lru(&self) -> &LruGenMemcg<H::Family, Lruvec<H>> {
        &self.memcg_lru
    }

    /// The node's vmstat counters.
    #[inline]
    #[must_use]
    pub fn vmstat(&self) -> &NodeVmstat {
        &self.vmstat
    }

    /// `__mod_node_page_state()`.
    #[inline]
    pub fn mod_node_page_state(
        &self,
        cpu: usize,
        item: NodeStatItem,
        delta: i64,
    ) -> Result<(), LruError> {
        self.vmstat.mod_state(cpu, item, delta)
    }

    /// `node_page_state()`.
    #[inline]
    #[must_use]
    pub fn node_page_state(&self, item: NodeStatItem) -> i64 {
        self.vmstat.state(item)
    }
}

/// `n` leaked nodes 0..n, each with `nr_cpus` CPUs, `managed_pages` pages, FIFO insertion
/// `tail_mode` and RCU domain `rcu`: what `NODE_DATA()` is for the callers of this crate
/// (the page allocator builds its own and leaks them the same way; they live as long as the
/// system).
pub fn alloc_nodes<H: LruvecHost>(
    n: usize,
    nr_cpus: usize,
    managed_pages: u64,
    tail_mode: TailMode,
    rcu: &'static Rcu<H::Family>,
) -> Result<&'static [&'static PgData<H>], LruError> {
    let mut v = alloc::vec::Vec::with_capacity(n);
    for node in 0..n {
        let node = u32::try_from(node).map_err(|_| LruError::InvalidNode(u32::MAX))?;
        let p: &'static PgData<H> = alloc::boxed::Box::leak(alloc::boxed::Box::new(PgData::new(
            node,
            nr_cpus,
            managed_pages,
            tail_mode,
            rcu,
        )?));
        v.push(p);
    }
    Ok(alloc::boxed::Box::leak(v.into_boxed_slice()))
}

/// The fields of `PgData<H>` for the layout report (the memcg FIFO and the vmstat block
/// as one field each; `lru_gen_memcg` has its own table).
pub fn pgdat_fields<H: LruvecHost>() -> [crate::layout::FieldDesc; 4] {
    use crate::layout::FieldDesc;
    use core::mem::{offset_of, size_of};
    type P<H> = PgData<H>;
    [
        FieldDesc {
            name: "node_id",
            offset: offset_of!(P<H>, node_id),
            size: size_of::<u32>(),
            group: "read_mostly",
        },
        FieldDesc {
            name: "lru_lock",
            offset: offset_of!(P<H>, lru_lock),
            size: size_of::<Lock<H::Family, PgdatLruLock>>(),
            group: "lru_lock",
        },
        FieldDesc {
            name: "memcg_lru",
            offset: offset_of!(P<H>, memcg_lru),
            size: size_of::<LruGenMemcg<H::Family, Lruvec<H>>>(),
            group: "memcg_lru",
        },
        FieldDesc {
            name: "vm_stat",
            offset: offset_of!(P<H>, vmstat),
            size: size_of::<NodeVmstat>(),
            group: "vmstat",
        },
    ]
}

/// [`pgdat_fields`] as a [`StructLayout`](crate::layout::StructLayout).
pub fn pgdat_layout<H: LruvecHost>(
    fields: &[crate::layout::FieldDesc],
) -> crate::layout::StructLayout<'_> {
    crate::layout::StructLayout {
        name: "pglist_data (lru part)",
        size: core::mem::size_of::<PgData<H>>(),
        align: core::mem::align_of::<PgData<H>>(),
        fields,
    }
}
