//! The buddy free lists of one zone: splitting and merging blocks of 2^order frames.
//!
//! Models `zone->free_area[]` and its operations in mm/page_alloc.c: `__free_one_page()`
//! (merge a freed block with its buddy as long as the buddy is free at the same order),
//! `__rmqueue_smallest()` (take the smallest free block of at least the wanted order) and
//! `expand()` (give back the upper halves of a block that was too large). Orders run from
//! 0 to [`MAX_ORDER`] (10: 4 MiB blocks), Linux's `MAX_PAGE_ORDER`.
//!
//! The buddy state lives in the memmap, as Linux's does: the first folio of a free block
//! has [`FolioFlags::BUDDY`] (`PageBuddy`) set and the block's order in `private`
//! (`set_buddy_order()`), and is linked through its `lru` link (`page->buddy_list`) on
//! `free_area[order]`. The other folios of the block carry nothing. The buddy of the block
//! at `pfn` of order `o` is at `pfn ^ (1 << o)` (`__find_buddy_pfn()`); it may be merged
//! when it is in the memmap, is `PageBuddy` with the same order, and lies in the same zone
//! (`page_is_buddy()`), which also keeps blocks from crossing a zone or node boundary.
//!
//! One list per order: there are no migrate types here (no compaction, no reclaim by
//! mobility), so Linux's `free_area[order].free_list[MIGRATE_*]` collapses into one.
//! Everything in this module runs under the zone's lock, which `&mut FreeArea` stands for.
//!
//! `PageBuddy` is set and cleared with a load and a store (Linux's non-atomic
//! `__SetPageBuddy`/`__ClearPageBuddy`), not a locked read-modify-write: a block's flags
//! change only while it is free (no references, no mapping, on no LRU) and only under this
//! lock, or on a block the freeing thread still owns alone before it takes the lock. The
//! invariant checker (`check.rs`) finds a flag lost by a stray concurrent writer.
//! `ZoneFree` is that lock with the lists and `NR_FREE_PAGES` (the part of `struct zone`
//! the per-CPU lists refill from and spill to), so [`crate::pcp`] needs the buddy layer
//! and not the zone above it.
//!
//! Unsafe code here, and why: the buddy free lists are intrusive `folio_list()`s, changed
//! only under `zone->lock`, and a free block is unlinked from its list by its folio's
//! address (`list_del`).
#![allow(unsafe_code)]

use crate::lock_classes::ZoneLock;
use crate::memmap::Memmap;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use ksync::SpinMutex;
use page::list::{FolioList, folio_list};
use page::{Folio, FolioFlags};

/// Largest order (`MAX_PAGE_ORDER`): blocks of 1024 frames.
pub const MAX_ORDER: u32 = 10;
/// Number of orders (`NR_PAGE_ORDERS`).
pub const NR_PAGE_ORDERS: usize = MAX_ORDER as usize + 1;

/// What `zone->lock` guards, plus the counter readers may load without it.
#[derive(Debug)]
pub(crate) struct ZoneFree {
    /// The buddy lists under `zone->lock`.
    pub(crate) area: SpinMutex<ZoneLock, FreeArea>,
    /// `NR_FREE_PAGES`: frames on the buddy lists (pages on per-CPU lists are not free,
    /// as in Linux). Written under `zone->lock`.
    pub(crate) nr_free: AtomicU64,
}

impl ZoneFree {
    /// Empty lists, nothing free.
    pub(crate) fn new() -> Self {
        ZoneFree {
            area: SpinMutex::new(FreeArea::new()),
            nr_free: AtomicU64::new(0),
        }
    }

    /// `NR_FREE_PAGES += n`; the caller holds `zone->lock`.
    pub(crate) fn add_free(&self, n: u64) {
        let c = &self.nr_free;
        c.store(c.load(Relaxed) + n, Relaxed);
    }

    /// `NR_FREE_PAGES -= n`; the caller holds `zone->lock`.
    pub(crate) fn sub_free(&self, n: u64) {
        let c = &self.nr_free;
        c.store(c.load(Relaxed) - n, Relaxed);
    }
}

/// One order's free list (`struct free_area`).
#[derive(Debug)]
pub struct FreeList {
    list: FolioList,
    nr_free: u64,
}

/// A zone's free lists (`zone->free_area[]`), owned by whoever holds `zone->lock`.
#[derive(Debug)]
pub struct FreeArea {
    orders: [FreeList; NR_PAGE_ORDERS],
}

