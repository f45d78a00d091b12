//! Page tables of an address space: the PTE level, split PTE locks, and the platform's MMU.
//!
//! Models the last level of Linux's page tables with split PTE locks
//! (`pte_offset_map_lock`, `pte_alloc`, `ptlock_init`, `free_pgtables`): every 2 MiB of an
//! address space's range has at most one PTE table, a 4 KiB frame of 512 64-bit entries from
//! the page allocator, and each table has its own lock, kept in the table frame's folio (its
//! `private` word, as Linux keeps `ptl` in the table's `struct ptdesc`). So CPUs faulting in
//! different 2 MiB of ONE region never share a lock, and CPUs in the same 2 MiB serialise
//! only their PTE writes, never on a region- or address-space-wide lock (mmtests' pft).
//!
//! The directory above the PTE level is this module's own array (one word per 2 MiB, the
//! table frame's folio), filled under the address space's `page_table_lock` when a table
//! is first needed. What is platform-specific sits behind [`Mmu`]: reaching a frame's bytes,
//! linking a table into the hardware hierarchy, the PTE format and TLB flushes. The kernel
//! implements it on the x86 page tables (a table frame becomes a page-directory entry,
//! `invlpg`, shootdown IPIs); the host-thread benchmark implements it in software (the
//! tables are only what this module writes; "flushes" are no-ops), so the same fault core
//! runs on both.
//!
//! PTE writes happen only under the table's lock; reads may be lockless (the hardware
//! walker reads concurrently anyway), so every entry is an `AtomicU64` holding a [`Pte`].
//!
//! The trait speaks in typed values ([`Pfn`], [`VirtAddr`], [`Pte`], see
//! [`super::addr`]): a frame number cannot be passed where an address or an entry is
//! meant. The table's own API keeps the fault core's plain `u64` addresses.
//!
//! Unsafe code here, and why: page tables are frames written through their addresses, and a
//! PTE table's split lock is a ticket lock viewed over its folio's `private` word
//! (`TicketLock::from_word`).
#![allow(unsafe_code)]

use crate::addr::VirtAddr;
use crate::cpumask::CpuMask;
use crate::lock_classes::PteLock;
use alloc::boxed::Box;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use ksync::{SpinMutex, TicketLock};
use lru::Folio;
use page_alloc::pfn::Pfn;

/// Bytes one PTE table maps.
pub const PTE_TABLE_SPAN: u64 = 2 << 20;
/// Entries in a PTE table.
pub const PTRS_PER_PTE: usize = 512;

ksync::lock_class!(
    /// An address space's lock for filling its page directory (`mm->page_table_lock`).
    pub PageTableLock, "page_table_lock"
);

/// A page-table entry as the platform encodes it (`pte_t`): only [`Mmu`] makes and reads
/// one; the table stores it as a word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Pte(u64);

impl Pte {
    /// The clear entry (`pte_none()`: maps nothing).
    pub const NONE: Pte = Pte(0);

    /// The entry whose word is `raw` (`__pte()`).
    #[must_use]
    pub const fn from_raw(raw: u64) -> Self {
        Pte(raw)
    }

