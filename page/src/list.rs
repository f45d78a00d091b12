//! The intrusive folio list (`struct list_head` of folios) and the `folio->lru` link.
//!
//! Models the `lruvec->lists[]` / `lrugen->folios[][][]` list heads of Linux, and the buddy
//! and per-CPU free lists that reuse the same link: a doubly linked list threaded through
//! `folio->lru`, built on intrusive-collections. Head = most recently added (`list_add`),
//! tail = next to evict (`lru_to_folio`).
//!
//! The link ([`FolioLink`]) is two pointers, each an atomic word read and written with
//! relaxed loads and stores (plain moves on x86), so no interleaving of two threads on one
//! folio is a data race. What keeps a folio on one list at a time is the "linked" marker
//! (`next` = 1 while on no list), which a list claims when it inserts the folio. Two kinds
//! of list claim it differently:
//!
//! - [`FolioList`], the lists that live under a lock (an lruvec's `lru_lock`, `zone->lock`,
//!   `pcp->lock`): the claim is a load and a store, as Linux's `list_add` is plain stores.
//!   Who may insert a folio is settled before the lock is taken (the caller allocated the
//!   folio, isolated it with `folio_test_clear_lru`, or freed it with its last reference),
//!   so no two threads ever insert one folio at once; [`folio_list`] is `unsafe` and its
//!   creator promises exactly that for every insertion into the list. Debug builds claim
//!   with a compare-exchange anyway, so a broken promise panics there instead of
//!   corrupting two lists.
//! - [`CheckedFolioList`], a list one owner keeps for itself (tests holding frames, local
//!   collections): the claim is a compare-exchange in every build, so inserting a folio
//!   that another thread is inserting elsewhere is refused (a panic), never a corruption.
//!
//! Both kinds share the link, so a folio moves freely between them: the marker is the
//! same.
//!
//! Unsafe code here, and why: it is the intrusive doubly linked list of folios (Linux's
//! `list_head` on `folio->lru`): links are raw pointers inside the folios, and a list may
//! use a link only while it holds it exclusively (`acquire_link`).
#![allow(unsafe_code)]

use crate::folio::Folio;
pub use crate::link::FolioLink;
use crate::link::UNLINKED;
use core::ptr::{NonNull, null_mut};
use core::sync::atomic::Ordering;
use intrusive_collections::linked_list::LinkedListOps;
use intrusive_collections::{Adapter, DefaultPointerOps, LinkOps, LinkedList};

/// Link operations of [`FolioList`]: the claim is a load and a store in release builds.
/// Constructed only through [`folio_list`], whose caller promises the claims never race.
pub struct LockedLinkOps(());

/// Link operations of [`CheckedFolioList`]: the claim is a compare-exchange.
#[derive(Clone, Copy, Default)]
pub struct CheckedLinkOps;

// SAFETY: `acquire_link` grants a list exclusive use of the link until `release_link`:
// in debug builds by the compare-exchange; in release builds because every list built on
// these ops was created by `folio_list`, whose caller promises that no two threads insert
// one folio at once, so the load that sees the marker and the store that claims it are
// not interleaved with another claim of the same link. `release_link` never panics.
unsafe impl LinkOps for LockedLinkOps {
    type LinkPtr = NonNull<FolioLink>;

    unsafe fn acquire_link(&mut self, ptr: Self::LinkPtr) -> bool {
        // SAFETY: the list hands in a pointer to the `lru` field of a live `&'static Folio`.
        let link = unsafe { ptr.as_ref() };
        if cfg!(debug_assertions) {
            return link.claim_atomic();
        }
        if link.is_linked() {
            return false;
        }
        link.next.store(null_mut(), Ordering::Relaxed);
        true
    }

    unsafe fn release_link(&mut self, ptr: Self::LinkPtr) {
        // SAFETY: as in `acquire_link`.
        unsafe { ptr.as_ref() }
            .next
            .store(UNLINKED, Ordering::Release);
    }
}

// SAFETY: `acquire_link` succeeds for exactly one of any number of racing claims (the
// compare-exchange), so the list that wins has the link to itself until `release_link`,
// which never panics.
unsafe impl LinkOps for CheckedLinkOps {
    type LinkPtr = NonNull<FolioLink>;

