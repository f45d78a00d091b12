//! `struct mm_struct`: an address space over a reserved range of kernel virtual addresses.
//!
//! Models the parts of include/linux/mm_types.h and mm/mmap.c that faults and unmaps touch:
//!
//! - the regions, found by a lockless lookup under RCU ([`MmStruct::lock_vma_under_rcu`]):
//!   Linux walks its maple tree; here the regions sit in a sorted table that writers copy,
//!   change and publish with one pointer store, freeing the old table after a grace period,
//!   so readers see either the old or the new table, never a torn one;
//! - the mmap lock and `mm_lock_seq`: writers (`mmap`, `munmap`) hold the lock, and while
//!   they do `mm_lock_seq` is odd; a region they write-lock records that value
//!   (`vm_lock_seq`), and dropping the lock bumps the sequence, unlocking them all
//!   ([`crate::vma_lock`]). The slow path of a fault holds the lock too (Linux's
//!   `mmap_read_lock`; here the same lock, taken without bumping the sequence);
//! - the page tables ([`crate::pgtable`]) and `mm_cpumask` ([`CpuMask`]).
//!
//! A region lives in a `Box` that is leaked while published and freed through RCU once it
//! is detached. The address space itself must stay where it is while it has regions (the
//! regions point back at it): [`MmStruct::new`] returns it boxed.
//!
//! Unsafe code here, and why: the region table is reached through an atomic pointer and
//! replaced only under the mmap lock, and `MmStruct` declares itself `Send`/`Sync` on that.
#![allow(unsafe_code)]

use crate::cpumask::CpuMask;
use crate::lock_classes::MmapLock;
use crate::pgtable::{Mmu, PageTable, PtError};
use crate::rcu::RcuDefer;
use crate::vma::{VmArea, VmaDesc};
use crate::vma_lock::{
    VmaReadError, vma_end_read, vma_mark_attached, vma_mark_detached, vma_start_read,
    vma_start_write,
};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use ksync::SpinMutex;

/// Why a change of the address space was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmError {
    /// The range is empty, unaligned or outside the address space's range.
    BadRange,
    /// The range overlaps an existing region.
    Overlaps,
    /// No region starts and ends exactly there.
    NoSuchRegion,
    /// The object is smaller than the mapping needs.
    ObjectTooSmall,
    /// Page tables could not be built.
    PageTable(PtError),
}

/// The published table of regions, sorted by start.
struct RegionTable<V: 'static> {
    vmas: Box<[&'static V]>,
}

impl<V: VmArea> RegionTable<V> {
    fn find(&self, addr: u64) -> Option<&'static V> {
        let i = self.vmas.partition_point(|v| v.vm_end() <= addr);
        self.vmas.get(i).copied().filter(|v| v.vm_start() <= addr)
    }
}

/// Source of address-space ids (the anonymous reverse-map id of their regions).
static NEXT_MM_ID: AtomicU64 = AtomicU64::new(1);

/// An address space.
pub struct MmStruct<V: VmArea, M: Mmu> {
    id: u64,
    /// `mm_lock_seq`: odd while a writer holds the mmap lock.
    mm_lock_seq: AtomicU32,
    mmap_lock: SpinMutex<MmapLock, ()>,
    regions: AtomicPtr<RegionTable<V>>,
    pgtable: PageTable<M>,
    cpumask: CpuMask,
    rcu: &'static dyn RcuDefer,
}

// SAFETY: the region table is reached through an atomic pointer and only replaced under the
// mmap lock; regions are Send + Sync; the page table is Sync.
unsafe impl<V: VmArea, M: Mmu> Sync for MmStruct<V, M> {}
// SAFETY: as above.
unsafe impl<V: VmArea, M: Mmu> Send for MmStruct<V, M> {}

impl<V: VmArea, M: Mmu> core::fmt::Debug for MmStruct<V, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MmStruct")
            .field("id", &self.id)
            .field("layout", &V::LAYOUT)
            .field("regions", &self.nr_regions())
            .field("pgtable", &self.pgtable)
            .finish()
    }
}