    /// The entry's word (`pte_val()`).
    #[must_use]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Whether the entry is clear (`pte_none()`).
    #[must_use]
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// What the fault core needs from the platform's MMU.
pub trait Mmu: Send + Sync + 'static {
    /// Where the bytes of frame `pfn` can be read and written (the kernel's direct map, or
    /// the host arena).
    fn frame_ptr(&self, pfn: Pfn) -> *mut u8;
    /// Zeroes frame `pfn` (`clear_page`): every new anonymous or shmem page and every new
    /// page table. The default writes zeroes through [`Mmu::frame_ptr`]; a platform with a
    /// faster way (the kernel's `clear_page`, chosen per CPU as Linux does) overrides it.
    ///
    /// # Safety
    /// The caller owns frame `pfn` exclusively (just allocated, not yet visible to anyone).
    unsafe fn clear_page(&self, pfn: Pfn) {
        // SAFETY: the caller owns the frame; `frame_ptr` covers its 4 KiB.
        unsafe { core::ptr::write_bytes(self.frame_ptr(pfn), 0, 4096) };
    }
    /// Makes the (zeroed) PTE table in frame `pt_pfn` the one that maps the 2 MiB at `va`.
    fn link_pte_table(&self, va: VirtAddr, pt_pfn: Pfn) -> Result<(), PtError>;
    /// Undoes [`Mmu::link_pte_table`] for the 2 MiB at `va` (all its PTEs are clear), and
    /// flushes whatever the CPUs of `cpus` may have cached of the table (paging-structure
    /// caches) before returning.
    ///
    /// # Errors
    /// [`PtError::Flush`]: the table is unlinked but some CPU of `cpus` may still cache it;
    /// its frame must not be reused until a later flush of those CPUs succeeds
    /// ([`Mmu::flush_tlb_all`]).
    fn unlink_pte_table(&self, va: VirtAddr, cpus: &CpuMask, me: usize) -> Result<(), PtError>;
    /// The PTE mapping frame `pfn`, present, writable if `writable`, never executable
    /// (`pfn_pte()`).
    #[must_use]
    fn mk_pte(&self, pfn: Pfn, writable: bool) -> Pte;
    /// The frame a PTE maps, if it is present (`pte_pfn()` of a `pte_present()` entry).
    #[must_use]
    fn pte_pfn(&self, pte: Pte) -> Option<Pfn>;
    /// Whether a PTE is present and allows writes (`pte_write()`).
    #[must_use]
    fn pte_write(&self, pte: Pte) -> bool;
    /// Drops this CPU's translations of `vas` (`invlpg`).
    fn flush_tlb_local(&self, vas: &[VirtAddr]);
    /// Drops the translations of `vas` on every CPU of `cpus` except `me`, and waits until
    /// each has (a TLB shootdown).
    ///
    /// # Errors
    /// [`PtError::Flush`]: some CPU of `cpus` may still hold a translation of `vas`; the
    /// frames they mapped must not be reused until a later flush succeeds.
    fn flush_tlb_others(&self, cpus: &CpuMask, me: usize, vas: &[VirtAddr]) -> Result<(), PtError>;
    /// Drops every translation and cached page-table entry of the address spaces this MMU
    /// serves, on `me` and on every CPU of `cpus`, and waits until each has: the flush that
    /// lets frames kept after a failed flush go ([`crate::tlb_kept`]).
    ///
    /// # Errors
    /// [`PtError::Flush`]: some CPU of `cpus` may still cache something.
    fn flush_tlb_all(&self, cpus: &CpuMask, me: usize) -> Result<(), PtError>;
}

/// Failures injected into an [`Mmu`]'s flushes: off, or every `n`th flush call reports
/// failure, so the callers' failure paths run on demand (whether the flush was done first
/// is the implementation's choice: the kernel's flushes, then reports). Counted.
///
/// Not a [`crate::fault_inject::FaultAttr`]: an MMU is a static that every context
/// shares and a test switches this on and off at run time, where a `FaultAttr` is a
/// context's, fixed when the context is built, with per-CPU random streams on the heap.
#[derive(Debug, Default)]
pub struct FlushFailures {
    every: AtomicU64,
    calls: AtomicU64,
    injected: AtomicU64,
}

impl FlushFailures {
    /// Off.
    #[must_use]
    pub const fn new() -> Self {
        FlushFailures {
            every: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// From now on, every `n`th flush fails (`0`: none).
    pub fn set_every(&self, n: u64) {
        self.calls.store(0, Ordering::Relaxed);
        self.every.store(n, Ordering::Relaxed);
    }

    /// Whether this flush call is to fail (counts it).
    #[must_use]
    pub fn should_fail(&self) -> bool {
        let every = self.every.load(Ordering::Relaxed);
        if every == 0 {
            return false;
        }
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let fail = n.is_multiple_of(every);
        if fail {
            self.injected.fetch_add(1, Ordering::Relaxed);
        }
        fail
    }

    /// Flush failures injected so far.
    #[must_use]
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    /// [`Mmu`] implementations' answer: `Err(PtError::Flush)` when this call is to fail.
    ///
    /// # Errors
    /// [`PtError::Flush`] when injected.
    pub fn check(&self) -> Result<(), PtError> {
        if self.should_fail() {
            Err(PtError::Flush)
        } else {
            Ok(())
        }
    }
}

/// Why a page-table operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtError {
    /// No frame for a table.
    NoMemory,
    /// The address is outside the address space's range.
    OutOfRange,
    /// The platform could not link the table.
    Platform,
    /// A TLB flush did not complete: some CPU may still cache what it was to drop.
    Flush,
}

/// The PTE tables of one address space.
pub struct PageTable<M: Mmu> {
    base: u64,
    len: u64,
    /// Per 2 MiB: the table frame's folio, null = no table.
    pmd: Box<[AtomicPtr<Folio>]>,
    page_table_lock: SpinMutex<PageTableLock, ()>,
    mmu: &'static M,
}

impl<M: Mmu> core::fmt::Debug for PageTable<M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageTable")
            .field("base", &format_args!("{:#x}", self.base))
            .field("len", &self.len)
            .field("tables", &self.nr_tables())
            .finish()
    }
}

