//! The x86-64 page-table entry of the address-space slot: Linux's `pte_t` and its accessors.
//!
//! Models `arch/x86/include/asm/pgtable_types.h` (`_PAGE_PRESENT`, `_PAGE_RW`, `_PAGE_ACCESSED`,
//! `_PAGE_DIRTY`, `_PAGE_NX`, `PTE_PFN_MASK`) and the helpers of `asm/pgtable.h`
//! (`pfn_pte`, `pte_none`, `pte_present`, `pte_write`, `pte_young`, `pte_dirty`, `pte_pfn`,
//! `pte_mkold`, `pte_mkclean`, `pte_wrprotect`, `pte_mkwrite`). Only what a kernel-only fault
//! path needs: the user, global, cache-control and protection-key bits are never set, so a
//! CR3 reload ([`super::tlb::flush_tlb_local_all`]) drops every slot translation.
//!
//! NX (bit 63) is a reserved bit unless EFER.NXE is on: setting it without NXE makes every
//! access through the entry raise a reserved-bit page fault. [`PteProt`] therefore asks the
//! CPU once ([`super::cpu::nx_enabled`]) and sets NX only where it means "no execute".
//!
//! The MMU sets the accessed and dirty bits itself, with a locked read-modify-write of the
//! entry, whenever it uses one. Code that changes a live entry must therefore write it
//! atomically (`AtomicU64::swap` / `compare_exchange` on the entry, as Linux's
//! `ptep_get_and_clear` uses `xchg`), or a dirty bit set between a load and a plain store is
//! lost.

use core::fmt;
use core::sync::atomic::{AtomicU8, Ordering};
use x86_64::PhysAddr;

/// Entries in one page table (`PTRS_PER_PTE`).
pub const PTRS_PER_PTE: usize = 512;
/// Bytes mapped by one page-table entry (`PAGE_SIZE`).
pub const PAGE_SIZE: u64 = 4096;
/// Bytes mapped by one page table, i.e. by one page-directory entry (`PMD_SIZE`).
pub const PMD_SIZE: u64 = PAGE_SIZE * PTRS_PER_PTE as u64;

const PRESENT: u64 = 1 << 0;
const RW: u64 = 1 << 1;
const ACCESSED: u64 = 1 << 5;
const DIRTY: u64 = 1 << 6;
const NX: u64 = 1 << 63;
/// Physical address bits 12..52 (`PTE_PFN_MASK`).
const PFN_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Index of the entry that maps `vaddr` in its page table (`pte_index`).
#[must_use]
pub const fn pte_index(vaddr: u64) -> usize {
    ((vaddr >> 12) as usize) % PTRS_PER_PTE
}

/// The protection of a mapping (Linux's `pgprot_t` for the kernel data pages the slot
/// maps): present, writable or not, never executable where the CPU can say so.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PteProt(u64);

/// 0: not asked yet, 1: EFER.NXE off, 2: on.
static NX_STATE: AtomicU8 = AtomicU8::new(0);

/// Bit 63 where EFER.NXE makes it "no execute", else 0 (where it would be reserved).
pub(crate) fn nx_bit() -> u64 {
    let state = match NX_STATE.load(Ordering::Relaxed) {
        0 => {
            let s = if super::cpu::nx_enabled() { 2 } else { 1 };
            NX_STATE.store(s, Ordering::Relaxed);
            s
        }
        s => s,
    };
    if state == 2 { NX } else { 0 }
}

impl PteProt {
    /// Present, read-only, no-execute (`PAGE_KERNEL_RO`).
    #[must_use]
    pub fn read_only() -> Self {
        PteProt(PRESENT | nx_bit())
    }

    /// Present, writable, no-execute (`PAGE_KERNEL`).
    #[must_use]
    pub fn read_write() -> Self {
        PteProt(PRESENT | RW | nx_bit())
    }

    /// [`Self::read_write`] or [`Self::read_only`].
    #[must_use]
    pub fn data(writable: bool) -> Self {
        if writable {
            Self::read_write()
        } else {
            Self::read_only()
        }
    }
}

/// Why an entry could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PteError {
    /// The frame address is not 4 KiB aligned or lies above the 52-bit physical limit.
    BadFrame(u64),
}

