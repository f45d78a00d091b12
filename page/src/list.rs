//! The intrusive folio list (`struct list_head` of folios) and the `folio->lru` link.
//!
//! Models the `lruvec->lists[]` / `lrugen->folios[][][]` list heads of Linux, and the buddy
//! and per-CPU free lists that reuse the same link: a doubly linked list threaded through
//! `folio->lru`. Head = most recently added (`list_add`), tail = next to evict
//! (`lru_to_folio`).
//!
//! # Why not a circular list
//!
//! Linux's `list_head` is circular: the head is an entry of its own list, so `list_add`
//! and `list_del` never branch. A Rust value moves, and a head that entries point to must
//! not, so the lists here are linear instead: the head keeps the first and the last link,
//! the first link's `prev` and the last link's `next` are null. `list_add` and `list_del`
//! then take one branch per end they may touch, and write the head exactly when Linux's
//! writes `head->next` or `head->prev` (the entry was first, last, or both): the LRU's
//! head-write events count the same lines either way. The operations are written out here
//! (a few moves each) rather than taken from a generic intrusive-list crate, whose
//! adapter, cursor and `Option` plumbing cost several times that on every fault and free.
//!
//! # Who may link a folio
//!
//! The link ([`FolioLink`]) is two pointers, each an atomic word read and written with
//! relaxed loads and stores (plain moves on x86), so no interleaving of two threads on one
//! folio is a data race. What keeps a folio on one list at a time is the "linked" marker
//! (`next` = 1 while on no list), which a list claims when it inserts the folio. Two kinds
//! of list claim it differently:
//!
//! - [`FolioList`], the lists that live under a lock (an lruvec's `lru_lock`, `zone->lock`,
//!   `pcp->lock`): the claim is a load, as Linux's `list_add` is plain stores. Who may
//!   insert a folio is settled before the lock is taken (the caller allocated the folio,
//!   isolated it with `folio_test_clear_lru`, or freed it with its last reference), so no
//!   two threads ever insert one folio at once; [`folio_list`] is `unsafe` and its creator
//!   promises exactly that for every insertion into the list. Debug builds claim with a
//!   compare-exchange anyway, so a broken promise panics there instead of corrupting two
//!   lists.
//! - [`CheckedFolioList`], a list one owner keeps for itself (tests holding frames, local
//!   collections): the claim is a compare-exchange in every build, so inserting a folio
//!   that another thread is inserting elsewhere is refused (a panic), never a corruption.
//!
//! Both kinds share the link, so a folio moves freely between them: the marker is the
//! same. A list dropped with folios on it unlinks them (their marker says "on no list"
//! again).
//!
//! Unsafe code here, and why: it is the intrusive doubly linked list of folios (Linux's
//! `list_head` on `folio->lru`): links are raw pointers inside the folios, followed from
//! one folio to the next, and a list changes a link only while the folio is on it.
#![allow(unsafe_code)]

use crate::folio::Folio;
pub use crate::link::FolioLink;
use crate::link::UNLINKED;
use core::marker::PhantomData;
use core::ptr::null_mut;
use core::sync::atomic::Ordering;

mod sealed {
    pub trait Sealed {}
}

/// How a kind of list claims a folio's "linked" marker on insertion.
pub trait LinkClaim: sealed::Sealed {
    /// Claims `link` for the list inserting it; false if it is on a list already (or
    /// another thread claimed it first).
    fn claim(link: &FolioLink) -> bool;
}

/// The claim of [`FolioList`]: a load in release builds, a compare-exchange in debug
/// builds. A list of this kind is created only by [`folio_list`], whose caller promises
/// the claims never race.
#[derive(Debug)]
pub struct LockedClaim;

/// The claim of [`CheckedFolioList`]: a compare-exchange.
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckedClaim;

impl sealed::Sealed for LockedClaim {}
impl sealed::Sealed for CheckedClaim {}

impl LinkClaim for LockedClaim {
    #[inline(always)]
    fn claim(link: &FolioLink) -> bool {
        if cfg!(debug_assertions) {
            return link.claim_atomic();
        }
        // The insertion's own store to `next` replaces the marker: no race is possible
        // (`folio_list`'s promise), so seeing it is all the claim needs.
        !link.is_linked()
    }
}

