//! The folio descriptor: one per 4 KiB frame, like an entry of Linux's memmap.
//!
//! Models `struct folio` as far as the LRU cares (include/linux/mm_types.h,
//! include/linux/page-flags.h, include/linux/mm_inline.h): atomic flags including the
//! MGLRU generation and reference-count bits that Linux packs into `folio->flags`
//! (`LRU_GEN_MASK`, `LRU_REFS_MASK`), the intrusive `lru` link, the memcg id, node and zone.
//! `folio_test_clear_lru()` is a single atomic fetch-and, which is what makes Alex Shi's
//! isolation protocol (seed 004) safe: only the caller that clears LRU may take the folio
//! off its list.

use crate::error::FolioError;
use crate::link::FolioLink;
use crate::nid::{MAX_NUMNODES, NodeId};
use crate::sync::atomic::{AtomicI32, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};
use bitflags::bitflags;

/// Number of zones per node (`MAX_NR_ZONES`): DMA, DMA32, NORMAL, MOVABLE and DEVICE, as in
/// an x86-64 Linux build with `CONFIG_ZONE_DEVICE` (the build of seed 000, whose
/// `lru_gen_folio` is 1360 bytes). Per-zone arrays (`folios[][][]`, `nr_pages[][][]`,
/// `lru_zone_size[][]`) have Linux's sizes; no folio of this model lives in `ZONE_DEVICE`
/// (device memory is not modelled), so [`Zone`] names the four others.
pub const MAX_NR_ZONES: usize = 5;
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
        /// The frame is free in the buddy allocator, `PageBuddy`.
        const BUDDY = 1 << 7;
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

/// A folio descriptor (order 0), one per 4 KiB frame: exactly one 64-byte line.
///
/// Field order follows Linux's `struct page` / `struct folio` (mm_types.h): `flags`, the
/// `lru` link (which doubles as `buddy_list` while the frame is free, as in Linux),
/// `mapping`, `index`, `private`, `_mapcount`, `_refcount`, `memcg_data`. Two fields are
/// this model's own: `owner` (which lruvec's list holds `lru`, so a buggy caller gets an
/// error instead of a corrupted list) fills the 4 bytes after the 32-bit flags word, and
/// `slot` (which of that lruvec's lists). Linux keeps the node, zone and section number in
/// the top bits of `flags`; here they share the last word with the frame number.
///
/// 64 bytes, 64-byte aligned: neighbouring folios of the memmap never share a line, as
/// `struct page` never does on x86_64. Lives as long as its frame; lists link `&'static Folio`.
#[repr(C, align(64))]
pub struct Folio {
    /// `folio->flags`: [`FolioFlags`] plus MGLRU gen (+1) and refs bits.
    flags: AtomicU32,
    /// Id of the lruvec whose list holds `lru` (0 = none). The LRU layer's: written under
    /// that lruvec's lru_lock; lets deletion prove list membership instead of trusting
    /// flags.
    pub owner: AtomicU32,
    /// `folio->lru`: the intrusive list link, owned by whichever list holds it (a lruvec
    /// list while on the LRU, a buddy free list or a per-CPU page list while free).
    pub lru: FolioLink,
    /// `folio->mapping`: the object (page cache) or region (anonymous) this page belongs
    /// to, as an id; 0 = none. Used by the reverse map.
    mapping: AtomicU64,
    /// `folio->index`: page offset within `mapping` (file) or virtual page (anonymous).
    index: AtomicU64,
    /// `folio->private`: the buddy order while the frame is free (`PageBuddy`), otherwise
    /// owner-defined.
    private: AtomicU32,
    /// `folio->_mapcount`: page-table mappings minus one (-1 = unmapped), as Linux.
    mapcount: AtomicI32,
    /// `folio->_refcount`.
    refcount: AtomicU32,
    /// `folio->memcg_data`, reduced to the memcg id (0 = not charged).
    memcg_id: AtomicU16,
    /// Which of the owner's lists holds `lru` ([`NO_SLOT`] = none). The LRU layer's,
    /// under lru_lock.
    pub slot: AtomicU8,
    /// Frame number (bits 0..56), zone (56..58) and node (58..64): Linux's `flags` upper
    /// bits, packed here into one immutable word.
    pfn_zone_node: u64,
}