impl fmt::Display for PteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PteError::BadFrame(a) => write!(f, "{a:#x} is not a 4 KiB frame address"),
        }
    }
}

/// One page-table entry, as the MMU reads it.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Pte(u64);

impl Pte {
    /// The empty entry (`pte_none`): not present, maps nothing.
    pub const NONE: Pte = Pte(0);

    /// An entry mapping `frame` with `prot` (`pfn_pte`).
    pub fn new(frame: PhysAddr, prot: PteProt) -> Result<Pte, PteError> {
        let a = frame.as_u64();
        if a & !PFN_MASK != 0 {
            return Err(PteError::BadFrame(a));
        }
        Ok(Pte(a | prot.0))
    }

    /// The entry mapping frame `pfn` with `prot`, as Linux's `pfn_pte()` builds it: the
    /// frame's address masked to the entry's address bits (`PTE_PFN_MASK`), no `Result`.
    /// For the fault path, whose frames come from the memmap and so always fit; a frame
    /// number beyond bit 51 would lose its high bits, which debug builds assert.
    /// [`Pte::new`] checks instead, for addresses from elsewhere.
    #[inline]
    #[must_use]
    pub fn from_pfn(pfn: u64, prot: PteProt) -> Pte {
        debug_assert!(
            pfn <= PFN_MASK >> 12,
            "frame {pfn:#x} beyond the entry's address bits"
        );
        Pte((pfn << 12) & PFN_MASK | prot.0)
    }

    /// The entry with these raw bits (as read from a page table).
    #[must_use]
    pub const fn from_raw(bits: u64) -> Pte {
        Pte(bits)
    }

    /// The raw bits (as stored in a page table).
    #[must_use]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Whether the entry is empty (`pte_none`).
    #[must_use]
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// Whether the MMU may use the entry (`pte_present`).
    #[must_use]
    pub const fn present(self) -> bool {
        self.0 & PRESENT != 0
    }

    /// Whether writes are allowed (`pte_write`).
    #[must_use]
    pub const fn writable(self) -> bool {
        self.0 & RW != 0
    }

    /// Whether instruction fetches are forbidden (always false without EFER.NXE).
    #[must_use]
    pub const fn no_execute(self) -> bool {
        self.0 & NX != 0
    }

    /// Whether the MMU used the entry since the bit was last cleared (`pte_young`).
    #[must_use]
    pub const fn accessed(self) -> bool {
        self.0 & ACCESSED != 0
    }

    /// Whether the MMU wrote through the entry since the bit was last cleared (`pte_dirty`).
    #[must_use]
    pub const fn dirty(self) -> bool {
        self.0 & DIRTY != 0
    }

    /// The mapped frame's physical address.
    #[must_use]
    pub const fn frame(self) -> PhysAddr {
        PhysAddr::new_truncate(self.0 & PFN_MASK)
    }

    /// The mapped frame's number (`pte_pfn`).
    #[must_use]
    pub const fn pfn(self) -> u64 {
        (self.0 & PFN_MASK) >> 12
    }

    /// The entry with the accessed bit cleared (`pte_mkold`).
    #[must_use]
    pub const fn mkold(self) -> Pte {
        Pte(self.0 & !ACCESSED)
    }

    /// The entry with the dirty bit cleared (`pte_mkclean`).
    #[must_use]
    pub const fn mkclean(self) -> Pte {
        Pte(self.0 & !DIRTY)
    }

    /// The entry without write permission (`pte_wrprotect`).
    #[must_use]
    pub const fn wrprotect(self) -> Pte {
        Pte(self.0 & !RW)
    }

    /// The entry with write permission (`pte_mkwrite`).
    #[must_use]
    pub const fn mkwrite(self) -> Pte {
        Pte(self.0 | RW)
    }
}

impl fmt::Debug for Pte {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return write!(f, "Pte(none)");
        }
        write!(
            f,
            "Pte({:#x}{}{}{}{}{})",
            self.frame().as_u64(),
            if self.present() { " P" } else { " !P" },
            if self.writable() { " W" } else { " RO" },
            if self.no_execute() { " NX" } else { "" },
            if self.accessed() { " A" } else { "" },
            if self.dirty() { " D" } else { "" },
        )
    }
}