impl LinkClaim for CheckedClaim {
    #[inline(always)]
    fn claim(link: &FolioLink) -> bool {
        link.claim_atomic()
    }
}

/// A list of folios threaded through `folio->lru`, 16 bytes like `struct list_head`:
/// the first and the last link, null while empty.
pub struct FolioListOf<C: LinkClaim> {
    head: *mut FolioLink,
    tail: *mut FolioLink,
    claim: PhantomData<C>,
}

/// A list of folios under a lock.
pub type FolioList = FolioListOf<LockedClaim>;

/// A list of folios one owner keeps, whose inserts are checked atomically.
pub type CheckedFolioList = FolioListOf<CheckedClaim>;

// SAFETY: the list holds pointers to the links of `&'static Folio`s, which are `Sync`
// (their links are atomic words), so handing the list to another thread hands it only
// references that thread may hold too.
unsafe impl<C: LinkClaim> Send for FolioListOf<C> {}
// SAFETY: a shared list only reads its head and the links' atomic words (`iter`,
// `front`, `back`); every change takes `&mut self`.
unsafe impl<C: LinkClaim> Sync for FolioListOf<C> {}

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
pub const unsafe fn folio_list() -> FolioList {
    FolioListOf::empty()
}

/// A new empty checked folio list.
#[must_use]
pub const fn checked_folio_list() -> CheckedFolioList {
    FolioListOf::empty()
}

/// Whether `folio` is on some list (a buddy list, a per-CPU list, an LRU).
#[must_use]
pub fn is_linked(folio: &Folio) -> bool {
    folio.lru.is_linked()
}

/// The link of `folio` as the pointer lists store.
#[inline(always)]
fn link_of(folio: &'static Folio) -> *mut FolioLink {
    core::ptr::from_ref(&folio.lru).cast_mut()
}

/// The folio whose `lru` field `link` is.
///
/// # Safety
///
/// `link` is non-null and points to the `lru` field of a `&'static Folio`.
#[inline(always)]
unsafe fn folio_of(link: *mut FolioLink) -> &'static Folio {
    // SAFETY: stepping back by the field's offset stays inside the folio whose `lru` the
    // link is (the caller's promise), and that folio lives for `'static`.
    unsafe {
        &*link
            .cast::<u8>()
            .sub(core::mem::offset_of!(Folio, lru))
            .cast::<Folio>()
    }
}

impl<C: LinkClaim> FolioListOf<C> {
    const fn empty() -> Self {
        FolioListOf {
            head: null_mut(),
            tail: null_mut(),
            claim: PhantomData,
        }
    }