impl Default for FreeArea {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `folio`'s `lru` link is on some list (a buddy list, a per-CPU list, an LRU).
#[must_use]
pub(crate) fn is_linked(folio: &Folio) -> bool {
    page::list::is_linked(folio)
}

impl FreeArea {
    /// Empty lists.
    #[must_use]
    pub fn new() -> Self {
        FreeArea {
            orders: core::array::from_fn(|_| FreeList {
                // SAFETY: the buddy lists change only under `zone->lock`; a block is put on
                // one only by the thread that freed or split it (or merged it with its
                // buddy) under that lock, so no two threads insert one block at once.
                list: unsafe { folio_list() },
                nr_free: 0,
            }),
        }
    }

    /// Free blocks of `order` (`free_area[order].nr_free`).
    #[must_use]
    pub fn nr_free(&self, order: u32) -> u64 {
        self.orders.get(order as usize).map_or(0, |l| l.nr_free)
    }

    /// Every free block as `(pfn, order)`, in list order, lowest order first.
    pub fn blocks(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.orders
            .iter()
            .enumerate()
            .flat_map(|(o, l)| l.list.iter().map(move |f| (f.pfn(), o as u32)))
    }

    /// Puts a block on its list (`add_to_free_list()` + `set_buddy_order()`).
    fn add(&mut self, folio: &'static Folio, order: u32) {
        folio.set_private(order);
        // `__SetPageBuddy`, a load and a store: see the module documentation.
        folio.set_unshared(FolioFlags::BUDDY);
        let l = &mut self.orders[order as usize];
        l.list.push_front(folio);
        l.nr_free += 1;
    }

    /// Takes a block that is `PageBuddy` at `order` in this zone off its list
    /// (`del_page_from_free_list()`).
    fn del(&mut self, folio: &'static Folio, order: u32) {
        let l = &mut self.orders[order as usize];
        // SAFETY: the caller checked that `folio` is PageBuddy with `order` and in this
        // zone; only `add`, under this zone's lock (our `&mut self`), sets BUDDY and links
        // the folio, and it links it on exactly this list, so the folio is on `l.list`.
        unsafe { l.list.remove(folio) };
        l.nr_free -= 1;
        folio.clear_unshared(FolioFlags::BUDDY);
        folio.set_private(0);
    }

    /// `page_is_buddy()`: may `buddy` merge with `folio`'s block of `order`?
    fn is_buddy(folio: &Folio, buddy: &Folio, order: u32) -> bool {
        buddy.test(FolioFlags::BUDDY)
            && buddy.private() == order
            && buddy.node() == folio.node()
            && buddy.zone() == folio.zone()
    }

    /// Frees a block of `order` starting at `folio` (`__free_one_page()`): while its buddy
    /// is free at the same order, take the buddy off its list and continue with the
    /// combined block one order up; then put the result on its list. The caller made sure
    /// the block is aligned, in this zone, and in use by nobody.
    pub fn free_one(&mut self, memmap: &Memmap, folio: &'static Folio, order: u32) {
        let mut pfn = folio.pfn();
        let mut head = folio;
        let mut order = order;
        while order < MAX_ORDER {
            let buddy_pfn = pfn ^ (1 << order);
            let Some(buddy) = memmap.pfn_to_folio(buddy_pfn) else {
                break;
            };
            if !Self::is_buddy(head, buddy, order) {
                break;
            }
            self.del(buddy, order);
            let combined = pfn & buddy_pfn;
            if combined != pfn {
                head = buddy;
                pfn = combined;
            }
            order += 1;
        }
        self.add(head, order);
    }

    /// Takes the smallest free block of at least `order`, splits it down to `order` and
    /// returns its first folio (`__rmqueue_smallest()`), or `None` when the zone has no
    /// block that large.
    pub fn rmqueue_smallest(&mut self, memmap: &Memmap, order: u32) -> Option<&'static Folio> {
        for current in order..=MAX_ORDER {
            let l = &mut self.orders[current as usize];
            let Some(folio) = l.list.pop_front() else {
                continue;
            };
            l.nr_free -= 1;
            folio.clear_unshared(FolioFlags::BUDDY);
            folio.set_private(0);
            self.expand(memmap, folio, order, current);
            return Some(folio);
        }
        None
    }

    /// Gives back the upper halves of a block of order `high` at `folio` until an order-`low`
    /// block remains (`expand()`).
    fn expand(&mut self, memmap: &Memmap, folio: &'static Folio, low: u32, high: u32) {
        let pfn = folio.pfn();
        // `while (high > low) { high--; ... }`, as a bounded loop.
        for high in (low..high).rev() {
            let upper = pfn + (1 << high);
            // The whole block is in the memmap: it was built from present frames only.
            if let Some(half) = memmap.pfn_to_folio(upper) {
                self.add(half, high);
            }
        }
    }
}
