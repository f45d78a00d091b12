//! Shared host-test setup: a memcg tree on ksync's ticket locks over fresh nodes, an RCU
//! domain whose CPUs the test thread stands in for, leaked `'static` folios, and a free
//! hook that counts reclaimed folios.
//!
//! [`setup`] is the usual tree, whose free hook frees every folio and counts it. A test
//! about what reclaim does with the hook's answer (busy folios put back, frozen ones
//! handed to a batch hook, a race with truncation) writes its own [`TreeLru`] and gets
//! the same tree around it from [`tree_with`].
#![allow(dead_code)]

use ksync::Ticket;
use lru::{Folio, FolioFlags, LruGenFolioGrouped, NodeId, Rcu, Zone};
use memcg::{FolioFree, MemCgroupPerNodePaired, MemcgConfig, MemcgTree, TreeLru};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub type Lock = Ticket;
pub type Pn = MemCgroupPerNodePaired<Ticket, LruGenFolioGrouped>;
pub type Tree = MemcgTree<Pn>;
pub type Ref<'t> = memcg::MemcgRef<'t, Pn>;

pub struct Setup {
    pub tree: Tree,
    pub freed: Arc<AtomicU64>,
}

/// A leaked RCU domain of `nr_cpus` CPUs, all online (the test thread stands in for all of
/// them; see [`grace_period`]).
pub fn rcu(nr_cpus: usize) -> &'static Rcu<Ticket> {
    let rcu: &'static Rcu<Ticket> = Box::leak(Box::new(Rcu::new(nr_cpus)));
    for cpu in 0..nr_cpus {
        rcu.online(cpu).unwrap();
    }
    rcu
}

/// A grace period of `tree`'s domain, driven by a test thread that holds no read guard and
/// stands in for every CPU: all CPUs go through an extended quiescent state (offline), the
/// grace period completes, and they come back online.
pub fn grace_period(tree: &Tree) {
    let rcu = tree.rcu();
    for cpu in 0..rcu.nr_cpus() {
        rcu.offline(cpu).unwrap();
    }
    rcu.synchronize(None).unwrap();
    for cpu in 0..rcu.nr_cpus() {
        rcu.online(cpu).unwrap();
    }
}

pub fn tree_lru(mglru: bool, freed: Arc<AtomicU64>) -> TreeLru {
    TreeLru::new(
        mglru,
        Box::new(move |_cpu, _folio, _shadow| {
            freed.fetch_add(1, Ordering::Relaxed);
            FolioFree::Freed
        }),
    )
}

/// A tree of `config` over fresh nodes (cached LRU tails) and a fresh RCU domain, whose
/// reclaim frees folios through `lru`'s hooks.
pub fn tree_with(config: MemcgConfig, lru: TreeLru) -> Tree {
    MemcgTree::with_new_nodes(config, lru::TailMode::Cached, rcu(config.nr_cpus), lru)
        .expect("valid config")
}

pub fn setup_with(config: MemcgConfig, mglru: bool) -> Setup {
    let freed = Arc::new(AtomicU64::new(0));
    let tree = tree_with(config, tree_lru(mglru, freed.clone()));
    Setup { tree, freed }
}

pub fn setup(nr_cpus: usize, nr_nodes: usize, mglru: bool) -> Setup {
    setup_with(MemcgConfig::new(nr_cpus, nr_nodes), mglru)
}

static NEXT_PFN: AtomicU64 = AtomicU64::new(1);

/// A leaked folio on `node` (anon if `anon`), holding its owner's one reference (as an
/// allocated frame does; reclaim pins folios with `try_get` and skips unreferenced ones).
pub fn folio(node: NodeId, anon: bool) -> &'static Folio {
    let pfn = NEXT_PFN.fetch_add(1, Ordering::Relaxed);
    let f: &'static Folio = Box::leak(Box::new(Folio::new(pfn, node, Zone::Normal).unwrap()));
    f.get();
    if anon {
        f.set(FolioFlags::SWAPBACKED);
    }
    f
}

/// The fault path: charge a fresh folio to `memcg` and put it on its LRU.
pub fn fault_err(
    tree: &Tree,
    memcg: &Ref<'_>,
    cpu: usize,
    node: NodeId,
    anon: bool,
) -> memcg::MemcgError {
    match try_fault(tree, memcg, cpu, node, anon) {
        Ok(_) => panic!("expected the fault to fail"),
        Err(e) => e,
    }
}

pub fn try_fault(
    tree: &Tree,
    memcg: &Ref<'_>,
    cpu: usize,
    node: NodeId,
    anon: bool,
) -> Result<&'static Folio, memcg::MemcgError> {
    let f = folio(node, anon);
    tree.charge_folio(memcg, cpu, f)?;
    tree.lru().lru_add_folio(memcg, f)?;
    Ok(f)
}

/// The free path: off the LRU, uncharge.
pub fn free(tree: &Tree, memcg: &Ref<'_>, cpu: usize, f: &'static Folio) {
    tree.lru().lru_del_folio(memcg, f).unwrap();
    tree.uncharge_folio(cpu, f).unwrap();
}

/// `n` faults into `m` on `node`, half of them anon.
pub fn fill(s: &Setup, m: &Ref<'_>, node: NodeId, n: u64) {
    for i in 0..n {
        try_fault(&s.tree, m, 0, node, i % 2 == 0).unwrap();
    }
    s.tree.stocks().drain(0).unwrap();
}