    /// Whether no folio is on the list (`list_empty`).
    #[inline(always)]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// The most recently added folio (`list_first_entry_or_null`).
    #[inline(always)]
    #[must_use]
    pub fn front(&self) -> Option<&'static Folio> {
        // SAFETY: a non-null head is the link of a folio on this list.
        (!self.head.is_null()).then(|| unsafe { folio_of(self.head) })
    }

    /// The folio next to evict (`lru_to_folio`, `list_last_entry`).
    #[inline(always)]
    #[must_use]
    pub fn back(&self) -> Option<&'static Folio> {
        // SAFETY: a non-null tail is the link of a folio on this list.
        (!self.tail.is_null()).then(|| unsafe { folio_of(self.tail) })
    }

    /// The folios from the most recently added to the next to evict.
    #[must_use]
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            next: self.head,
            list: PhantomData,
        }
    }

    #[inline(always)]
    fn claim(folio: &'static Folio) -> *mut FolioLink {
        assert!(
            C::claim(&folio.lru),
            "folio {} is already linked",
            folio.pfn()
        );
        link_of(folio)
    }

    /// Links `folio` at the head (`list_add`).
    ///
    /// # Panics
    ///
    /// If `folio` is on a list already.
    #[inline(always)]
    pub fn push_front(&mut self, folio: &'static Folio) {
        let link = Self::claim(folio);
        let first = self.head;
        // SAFETY: `link` is the claimed link of a live folio; a non-null `first` is the
        // link of the folio at this list's head.
        unsafe {
            (*link).prev.store(null_mut(), Ordering::Relaxed);
            (*link).next.store(first, Ordering::Relaxed);
            if first.is_null() {
                self.tail = link;
            } else {
                (*first).prev.store(link, Ordering::Relaxed);
            }
        }
        self.head = link;
    }

    /// Links `folio` at the tail (`list_add_tail`).
    ///
    /// # Panics
    ///
    /// If `folio` is on a list already.
    #[inline(always)]
    pub fn push_back(&mut self, folio: &'static Folio) {
        let link = Self::claim(folio);
        let last = self.tail;
        // SAFETY: as in `push_front`, with `last` the link at this list's tail.
        unsafe {
            (*link).next.store(null_mut(), Ordering::Relaxed);
            (*link).prev.store(last, Ordering::Relaxed);
            if last.is_null() {
                self.head = link;
            } else {
                (*last).next.store(link, Ordering::Relaxed);
            }
        }
        self.tail = link;
    }

    /// Unlinks and returns the head.
    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<&'static Folio> {
        let first = self.front()?;
        // SAFETY: `first` is on this list.
        unsafe { self.remove(first) };
        Some(first)
    }

    /// Unlinks and returns the tail.
    #[inline(always)]
    pub fn pop_back(&mut self) -> Option<&'static Folio> {
        let last = self.back()?;
        // SAFETY: `last` is on this list.
        unsafe { self.remove(last) };
        Some(last)
    }

    /// Unlinks `folio` (`list_del`) and marks it on no list; returns how many of the
    /// head's two pointers the removal wrote: the first when `folio` was the head, the
    /// last when it was the tail (Linux's `list_del` writes `head->next` and `head->prev`
    /// in the same cases).
    ///
    /// # Safety
    ///
    /// `folio` is on this list.
    #[inline(always)]
    pub unsafe fn remove(&mut self, folio: &'static Folio) -> u8 {
        let link = link_of(folio);
        // SAFETY: `folio` is on this list (the caller's promise), so its neighbours, where
        // not null, are links of folios on this list too.
        unsafe {
            let next = (*link).next.load(Ordering::Relaxed);
            let prev = (*link).prev.load(Ordering::Relaxed);
            debug_assert!(next != UNLINKED, "folio {} is on no list", folio.pfn());
            let mut head_writes = 0;
            if prev.is_null() {
                debug_assert!(
                    self.head == link,
                    "folio {} is on another list",
                    folio.pfn()
                );
                self.head = next;
                head_writes += 1;
            } else {
                (*prev).next.store(next, Ordering::Relaxed);
            }
            if next.is_null() {
                debug_assert!(
                    self.tail == link,
                    "folio {} is on another list",
                    folio.pfn()
                );
                self.tail = prev;
                head_writes += 1;
            } else {
                (*next).prev.store(prev, Ordering::Relaxed);
            }
            (*link).next.store(UNLINKED, Ordering::Release);
            head_writes
        }
    }
}

impl<C: LinkClaim> Drop for FolioListOf<C> {
    /// Unlinks every folio still on the list, so each is free to join another.
    fn drop(&mut self) {
        while self.pop_front().is_some() {}
    }
}

impl<C: LinkClaim> core::fmt::Debug for FolioListOf<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter().map(Folio::pfn)).finish()
    }
}

/// The folios of a list from head to tail ([`FolioListOf::iter`]).
pub struct Iter<'a> {
    next: *mut FolioLink,
    list: PhantomData<&'a ()>,
}

impl Iterator for Iter<'_> {
    type Item = &'static Folio;

    #[inline]
    fn next(&mut self) -> Option<&'static Folio> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: the list is borrowed for the iterator's lifetime, so it does not change,
        // and every non-null link reached from its head is a link of a folio on it.
        let folio = unsafe { folio_of(self.next) };
        self.next = folio.lru.next.load(Ordering::Relaxed);
        Some(folio)
    }
}

