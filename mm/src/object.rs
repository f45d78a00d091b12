//! Page-cache objects: file-like (over the RAM-disk backing store) and shmem-like.
//!
//! Models the parts of `struct address_space` / `struct inode` the LRU experiments touch:
//! the page cache ([`crate::page_cache::PageCache`]), the list of regions that map the
//! object (`i_mmap`, walked by the reverse map to find every PTE of a page) and what backs
//! its pages:
//!
//! - [`ObjectKind::File`]: pages come from [`crate::backing`] on a miss, are clean,
//!   evictable (their slot keeps a shadow entry) and refault;
//! - [`ObjectKind::Shmem`]: pages are zero-filled on first touch, not evictable (there is no
//!   swap device, as on a machine without swap) and freed only by truncation.
//!
//! An object has a fixed size in pages and an id (in every folio's `mapping` while cached).
//!
//! Unsafe code here, and why: a mapping of an object holds its address space by raw pointer
//! (Linux's `vma->vm_mm` in the rmap), valid while the address space is registered.
#![allow(unsafe_code)]

use crate::addr::VirtAddr;
use crate::cpumask::CpuMask;
use crate::page_cache::PageCache;
use alloc::vec::Vec;
use arrayvec::ArrayVec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::SpinMutex;
use page_alloc::pfn::Pfn;

ksync::lock_class!(
    /// An object's list of mapping regions (`mapping->i_mmap_rwsem`).
    pub IMmapLock, "i_mmap_rwsem"
);

/// What an object's pages are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// File-like: read from the backing store, evictable, refaults.
    File,
    /// shmem-like: zero-filled, unevictable, freed on truncate.
    Shmem,
}

/// PTEs one [`RmapTarget::zap_ptes`] call clears at most: the batch the caller turns into
/// mmu_gather entries between two holds of a PTE lock.
pub const ZAP_BATCH: usize = 64;

/// What [`RmapTarget::zap_ptes`] cleared: each PTE's address and the frame it mapped.
pub type ZappedPtes = ArrayVec<(VirtAddr, Pfn), ZAP_BATCH>;

/// What [`RmapTarget::try_to_unmap_one`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmapped {
    /// The PTE did not map the page: nothing changed.
    No,
    /// Cleared and flushed.
    Flushed,
    /// Cleared, but the flush failed: some CPU may still translate to the page.
    Unflushed,
}

/// What [`Object::unmap_page`] cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cleared {
    /// PTEs cleared.
    pub ptes: usize,
    /// Of those, whose flush failed.
    pub unflushed: usize,
}

/// An address space as the reverse map reaches it (`try_to_unmap_one`, and
/// `unmap_mapping_range`'s zap of a whole mapping). Implemented by every `MmStruct`,
/// whatever its region and MMU types, so an object's list of mappings can hold regions of
/// address spaces of different types.
pub trait RmapTarget: Sync {
    /// Clears the PTE at `va` if it maps `pfn` and flushes the translation everywhere it
    /// may be cached; says whether it cleared it and whether the flush succeeded. The
    /// caller drops the mapping's mapcount and reference (keeps the reference when the
    /// flush failed, [`crate::tlb_kept`]).
    fn try_to_unmap_one(&self, va: u64, pfn: u64) -> Unmapped;

    /// `zap_pte_range` for `unmap_mapping_range`: clears the present PTEs of
    /// `[start, end)`, in order, each table's under its lock, until `out` is full; pushes
    /// each one's address and frame, and returns the address it stopped at (`end`, or
    /// more, when it got through). It neither flushes nor drops anything: the caller
    /// gathers the pages (mmu_gather), flushes [`RmapTarget::cpumask`]'s TLBs, and only
    /// then drops the mappings' references.
    fn zap_ptes(&self, start: u64, end: u64, out: &mut ZappedPtes) -> u64;

    /// The CPUs that may hold translations of this address space (`mm_cpumask`).
    fn cpumask(&self) -> &CpuMask;
}

/// One region that maps an object, as the reverse map needs it.
#[derive(Debug, Clone, Copy)]
pub struct Mapping {
    /// The address space. `Vm::mmap` registers it and `Vm::munmap` unregisters it (under
    /// the object's `i_mmap` lock) before the address space can go away, a lifetime the
    /// borrow checker cannot see: hence a pointer, typed by what the walk calls on it.
    pub mm: NonNull<dyn RmapTarget>,
    /// First virtual address of the region.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// Object page mapped at `start`.
    pub pgoff: u64,
}

impl Mapping {
    /// The address at which this mapping maps object page `index`, if it does.
    #[must_use]
    pub fn address_of(&self, index: u64) -> Option<u64> {
        let off = index.checked_sub(self.pgoff)?;
        let va = self.start.checked_add(off.checked_mul(4096)?)?;
        (va < self.end).then_some(va)
    }
}

// SAFETY: `mm` is only dereferenced as a shared `&dyn RmapTarget` (which is `Sync`) by the
// reverse-map walk, under the object's lock, while the registration keeps it alive.
unsafe impl Send for Mapping {}

/// Source of object ids; 0 means "no mapping" in a folio. A plain counter.
static NEXT_OBJECT_ID: AtomicU64 = AtomicU64::new(1);

/// A page-cache object.
#[derive(Debug)]
pub struct Object {
    id: u64,
    kind: ObjectKind,
    cache: PageCache,
    i_mmap: SpinMutex<IMmapLock, Vec<Mapping>>,
}