/// A region read-locked for a fault (`vma_start_read` ... `vma_end_read`).
pub struct VmaReadGuard<'a, V: VmArea> {
    vma: &'a V,
}

impl<V: VmArea> VmaReadGuard<'_, V> {
    /// The region.
    #[must_use]
    pub fn vma(&self) -> &V {
        self.vma
    }

    /// Ends the read section here (`vma_end_read`, a `static inline` in Linux). Dropping
    /// the guard does the same, but through drop glue the compiler may leave out of line:
    /// a call per fault, which costs two jump-cache lookups under TCG.
    #[inline(always)]
    pub fn end(self) {
        let this = core::mem::ManuallyDrop::new(self);
        vma_end_read(this.vma);
    }
}

impl<V: VmArea> Drop for VmaReadGuard<'_, V> {
    #[inline(always)]
    fn drop(&mut self) {
        vma_end_read(self.vma);
    }
}

impl<V: VmArea> core::fmt::Debug for VmaReadGuard<'_, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VmaReadGuard")
            .field("start", &self.vma.vm_start())
            .finish()
    }
}

/// The mmap lock held for writing: regions may be added and removed.
///
/// Crate-private: its regions are `&'static` (each lives until a grace period after its
/// removal), which only `mmap`, `munmap` and `exit_mmap` may rely on; nothing outside the
/// crate gets a region that could outlive its unmapping.
pub(crate) struct MmapWriteGuard<'a, V: VmArea, M: Mmu> {
    mm: &'a MmStruct<V, M>,
    _lock: lock_api::MutexGuard<'a, ksync::TicketLock<MmapLock>, ()>,
}

/// The mmap lock held by a fault's slow path: regions cannot change.
pub struct MmapReadGuard<'a, V: VmArea, M: Mmu> {
    mm: &'a MmStruct<V, M>,
    _lock: lock_api::MutexGuard<'a, ksync::TicketLock<MmapLock>, ()>,
}

impl<V: VmArea, M: Mmu> MmStruct<V, M> {
    /// An empty address space over `[base, base + len)` (2 MiB aligned).
    pub fn new(
        base: u64,
        len: u64,
        mmu: &'static M,
        rcu: &'static dyn RcuDefer,
    ) -> Result<Box<Self>, MmError> {
        let pgtable = PageTable::new(base, len, mmu).map_err(|_| MmError::BadRange)?;
        let empty = Box::new(RegionTable::<V> { vmas: Box::new([]) });
        Ok(Box::new(MmStruct {
            id: NEXT_MM_ID.fetch_add(1, Ordering::Relaxed),
            mm_lock_seq: AtomicU32::new(0),
            mmap_lock: SpinMutex::new(()),
            regions: AtomicPtr::new(Box::into_raw(empty)),
            pgtable,
            cpumask: CpuMask::new(),
            rcu,
        }))
    }

    /// The address space's id.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `mm_lock_seq`.
    #[must_use]
    pub fn mm_lock_seq(&self) -> &AtomicU32 {
        &self.mm_lock_seq
    }

    /// The page tables.
    #[must_use]
    pub fn pgtable(&self) -> &PageTable<M> {
        &self.pgtable
    }

    /// The page tables, exclusively (tearing down: no fault can run).
    pub fn pgtable_mut(&mut self) -> &mut PageTable<M> {
        &mut self.pgtable
    }

    /// The page tables, exclusively, and `mm_cpumask` beside them (`free_pgtables` flushes
    /// the CPUs that may cache the tables it frees): two fields borrowed apart.
    pub fn pgtable_and_cpumask(&mut self) -> (&mut PageTable<M>, &CpuMask) {
        (&mut self.pgtable, &self.cpumask)
    }

    /// `mm_cpumask`.
    #[must_use]
    pub fn cpumask(&self) -> &CpuMask {
        &self.cpumask
    }