const PFN_BITS: u32 = 56;
const PFN_MASK: u64 = (1 << PFN_BITS) - 1;
/// Largest frame number a folio can describe.
pub const MAX_PFN: u64 = PFN_MASK;

/// [`Folio::slot`] value for "on no list".
pub const NO_SLOT: u8 = u8::MAX;

// Layout assertions hold for the real atomics; loom's model atomics are larger.
#[cfg(not(loom))]
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<Folio>() == 64);
    assert!(align_of::<Folio>() == 64);
    assert!(offset_of!(Folio, flags) == 0);
    assert!(offset_of!(Folio, lru) == 8);
    assert!(offset_of!(Folio, mapping) == 24);
    assert!(offset_of!(Folio, refcount) == 48);
};

impl core::fmt::Debug for Folio {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Folio")
            .field("pfn", &self.pfn())
            .field("flags", &self.flags())
            .field("gen", &self.lru_gen())
            .field("refs", &self.lru_refs())
            .field("memcg_id", &self.memcg_id())
            .field("node", &self.node())
            .field("zone", &self.zone())
            .field("mapping", &self.mapping())
            .field("index", &self.index())
            .field("mapcount", &self.mapcount())
            .field("refcount", &self.refcount())
            .finish()
    }
}

impl Folio {
    /// A free folio for frame `pfn` in `node`/`zone`: no flags, refcount 0, unmapped,
    /// uncharged.
    pub fn new(pfn: u64, node: NodeId, zone: Zone) -> Result<Folio, FolioError> {
        if node >= MAX_NUMNODES {
            return Err(FolioError::InvalidNode(node));
        }
        if pfn > MAX_PFN {
            return Err(FolioError::InvalidPfn(pfn));
        }
        Ok(Folio {
            flags: AtomicU32::new(0),
            owner: AtomicU32::new(0),
            lru: FolioLink::new(),
            mapping: AtomicU64::new(0),
            index: AtomicU64::new(0),
            private: AtomicU32::new(0),
            mapcount: AtomicI32::new(-1),
            refcount: AtomicU32::new(0),
            memcg_id: AtomicU16::new(0),
            slot: AtomicU8::new(NO_SLOT),
            pfn_zone_node: pfn | (zone as u64) << PFN_BITS | u64::from(node) << (PFN_BITS + 2),
        })
    }

    /// The frame number (`folio_pfn`).
    #[must_use]
    pub fn pfn(&self) -> u64 {
        self.pfn_zone_node & PFN_MASK
    }

    /// The node (`folio_nid`).
    #[must_use]
    pub fn node(&self) -> NodeId {
        (self.pfn_zone_node >> (PFN_BITS + 2)) as u32
    }

    /// The zone (`folio_zonenum`).
    #[must_use]
    pub fn zone(&self) -> Zone {
        Zone::from_idx(((self.pfn_zone_node >> PFN_BITS) & 3) as u8)
    }

    /// The node and the zone in one number (`page_zone_id()`): two folios are of one zone
    /// exactly when theirs are equal, one compare where [`Self::node`] and [`Self::zone`]
    /// would look the zone up.
    #[must_use]
    pub fn zone_id(&self) -> u32 {
        (self.pfn_zone_node >> PFN_BITS) as u32
    }

    /// `folio->mapping` as an id (0 = none).
    #[must_use]
    pub fn mapping(&self) -> u64 {
        self.mapping.load(Ordering::Acquire)
    }

    /// `folio->index`.
    #[must_use]
    pub fn index(&self) -> u64 {
        self.index.load(Ordering::Acquire)
    }

