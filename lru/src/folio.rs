//! The folio descriptor: one per 4 KiB frame, like an entry of Linux's memmap.
//!
//! Models `struct folio` as far as the LRU cares (include/linux/mm_types.h,
//! include/linux/page-flags.h, include/linux/mm_inline.h): atomic flags including the
//! MGLRU generation and reference-count bits that Linux packs into `folio->flags`
//! (`LRU_GEN_MASK`, `LRU_REFS_MASK`), the intrusive `lru` link, the memcg id, node and zone.
//! `folio_test_clear_lru()` is a single atomic fetch-and, which is what makes Alex Shi's
//! isolation protocol (seed 004) safe: only the caller that clears LRU may take the folio
//! off its list.

use crate::error::LruError;
use crate::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};
use bitflags::bitflags;
use intrusive_collections::linked_list::AtomicLink;

/// Number of NUMA nodes a shadow entry can name (6 bits).
pub const MAX_NUMNODES: u32 = 64;
/// Number of zones per node.
pub const MAX_NR_ZONES: usize = 4;
/// Anon and file: the two LRU types (`ANON_AND_FILE`).
pub const ANON_AND_FILE: usize = 2;
/// Index of the anon type (`LRU_GEN_ANON`).
pub const LRU_GEN_ANON: usize = 0;
/// Index of the file type (`LRU_GEN_FILE`).
pub const LRU_GEN_FILE: usize = 1;
/// Width of the per-folio reference counter in the flags word (`LRU_REFS_WIDTH`).
pub const LRU_REFS_WIDTH: u32 = 2;

const LRU_GEN_PGOFF: u32 = 16;
const LRU_GEN_WIDTH: u32 = 3;
const LRU_GEN_MASK: u32 = ((1 << LRU_GEN_WIDTH) - 1) << LRU_GEN_PGOFF;
const LRU_REFS_PGOFF: u32 = LRU_GEN_PGOFF + LRU_GEN_WIDTH;
const LRU_REFS_MASK: u32 = ((1 << LRU_REFS_WIDTH) - 1) << LRU_REFS_PGOFF;

bitflags! {
    /// Page flags the LRU uses (`PG_lru`, `PG_active`, ...). Bits 16.. hold the MGLRU
    /// generation and reference counter and are not flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct FolioFlags: u32 {
        /// On an LRU list (`PG_lru`); cleared atomically to isolate.
        const LRU = 1 << 0;
        /// On an active list, or (MGLRU) to be added to the youngest generation.
        const ACTIVE = 1 << 1;
        /// Accessed once since the last scan (`PG_referenced`).
        const REFERENCED = 1 << 2;
        /// Part of the working set (`PG_workingset`); set on refault of a hot folio.
        const WORKINGSET = 1 << 3;
        /// Anonymous / swap-backed (`PG_swapbacked`); clear means file LRU.
        const SWAPBACKED = 1 << 4;
        /// On the unevictable list (`PG_unevictable`).
        const UNEVICTABLE = 1 << 5;
        /// Being reclaimed (`PG_reclaim`).
        const RECLAIM = 1 << 6;
    }
}

/// The four memory zones of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Zone {
    /// `ZONE_DMA`.
    Dma = 0,
    /// `ZONE_DMA32`.
    Dma32 = 1,
    /// `ZONE_NORMAL`.
    Normal = 2,
    /// `ZONE_MOVABLE`.
    Movable = 3,
}

impl Zone {
    /// The zone's index (`folio_zonenum`).
    #[must_use]
    pub const fn idx(self) -> usize {
        self as usize
    }

    fn from_idx(i: u8) -> Zone {
        match i {
            0 => Zone::Dma,
            1 => Zone::Dma32,
            2 => Zone::Normal,
            _ => Zone::Movable,
        }
    }
}