    unsafe fn acquire_link(&mut self, ptr: Self::LinkPtr) -> bool {
        // SAFETY: the list hands in a pointer to the `lru` field of a live `&'static Folio`.
        unsafe { ptr.as_ref() }.claim_atomic()
    }

    unsafe fn release_link(&mut self, ptr: Self::LinkPtr) {
        // SAFETY: as in `acquire_link`.
        unsafe { ptr.as_ref() }
            .next
            .store(UNLINKED, Ordering::Release);
    }
}

/// The pointer moves of both kinds of list: relaxed atomic loads and stores, none panics.
macro_rules! folio_link_list_ops {
    ($ops:ty) => {
        // SAFETY: each method reads or writes one atomic word of a live link and never
        // panics; the list calls them only on links it has claimed.
        unsafe impl LinkedListOps for $ops {
            unsafe fn next(&self, ptr: Self::LinkPtr) -> Option<Self::LinkPtr> {
                // SAFETY: `ptr` is the link of a live `&'static Folio` on this list.
                unsafe { ptr.as_ref() }.next()
            }

            unsafe fn prev(&self, ptr: Self::LinkPtr) -> Option<Self::LinkPtr> {
                // SAFETY: as in `next`.
                unsafe { ptr.as_ref() }.prev()
            }

            unsafe fn set_next(&mut self, ptr: Self::LinkPtr, next: Option<Self::LinkPtr>) {
                // SAFETY: as in `next`.
                unsafe { ptr.as_ref() }.set_next(next);
            }

            unsafe fn set_prev(&mut self, ptr: Self::LinkPtr, prev: Option<Self::LinkPtr>) {
                // SAFETY: as in `next`.
                unsafe { ptr.as_ref() }.set_prev(prev);
            }
        }
    };
}
folio_link_list_ops!(LockedLinkOps);
folio_link_list_ops!(CheckedLinkOps);

/// The adapter that threads `&'static Folio` through `Folio::lru` with the link
/// operations `Ops`.
pub struct FolioAdapterOf<Ops> {
    link_ops: Ops,
    pointer_ops: DefaultPointerOps<&'static Folio>,
}

/// Adapter of [`FolioList`].
pub type FolioAdapter = FolioAdapterOf<LockedLinkOps>;
/// Adapter of [`CheckedFolioList`].
pub type CheckedFolioAdapter = FolioAdapterOf<CheckedLinkOps>;

impl CheckedFolioAdapter {
    /// The adapter (lists of it claim links with a compare-exchange).
    #[must_use]
    pub const fn new() -> Self {
        FolioAdapterOf {
            link_ops: CheckedLinkOps,
            pointer_ops: DefaultPointerOps::new(),
        }
    }
}

impl Default for CheckedFolioAdapter {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: `get_link` and `get_value` are inverse offset computations between a `Folio`
// and its `lru` field (`offset_of!`), and the pointer ops are the default ones for
// `&'static Folio`, whose referents never move or die.
unsafe impl<Ops: LinkOps<LinkPtr = NonNull<FolioLink>>> Adapter for FolioAdapterOf<Ops> {
    type LinkOps = Ops;
    type PointerOps = DefaultPointerOps<&'static Folio>;

    unsafe fn get_value(&self, link: NonNull<FolioLink>) -> *const Folio {
        // SAFETY: every link handed to a folio list is the `lru` field of a `Folio`, so
        // stepping back by its offset stays inside that folio.
        unsafe {
            link.as_ptr()
                .cast::<u8>()
                .sub(core::mem::offset_of!(Folio, lru))
                .cast::<Folio>()
        }
    }

    unsafe fn get_link(&self, value: *const Folio) -> NonNull<FolioLink> {
        // SAFETY: `value` points to a live folio (the list's element), so the address of
        // its `lru` field is in bounds and not null.
        unsafe { NonNull::new_unchecked(core::ptr::addr_of!((*value).lru).cast_mut()) }
    }

    fn link_ops(&self) -> &Ops {
        &self.link_ops
    }

    fn link_ops_mut(&mut self) -> &mut Ops {
        &mut self.link_ops
    }

    fn pointer_ops(&self) -> &DefaultPointerOps<&'static Folio> {
        &self.pointer_ops
    }
}