    /// Set `mapping` and `index` (`folio_add_new_anon_rmap` / `filemap_add_folio`). The
    /// caller owns the folio exclusively (just allocated, not yet visible to others).
    pub fn set_mapping(&self, mapping: u64, index: u64) {
        self.index.store(index, Ordering::Relaxed);
        self.mapping.store(mapping, Ordering::Release);
    }

    /// `folio->private`.
    #[must_use]
    pub fn private(&self) -> u32 {
        self.private.load(Ordering::Acquire)
    }

    /// The `private` word itself, for owners that keep an atomic object there: a
    /// page-table page keeps its split PTE lock in it, as Linux keeps `ptl` in the page
    /// table's `struct ptdesc`.
    #[must_use]
    pub fn private_word(&self) -> &AtomicU32 {
        &self.private
    }

    /// Set `folio->private` (the buddy allocator keeps the order here).
    pub fn set_private(&self, v: u32) {
        self.private.store(v, Ordering::Release);
    }

    /// Page-table mappings (`folio_mapcount`): 0 when unmapped.
    #[must_use]
    pub fn mapcount(&self) -> u32 {
        (self.mapcount.load(Ordering::Acquire) + 1).max(0) as u32
    }

    /// One more page-table mapping (`folio_add_*_rmap`); returns true for the first.
    pub fn inc_mapcount(&self) -> bool {
        self.mapcount.fetch_add(1, Ordering::AcqRel) == -1
    }