impl Object {
    /// A new, empty object of `nr_pages` pages.
    #[must_use]
    pub fn new(kind: ObjectKind, nr_pages: usize) -> Self {
        Object {
            id: NEXT_OBJECT_ID.fetch_add(1, Ordering::Relaxed),
            kind,
            cache: PageCache::new(nr_pages),
            i_mmap: SpinMutex::new(Vec::new()),
        }
    }

    /// The object's id (the `mapping` of its folios).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// File-like or shmem-like.
    #[must_use]
    pub fn kind(&self) -> ObjectKind {
        self.kind
    }

    /// Size in pages.
    #[must_use]
    pub fn nr_pages(&self) -> u64 {
        self.cache.nr_pages() as u64
    }

    /// The page cache.
    #[must_use]
    pub fn cache(&self) -> &PageCache {
        &self.cache
    }

    /// Registers a region that maps the object (`vma_interval_tree_insert`).
    pub fn map(&self, m: Mapping) {
        self.i_mmap.lock().push(m);
    }

    /// Unregisters the region of `mm` starting at `start`.
    pub fn unmap(&self, mm: &dyn RmapTarget, start: u64) {
        self.i_mmap
            .lock()
            .retain(|m| !(core::ptr::addr_eq(m.mm.as_ptr(), mm) && m.start == start));
    }

    /// Walks the regions mapping the object (`vma_interval_tree_foreach` under
    /// `i_mmap_lock_read`), handing `f` each one and its address space. The lock is held
    /// throughout, so no address space can go away meanwhile.
    pub fn rmap_walk(&self, mut f: impl FnMut(&Mapping, &dyn RmapTarget)) {
        let maps = self.i_mmap.lock();
        for m in maps.iter() {
            // SAFETY: the address space was registered by `Vm::mmap` and is unregistered
            // under this lock (which we hold) before it goes away; the walk only shares it.
            let mm = unsafe { m.mm.as_ref() };
            f(m, mm);
        }
    }

    /// `rmap_walk_file`: clears every PTE that maps page `index` as frame `pfn`, each
    /// `try_to_unmap_one` flushing its address space's TLBs; returns how many it cleared
    /// and how many of those flushes failed.
    pub fn unmap_page(&self, index: u64, pfn: u64) -> Cleared {
        let mut cleared = Cleared::default();
        self.rmap_walk(|m, mm| {
            let Some(va) = m.address_of(index) else {
                return;
            };
            match mm.try_to_unmap_one(va, pfn) {
                Unmapped::No => {}
                Unmapped::Flushed => cleared.ptes += 1,
                Unmapped::Unflushed => {
                    cleared.ptes += 1;
                    cleared.unflushed += 1;
                }
            }
        });
        cleared
    }

    /// Regions mapping the object now.
    #[must_use]
    pub fn nr_mappings(&self) -> usize {
        self.i_mmap.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An address space whose PTEs always (or never) map the page asked for.
    struct Fake(Unmapped, CpuMask);
    impl RmapTarget for Fake {
        fn try_to_unmap_one(&self, _va: u64, _pfn: u64) -> Unmapped {
            self.0
        }
        fn zap_ptes(&self, _start: u64, end: u64, _out: &mut ZappedPtes) -> u64 {
            end
        }
        fn cpumask(&self) -> &CpuMask {
            &self.1
        }
    }
    static ALWAYS: Fake = Fake(Unmapped::Flushed, CpuMask::new());
    static NEVER: Fake = Fake(Unmapped::No, CpuMask::new());
    static UNFLUSHED: Fake = Fake(Unmapped::Unflushed, CpuMask::new());

    #[test]
    fn mapping_addresses_and_rmap_walk() {
        let o = Object::new(ObjectKind::File, 64);
        assert!(o.id() > 0);
        assert_eq!(o.nr_pages(), 64);
        let m = Mapping {
            mm: NonNull::from(&ALWAYS),
            start: 0x10_0000,
            end: 0x10_0000 + 8 * 4096,
            pgoff: 4,
        };
        assert_eq!(m.address_of(3), None);
        assert_eq!(m.address_of(4), Some(0x10_0000));
        assert_eq!(m.address_of(11), Some(0x10_0000 + 7 * 4096));
        assert_eq!(m.address_of(12), None);
        o.map(m);
        o.map(Mapping {
            mm: NonNull::from(&NEVER),
            start: 0x20_0000,
            end: 0x20_0000 + 64 * 4096,
            pgoff: 0,
        });
        let one = Cleared {
            ptes: 1,
            unflushed: 0,
        };
        assert_eq!(
            o.unmap_page(5, 1),
            one,
            "only the mapping that clears counts"
        );
        assert_eq!(
            o.unmap_page(40, 1),
            Cleared::default(),
            "outside the first mapping"
        );
        o.map(Mapping {
            mm: NonNull::from(&UNFLUSHED),
            start: 0x40_0000,
            end: 0x40_0000 + 8 * 4096,
            pgoff: 0,
        });
        assert_eq!(
            o.unmap_page(5, 1),
            Cleared {
                ptes: 2,
                unflushed: 1
            },
            "a failed flush still cleared its PTE"
        );
        o.unmap(&ALWAYS, 0x10_0000);
        o.unmap(&UNFLUSHED, 0x40_0000);
        assert_eq!(o.nr_mappings(), 1);
    }
}