/// A folio descriptor (order 0). Lives as long as its frame; lists link `&'static Folio`.
#[repr(C)]
pub struct Folio {
    /// `folio->flags`: [`FolioFlags`] plus MGLRU gen (+1) and refs bits.
    flags: AtomicU32,
    /// `folio->_refcount`.
    refcount: AtomicU32,
    /// `folio->lru`: the intrusive list link, owned by whichever lruvec list holds it.
    pub(crate) lru: AtomicLink,
    /// Id of the lruvec whose list holds `lru` (0 = none). Written under that lruvec's
    /// lru_lock; lets deletion prove list membership instead of trusting flags.
    pub(crate) owner: AtomicU64,
    /// The page frame number this descriptor describes.
    pfn: u64,
    /// `folio->memcg_data`, reduced to the memcg id (0 = not charged).
    memcg_id: AtomicU16,
    node: u8,
    zone: u8,
    /// Which of the owner's lists holds `lru` ([`NO_SLOT`] = none). Under lru_lock.
    pub(crate) slot: AtomicU8,
}

/// [`Folio::slot`] value for "on no list".
pub(crate) const NO_SLOT: u8 = u8::MAX;

// Layout assertions hold for the real atomics; loom's model atomics are larger.
#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<Folio>() <= 64);
const _: () = assert!(crate::cacheline::CACHELINE.is_multiple_of(core::mem::align_of::<Folio>()));

impl core::fmt::Debug for Folio {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Folio")
            .field("pfn", &self.pfn)
            .field("flags", &self.flags())
            .field("gen", &self.lru_gen())
            .field("refs", &self.lru_refs())
            .field("memcg_id", &self.memcg_id())
            .field("node", &self.node)
            .field("zone", &self.zone())
            .finish()
    }
}

impl Folio {
    /// A free folio for frame `pfn` in `node`/`zone`: no flags, refcount 0, uncharged.
    pub fn new(pfn: u64, node: u32, zone: Zone) -> Result<Folio, LruError> {
        if node >= MAX_NUMNODES {
            return Err(LruError::InvalidNode(node));
        }
        Ok(Folio {
            flags: AtomicU32::new(0),
            refcount: AtomicU32::new(0),
            lru: AtomicLink::new(),
            owner: AtomicU64::new(0),
            pfn,
            memcg_id: AtomicU16::new(0),
            node: node as u8,
            zone: zone as u8,
            slot: AtomicU8::new(NO_SLOT),
        })
    }

    /// The frame number.
    #[must_use]
    pub fn pfn(&self) -> u64 {
        self.pfn
    }

    /// The node (`folio_nid`).
    #[must_use]
    pub fn node(&self) -> u32 {
        u32::from(self.node)
    }

    /// The zone (`folio_zonenum`).
    #[must_use]
    pub fn zone(&self) -> Zone {
        Zone::from_idx(self.zone)
    }

    /// The charged memcg's id (`folio_memcg(folio)->id`), 0 when uncharged.
    #[must_use]
    pub fn memcg_id(&self) -> u16 {
        self.memcg_id.load(Ordering::Acquire)
    }

    /// Commit a charge (`commit_charge`): the folio now belongs to memcg `id`.
    /// Only legal while the folio is not on an LRU list.
    pub fn set_memcg_id(&self, id: u16) -> Result<(), LruError> {
        if self.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        self.memcg_id.store(id, Ordering::Release);
        Ok(())
    }

    /// The flag bits (without the gen/refs fields).
    #[must_use]
    pub fn flags(&self) -> FolioFlags {
        FolioFlags::from_bits_truncate(self.flags.load(Ordering::Acquire))
    }

    /// Whether all of `f` are set.
    #[must_use]
    pub fn test(&self, f: FolioFlags) -> bool {
        self.flags().contains(f)
    }

    /// Atomically set `f`.
    pub fn set(&self, f: FolioFlags) {
        self.flags.fetch_or(f.bits(), Ordering::AcqRel);
    }

    /// Atomically clear `f`.
    pub fn clear(&self, f: FolioFlags) {
        self.flags.fetch_and(!f.bits(), Ordering::AcqRel);
    }

    /// Atomically set `f`; returns whether all of `f` were already set.
    #[must_use]
    pub fn test_and_set(&self, f: FolioFlags) -> bool {
        self.flags.fetch_or(f.bits(), Ordering::AcqRel) & f.bits() == f.bits()
    }

    /// Atomically clear `f`; returns whether all of `f` were set.
    #[must_use]
    pub fn test_and_clear(&self, f: FolioFlags) -> bool {
        self.flags.fetch_and(!f.bits(), Ordering::AcqRel) & f.bits() == f.bits()
    }