    /// One mapping fewer (`folio_remove_rmap`); returns true when it was the last. An
    /// unmap of an unmapped folio is reported, not wrapped.
    pub fn dec_mapcount(&self) -> Result<bool, FolioError> {
        self.mapcount
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
                (m >= 0).then_some(m - 1)
            })
            .map(|old| old == 0)
            .map_err(|_| FolioError::MapcountUnderflow)
    }

    /// The charged memcg's id (`folio_memcg(folio)->id`), 0 when uncharged.
    #[must_use]
    pub fn memcg_id(&self) -> u16 {
        self.memcg_id.load(Ordering::Acquire)
    }

    /// Commit a charge (`commit_charge`): the folio now belongs to memcg `id`.
    /// Only legal while the folio is not on an LRU list.
    pub fn set_memcg_id(&self, id: u16) -> Result<(), FolioError> {
        if self.test_lru() {
            return Err(FolioError::AlreadyOnLru);
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

    /// Set `f` on a folio nobody else can see yet (Linux's `__folio_set_swapbacked()`:
    /// a fresh frame before it is mapped, cached or batched for an LRU): a load and a store,
    /// no locked read-modify-write. A concurrent update of the flags would be lost, which
    /// is why it is only for a folio that is still the caller's alone.
    pub fn set_unshared(&self, f: FolioFlags) {
        let old = self.flags.load(Ordering::Relaxed);
        self.flags.store(old | f.bits(), Ordering::Release);
    }

    /// The first page-table mapping of a folio nobody else can see yet (Linux's
    /// `folio_add_new_anon_rmap()` sets `_mapcount` to 0 with `atomic_set`): a store, no
    /// locked read-modify-write. Debug builds check that it was unmapped.
    pub fn set_first_mapping(&self) {
        debug_assert_eq!(
            self.mapcount.load(Ordering::Relaxed),
            -1,
            "the first mapping of a folio that is already mapped"
        );
        self.mapcount.store(0, Ordering::Release);
    }

    /// Atomically clear `f`.
    pub fn clear(&self, f: FolioFlags) {
        self.flags.fetch_and(!f.bits(), Ordering::AcqRel);
    }

    /// Clear `f` on a folio only the caller can change (Linux's `__folio_clear_*()`, and
    /// `__ClearPageBuddy()` on a free block under `zone->lock`): a load and a store, no
    /// locked read-modify-write. As with [`Folio::set_unshared`], a concurrent update of
    /// the flags would be lost.
    pub fn clear_unshared(&self, f: FolioFlags) {
        let old = self.flags.load(Ordering::Relaxed);
        self.flags.store(old & !f.bits(), Ordering::Release);
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
    pub fn set_lru_gen(&self, r#gen: Option<usize>) {
        let v = r#gen.map_or(0, |g| (g as u32 + 1) << LRU_GEN_PGOFF);
        self.update_bits(LRU_GEN_MASK, v);
    }

    /// Record the generation (or none) and set or clear `ACTIVE`, in one atomic update, as
    /// `lru_gen_add_folio` and `lru_gen_del_folio` do with one `set_mask_bits()`. Callers
    /// hold lru_lock.
    pub fn set_lru_gen_active(&self, r#gen: Option<usize>, active: bool) {
        let v = r#gen.map_or(0, |g| (g as u32 + 1) << LRU_GEN_PGOFF);
        let a = if active { FolioFlags::ACTIVE.bits() } else { 0 };
        self.update_bits(LRU_GEN_MASK | FolioFlags::ACTIVE.bits(), v | a);
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

    /// `folio_mark_accessed` under MGLRU (`lru_gen_inc_refs`, Linux 6.14 and later): a
    /// folio not on an LRU list (still in a per-CPU batch, or isolated) or unevictable is
    /// not counted; the first access sets `REFERENCED` and clears the refs bits (they are
    /// only valid with `REFERENCED` set: what `lru_gen_refault` restored from the shadow does
    /// not survive it), later ones count up in the refs bits, and once they are full the
    /// next sets `WORKINGSET`.
    pub fn mark_accessed(&self) {
        let _ = self
            .flags
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                if old & FolioFlags::LRU.bits() == 0 || old & FolioFlags::UNEVICTABLE.bits() != 0 {
                    return None;
                }
                if old & FolioFlags::REFERENCED.bits() == 0 {
                    return Some((old & !LRU_REFS_MASK) | FolioFlags::REFERENCED.bits());
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

    /// Accesses counted so far (`folio_lru_refs()`): 0 without `REFERENCED`, otherwise
    /// the refs bits plus one for `REFERENCED` (0..=4).
    #[must_use]
    pub fn lru_refs_total(&self) -> u32 {
        if self.test(FolioFlags::REFERENCED) {
            self.lru_refs() + 1
        } else {
            0
        }
    }

    /// Take a reference (`folio_get`).
    pub fn get(&self) {
        self.refcount.fetch_add(1, Ordering::AcqRel);
    }

    /// Take a reference unless the count is zero (`folio_try_get`): how a lockless
    /// page-cache lookup pins a folio that may be freed under it.
    #[must_use]
    pub fn try_get(&self) -> bool {
        self.refcount
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                (r != 0).then(|| r + 1)
            })
            .is_ok()
    }

    /// Freeze the count at zero if it is exactly `expected` (`folio_ref_freeze`): reclaim
    /// proves nobody else holds the folio before it removes it from the page cache. A
    /// frozen folio refuses [`Folio::try_get`].
    #[must_use]
    pub fn ref_freeze(&self, expected: u32) -> bool {
        self.refcount
            .compare_exchange(expected, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Undo a [`Folio::ref_freeze`] (`folio_ref_unfreeze`).
    pub fn ref_unfreeze(&self, count: u32) {
        self.refcount.store(count, Ordering::Release);
    }

    /// Drop a reference (`folio_put`); returns true when it was the last one.
    /// A put without a matching get is reported, not wrapped.
    pub fn put(&self) -> Result<bool, FolioError> {
        self.refcount
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            .map(|old| old == 1)
            .map_err(|_| FolioError::RefcountUnderflow)
    }

    /// The reference count.
    #[must_use]
    pub fn refcount(&self) -> u32 {
        self.refcount.load(Ordering::Acquire)
    }

    /// Reset LRU and mapping state when the frame is freed (`free_pages_prepare` clears
    /// these). Fails if the folio is still on an LRU list.
    pub fn reset_lru_state(&self) -> Result<(), FolioError> {
        if self.test_lru() {
            return Err(FolioError::AlreadyOnLru);
        }
        self.flags.store(0, Ordering::Release);
        self.memcg_id.store(0, Ordering::Release);
        self.mapping.store(0, Ordering::Release);
        self.index.store(0, Ordering::Release);
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
    fn unshared_updates_keep_the_other_flags_and_map_once() {
        let f = folio();
        f.set(FolioFlags::ACTIVE);
        f.set_unshared(FolioFlags::SWAPBACKED);
        assert!(f.test(FolioFlags::ACTIVE) && f.test(FolioFlags::SWAPBACKED));
        assert!(!f.is_file_lru());
        f.clear_unshared(FolioFlags::ACTIVE);
        assert!(!f.test(FolioFlags::ACTIVE) && f.test(FolioFlags::SWAPBACKED));
        assert_eq!(f.mapcount(), 0);
        f.set_first_mapping();
        assert_eq!(f.mapcount(), 1);
        assert_eq!(f.dec_mapcount(), Ok(true));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "already mapped")]
    fn a_first_mapping_of_a_mapped_folio_is_caught_in_debug_builds() {
        let f = folio();
        f.set_first_mapping();
        f.set_first_mapping();
    }

    #[test]
    fn new_validates_node() {
        assert_eq!(
            Folio::new(0, MAX_NUMNODES, Zone::Dma).unwrap_err(),
            FolioError::InvalidNode(MAX_NUMNODES)
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
        f.set_lru_gen_active(Some(1), false);
        assert_eq!((f.lru_gen(), f.flags()), (Some(1), FolioFlags::SWAPBACKED));
        f.set_lru_gen_active(None, true);
        assert_eq!(f.lru_gen(), None);
        assert_eq!(f.flags(), FolioFlags::ACTIVE | FolioFlags::SWAPBACKED);
        assert_eq!(f.lru_refs(), 2);
        f.set_lru_refs(99);
        assert_eq!(f.lru_refs(), 3);
    }

    #[test]
    fn mark_accessed_climbs_tiers() {
        let f = folio();
        // Not on an LRU list (a per-CPU batch holds it): not counted.
        f.mark_accessed();
        assert_eq!(f.flags(), FolioFlags::empty());
        f.set(FolioFlags::LRU);
        f.mark_accessed();
        assert!(f.test(FolioFlags::REFERENCED));
        assert_eq!(f.lru_refs_total(), 1);
        for _ in 0..3 {
            f.mark_accessed();
        }
        assert_eq!(f.lru_refs_total(), 4);
        assert!(!f.test(FolioFlags::WORKINGSET));
        f.mark_accessed();
        assert!(f.test(FolioFlags::WORKINGSET));
        f.mark_accessed();
        assert_eq!(f.lru_refs_total(), 4);
    }

    #[test]
    fn mark_accessed_drops_refs_without_referenced() {
        // lru_gen_refault restores the shadow's refs without REFERENCED: they count for
        // nothing (folio_lru_refs is 0), and the first access starts over at one.
        let f = folio();
        f.set(FolioFlags::LRU);
        f.set_lru_refs(2);
        assert_eq!(f.lru_refs_total(), 0);
        f.mark_accessed();
        assert_eq!(f.lru_refs(), 0);
        assert_eq!(f.lru_refs_total(), 1);
        // Unevictable folios are not counted either.
        let u = folio();
        u.set(FolioFlags::LRU | FolioFlags::UNEVICTABLE);
        u.mark_accessed();
        assert!(!u.test(FolioFlags::REFERENCED));
    }

    #[test]
    fn refcount_and_charge() {
        let f = folio();
        assert_eq!(f.put(), Err(FolioError::RefcountUnderflow));
        f.get();
        f.get();
        assert_eq!(f.put(), Ok(false));
        assert_eq!(f.put(), Ok(true));
        f.set_memcg_id(5).unwrap();
        assert_eq!(f.memcg_id(), 5);
        f.set(FolioFlags::LRU);
        assert_eq!(f.set_memcg_id(6), Err(FolioError::AlreadyOnLru));
        assert_eq!(f.reset_lru_state(), Err(FolioError::AlreadyOnLru));
        assert!(f.test_clear_lru());
        f.reset_lru_state().unwrap();
        assert_eq!((f.memcg_id(), f.flags()), (0, FolioFlags::empty()));
    }

    #[test]
    fn identity_packs_pfn_zone_node() {
        let f = Folio::new(MAX_PFN, MAX_NUMNODES - 1, Zone::Movable).unwrap();
        assert_eq!((f.pfn(), f.node(), f.zone()), (MAX_PFN, 63, Zone::Movable));
        let g = Folio::new(0, 0, Zone::Dma).unwrap();
        assert_eq!((g.pfn(), g.node(), g.zone()), (0, 0, Zone::Dma));
        assert_eq!(
            Folio::new(MAX_PFN + 1, 0, Zone::Dma).unwrap_err(),
            FolioError::InvalidPfn(MAX_PFN + 1)
        );
    }

    /// Equal zone ids exactly for one node and one zone, whatever the frames.
    #[test]
    fn zone_id_is_the_node_and_the_zone() {
        let zones = [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable];
        let mut seen = std::collections::HashMap::new();
        for node in [0, 1, MAX_NUMNODES - 1] {
            for zone in zones {
                for pfn in [0, 1, MAX_PFN] {
                    let id = Folio::new(pfn, node, zone).unwrap().zone_id();
                    assert_eq!(*seen.entry((node, zone as u8)).or_insert(id), id);
                }
            }
        }
        let mut ids: Vec<u32> = seen.values().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), seen.len(), "one id per node and zone");
    }

    #[test]
    fn mapcount_starts_unmapped() {
        let f = folio();
        assert_eq!(f.mapcount(), 0);
        assert_eq!(f.dec_mapcount(), Err(FolioError::MapcountUnderflow));
        assert!(f.inc_mapcount());
        assert!(!f.inc_mapcount());
        assert_eq!(f.mapcount(), 2);
        assert_eq!(f.dec_mapcount(), Ok(false));
        assert_eq!(f.dec_mapcount(), Ok(true));
        assert_eq!(f.mapcount(), 0);
    }

    #[test]
    fn try_get_and_freeze() {
        let f = folio();
        assert!(!f.try_get(), "a free folio cannot be pinned");
        f.get();
        assert!(f.try_get());
        assert!(!f.ref_freeze(1));
        assert!(f.ref_freeze(2));
        assert!(!f.try_get(), "a frozen folio cannot be pinned");
        f.ref_unfreeze(1);
        assert_eq!(f.refcount(), 1);
        f.set_mapping(9, 77);
        assert_eq!((f.mapping(), f.index()), (9, 77));
        f.set_private(10);
        assert_eq!(f.private(), 10);
        f.reset_lru_state().unwrap();
        assert_eq!((f.mapping(), f.index()), (0, 0));
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
        crate::layout_field!(Folio, "lru", owner),
        crate::layout_field!(Folio, "lru", lru),
        crate::layout_field!(Folio, "mapping", mapping),
        crate::layout_field!(Folio, "mapping", index),
        crate::layout_field!(Folio, "private", private),
        crate::layout_field!(Folio, "refs", mapcount),
        crate::layout_field!(Folio, "refs", refcount),
        crate::layout_field!(Folio, "memcg", memcg_id),
        crate::layout_field!(Folio, "lru", slot),
        crate::layout_field!(Folio, "identity", "pfn/zone/node" => pfn_zone_node),
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