/// One PTE table.
pub struct PteTable<'a, M: Mmu> {
    folio: &'static Folio,
    entries: &'a [AtomicU64; PTRS_PER_PTE],
    mmu: &'a M,
}

impl<M: Mmu> Clone for PteTable<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M: Mmu> Copy for PteTable<'_, M> {}

impl<M: Mmu> core::fmt::Debug for PteTable<'_, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PteTable")
            .field("pfn", &self.folio.pfn())
            .finish()
    }
}

/// A PTE table with its lock held (`pte_offset_map_lock`).
pub struct PteGuard<'a, M: Mmu> {
    table: PteTable<'a, M>,
}

impl<M: Mmu> core::fmt::Debug for PteGuard<'_, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PteGuard")
            .field("table", &self.table)
            .finish()
    }
}

/// Index of `va`'s entry in its PTE table.
#[must_use]
pub const fn pte_index(va: u64) -> usize {
    ((va >> 12) as usize) % PTRS_PER_PTE
}

impl<'a, M: Mmu> PteTable<'a, M> {
    fn ptl(&self) -> &'a TicketLock<PteLock> {
        // SAFETY: while a frame is a PTE table its folio's `private` word is used only as
        // this lock: `table_or_alloc` zeroes it before publishing the table, and
        // `free_tables` hands the frame back only after the table is unpublished and
        // unlocked.
        unsafe { TicketLock::from_word(self.folio.private_word()) }
    }

    /// Takes the table's lock.
    #[must_use]
    pub fn lock(self) -> PteGuard<'a, M> {
        self.ptl().acquire();
        PteGuard { table: self }
    }

    /// Reads entry `idx` without the lock (a racy snapshot).
    #[must_use]
    pub fn read(&self, idx: usize) -> Pte {
        Pte(self.entries[idx % PTRS_PER_PTE].load(Ordering::Acquire))
    }

    /// The table frame's folio.
    #[must_use]
    pub fn folio(&self) -> &'static Folio {
        self.folio
    }
}

impl<M: Mmu> PteGuard<'_, M> {
    /// Entry `idx`.
    #[must_use]
    pub fn get(&self, idx: usize) -> Pte {
        self.table.read(idx)
    }

    /// The frame entry `idx` maps, if present.
    #[must_use]
    pub fn pfn(&self, idx: usize) -> Option<Pfn> {
        self.table.mmu.pte_pfn(self.get(idx))
    }

    /// Sets entry `idx` to map `pfn` (`set_pte_at`); the entry must be clear (a present
    /// entry is only ever replaced by clearing it first and flushing).
    pub fn set(&mut self, idx: usize, pfn: Pfn, writable: bool) {
        let pte = self.table.mmu.mk_pte(pfn, writable);
        self.table.entries[idx % PTRS_PER_PTE].store(pte.raw(), Ordering::Release);
    }

    /// Clears entry `idx` (`ptep_get_and_clear`), returning the frame it mapped. The caller
    /// flushes the TLB before the frame is reused.
    #[must_use]
    pub fn clear(&mut self, idx: usize) -> Option<Pfn> {
        let old = self.table.entries[idx % PTRS_PER_PTE].swap(Pte::NONE.raw(), Ordering::AcqRel);
        self.table.mmu.pte_pfn(Pte(old))
    }
}

impl<M: Mmu> Drop for PteGuard<'_, M> {
    fn drop(&mut self) {
        // SAFETY: a guard exists only after `lock` acquired the table's lock on this CPU.
        unsafe { self.table.ptl().release() };
    }
}

impl<M: Mmu> PageTable<M> {
    /// Empty tables for `[base, base + len)` (both 2 MiB aligned).
    pub fn new(base: u64, len: u64, mmu: &'static M) -> Result<Self, PtError> {
        if !base.is_multiple_of(PTE_TABLE_SPAN) || !len.is_multiple_of(PTE_TABLE_SPAN) || len == 0 {
            return Err(PtError::OutOfRange);
        }
        Ok(PageTable {
            base,
            len,
            pmd: (0..len / PTE_TABLE_SPAN)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect(),
            page_table_lock: SpinMutex::new(()),
            mmu,
        })
    }

