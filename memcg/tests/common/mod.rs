//! Shared host-test setup: a memcg tree on ksync's ticket locks, leaked `'static` folios, and a
//! free hook that counts reclaimed folios.
#![allow(dead_code)]

use lru::{Folio, FolioFlags, LruGenFolioGrouped, Lruvec, Zone};
use memcg::{ManualRcu, MemCgroupPerNodePaired, MemcgConfig, MemcgTree, TreeLru};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub type Lock = ksync::Ticket;
pub type Pn = MemCgroupPerNodePaired<Lruvec<Lock, LruGenFolioGrouped>>;
pub type Tree = MemcgTree<Lock, Pn, ManualRcu>;
pub type Ref<'t> = memcg::MemcgRef<'t, Lock, Pn, ManualRcu>;

pub struct Setup {
    pub tree: Tree,
    pub freed: Arc<AtomicU64>,
}

pub fn setup(nr_cpus: usize, nr_nodes: usize, mglru: bool) -> Setup {
    let freed = Arc::new(AtomicU64::new(0));
    let f = freed.clone();
    let lru = TreeLru::new(
        nr_nodes,
        lru::TailMode::Cached,
        mglru,
        Box::new(move |_cpu, _folio, _shadow| {
            f.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let tree = MemcgTree::new(MemcgConfig::new(nr_cpus, nr_nodes), ManualRcu::new(), lru)
        .expect("valid config");
    Setup { tree, freed }
}

static NEXT_PFN: AtomicU64 = AtomicU64::new(1);

/// A leaked folio on `node` (anon if `anon`).
pub fn folio(node: u32, anon: bool) -> &'static Folio {
    let pfn = NEXT_PFN.fetch_add(1, Ordering::Relaxed);
    let f: &'static Folio = Box::leak(Box::new(Folio::new(pfn, node, Zone::Normal).unwrap()));
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
    node: u32,
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
    node: u32,
    anon: bool,
) -> Result<&'static Folio, memcg::MemcgError> {
    let f = folio(node, anon);
    tree.charge_folio(memcg, cpu, f)?;
    tree.lru().lru_add_folio(memcg, cpu, f)?;
    Ok(f)
}

/// The free path: off the LRU, uncharge.
pub fn free(tree: &Tree, memcg: &Ref<'_>, cpu: usize, f: &'static Folio) {
    tree.lru().lru_del_folio(memcg, cpu, f).unwrap();
    tree.uncharge_folio(f).unwrap();
}