    /// `kthread_use_mm` / `switch_mm`: `cpu` is about to access this address space, so it
    /// joins `mm_cpumask` and every later unmap's shootdown reaches it.
    ///
    /// A CPU can fill its TLB from a PTE another CPU installed without ever faulting (the
    /// fault handler adds the faulting CPU too, but a load of a page that is already mapped
    /// does not fault), so whoever accesses an address space calls this first. Bits are
    /// never cleared (a CPU that stopped using it only receives shootdowns it did not need).
    pub fn use_mm(&self, cpu: usize) {
        self.cpumask.set(cpu);
    }

    /// The range this address space owns.
    #[must_use]
    pub fn range(&self) -> (u64, u64) {
        self.pgtable.range()
    }

    /// This address space as the type-erased `vm_mm` of its regions.
    #[must_use]
    pub fn as_vm_mm(&self) -> *const () {
        core::ptr::from_ref(self).cast()
    }

    fn table(&self) -> &RegionTable<V> {
        // SAFETY: `regions` always points at a table published by `new` or `publish`;
        // replaced tables are freed only after a grace period, and the caller is inside a
        // read-side section (lockless readers) or holds the mmap lock (writers).
        unsafe { &*self.regions.load(Ordering::Acquire) }
    }

    /// Regions now.
    #[must_use]
    pub fn nr_regions(&self) -> usize {
        self.table().vmas.len()
    }

    /// `lock_vma_under_rcu`: find the region holding `addr` and read-lock it without any
    /// lock. `Err(WriteLocked)` means: take the slow path ([`MmStruct::mmap_read_lock`]);
    /// `Err(Detached)` also covers "no region there".
    #[inline(always)]
    pub fn lock_vma_under_rcu(&self, addr: u64) -> Result<VmaReadGuard<'_, V>, VmaReadError> {
        loop {
            let vma = self.table().find(addr).ok_or(VmaReadError::Detached)?;
            match vma_start_read(&self.mm_lock_seq, vma) {
                Ok(()) => {
                    // The region may have been replaced between the lookup and the lock:
                    // it must still belong to us and still cover the address.
                    if core::ptr::eq(vma.vm_mm(), self.as_vm_mm())
                        && vma.vm_start() <= addr
                        && addr < vma.vm_end()
                    {
                        return Ok(VmaReadGuard { vma });
                    }
                    vma_end_read(vma);
                    return Err(VmaReadError::Detached);
                }
                // Unmapped under us: look again (it may have been replaced).
                Err(VmaReadError::Detached) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes the mmap lock for a fault's slow path.
    pub fn mmap_read_lock(&self) -> MmapReadGuard<'_, V, M> {
        MmapReadGuard {
            mm: self,
            _lock: self.mmap_lock.lock(),
        }
    }

    /// Takes the mmap lock for writing (`mmap_write_lock`): `mm_lock_seq` becomes odd.
    pub(crate) fn mmap_write_lock(&self) -> MmapWriteGuard<'_, V, M> {
        let lock = self.mmap_lock.lock();
        self.mm_lock_seq.fetch_add(1, Ordering::AcqRel);
        MmapWriteGuard {
            mm: self,
            _lock: lock,
        }
    }

    fn publish(&self, vmas: Vec<&'static V>) {
        let new = Box::into_raw(Box::new(RegionTable {
            vmas: vmas.into_boxed_slice(),
        }));
        let old = self.regions.swap(new, Ordering::AcqRel);
        let old = SendPtr(old);
        self.rcu.call_rcu(Box::new(move || {
            let old = old;
            // SAFETY: `old` was the published table until the swap above and is reachable
            // by no reader after a grace period; it came from `Box::into_raw`.
            drop(unsafe { Box::from_raw(old.0) });
        }));
    }
}

/// A raw pointer moved into an RCU callback.
struct SendPtr<T>(*mut T);
// SAFETY: the pointee is only dropped in the callback, after every reader is gone; `T` is
// Send (regions and tables of Send + Sync regions).
unsafe impl<T: Send> Send for SendPtr<T> {}

impl<V: VmArea, M: Mmu> MmapReadGuard<'_, V, M> {
    /// The region holding `addr` (`find_vma` under the mmap lock).
    #[must_use]
    pub fn find(&self, addr: u64) -> Option<&V> {
        self.mm.table().find(addr)
    }
}