    /// `folio_test_lru`.
    #[must_use]
    pub fn test_lru(&self) -> bool {
        self.test(FolioFlags::LRU)
    }

    /// `folio_test_clear_lru`: the isolation ticket. Exactly one caller gets `true`.
    #[must_use]
    pub fn test_clear_lru(&self) -> bool {
        self.test_and_clear(FolioFlags::LRU)
    }

    /// `folio_is_file_lru`: not swap-backed.
    #[must_use]
    pub fn is_file_lru(&self) -> bool {
        !self.test(FolioFlags::SWAPBACKED)
    }

    /// The LRU type index: [`LRU_GEN_ANON`] or [`LRU_GEN_FILE`].
    #[must_use]
    pub fn lru_type(&self) -> usize {
        usize::from(self.is_file_lru())
    }

    /// The MGLRU generation the folio sits in (`folio_lru_gen`), if any.
    #[must_use]
    pub fn lru_gen(&self) -> Option<usize> {
        let g = (self.flags.load(Ordering::Acquire) & LRU_GEN_MASK) >> LRU_GEN_PGOFF;
        (g != 0).then(|| g as usize - 1)
    }

    /// Record the generation (`gen + 1` in the flags), or none. Callers hold lru_lock.
    pub(crate) fn set_lru_gen(&self, r#gen: Option<usize>) {
        let v = r#gen.map_or(0, |g| (g as u32 + 1) << LRU_GEN_PGOFF);
        self.update_bits(LRU_GEN_MASK, v);
    }

    /// The MGLRU access counter (`folio_lru_refs`): 0..=3, on top of `REFERENCED`.
    #[must_use]
    pub fn lru_refs(&self) -> u32 {
        (self.flags.load(Ordering::Acquire) & LRU_REFS_MASK) >> LRU_REFS_PGOFF
    }

    /// Set the access counter, saturating at its width.
    pub fn set_lru_refs(&self, refs: u32) {
        let refs = refs.min((1 << LRU_REFS_WIDTH) - 1);
        self.update_bits(LRU_REFS_MASK, refs << LRU_REFS_PGOFF);
    }

