//! The fault core: `handle_mm_fault` for anonymous and object-backed regions.
//!
//! Models mm/memory.c's `handle_mm_fault` -> `do_anonymous_page` / `do_fault` (with the
//! page-cache side of mm/filemap.c's `filemap_fault` and mm/shmem.c's `shmem_fault`), after
//! the per-VMA lock series: the region is found and read-locked without any lock
//! ([`crate::mm_struct::MmStruct::lock_vma_under_rcu`]); only when a writer holds it does
//! the fault wait for the mmap lock. Then, for a not-present page:
//!
//! 1. the PTE table is found or created (`pte_alloc`);
//! 2. anonymous: a frame from this CPU's per-CPU list on the region's node, zeroed, charged
//!    to the region's memcg (the per-CPU stock, then the page counters up the tree; over
//!    `memory.max` memcg reclaims from that memcg and retries; still over, the fault fails);
//!    object: the page cache first (a hit maps the cached folio), a miss allocates, charges,
//!    reads the page from the backing store (or zero-fills shmem) and inserts it, a shadow
//!    entry there is a refault (workingset: the folio may be activated);
//! 3. under the PTE table's lock (never a region- or address-space-wide lock): the entry is
//!    checked again (another CPU may have won), the reverse map and the folio statistics
//!    are updated (`folio_add_new_anon_rmap`: through the lruvec or with memcg and node known,
//!    seed 001 patch 2), the folio goes to this CPU's `lru_add` batch (anonymous folios
//!    marked active, as `lru_gen_in_fault()` puts them in the youngest generation), and the
//!    PTE is installed (present, writable if the region is, never executable);
//! 4. the region's read lock is dropped.
//!
//! A fault that cannot be satisfied returns an error and changes nothing; the platform
//! turns it into a clean failure of the access (the exception-table fixup in the kernel).
//!
//! Placement: `handle_mm_fault` is inlined into the platform's handler, and the steps
//! after the lookup are functions of their own (`do_anonymous_page`, `do_object_fault`,
//! `find_or_read_page`, `refault`: `#[inline(never)]`), as are `truncate`'s two halves.
//! Each variant of a benchmark gets its own copy of these generic functions; left to the
//! compiler, one variant's copy inlined a step another's called, and a 19 KiB handler
//! held every path. Out of line, each copy is one function of a few KiB that the kernel's
//! build can start on a 4 KiB page of its own, so the copies of an A and a B run the same
//! code at the same offsets within their pages (docs/design.md, "Where the measured code
//! sits").
//!
//! References: a new anonymous folio's one reference belongs to its PTE (dropped by
//! `zap_page_range`); a page-cache folio holds one for the cache and one per PTE mapping.
//!
//! Unsafe code here, and why: a folio's `mapping` word holds its object's or anon region's
//! address (as Linux's `folio->mapping`), turned back into a reference by `unsafe fn
//! object_of`.
#![allow(unsafe_code)]

use crate::backing;
use crate::context::Vm;
use crate::counters::VmEvent;
use crate::folios::VmFolios;
use crate::mm_struct::{MmStruct, VmaReadGuard};
use crate::object::{Object, ObjectKind};
use crate::page_cache::{AddError, Entry};
use crate::pgtable::{Mmu, PtError, PteTable, pte_index};
use crate::vma::{Backing, PROT_WRITE, VmArea, VmFlags};
use crate::vma_lock::VmaReadError;
use lru::NodeId;
use lru::{Folio, FolioFlags, NodeStatItem};
use memcg::{MemCgroup, MemCgroupPerNode, MemcgError, MemcgRef};
use page_alloc::pfn::Pfn;

/// Why a fault failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultError {
    /// The memcg is at `memory.max` and reclaim could not make room.
    MemcgOom,
    /// No free frame (for the page or a page table).
    NoMemory,
    /// A fault-injection knob said so.
    Injected,
    /// A write to a read-only region.
    AccessDenied,
    /// No region maps the address.
    NoRegion,
}

