//! The invariant checker (`CONFIG_DEBUG_VM`'s checks, run all at once on a quiet system).
//!
//! Called by tests and after every benchmark run, with every CPU quiesced (no fault, unmap,
//! read or reclaim in flight). It first drains what is legitimately in flight between
//! operations (the per-CPU folio batches, the memcg charge stocks), then checks:
//!
//! - the page allocator's own books (free lists, per-CPU lists, counters:
//!   [`page_alloc::PageAlloc::check`]), and that free + per-CPU + allocated + reserved frames add
//!   up to the present frames, no frame counted twice;
//! - every folio on an LRU list is on exactly one list, of the lruvec of its own memcg and
//!   node, has its LRU flag, is referenced and charged; every list's size equals the number
//!   of folios on it;
//! - every memcg's `memory.current` equals the folios charged in its subtree (with the
//!   stocks drained every charged folio is on an LRU);
//! - every present PTE maps a folio that is not free, is on an LRU and is charged, and every
//!   folio's mapcount equals the PTEs that map it; every PTE table frame is allocated;
//! - every page-cache entry holds a folio that names its object and index, holds a
//!   reference for the cache plus one per mapping, is charged and on an LRU; the object's
//!   counts of folios and shadows match its slots;
//! - every LRU folio is accounted for: mapped (anonymous) or cached (object);
//! - no `WARN_ON_ONCE` site fired ([`ksync::warn`]: an uncharge or a free that failed, a
//!   folio put back nowhere), here or anywhere since boot.
//!
//! Unsafe code here, and why: the checker turns cached folios' mapping words into their
//! objects (`object_of`) to check they agree.
#![allow(unsafe_code)]

use crate::context::Vm;
use crate::fault::{MAPPING_ANON, object_of};
use crate::mm_struct::MmStruct;
use crate::object::Object;
use crate::pgtable::{Mmu, PTRS_PER_PTE};
use crate::vma::VmArea;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use lru::{Folio, FolioFlags, LruList, LruMode, Zone};
use memcg::MemCgroupPerNode;

/// What the checker found (when everything held).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmCensus {
    /// Folios on LRU lists.
    pub lru_folios: u64,
    /// Present PTEs.
    pub mapped_ptes: u64,
    /// PTE table frames.
    pub pte_tables: u64,
    /// Folios in page caches.
    pub cached_folios: u64,
    /// Shadow entries in page caches.
    pub shadows: u64,
    /// Pages charged at the root (`memory.current` of the whole hierarchy).
    pub charged: u64,
    /// Free frames (buddy and per-CPU lists).
    pub free_frames: u64,
}

/// A violated invariant, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmCheckError(pub String);

impl core::fmt::Display for VmCheckError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! fail {
    ($($arg:tt)+) => {
        return Err(VmCheckError(format!($($arg)+)))
    };
}

const ZONES: [Zone; 4] = [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable];