    /// The platform MMU.
    #[must_use]
    pub fn mmu(&self) -> &'static M {
        self.mmu
    }

    /// The covered range.
    #[must_use]
    pub fn range(&self) -> (u64, u64) {
        (self.base, self.base + self.len)
    }

    fn slot(&self, va: u64) -> Option<&AtomicPtr<Folio>> {
        let off = va.checked_sub(self.base)?;
        (off < self.len).then(|| &self.pmd[(off / PTE_TABLE_SPAN) as usize])
    }

    fn table_at(&self, folio: &'static Folio) -> PteTable<'_, M> {
        let ptr = self
            .mmu
            .frame_ptr(Pfn::of(folio))
            .cast::<[AtomicU64; PTRS_PER_PTE]>();
        PteTable {
            folio,
            // SAFETY: the frame is a live PTE table of this address space (published in
            // `pmd`), 4 KiB aligned, and only ever accessed as 512 atomics.
            entries: unsafe { &*ptr },
            mmu: self.mmu,
        }
    }

    fn load(slot: &AtomicPtr<Folio>) -> Option<&'static Folio> {
        // SAFETY: `pmd` holds null or the address of a `'static` memmap folio.
        unsafe { slot.load(Ordering::Acquire).as_ref() }
    }

    /// The PTE table covering `va`, if there is one.
    #[must_use]
    pub fn table(&self, va: u64) -> Option<PteTable<'_, M>> {
        Self::load(self.slot(va)?).map(|f| self.table_at(f))
    }

    /// The PTE table covering `va`, creating it with a frame from `alloc` if there is none
    /// (`pte_alloc()`: the table is looked up inline, only a missing one costs a call to
    /// `PageTable::pte_alloc`, Linux's `__pte_alloc`). A frame that lost the race is handed
    /// to `free`.
    #[inline(always)]
    pub fn table_or_alloc(
        &self,
        va: u64,
        alloc: impl FnOnce() -> Option<&'static Folio>,
        free: impl FnOnce(&'static Folio),
    ) -> Result<PteTable<'_, M>, PtError> {
        let slot = self.slot(va).ok_or(PtError::OutOfRange)?;
        match Self::load(slot) {
            Some(f) => Ok(self.table_at(f)),
            None => self.pte_alloc(va, slot, alloc, free),
        }
    }

    /// `__pte_alloc`: a new table for the span of `va` (whose PMD slot is `slot`), or the
    /// one another CPU linked first.
    #[cold]
    #[inline(never)]
    fn pte_alloc(
        &self,
        va: u64,
        slot: &AtomicPtr<Folio>,
        alloc: impl FnOnce() -> Option<&'static Folio>,
        free: impl FnOnce(&'static Folio),
    ) -> Result<PteTable<'_, M>, PtError> {
        let folio = alloc().ok_or(PtError::NoMemory)?;
        let pfn = Pfn::of(folio);
        // SAFETY: the frame was just allocated for us; nothing else uses its bytes.
        unsafe { self.mmu.clear_page(pfn) };
        folio.private_word().store(0, Ordering::Release);
        let _g = self.page_table_lock.lock();
        if let Some(won) = Self::load(slot) {
            drop(_g);
            free(folio);
            return Ok(self.table_at(won));
        }
        let span_base = va - (va - self.base) % PTE_TABLE_SPAN;
        if let Err(e) = self.mmu.link_pte_table(VirtAddr::new(span_base), pfn) {
            drop(_g);
            free(folio);
            return Err(e);
        }
        slot.store(core::ptr::from_ref(folio).cast_mut(), Ordering::Release);
        Ok(self.table_at(folio))
    }

    /// Lockless read of the PTE mapping `va` ([`Pte::NONE`] when there is no table or no
    /// entry).
    #[must_use]
    pub fn read_pte(&self, va: u64) -> Pte {
        self.table(va).map_or(Pte::NONE, |t| t.read(pte_index(va)))
    }

    /// PTE tables now.
    #[must_use]
    pub fn nr_tables(&self) -> usize {
        self.pmd.iter().filter(|e| Self::load(e).is_some()).count()
    }

    /// Every table with the address of its first entry (for unmap and the checker).
    pub fn for_each_table(&self, mut f: impl FnMut(u64, PteTable<'_, M>)) {
        for (i, e) in self.pmd.iter().enumerate() {
            if let Some(folio) = Self::load(e) {
                f(self.base + i as u64 * PTE_TABLE_SPAN, self.table_at(folio));
            }
        }
    }

    /// `free_pgtables`: unlinks every table and hands its frame to `free` once the CPUs that
    /// may cache it have flushed, or to `keep` when that flush failed (the frame may still
    /// be cached: it must not go back to the allocator until a later flush succeeds, see
    /// [`crate::tlb_kept`]). The caller has cleared every PTE and flushed (it holds
    /// `&mut self`: no fault can run); `cpus` are the CPUs that may cache the tables and
    /// `me` the calling CPU.
    pub fn free_tables(
        &mut self,
        cpus: &CpuMask,
        me: usize,
        mut free: impl FnMut(&'static Folio),
        mut keep: impl FnMut(&'static Folio),
    ) {
        for i in 0..self.pmd.len() {
            let p = self.pmd[i].swap(core::ptr::null_mut(), Ordering::AcqRel);
            // SAFETY: as in `load`: null or a `'static` memmap folio.
            if let Some(folio) = unsafe { p.as_ref() } {
                let va = VirtAddr::new(self.base + i as u64 * PTE_TABLE_SPAN);
                match self.mmu.unlink_pte_table(va, cpus, me) {
                    Ok(()) => free(folio),
                    Err(_) => keep(folio),
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::vec::Vec;
    use core::sync::atomic::AtomicUsize;
    use lru::Zone;

    /// A software MMU over leaked host memory: frame `pfn` lives at `base + pfn * 4096`.
    pub(crate) struct SoftMmu {
        pub(crate) base: usize,
        pub(crate) frames: usize,
        pub(crate) linked: AtomicUsize,
        pub(crate) local_flushes: AtomicUsize,
        pub(crate) remote_flushes: AtomicUsize,
        pub(crate) fail: FlushFailures,
    }

    impl SoftMmu {
        pub(crate) fn new(frames: usize) -> &'static SoftMmu {
            let mem: &'static mut [u8] = Vec::leak(alloc::vec![0u8; (frames + 1) * 4096]);
            let base = (mem.as_mut_ptr() as usize).next_multiple_of(4096);
            Box::leak(Box::new(SoftMmu {
                base,
                frames,
                linked: AtomicUsize::new(0),
                local_flushes: AtomicUsize::new(0),
                remote_flushes: AtomicUsize::new(0),
                fail: FlushFailures::new(),
            }))
        }
    }

    impl Mmu for SoftMmu {
        fn frame_ptr(&self, pfn: Pfn) -> *mut u8 {
            let pfn = pfn.as_u64() as usize;
            assert!(pfn < self.frames);
            (self.base + pfn * 4096) as *mut u8
        }
        fn link_pte_table(&self, _va: VirtAddr, _pt_pfn: Pfn) -> Result<(), PtError> {
            self.linked.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        fn unlink_pte_table(
            &self,
            _va: VirtAddr,
            _cpus: &CpuMask,
            _me: usize,
        ) -> Result<(), PtError> {
            self.linked.fetch_sub(1, Ordering::Relaxed);
            self.fail.check()
        }
        fn mk_pte(&self, pfn: Pfn, writable: bool) -> Pte {
            Pte::from_raw((pfn.as_u64() << 12) | 1 | (u64::from(writable) << 1))
        }
        fn pte_pfn(&self, pte: Pte) -> Option<Pfn> {
            (pte.raw() & 1 == 1).then_some(Pfn::new(pte.raw() >> 12))
        }
        fn pte_write(&self, pte: Pte) -> bool {
            pte.raw() & 3 == 3
        }
        fn flush_tlb_local(&self, vas: &[VirtAddr]) {
            self.local_flushes.fetch_add(vas.len(), Ordering::Relaxed);
        }
        fn flush_tlb_others(
            &self,
            cpus: &CpuMask,
            me: usize,
            vas: &[VirtAddr],
        ) -> Result<(), PtError> {
            self.fail.check()?;
            let n = cpus.iter().filter(|&c| c != me).count();
            self.remote_flushes
                .fetch_add(n * vas.len(), Ordering::Relaxed);
            Ok(())
        }
        fn flush_tlb_all(&self, _cpus: &CpuMask, _me: usize) -> Result<(), PtError> {
            self.fail.check()
        }
    }

    pub(crate) fn frame(pfn: u64) -> &'static Folio {
        Box::leak(Box::new(Folio::new(pfn, 0, Zone::Normal).unwrap()))
    }

    #[test]
    fn tables_are_created_once_locked_and_freed() {
        let mmu = SoftMmu::new(8);
        let base = 0x4000_0000;
        assert!(PageTable::new(base + 4096, PTE_TABLE_SPAN, mmu).is_err());
        let mut pt = PageTable::new(base, 4 * PTE_TABLE_SPAN, mmu).unwrap();
        assert!(pt.table(base).is_none());
        assert_eq!(pt.read_pte(base + 8192), Pte::NONE);
        let va = base + PTE_TABLE_SPAN + 3 * 4096;
        let t = pt
            .table_or_alloc(va, || Some(frame(1)), |_| panic!("no race"))
            .unwrap();
        assert_eq!(t.folio().pfn(), 1);
        // A second allocation for the same 2 MiB finds the table; its frame is not used.
        let t2 = pt
            .table_or_alloc(va + 4096, || panic!("already there"), |_| {})
            .unwrap();
        assert!(core::ptr::eq(t.folio(), t2.folio()));
        assert_eq!(
            pt.table_or_alloc(base + 4 * PTE_TABLE_SPAN, || Some(frame(2)), |_| {})
                .unwrap_err(),
            PtError::OutOfRange
        );
        {
            let mut g = t.lock();
            assert_eq!(g.pfn(pte_index(va)), None);
            g.set(pte_index(va), Pfn::new(5), true);
            assert_eq!(g.pfn(pte_index(va)), Some(Pfn::new(5)));
        }
        assert_eq!(pt.read_pte(va), Pte::from_raw((5 << 12) | 3));
        assert!(!t.ptl().is_held(), "guard released the lock");
        {
            let mut g = t.lock();
            assert!(t.ptl().is_held());
            assert_eq!(g.clear(pte_index(va)), Some(Pfn::new(5)));
            assert_eq!(g.clear(pte_index(va)), None);
        }
        assert_eq!((pt.nr_tables(), mmu.linked.load(Ordering::Relaxed)), (1, 1));
        let mut freed = Vec::new();
        pt.free_tables(
            &CpuMask::new(),
            0,
            |f| freed.push(f.pfn()),
            |_| panic!("flushed"),
        );
        assert_eq!(freed, [1]);
        assert_eq!((pt.nr_tables(), mmu.linked.load(Ordering::Relaxed)), (0, 0));
    }

    /// A table whose unlink flush failed is handed to `keep`, never to `free`: some CPU may
    /// still walk it. The others are freed as usual.
    #[test]
    fn a_table_whose_flush_failed_is_kept_not_freed() {
        let mmu = SoftMmu::new(8);
        let mut pt = PageTable::new(0, 3 * PTE_TABLE_SPAN, mmu).unwrap();
        for (i, pfn) in [(0, 1), (1, 2), (2, 3)] {
            pt.table_or_alloc(i * PTE_TABLE_SPAN, || Some(frame(pfn)), |_| {})
                .unwrap();
        }
        mmu.fail.set_every(2);
        let (mut freed, mut kept) = (Vec::new(), Vec::new());
        pt.free_tables(
            &CpuMask::new(),
            0,
            |f| freed.push(f.pfn()),
            |f| kept.push(f.pfn()),
        );
        assert_eq!((freed, kept), (vec![1, 3], vec![2]));
        assert_eq!(mmu.fail.injected(), 1);
        assert_eq!((pt.nr_tables(), mmu.linked.load(Ordering::Relaxed)), (0, 0));
    }

    /// Threads racing to create the same table end up with one, and the losers' frames come
    /// back through `free`.
    #[test]
    fn racing_table_creation_keeps_one() {
        let mmu = SoftMmu::new(16);
        let pt = std::sync::Arc::new(PageTable::new(0, PTE_TABLE_SPAN, mmu).unwrap());
        let freed = std::sync::Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..4u64)
            .map(|i| {
                let (pt, freed) = (pt.clone(), freed.clone());
                std::thread::spawn(move || {
                    pt.table_or_alloc(
                        i * 4096,
                        || Some(frame(i + 1)),
                        |_| {
                            freed.fetch_add(1, Ordering::Relaxed);
                        },
                    )
                    .unwrap()
                    .folio()
                    .pfn()
                })
            })
            .collect();
        let pfns: Vec<u64> = ts.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(pfns.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(pt.nr_tables(), 1);
        // Every thread that did not win either freed its frame or found the table first.
        assert!(freed.load(Ordering::Relaxed) <= 3);
    }
}