/// Anonymous folios' `mapping`: the address space's id with the low bit set, as Linux's
/// `PAGE_MAPPING_ANON` (object folios carry the object's address, 8-byte aligned).
pub const MAPPING_ANON: u64 = 1;

/// The mapping word of an anonymous folio of address space `mm_id`.
#[must_use]
pub const fn anon_mapping(mm_id: u64) -> u64 {
    (mm_id << 1) | MAPPING_ANON
}

/// The object a page-cache folio belongs to, from its `mapping`.
///
/// # Safety
///
/// `folio` is a page-cache folio of this fault core (its mapping is an object's address)
/// and the object is alive (objects outlive their cached folios: they are truncated first).
pub(crate) unsafe fn object_of(folio: &Folio) -> Option<&Object> {
    let m = folio.mapping();
    if m == 0 || m & MAPPING_ANON != 0 {
        return None;
    }
    // SAFETY: per the contract, `m` is the address of a live `Object`.
    Some(unsafe { &*(m as *const Object) })
}

/// Where a region's memcg is kept: the handle [`Vm::mmap`] took, boxed; the region stores
/// its address (`vm_private_data`).
pub(crate) type RegionMemcg<'t, P> = MemcgRef<'t, P, VmFolios>;

/// The memcg a region charges to.
///
/// # Safety
///
/// `vma` was created by [`Vm::mmap`] of a `Vm<P, _>` that is still alive, so its
/// `vm_private_data` is the address of that call's boxed `MemcgRef`, which lives until the
/// region is unmapped (after which no fault reaches it).
pub(crate) unsafe fn memcg_of<'a, P: MemCgroupPerNode, V: VmArea>(vma: &'a V) -> &'a MemCgroup<P> {
    // SAFETY: per the contract.
    let r: &'a RegionMemcg<'a, P> = unsafe { &*vma.memcg().cast::<RegionMemcg<'a, P>>() };
    r
}

/// The region a fault runs under: read-locked without locks, or found under the mmap lock.
enum Locked<'a, V: VmArea, M: Mmu> {
    Vma(VmaReadGuard<'a, V>),
    /// The mmap lock (held for as long as the fault runs) and the region found under it.
    Mmap {
        _lock: crate::mm_struct::MmapReadGuard<'a, V, M>,
        vma: &'a V,
    },
}

impl<V: VmArea, M: Mmu> Locked<'_, V, M> {
    fn vma(&self) -> &V {
        match self {
            Locked::Vma(g) => g.vma(),
            Locked::Mmap { vma, .. } => vma,
        }
    }

    /// Ends the fault's hold: `vma_end_read` inline, or the mmap lock's release.
    #[inline(always)]
    fn unlock(self) {
        match self {
            Locked::Vma(g) => g.end(),
            Locked::Mmap { _lock, .. } => drop(_lock),
        }
    }
}

impl<P: MemCgroupPerNode, M: Mmu> Vm<P, M> {
    /// `handle_mm_fault`: resolve a not-present fault at `addr` in `mm` on `cpu`.
    ///
    /// Inlined into its caller, the platform's region handler (the kernel's `region_fault`,
    /// one per context and area type): that handler is all the fault entry does besides
    /// the lookup, and a call and return fewer per fault is an emulator's TB lookup fewer.
    #[inline(always)]
    pub fn handle_mm_fault<V: VmArea>(
        &self,
        mm: &MmStruct<V, M>,
        cpu: usize,
        addr: u64,
        write: bool,
    ) -> Result<(), FaultError> {
        self.count(cpu, VmEvent::Fault);
        mm.cpumask().set(cpu);
        let locked = match mm.lock_vma_under_rcu(addr) {
            Ok(g) => Locked::Vma(g),
            Err(VmaReadError::WriteLocked) => {
                // lock_mm_and_find_vma: wait for the writer.
                self.count(cpu, VmEvent::FaultSlowPath);
                let r = mm.mmap_read_lock();
                let vma: *const V = r.find(addr).ok_or(FaultError::NoRegion)?;
                Locked::Mmap {
                    _lock: r,
                    // SAFETY: the region stays in the table while the mmap lock is held,
                    // and the guard holding it lives as long as this borrow (moved in
                    // together).
                    vma: unsafe { &*vma },
                }
            }
            Err(VmaReadError::Detached) => return Err(FaultError::NoRegion),
        };
        let vma = locked.vma();
        if write && !vma.vm_flags().contains(VmFlags::WRITE) {
            return Err(FaultError::AccessDenied);
        }
        let res = match vma.backing() {
            Backing::Anon => self.do_anonymous_page(mm, vma, cpu, addr),
            Backing::Object => self.do_object_fault(mm, vma, cpu, addr),
        };
        match res {
            Err(FaultError::MemcgOom) => self.count(cpu, VmEvent::FaultFailMemcg),
            Err(FaultError::NoMemory) => self.count(cpu, VmEvent::FaultFailNoMemory),
            Err(FaultError::Injected) => self.count(cpu, VmEvent::FaultFailInjected),
            _ => {}
        }
        locked.unlock();
        res
    }