/// A list of folios under a lock, 16 bytes like `struct list_head`.
pub type FolioList = LinkedList<FolioAdapter>;

/// A list of folios one owner keeps, whose inserts are checked atomically.
pub type CheckedFolioList = LinkedList<CheckedFolioAdapter>;

/// A new empty folio list under a lock (`LIST_HEAD_INIT`).
///
/// # Safety
///
/// No two threads may ever insert one folio at the same time into this list and another
/// list (or this list twice): each insertion of a folio must be ordered after the removal
/// from its previous list, as it is when the inserting thread owns the folio (it allocated
/// it, isolated it from the LRU with `folio_test_clear_lru`, or dropped its last reference
/// to free it) or holds the lock under which the folio last moved. A race between two
/// inserts would link the folio into both lists.
#[must_use]
pub unsafe fn folio_list() -> FolioList {
    LinkedList::new(FolioAdapterOf {
        link_ops: LockedLinkOps(()),
        pointer_ops: DefaultPointerOps::new(),
    })
}

/// A new empty checked folio list.
#[must_use]
pub fn checked_folio_list() -> CheckedFolioList {
    LinkedList::new(CheckedFolioAdapter::new())
}

/// Whether `folio` is on some list (a buddy list, a per-CPU list, an LRU).
#[must_use]
pub fn is_linked(folio: &Folio) -> bool {
    folio.lru.is_linked()
}

const _: () = assert!(core::mem::size_of::<FolioList>() == 16);
const _: () = assert!(core::mem::size_of::<FolioLink>() == 16);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folio::Zone;

    fn folios(n: u64) -> &'static [Folio] {
        let v: alloc::vec::Vec<Folio> = (0..n)
            .map(|pfn| Folio::new(pfn, 0, Zone::Normal).unwrap())
            .collect();
        alloc::boxed::Box::leak(v.into_boxed_slice())
    }

    #[test]
    fn locked_list_links_in_list_add_order_and_marks_the_link() {
        let f = folios(3);
        // SAFETY: one thread inserts each folio once.
        let mut list = unsafe { folio_list() };
        for folio in f {
            assert!(!is_linked(folio));
            list.push_front(folio);
            assert!(is_linked(folio));
        }
        let pfns: alloc::vec::Vec<u64> = list.iter().map(Folio::pfn).collect();
        assert_eq!(pfns, [2, 1, 0], "head = most recently added");
        assert_eq!(list.pop_back().map(Folio::pfn), Some(0), "tail = oldest");
        assert!(!is_linked(&f[0]));
        list.push_back(&f[0]);
        assert_eq!(list.back().get().map(Folio::pfn), Some(0));
        while list.pop_front().is_some() {}
        assert!(f.iter().all(|folio| !is_linked(folio)));
    }

    #[test]
    fn a_folio_moves_between_a_locked_and_a_checked_list() {
        let f = folios(1);
        // SAFETY: one thread inserts the folio, once per list, after removing it.
        let mut locked = unsafe { folio_list() };
        let mut checked = checked_folio_list();
        locked.push_back(&f[0]);
        let folio = locked.pop_front().unwrap();
        checked.push_back(folio);
        assert!(is_linked(folio));
        assert!(checked.pop_front().is_some());
        locked.push_back(folio);
        assert_eq!(locked.front().get().map(Folio::pfn), Some(0));
    }

    #[test]
    #[should_panic(expected = "already linked")]
    fn a_checked_list_refuses_a_folio_on_another_list() {
        let f = folios(1);
        // SAFETY: one thread inserts the folio into this list once.
        let mut locked = unsafe { folio_list() };
        locked.push_back(&f[0]);
        checked_folio_list().push_back(&f[0]);
    }

    #[test]
    fn a_checked_insert_has_one_winner_among_racing_threads() {
        let f = folios(1);
        let wins = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let mut list = checked_folio_list();
                    let won = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        list.push_back(&f[0]);
                    }))
                    .is_ok();
                    if won {
                        wins.fetch_add(1, Ordering::Relaxed);
                        // Keep the folio linked: the losers must see the marker.
                        list.fast_clear();
                    }
                });
            }
        });
        assert_eq!(wins.load(Ordering::Relaxed), 1);
    }
}