impl<V: VmArea, M: Mmu> MmapWriteGuard<'_, V, M> {
    /// The region holding `addr`.
    #[must_use]
    pub(crate) fn find(&self, addr: u64) -> Option<&'static V> {
        self.mm.table().find(addr)
    }

    /// Every region, by address.
    pub(crate) fn regions(&self) -> impl Iterator<Item = &'static V> + '_ {
        self.mm.table().vmas.iter().copied()
    }

    /// Adds a region (`mmap_region`): checks the range, builds the region, attaches and
    /// publishes it.
    pub(crate) fn insert(&self, desc: &VmaDesc<'_>) -> Result<&'static V, MmError> {
        let (lo, hi) = self.mm.range();
        if desc.start >= desc.end
            || !desc.start.is_multiple_of(4096)
            || !desc.end.is_multiple_of(4096)
            || desc.start < lo
            || desc.end > hi
        {
            return Err(MmError::BadRange);
        }
        if let Some(o) = desc.object {
            let pages = (desc.end - desc.start) / 4096;
            if desc
                .pgoff
                .checked_add(pages)
                .is_none_or(|e| e > o.nr_pages())
            {
                return Err(MmError::ObjectTooSmall);
            }
        }
        let table = self.mm.table();
        if table
            .vmas
            .iter()
            .any(|v| v.vm_start() < desc.end && desc.start < v.vm_end())
        {
            return Err(MmError::Overlaps);
        }
        let mut d = *desc;
        d.mm = self.mm.as_vm_mm();
        d.anon_id = self.mm.id;
        let vma: &'static V = Box::leak(Box::new(V::new(&d)));
        vma_mark_attached(vma);
        let mut vmas: Vec<&'static V> = table.vmas.to_vec();
        let at = vmas.partition_point(|v| v.vm_start() < vma.vm_start());
        vmas.insert(at, vma);
        self.mm.publish(vmas);
        Ok(vma)
    }

    /// Write-locks the region at exactly `[start, end)` (`vma_start_write`): waits for its
    /// readers; faults arriving later take the slow path and wait for this guard.
    pub(crate) fn write_lock(&self, start: u64, end: u64) -> Result<&'static V, MmError> {
        let vma = self
            .find(start)
            .filter(|v| v.vm_start() == start && v.vm_end() == end)
            .ok_or(MmError::NoSuchRegion)?;
        vma_start_write(&self.mm.mm_lock_seq, vma);
        Ok(vma)
    }

    /// Removes a write-locked region (`vma_mark_detached`, unpublish, free after a grace
    /// period). The caller has zapped its pages.
    pub(crate) fn remove(&self, vma: &'static V) -> Result<(), MmError> {
        let table = self.mm.table();
        let Some(at) = table.vmas.iter().position(|v| core::ptr::eq(*v, vma)) else {
            return Err(MmError::NoSuchRegion);
        };
        vma_start_write(&self.mm.mm_lock_seq, vma);
        vma_mark_detached(vma);
        let mut vmas = table.vmas.to_vec();
        vmas.remove(at);
        self.mm.publish(vmas);
        let p = SendPtr(core::ptr::from_ref(vma).cast_mut());
        self.mm.rcu.call_rcu(Box::new(move || {
            let p = p;
            // SAFETY: the region was leaked from a Box in `insert`, is detached and
            // unpublished, and after a grace period no lockless reader can still look at it.
            drop(unsafe { Box::from_raw(p.0) });
        }));
        Ok(())
    }
}

impl<V: VmArea, M: Mmu> Drop for MmapWriteGuard<'_, V, M> {
    fn drop(&mut self) {
        // mmap_write_unlock -> vma_end_write_all: every region locked in this cycle is
        // unlocked by the sequence moving on (Release: readers that see the new value see
        // everything the writer did).
        self.mm.mm_lock_seq.fetch_add(1, Ordering::Release);
    }
}