    /// The PTE table covering `addr`, made if absent (table frames from this CPU's node).
    #[inline(always)]
    fn pte_table<'a, V: VmArea>(
        &self,
        mm: &'a MmStruct<V, M>,
        cpu: usize,
        node: NodeId,
        addr: u64,
    ) -> Result<PteTable<'a, M>, FaultError> {
        mm.pgtable()
            .table_or_alloc(
                addr,
                || self.alloc.alloc_page(cpu, node),
                |f| {
                    ksync::warn_on_once!(
                        self.alloc.free_page(cpu, f).is_err(),
                        "freeing an unused page-table frame failed"
                    );
                },
            )
            .map_err(|e| match e {
                PtError::NoMemory | PtError::Platform | PtError::Flush => FaultError::NoMemory,
                PtError::OutOfRange => FaultError::NoRegion,
            })
    }

    /// A fresh frame for `cpu` on `node`, or the injected / real failure.
    #[inline(always)]
    pub(crate) fn alloc_frame(
        &self,
        cpu: usize,
        node: NodeId,
    ) -> Result<&'static Folio, FaultError> {
        if self.fail_page_alloc.should_fail(cpu) {
            return Err(FaultError::Injected);
        }
        self.alloc.alloc_page(cpu, node).ok_or(FaultError::NoMemory)
    }

    /// Charges `folio` to `memcg` (stock, page counters, reclaim and retry inside memcg),
    /// or the injected / real failure. On failure the frame is freed.
    #[inline(always)]
    pub(crate) fn charge(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        folio: &'static Folio,
    ) -> Result<(), FaultError> {
        if self.fail_charge.should_fail(cpu) {
            return self.charge_failed(memcg, cpu, folio, None);
        }
        match self.tree.charge_folio(memcg, cpu, folio) {
            Ok(()) => Ok(()),
            Err(e) => self.charge_failed(memcg, cpu, folio, Some(e)),
        }
    }

    /// The charge failed (`err`) or was refused by fault injection (`None`): over the limit,
    /// drain this CPU's lru_add batch and try once more; otherwise free the frame. Cold, out
    /// of line: none of it sits between the fault's hot blocks.
    #[cold]
    #[inline(never)]
    fn charge_failed(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        folio: &'static Folio,
        err: Option<MemcgError>,
    ) -> Result<(), FaultError> {
        let err = match err {
            None => FaultError::Injected,
            Some(MemcgError::OutOfMemory { .. }) => {
                // Folios still waiting in this CPU's lru_add batch are charged but not on an
                // LRU, where reclaim could take them: drain it (`lru_add_drain`, as reclaim
                // does) and try once more.
                ksync::warn_on_once!(
                    lru::MoveStats::failed(&self.batches.drain_cpu(cpu, &self.tree)),
                    "a charge's lru_add_drain failed"
                );
                match self.tree.charge_folio(memcg, cpu, folio) {
                    Ok(()) => return Ok(()),
                    Err(_) => FaultError::MemcgOom,
                }
            }
            Some(_) => FaultError::MemcgOom,
        };
        ksync::warn_on_once!(
            self.alloc.free_page(cpu, folio).is_err(),
            "freeing a frame whose charge failed failed"
        );
        Err(err)
    }

    /// Undoes a charge made for a folio that lost the race to be mapped or cached, and
    /// frees it. Cold: a race's loser, kept out of the fault paths' hot code.
    #[cold]
    pub(crate) fn uncharge_and_free(&self, cpu: usize, folio: &'static Folio) {
        ksync::warn_on_once!(
            self.tree.uncharge_folio(cpu, folio).is_err(),
            "uncharging a folio that lost a race failed"
        );
        ksync::warn_on_once!(
            folio.reset_lru_state().is_err(),
            "a folio that lost a race is on an LRU list"
        );
        ksync::warn_on_once!(
            self.alloc.free_page(cpu, folio).is_err(),
            "freeing a folio that lost a race failed"
        );
    }

    /// Zeroes a frame (`clear_page`).
    pub(crate) fn zero_frame(&self, folio: &Folio) {
        // SAFETY: the frame was just allocated by us; nobody else can see it yet.
        unsafe { self.mmu.clear_page(Pfn::of(folio)) };
    }

    /// The 512 words of a frame.
    pub(crate) fn frame_words(&self, folio: &Folio) -> &[u64; backing::PAGE_WORDS] {
        // SAFETY: the frame is one the caller holds a reference on; its 4 KiB are mapped at
        // the MMU's pointer, 4 KiB aligned; words are only read here.
        unsafe {
            &*self
                .mmu
                .frame_ptr(Pfn::of(folio))
                .cast::<[u64; backing::PAGE_WORDS]>()
        }
    }

    /// The 512 words of a frame, to fill it.
    ///
    /// # Safety
    ///
    /// The caller has the frame to itself (just allocated, visible to nobody else) for as
    /// long as the reference lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn frame_words_mut(&self, folio: &Folio) -> &mut [u64; backing::PAGE_WORDS] {
        // SAFETY: per the contract nobody else reads or writes the frame; its 4 KiB are
        // mapped at the MMU's pointer, 4 KiB aligned.
        unsafe {
            &mut *self
                .mmu
                .frame_ptr(Pfn::of(folio))
                .cast::<[u64; backing::PAGE_WORDS]>()
        }
    }

    /// `do_anonymous_page`.
    // Out of line: see the module documentation, "Placement".
    #[inline(never)]
    fn do_anonymous_page<V: VmArea>(
        &self,
        mm: &MmStruct<V, M>,
        vma: &V,
        cpu: usize,
        addr: u64,
    ) -> Result<(), FaultError> {
        let node = vma.node();
        let table = self.pte_table(mm, cpu, node, addr)?;
        let idx = pte_index(addr);
        if self.mmu.pte_pfn(table.read(idx)).is_some() {
            self.count(cpu, VmEvent::FaultRaced);
            return Ok(());
        }
        let folio = self.alloc_frame(cpu, node)?;
        self.zero_frame(folio);
        // SAFETY: the region was made by this Vm's `mmap` and is read-locked.
        let memcg = unsafe { memcg_of::<P, V>(vma) };
        self.charge(memcg, cpu, folio)?;
        // Still ours alone (not mapped, cached or batched): `__folio_set_swapbacked`.
        folio.set_unshared(FolioFlags::SWAPBACKED);
        folio.set_mapping(anon_mapping(mm.id()), addr >> 12);
        let mut pte = table.lock();
        if pte.pfn(idx).is_some() {
            drop(pte);
            self.count(cpu, VmEvent::FaultRaced);
            self.uncharge_and_free(cpu, folio);
            return Ok(());
        }
        // folio_add_new_anon_rmap + folio_add_lru_vma + set_pte_at, under the PTE lock. The
        // folio is still ours alone: its first mapping is a store, as Linux's atomic_set.
        folio.set_first_mapping();
        self.mod_folio_stat(memcg, cpu, folio.node(), NodeStatItem::NrAnonMapped, 1);
        // folio_add_lru_vma: under MGLRU a folio faulted in starts in the youngest
        // generation (`lru_gen_in_fault()` sets it active); on the classic lists a new
        // anonymous folio goes to the inactive list (Linux 5.9+).
        if self.tree.lru().mglru() {
            folio.set(FolioFlags::ACTIVE);
        }
        ksync::warn_on_once!(
            lru::MoveStats::failed(&self.batches.folio_add_lru(cpu, folio, &self.tree)),
            "a new folio could not be queued for the LRU"
        );
        pte.set(idx, Pfn::of(folio), vma.vm_page_prot() & PROT_WRITE != 0);
        Ok(())
    }

    /// `do_fault` for a region mapping an object: find or read the page, then map it.
    // Out of line: see the module documentation, "Placement".
    #[inline(never)]
    fn do_object_fault<V: VmArea>(
        &self,
        mm: &MmStruct<V, M>,
        vma: &V,
        cpu: usize,
        addr: u64,
    ) -> Result<(), FaultError> {
        let obj = vma.vm_file().ok_or(FaultError::NoRegion)?;
        let index = vma.vm_pgoff() + (addr - vma.vm_start()) / 4096;
        let table = self.pte_table(mm, cpu, vma.node(), addr)?;
        let idx = pte_index(addr);
        if self.mmu.pte_pfn(table.read(idx)).is_some() {
            self.count(cpu, VmEvent::FaultRaced);
            return Ok(());
        }
        // SAFETY: the region was made by this Vm's `mmap` and is read-locked.
        let memcg = unsafe { memcg_of::<P, V>(vma) };
        loop {
            // A pinned folio: ours to turn into the PTE's reference.
            let folio = self.find_or_read_page(obj, memcg, cpu, vma.node(), index, true)?;
            let mut pte = table.lock();
            if pte.pfn(idx).is_some() {
                drop(pte);
                self.count(cpu, VmEvent::FaultRaced);
                self.folio_put(cpu, folio);
                return Ok(());
            }
            // folio_add_file_rmap_pte, before the check that the folio is still cached:
            // truncation empties the slots and then reads each removed folio's mapcount
            // (to unmap what a racing fault mapped), with a full fence between, as here
            // between the increment and the check. So either the check below sees the
            // slot emptied, or truncation sees this mapping and unmaps it through the
            // reverse map (waiting on this PTE lock). Linux serialises the two with the
            // folio lock instead.
            folio.inc_mapcount();
            ksync::race::window();
            core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
            if !obj.cache().holds(index, folio) {
                // Truncated since we found it: never map a folio that left its cache; look
                // again.
                ksync::warn_on_once!(
                    folio.dec_mapcount().is_err(),
                    "a faulting folio lost the mapcount it had just taken"
                );
                drop(pte);
                self.count(cpu, VmEvent::FaultRaced);
                self.folio_put(cpu, folio);
                continue;
            }
            // NR_FILE_MAPPED of the folio's memcg.
            if folio.memcg_id() == memcg.id() {
                self.mod_folio_stat(memcg, cpu, folio.node(), NodeStatItem::NrFileMapped, 1);
            } else {
                self.mod_folio_stat_of(cpu, folio, NodeStatItem::NrFileMapped, 1);
            }
            pte.set(idx, Pfn::of(folio), vma.vm_page_prot() & PROT_WRITE != 0);
            return Ok(());
        }
    }

    /// The page-cache folio at `index` of `obj`, pinned (one reference for the caller):
    /// `filemap_get_folio`, or on a miss a new folio charged to `memcg`, filled from the
    /// backing store (file) or zeroed (shmem), inserted, and queued for the LRU. A shadow in
    /// the slot is a refault: the workingset decides whether the folio starts active
    /// (`in_fault`: only refaults in the fault path activate, buffered reads do not).
    // Out of line: see the module documentation, "Placement".
    #[inline(never)]
    pub(crate) fn find_or_read_page(
        &self,
        obj: &Object,
        memcg: &MemCgroup<P>,
        cpu: usize,
        node: NodeId,
        index: u64,
        in_fault: bool,
    ) -> Result<&'static Folio, FaultError> {
        loop {
            match obj.cache().lookup(index, cpu, &self.tree) {
                None => return Err(FaultError::NoRegion),
                Some(Entry::Folio(f)) => {
                    self.count(cpu, VmEvent::CacheHit);
                    return Ok(f);
                }
                Some(Entry::Empty) | Some(Entry::Shadow(_)) => {}
            }
            self.count(cpu, VmEvent::CacheMiss);
            let folio = self.alloc_frame(cpu, node)?;
            match obj.kind() {
                ObjectKind::File => {
                    // SAFETY: the frame was just allocated and is not yet in the cache.
                    backing::fill(obj.id(), index, unsafe { self.frame_words_mut(folio) });
                }
                ObjectKind::Shmem => self.zero_frame(folio),
            }
            self.charge(memcg, cpu, folio)?;
            if obj.kind() == ObjectKind::Shmem {
                // shmem is swap-backed: on the anonymous LRU (not reclaimable without swap).
                // Not in the cache yet, so still ours alone.
                folio.set_unshared(FolioFlags::SWAPBACKED);
            }
            folio.set_mapping(core::ptr::from_ref(obj) as u64, index);
            // One reference for the cache, one for the caller.
            folio.get();
            let shadow = match obj.cache().add(index, folio) {
                Ok(shadow) => shadow,
                Err(AddError::Exists) => {
                    // Another CPU cached the page first: drop the cache's reference we took
                    // and free ours; use theirs.
                    ksync::warn_on_once!(
                        folio.put() != Ok(false),
                        "dropping the cache's reference of an uncached folio"
                    );
                    self.uncharge_and_free(cpu, folio);
                    continue;
                }
                Err(AddError::OutOfRange) => {
                    ksync::warn_on_once!(
                        folio.put() != Ok(false),
                        "dropping the cache's reference of an uncached folio"
                    );
                    self.uncharge_and_free(cpu, folio);
                    return Err(FaultError::NoRegion);
                }
            };
            let n = folio.node();
            self.mod_folio_stat(memcg, cpu, n, NodeStatItem::NrFilePages, 1);
            if obj.kind() == ObjectKind::Shmem {
                self.mod_folio_stat(memcg, cpu, n, NodeStatItem::NrShmem, 1);
            }
            if let Some(shadow) = shadow {
                self.refault(memcg, cpu, folio, shadow, in_fault);
            }
            ksync::warn_on_once!(
                lru::MoveStats::failed(&self.batches.folio_add_lru(cpu, folio, &self.tree)),
                "a new folio could not be queued for the LRU"
            );
            return Ok(folio);
        }
    }

    /// `workingset_refault`: the shadow says when the folio left; the lruvec decides
    /// whether it was in the working set (then it is activated or restored to its tier).
    // Out of line: see the module documentation, "Placement".
    #[inline(never)]
    fn refault(
        &self,
        memcg: &MemCgroup<P>,
        cpu: usize,
        folio: &'static Folio,
        shadow: lru::Shadow,
        in_fault: bool,
    ) {
        self.count(cpu, VmEvent::Refault);
        let node = folio.node();
        let item = if folio.is_file_lru() {
            NodeStatItem::WorkingsetRefaultFile
        } else {
            NodeStatItem::WorkingsetRefaultAnon
        };
        self.mod_folio_stat(memcg, cpu, node, item, 1);
        let Ok(lruvec) = memcg.lruvec(node) else {
            return;
        };
        let out = lruvec.refault(folio, shadow, in_fault);
        if let Ok(o) = out
            && o.workingset
        {
            self.count(cpu, VmEvent::WorkingsetRestore);
        }
        if let Ok(out) = out
            && out.activated
        {
            self.count(cpu, VmEvent::RefaultActivate);
            let item = if folio.is_file_lru() {
                NodeStatItem::WorkingsetActivateFile
            } else {
                NodeStatItem::WorkingsetActivateAnon
            };
            self.mod_folio_stat(memcg, cpu, node, item, 1);
        }
    }
}