const _: () = assert!(core::mem::size_of::<FolioList>() == 16);
const _: () = assert!(core::mem::size_of::<FolioLink>() == 16);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folio::Zone;
    use alloc::collections::VecDeque;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn folios(n: u64) -> &'static [Folio] {
        let v: Vec<Folio> = (0..n)
            .map(|pfn| Folio::new(pfn, 0, Zone::Normal).unwrap())
            .collect();
        alloc::boxed::Box::leak(v.into_boxed_slice())
    }

    fn pfns<C: LinkClaim>(list: &FolioListOf<C>) -> Vec<u64> {
        list.iter().map(Folio::pfn).collect()
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
        assert_eq!(pfns(&list), [2, 1, 0], "head = most recently added");
        assert_eq!(list.pop_back().map(Folio::pfn), Some(0), "tail = oldest");
        assert!(!is_linked(&f[0]));
        list.push_back(&f[0]);
        assert_eq!(list.back().map(Folio::pfn), Some(0));
        while list.pop_front().is_some() {}
        assert!(f.iter().all(|folio| !is_linked(folio)));
        assert!(list.is_empty() && list.front().is_none() && list.back().is_none());
    }

    #[test]
    fn removal_reports_the_head_pointers_it_wrote() {
        let f = folios(3);
        // SAFETY: one thread inserts each folio once.
        let mut list = unsafe { folio_list() };
        for folio in f {
            list.push_back(folio);
        }
        // SAFETY: each removed folio is on the list.
        unsafe {
            assert_eq!(
                list.remove(&f[1]),
                0,
                "a middle entry leaves the head alone"
            );
            assert_eq!(list.remove(&f[0]), 1, "the first entry moves head->next");
            assert_eq!(list.remove(&f[2]), 2, "the only entry empties both");
        }
        assert!(list.is_empty());
    }

    #[test]
    fn a_dropped_list_unlinks_its_folios() {
        let f = folios(2);
        {
            let mut list = checked_folio_list();
            list.push_back(&f[0]);
            list.push_back(&f[1]);
        }
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
        assert_eq!(locked.front().map(Folio::pfn), Some(0));
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
                        core::mem::forget(list);
                    }
                });
            }
        });
        assert_eq!(wins.load(Ordering::Relaxed), 1);
    }

    /// One step of the model test: `usize` picks a folio (modulo the pool).
    #[derive(Clone, Debug)]
    enum Op {
        PushFront(usize),
        PushBack(usize),
        PopFront,
        PopBack,
        Remove(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..16usize).prop_map(Op::PushFront),
            (0..16usize).prop_map(Op::PushBack),
            Just(Op::PopFront),
            Just(Op::PopBack),
            (0..16usize).prop_map(Op::Remove),
        ]
    }

    proptest! {
        /// Any sequence of list operations keeps the list equal to a deque model: the
        /// order head to tail, both ends, the linked marker of every folio, and the head
        /// writes each removal reports.
        #[test]
        fn the_list_behaves_as_a_deque(ops in proptest::collection::vec(op(), 0..200)) {
            let f = folios(16);
            // SAFETY: one thread inserts each folio only while it is on no list.
            let mut list = unsafe { folio_list() };
            let mut model: VecDeque<u64> = VecDeque::new();
            for op in ops {
                match op {
                    Op::PushFront(i) | Op::PushBack(i) if model.contains(&(i as u64)) => {}
                    Op::PushFront(i) => {
                        list.push_front(&f[i]);
                        model.push_front(i as u64);
                    }
                    Op::PushBack(i) => {
                        list.push_back(&f[i]);
                        model.push_back(i as u64);
                    }
                    Op::PopFront => {
                        prop_assert_eq!(list.pop_front().map(Folio::pfn), model.pop_front());
                    }
                    Op::PopBack => {
                        prop_assert_eq!(list.pop_back().map(Folio::pfn), model.pop_back());
                    }
                    Op::Remove(i) => {
                        let Some(at) = model.iter().position(|&p| p == i as u64) else {
                            continue;
                        };
                        let want = u8::from(at == 0) + u8::from(at == model.len() - 1);
                        model.remove(at);
                        // SAFETY: the model says the folio is on the list.
                        prop_assert_eq!(unsafe { list.remove(&f[i]) }, want);
                    }
                }
                prop_assert_eq!(pfns(&list), Vec::from(model.clone()));
                prop_assert_eq!(list.front().map(Folio::pfn), model.front().copied());
                prop_assert_eq!(list.back().map(Folio::pfn), model.back().copied());
                for (pfn, folio) in f.iter().enumerate() {
                    prop_assert_eq!(is_linked(folio), model.contains(&(pfn as u64)));
                }
            }
        }
    }
}