impl<V: VmArea, M: Mmu> Drop for MmStruct<V, M> {
    fn drop(&mut self) {
        let table = self.regions.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if table.is_null() {
            return;
        }
        // SAFETY: `&mut self`: no reader can exist; the table came from `Box::into_raw`.
        let table = unsafe { Box::from_raw(table) };
        for &vma in table.vmas.iter() {
            // SAFETY: every published region was leaked from a Box in `insert` and is
            // owned by the table being dropped.
            drop(unsafe { Box::from_raw(core::ptr::from_ref(vma).cast_mut()) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgtable::tests::SoftMmu;
    use crate::rcu::Immediate;
    use crate::vma::{VmAreaA, VmAreaB, VmFlags};

    static RCU: Immediate = Immediate;

    fn desc(start: u64, end: u64) -> VmaDesc<'static> {
        VmaDesc {
            start,
            end,
            flags: VmFlags::READ | VmFlags::WRITE,
            object: None,
            pgoff: 0,
            memcg: core::ptr::null(),
            node: 0,
            anon_id: 0,
            mm: core::ptr::null(),
        }
    }

    const BASE: u64 = 0x10_0000_0000;
    const LEN: u64 = 64 << 20;

    fn regions<V: VmArea>() {
        let mm = MmStruct::<V, SoftMmu>::new(BASE, LEN, SoftMmu::new(4), &RCU).unwrap();
        assert!(matches!(
            mm.lock_vma_under_rcu(BASE),
            Err(VmaReadError::Detached)
        ));
        {
            let w = mm.mmap_write_lock();
            assert_eq!(mm.mm_lock_seq().load(Ordering::Relaxed) % 2, 1);
            let a = w.insert(&desc(BASE + 0x10000, BASE + 0x20000)).unwrap();
            assert_eq!(a.anon_id(), mm.id());
            w.insert(&desc(BASE, BASE + 0x10000)).unwrap();
            assert_eq!(
                w.insert(&desc(BASE + 0x1f000, BASE + 0x30000)).unwrap_err(),
                MmError::Overlaps
            );
            assert_eq!(
                w.insert(&desc(BASE + LEN, BASE + LEN + 4096)).unwrap_err(),
                MmError::BadRange
            );
            assert_eq!(
                w.insert(&desc(BASE + 0x30001, BASE + 0x40000)).unwrap_err(),
                MmError::BadRange
            );
        }
        assert_eq!(mm.mm_lock_seq().load(Ordering::Relaxed) % 2, 0);
        assert_eq!(mm.nr_regions(), 2);
        {
            let g = mm.lock_vma_under_rcu(BASE + 0x12345).unwrap();
            assert_eq!(g.vma().vm_start(), BASE + 0x10000);
            assert_eq!(g.vma().vm_refcnt().load(Ordering::Relaxed), 2);
        }
        assert!(
            mm.lock_vma_under_rcu(BASE + 0x20000).is_err(),
            "gap after the regions"
        );
        {
            let w = mm.mmap_write_lock();
            assert_eq!(
                w.write_lock(BASE, BASE + 0x8000).unwrap_err(),
                MmError::NoSuchRegion
            );
            let v = w.write_lock(BASE, BASE + 0x10000).unwrap();
            // While write-locked, faults take the slow path.
            assert!(matches!(
                mm.lock_vma_under_rcu(BASE + 4096),
                Err(VmaReadError::WriteLocked)
            ));
            w.remove(v).unwrap();
            assert_eq!(w.remove(v).unwrap_err(), MmError::NoSuchRegion);
        }
        assert_eq!(mm.nr_regions(), 1);
        assert!(mm.lock_vma_under_rcu(BASE + 4096).is_err());
        assert!(
            mm.lock_vma_under_rcu(BASE + 0x10000).is_ok(),
            "the write cycle ended"
        );
        let r = mm.mmap_read_lock();
        assert!(r.find(BASE + 0x10000).is_some());
    }

    #[test]
    fn regions_lookup_and_removal_both_layouts() {
        regions::<VmAreaA>();
        regions::<VmAreaB>();
    }
}