impl<P: MemCgroupPerNode, M: Mmu> Vm<P, M> {
    /// Checks every invariant over the address spaces `mms` and the objects `objects` (every
    /// one this context's folios belong to), from `cpu`. See the module documentation.
    pub fn check<V: VmArea>(
        &self,
        cpu: usize,
        mms: &[&MmStruct<V, M>],
        objects: &[&Object],
    ) -> Result<VmCensus, VmCheckError> {
        let cpu = self.cpu(cpu);
        self.lru_add_drain_all(cpu);
        self.tree.stocks().drain_all(|_| true);
        let mut census = VmCensus::default();
        let alloc = self
            .alloc
            .check()
            .map_err(|e| VmCheckError(format!("page allocator: {e:?}")))?;
        census.free_frames = alloc.free_pages + alloc.pcp_pages;

        // LRU lists: each folio once, on its own lruvec, sizes right.
        let mut on_lru: BTreeMap<u64, &'static Folio> = BTreeMap::new();
        let mut own: BTreeMap<u16, u64> = BTreeMap::new();
        for m in self.tree.all_memcgs() {
            for node in 0..m.nr_nodes() as lru::NodeId {
                let Ok(lruvec) = m.lruvec(node) else { continue };
                let mut g = lruvec.lock();
                let mut bad: Option<String> = None;
                let mut visit = |f: &'static Folio, what: &str| {
                    if bad.is_some() {
                        return;
                    }
                    if on_lru.insert(f.pfn(), f).is_some() {
                        bad = Some(format!("pfn {:#x} on two LRU lists ({what})", f.pfn()));
                    } else if f.memcg_id() != m.id() || f.node() != node {
                        bad = Some(format!(
                            "pfn {:#x} of memcg {} node {} on the lruvec of memcg {} node {node} ({what})",
                            f.pfn(),
                            f.memcg_id(),
                            f.node(),
                            m.id()
                        ));
                    } else if !f.test_lru() || f.refcount() == 0 || f.test(FolioFlags::BUDDY) {
                        bad = Some(format!(
                            "pfn {:#x} on an LRU list without its LRU flag, unreferenced or free: {f:?}",
                            f.pfn()
                        ));
                    }
                    *own.entry(m.id()).or_default() += 1;
                };
                for lru in LruList::ALL {
                    let mut n = 0usize;
                    g.for_each_on_list(lru, |f| {
                        n += 1;
                        visit(f, "classic");
                    });
                    if lruvec.mode() == LruMode::Classic && n != lruvec.lru_size(lru) {
                        fail!(
                            "memcg {} node {node}: list {lru:?} holds {n} folios, its size says {}",
                            m.id(),
                            lruvec.lru_size(lru)
                        );
                    }
                }
                if lruvec.mode() == LruMode::Mglru {
                    for r#gen in 0..lru::lru_gen::MAX_NR_GENS {
                        for ty in 0..2 {
                            let mut n = 0i64;
                            for zone in ZONES {
                                g.for_each_in_gen(r#gen, ty, zone, |f| {
                                    n += 1;
                                    visit(f, "generation");
                                });
                            }
                            if n != lruvec.nr_gen_pages(r#gen, ty) {
                                fail!(
                                    "memcg {} node {node}: generation {gen} type {ty} holds {n} folios, its size says {}",
                                    m.id(),
                                    lruvec.nr_gen_pages(r#gen, ty)
                                );
                            }
                        }
                    }
                }
                drop(g);
                if let Some(b) = bad {
                    fail!("{b}");
                }
            }
        }
        census.lru_folios = on_lru.len() as u64;

        // memory.current == folios charged in the subtree.
        let all = self.tree.all_memcgs();
        let mut subtree: BTreeMap<u16, u64> = BTreeMap::new();
        for m in &all {
            let n = own.get(&m.id()).copied().unwrap_or(0);
            let mut p = Some(&**m);
            while let Some(c) = p {
                *subtree.entry(c.id()).or_default() += n;
                p = c.parent();
            }
        }
        for m in &all {
            let want = subtree.get(&m.id()).copied().unwrap_or(0);
            if m.usage() != want {
                fail!(
                    "memcg {}: memory.current is {} pages, but {want} folios are charged in its subtree",
                    m.id(),
                    m.usage()
                );
            }
        }
        census.charged = self.tree.root().usage();

        // Page tables.
        let mut maps: BTreeMap<u64, u64> = BTreeMap::new();
        for mm in mms {
            let mut bad: Option<String> = None;
            mm.pgtable().for_each_table(|base, table| {
                census.pte_tables += 1;
                if table.folio().refcount() == 0 || table.folio().test(FolioFlags::BUDDY) {
                    bad.get_or_insert(format!("PTE table at {base:#x} sits in a free frame"));
                }
                for i in 0..PTRS_PER_PTE {
                    let Some(pfn) = self.mmu.pte_pfn(table.read(i)) else {
                        continue;
                    };
                    let pfn = pfn.as_u64();
                    census.mapped_ptes += 1;
                    let va = base + i as u64 * 4096;
                    // A folio on an LRU list is charged: the walk above checked that its
                    // memcg is the (non-zero) id of the lruvec it is on.
                    match on_lru.get(&pfn) {
                        Some(_) => *maps.entry(pfn).or_default() += 1,
                        None => {
                            bad.get_or_insert(format!(
                                "PTE {va:#x} maps pfn {pfn:#x}, which is on no LRU (free or lost)"
                            ));
                        }
                    }
                }
            });
            if let Some(b) = bad {
                fail!("{b}");
            }
        }
        for (&pfn, &n) in &maps {
            let f = on_lru[&pfn];
            if f.mapcount() as u64 != n {
                fail!(
                    "pfn {pfn:#x}: mapcount {} but {n} PTEs map it",
                    f.mapcount()
                );
            }
        }

        // Page caches.
        let mut cached: BTreeSet<u64> = BTreeSet::new();
        for obj in objects {
            let (mut folios, mut shadows) = (0u64, 0u64);
            let mut bad: Option<String> = None;
            obj.cache().for_each(|index, f| {
                let Some(f) = f else {
                    shadows += 1;
                    return;
                };
                folios += 1;
                cached.insert(f.pfn());
                // SAFETY: a cached folio's mapping is its object (checked right here).
                let owner = unsafe { object_of(f) }.map(core::ptr::from_ref);
                if owner != Some(core::ptr::from_ref(*obj)) || f.index() != index {
                    bad.get_or_insert(format!(
                        "object {} slot {index}: its folio names mapping {:#x} index {}",
                        obj.id(),
                        f.mapping(),
                        f.index()
                    ));
                } else if !on_lru.contains_key(&f.pfn()) {
                    bad.get_or_insert(format!(
                        "object {} slot {index}: cached pfn {:#x} is on no LRU",
                        obj.id(),
                        f.pfn()
                    ));
                } else if f.refcount() != 1 + f.mapcount() {
                    bad.get_or_insert(format!(
                        "object {} slot {index}: refcount {} for the cache and {} mappings",
                        obj.id(),
                        f.refcount(),
                        f.mapcount()
                    ));
                }
            });
            if let Some(b) = bad {
                fail!("{b}");
            }
            if folios != obj.cache().nr_folios() || shadows != obj.cache().nr_shadows() {
                fail!(
                    "object {}: {folios} folios and {shadows} shadows in its slots, counts say {} and {}",
                    obj.id(),
                    obj.cache().nr_folios(),
                    obj.cache().nr_shadows()
                );
            }
            census.cached_folios += folios;
            census.shadows += shadows;
        }

        // Every LRU folio is mapped (anonymous) or cached (object).
        for (&pfn, f) in &on_lru {
            let anon = f.mapping() & MAPPING_ANON != 0;
            if anon && f.mapcount() == 0 {
                fail!("anonymous pfn {pfn:#x} on an LRU but mapped nowhere (leaked)");
            }
            if !anon && !cached.contains(&pfn) {
                fail!("object pfn {pfn:#x} on an LRU but in no page cache (leaked)");
            }
            if anon && f.refcount() != f.mapcount() {
                fail!(
                    "anonymous pfn {pfn:#x}: refcount {} for {} mappings",
                    f.refcount(),
                    f.mapcount()
                );
            }
        }
        // WARN_ON_ONCE sites: an error that cannot happen was met somewhere (not only in this
        // context: the count is global, as Linux's taint is).
        let warnings = ksync::warn::count();
        if warnings > 0 {
            let first = ksync::warn::first()
                .map(|w| format!("{w}"))
                .unwrap_or_default();
            fail!("{warnings} warning(s) counted (WARN_ON_ONCE), the first at {first}");
        }
        Ok(census)
    }
}