    /// `folio_mark_accessed` under MGLRU (`lru_gen_inc_refs`): the first access sets
    /// `REFERENCED`, later ones count up in the refs bits, the last sets `WORKINGSET`.
    pub fn mark_accessed(&self) {
        let _ = self
            .flags
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                if old & FolioFlags::REFERENCED.bits() == 0 {
                    return Some(old | FolioFlags::REFERENCED.bits());
                }
                let refs = (old & LRU_REFS_MASK) >> LRU_REFS_PGOFF;
                if refs < (1 << LRU_REFS_WIDTH) - 1 {
                    Some((old & !LRU_REFS_MASK) | ((refs + 1) << LRU_REFS_PGOFF))
                } else if old & FolioFlags::WORKINGSET.bits() == 0 {
                    Some(old | FolioFlags::WORKINGSET.bits())
                } else {
                    None
                }
            });
    }

    /// Accesses counted so far: `REFERENCED` plus the refs bits (0..=4).
    #[must_use]
    pub fn total_refs(&self) -> u32 {
        u32::from(self.test(FolioFlags::REFERENCED)) + self.lru_refs()
    }

    /// Take a reference (`folio_get`).
    pub fn get(&self) {
        self.refcount.fetch_add(1, Ordering::AcqRel);
    }

    /// Drop a reference (`folio_put`); returns true when it was the last one.
    /// A put without a matching get is reported, not wrapped.
    pub fn put(&self) -> Result<bool, LruError> {
        self.refcount
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            .map(|old| old == 1)
            .map_err(|_| LruError::RefcountUnderflow)
    }

    /// The reference count.
    #[must_use]
    pub fn refcount(&self) -> u32 {
        self.refcount.load(Ordering::Acquire)
    }

    /// Reset LRU state when the frame is freed (`free_pages_prepare` clears these bits).
    /// Fails if the folio is still on an LRU list.
    pub fn reset_lru_state(&self) -> Result<(), LruError> {
        if self.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        self.flags.store(0, Ordering::Release);
        self.memcg_id.store(0, Ordering::Release);
        Ok(())
    }

    fn update_bits(&self, mask: u32, value: u32) {
        let _ = self
            .flags
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                Some((old & !mask) | value)
            });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn folio() -> Folio {
        Folio::new(7, 1, Zone::Normal).unwrap()
    }

    #[test]
    fn new_validates_node() {
        assert_eq!(
            Folio::new(0, MAX_NUMNODES, Zone::Dma).unwrap_err(),
            LruError::InvalidNode(MAX_NUMNODES)
        );
        let f = folio();
        assert_eq!((f.pfn(), f.node(), f.zone()), (7, 1, Zone::Normal));
        assert_eq!(f.flags(), FolioFlags::empty());
    }

    #[test]
    fn test_clear_lru_is_one_shot() {
        let f = folio();
        assert!(!f.test_clear_lru());
        f.set(FolioFlags::LRU);
        assert!(f.test_clear_lru());
        assert!(!f.test_clear_lru());
    }

    #[test]
    fn gen_and_refs_do_not_clobber_flags() {
        let f = folio();
        f.set(FolioFlags::ACTIVE | FolioFlags::SWAPBACKED);
        f.set_lru_gen(Some(3));
        f.set_lru_refs(2);
        assert_eq!(f.lru_gen(), Some(3));
        assert_eq!(f.lru_refs(), 2);
        assert_eq!(f.flags(), FolioFlags::ACTIVE | FolioFlags::SWAPBACKED);
        f.set_lru_gen(None);
        assert_eq!(f.lru_gen(), None);
        assert_eq!(f.lru_refs(), 2);
        f.set_lru_refs(99);
        assert_eq!(f.lru_refs(), 3);
    }

    #[test]
    fn mark_accessed_climbs_tiers() {
        let f = folio();
        f.mark_accessed();
        assert!(f.test(FolioFlags::REFERENCED));
        assert_eq!(f.total_refs(), 1);
        for _ in 0..3 {
            f.mark_accessed();
        }
        assert_eq!(f.total_refs(), 4);
        assert!(!f.test(FolioFlags::WORKINGSET));
        f.mark_accessed();
        assert!(f.test(FolioFlags::WORKINGSET));
        f.mark_accessed();
        assert_eq!(f.total_refs(), 4);
    }

    #[test]
    fn refcount_and_charge() {
        let f = folio();
        assert_eq!(f.put(), Err(LruError::RefcountUnderflow));
        f.get();
        f.get();
        assert_eq!(f.put(), Ok(false));
        assert_eq!(f.put(), Ok(true));
        f.set_memcg_id(5).unwrap();
        assert_eq!(f.memcg_id(), 5);
        f.set(FolioFlags::LRU);
        assert_eq!(f.set_memcg_id(6), Err(LruError::AlreadyOnLru));
        assert_eq!(f.reset_lru_state(), Err(LruError::AlreadyOnLru));
        assert!(f.test_clear_lru());
        f.reset_lru_state().unwrap();
        assert_eq!((f.memcg_id(), f.flags()), (0, FolioFlags::empty()));
    }

    #[test]
    fn file_or_anon() {
        let f = folio();
        assert!(f.is_file_lru());
        assert_eq!(f.lru_type(), LRU_GEN_FILE);
        f.set(FolioFlags::SWAPBACKED);
        assert_eq!(f.lru_type(), LRU_GEN_ANON);
    }
}

const FOLIO_FIELDS: &[crate::layout::FieldDesc] = {
    &[
        crate::layout_field!(Folio, "flags", flags),
        crate::layout_field!(Folio, "refcount", refcount),
        crate::layout_field!(Folio, "lru", lru),
        crate::layout_field!(Folio, "lru", owner),
        crate::layout_field!(Folio, "identity", pfn),
        crate::layout_field!(Folio, "identity", memcg_id),
        crate::layout_field!(Folio, "identity", node),
        crate::layout_field!(Folio, "identity", zone),
        crate::layout_field!(Folio, "lru", slot),
    ]
};

/// The folio descriptor's layout for [`crate::layout`].
#[must_use]
pub fn folio_layout() -> crate::layout::StructLayout<'static> {
    crate::layout::StructLayout {
        name: "folio",
        size: core::mem::size_of::<Folio>(),
        align: core::mem::align_of::<Folio>(),
        fields: FOLIO_FIELDS,
    }
}
