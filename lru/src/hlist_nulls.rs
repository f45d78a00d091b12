//! hlist_nulls: singly linked lists whose end marker ("nulls") names the list.
//!
//! Models include/linux/list_nulls.h and rculist_nulls.h. A list ends not in NULL but in
//! an odd value `(nulls << 1) | 1`, so a lockless reader that was carried onto another
//! list by a concurrent move (the memcg FIFO rotates nodes between bins and generations)
//! notices it ended on the wrong list and restarts. Deletion keeps `next` intact
//! (`hlist_nulls_del_init_rcu`) so a reader standing on the deleted node can walk on.
//!
//! Writers hold the list's lock; readers hold only an RCU read-side section. This is one
//! of the crate's unsafe modules: links are raw addresses and the functions that follow
//! them are `unsafe`, with the lifetime contract stated on each.
//!
//! Unsafe code here, and why: it is Linux's `hlist_nulls`, a list of raw links that readers
//! walk under RCU while writers change it: nodes are reached through raw pointers whose
//! lifetime the caller's grace periods guarantee.
#![allow(unsafe_code)]

use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use core::ptr;

/// Encode a nulls value as an end marker (`NULLS_MARKER`).
#[must_use]
pub const fn make_nulls(value: usize) -> usize {
    (value << 1) | 1
}

/// Whether a link is an end marker rather than a node address (`is_a_nulls`).
#[must_use]
pub const fn is_a_nulls(link: usize) -> bool {
    link & 1 == 1
}

/// The value carried by an end marker (`get_nulls_value`).
#[must_use]
pub const fn get_nulls_value(link: usize) -> usize {
    link >> 1
}

/// A list head (`struct hlist_nulls_head`): one word.
#[derive(Debug)]
#[repr(C)]
pub struct HlistNullsHead {
    first: AtomicUsize,
}

/// A list node (`struct hlist_nulls_node`): `next` then `pprev`, two words.
///
/// `next` is at offset 0, so a `pprev` that points at a node's `next` is also a pointer
/// to that node (the container_of seed 002 uses to find the new tail).
#[derive(Debug)]
#[repr(C)]
pub struct HlistNullsNode {
    next: AtomicUsize,
    pprev: AtomicPtr<AtomicUsize>,
}

const _: () = assert!(core::mem::offset_of!(HlistNullsNode, next) == 0);
const _: () = assert!(core::mem::align_of::<HlistNullsNode>() >= 2);

impl HlistNullsHead {
    /// An empty list whose end marker carries `nulls` (`INIT_HLIST_NULLS_HEAD`).
    pub fn new(nulls: usize) -> Self {
        HlistNullsHead {
            first: AtomicUsize::new(make_nulls(nulls)),
        }
    }

    /// Whether the list is empty (`hlist_nulls_empty`), as a racy snapshot.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        is_a_nulls(self.first.load(Ordering::Acquire))
    }

    /// The nulls value this list ends with, read from the end of the list.
    ///
    /// Only meaningful while the list is stable (lock held or no writers).
    #[must_use]
    pub fn first_link(&self) -> usize {
        self.first.load(Ordering::Acquire)
    }

    fn first_slot(&self) -> *mut AtomicUsize {
        ptr::from_ref(&self.first).cast_mut()
    }

    /// Walk the list locklessly (`hlist_nulls_for_each_entry_rcu`).
    ///
    /// The cursor yields nodes and, once exhausted, reports the nulls value the walk
    /// ended on through [`HlistNullsCursor::end_nulls`]; a reader compares it with the
    /// head's own value and restarts on a mismatch.
    ///
    /// # Safety
    ///
    /// Every node that is or ever becomes linked into this list (or into any list a node
    /// of it moves to while the cursor lives) must stay valid for `'a`: in the kernel,
    /// the caller is inside an RCU read-side section and nodes are freed only after a
    /// grace period.
    pub unsafe fn iter_rcu<'a>(&'a self) -> HlistNullsCursor<'a> {
        HlistNullsCursor {
            link: self.first.load(Ordering::Acquire),
            _head: core::marker::PhantomData,
        }
    }
}

impl Default for HlistNullsNode {
    fn default() -> Self {
        Self::new()
    }
}

impl HlistNullsNode {
    /// An unhashed node.
    pub fn new() -> Self {
        HlistNullsNode {
            next: AtomicUsize::new(make_nulls(0)),
            pprev: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Whether the node is on no list (`hlist_nulls_unhashed`). Writers only.
    #[must_use]
    pub fn is_unhashed(&self) -> bool {
        self.pprev.load(Ordering::Relaxed).is_null()
    }

    /// The raw `next` link (a node address or an end marker).
    #[must_use]
    pub fn next_link(&self) -> usize {
        self.next.load(Ordering::Acquire)
    }

    /// The address of this node, as stored in links.
    #[must_use]
    pub fn addr(&self) -> usize {
        ptr::from_ref(self) as usize
    }

    /// Whether this node's `pprev` points at `head.first`, i.e. it is the first entry.
    /// Writers only.
    #[must_use]
    pub fn is_first_of(&self, head: &HlistNullsHead) -> bool {
        ptr::eq(self.pprev.load(Ordering::Relaxed), head.first_slot())
    }

    /// The node before this one, or `None` if this is the first entry (seed 002's
    /// `container_of(pprev, struct hlist_nulls_node, next)`). Writers only.
    ///
    /// # Safety
    ///
    /// The node is linked into `head`, and the caller holds the list's lock.
    #[must_use]
    pub unsafe fn prev<'a>(&self, head: &HlistNullsHead) -> Option<&'a HlistNullsNode> {
        let pprev = self.pprev.load(Ordering::Relaxed);
        if pprev.is_null() || ptr::eq(pprev, head.first_slot()) {
            return None;
        }
        // SAFETY: pprev is not head.first, so it points at the `next` field of the
        // previous node, which sits at offset 0 of that node (asserted above); the node is
        // linked, hence valid, and the lock keeps it linked while the caller uses it.
        Some(unsafe { &*pprev.cast::<HlistNullsNode>() })
    }
}

/// Insert `n` at the head of `h` (`hlist_nulls_add_head_rcu`).
///
/// # Safety
///
/// The caller holds the lock that serialises writers of `h`; `n` is unhashed and stays
/// valid (at a fixed address) until it has been deleted and a grace period has passed.
pub unsafe fn add_head_rcu(n: &HlistNullsNode, h: &HlistNullsHead) {
    let first = h.first.load(Ordering::Relaxed);
    n.next.store(first, Ordering::Relaxed);
    n.pprev.store(h.first_slot(), Ordering::Relaxed);
    // rcu_assign_pointer: publish n's fields before n itself.
    h.first.store(n.addr(), Ordering::Release);
    if !is_a_nulls(first) {
        // SAFETY: `first` is a node address taken from a list the caller has locked, so
        // the node is linked and valid.
        let first = unsafe { &*(first as *const HlistNullsNode) };
        first
            .pprev
            .store(ptr::from_ref(&n.next).cast_mut(), Ordering::Relaxed);
    }
}

/// Insert `n` right after `prev` (`hlist_nulls_add_behind_rcu`), seed 002's O(1) tail add.
///
/// # Safety
///
/// As [`add_head_rcu`]; `prev` is linked into a list whose lock the caller holds.
pub unsafe fn add_behind_rcu(n: &HlistNullsNode, prev: &HlistNullsNode) {
    let next = prev.next.load(Ordering::Relaxed);
    n.next.store(next, Ordering::Relaxed);
    n.pprev
        .store(ptr::from_ref(&prev.next).cast_mut(), Ordering::Relaxed);
    prev.next.store(n.addr(), Ordering::Release);
    if !is_a_nulls(next) {
        // SAFETY: `next` is a linked node of a locked list.
        let next = unsafe { &*(next as *const HlistNullsNode) };
        next.pprev
            .store(ptr::from_ref(&n.next).cast_mut(), Ordering::Relaxed);
    }
}

/// Insert `n` at the tail of `h` by walking the list (`hlist_nulls_add_tail_rcu`): O(n).
/// Returns the nodes walked past (the list's length before the insertion).
///
/// # Safety
///
/// As [`add_head_rcu`].
pub unsafe fn add_tail_rcu(n: &HlistNullsNode, h: &HlistNullsHead) -> u64 {
    let mut last: Option<&HlistNullsNode> = None;
    let mut steps = 0;
    let mut link = h.first.load(Ordering::Relaxed);
    while !is_a_nulls(link) {
        // SAFETY: the list is locked, so every address on it is a valid linked node.
        let node = unsafe { &*(link as *const HlistNullsNode) };
        link = node.next.load(Ordering::Relaxed);
        last = Some(node);
        steps += 1;
    }
    match last {
        // SAFETY: forwarded from the caller's contract; `last` is linked into `h`.
        Some(last) => unsafe { add_behind_rcu(n, last) },
        // SAFETY: forwarded from the caller's contract.
        None => unsafe { add_head_rcu(n, h) },
    }
    steps
}

/// Unlink `n` and mark it unhashed, keeping `n.next` for readers standing on it
/// (`hlist_nulls_del_init_rcu`). Does nothing if `n` is unhashed.
///
/// # Safety
///
/// The caller holds the lock of the list `n` is on, and does not reuse `n`'s memory for
/// anything else until a grace period has passed.
pub unsafe fn del_init_rcu(n: &HlistNullsNode) {
    let pprev = n.pprev.load(Ordering::Relaxed);
    if pprev.is_null() {
        return;
    }
    let next = n.next.load(Ordering::Relaxed);
    // SAFETY: `pprev` points at `head.first` or at the previous node's `next`, both valid
    // while `n` is linked and the lock is held.
    unsafe { (*pprev).store(next, Ordering::Release) };
    if !is_a_nulls(next) {
        // SAFETY: `next` is a linked node of the locked list.
        let next = unsafe { &*(next as *const HlistNullsNode) };
        next.pprev.store(pprev, Ordering::Relaxed);
    }
    n.pprev.store(ptr::null_mut(), Ordering::Relaxed);
}

/// A lockless walk over an hlist_nulls list; see [`HlistNullsHead::iter_rcu`].
#[derive(Debug)]
pub struct HlistNullsCursor<'a> {
    link: usize,
    _head: core::marker::PhantomData<&'a HlistNullsNode>,
}

impl<'a> HlistNullsCursor<'a> {
    /// The nulls value the walk ended on, once the cursor is exhausted.
    #[must_use]
    pub fn end_nulls(&self) -> Option<usize> {
        is_a_nulls(self.link).then(|| get_nulls_value(self.link))
    }
}

impl<'a> Iterator for HlistNullsCursor<'a> {
    type Item = &'a HlistNullsNode;

    fn next(&mut self) -> Option<&'a HlistNullsNode> {
        if is_a_nulls(self.link) {
            return None;
        }
        // SAFETY: `iter_rcu`'s contract keeps every node reachable from the list valid for
        // 'a; the Acquire load that produced `link` orders the node's initialisation
        // before this read (rcu_dereference).
        let node = unsafe { &*(self.link as *const HlistNullsNode) };
        self.link = node.next.load(Ordering::Acquire);
        Some(node)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn collect(h: &HlistNullsHead) -> (Vec<usize>, Option<usize>) {
        // SAFETY: the nodes in these tests outlive every walk.
        let mut c = unsafe { h.iter_rcu() };
        let v = c.by_ref().map(HlistNullsNode::addr).collect();
        (v, c.end_nulls())
    }

    #[test]
    fn nulls_encoding() {
        assert!(is_a_nulls(make_nulls(5)));
        assert_eq!(get_nulls_value(make_nulls(5)), 5);
        assert!(!is_a_nulls(0x1000));
    }

    #[test]
    fn add_head_tail_behind_del() {
        let h = HlistNullsHead::new(3);
        let n: Vec<HlistNullsNode> = (0..4).map(|_| HlistNullsNode::new()).collect();
        assert!(h.is_empty());
        assert_eq!(collect(&h), (Vec::new(), Some(3)));
        // SAFETY: single-threaded; nodes outlive the list.
        unsafe {
            assert_eq!(add_tail_rcu(&n[0], &h), 0, "an empty list: no step");
            add_head_rcu(&n[1], &h);
            assert_eq!(add_tail_rcu(&n[2], &h), 2, "past both nodes");
            add_behind_rcu(&n[3], &n[1]);
        }
        let order = |idx: &[usize]| idx.iter().map(|&i| n[i].addr()).collect::<Vec<_>>();
        assert_eq!(collect(&h), (order(&[1, 3, 0, 2]), Some(3)));
        assert!(!h.is_empty());
        // The raw links: the head points at the first node, each node at the next, the
        // last one at the list's end marker.
        assert_eq!(h.first_link(), n[1].addr());
        assert_eq!(n[1].next_link(), n[3].addr());
        assert_eq!(n[0].next_link(), n[2].addr());
        assert_eq!(n[2].next_link(), make_nulls(3));
        assert!(n[1].is_first_of(&h));
        assert!(!n[3].is_first_of(&h) && !n[0].is_unhashed());
        // SAFETY: n[0] is linked into h, single-threaded.
        let prev = unsafe { n[0].prev(&h) };
        assert_eq!(prev.map(HlistNullsNode::addr), Some(n[3].addr()));
        // SAFETY: as above.
        assert!(unsafe { n[1].prev(&h) }.is_none());
        let next_before = n[0].next_link();
        // SAFETY: single-threaded.
        unsafe { del_init_rcu(&n[0]) };
        assert!(n[0].is_unhashed());
        assert_eq!(n[0].next_link(), next_before, "next kept for readers");
        assert_eq!(collect(&h), (order(&[1, 3, 2]), Some(3)));
        // SAFETY: single-threaded; deleting twice is a no-op.
        unsafe {
            del_init_rcu(&n[0]);
            del_init_rcu(&n[1]);
            del_init_rcu(&n[2]);
        }
        assert_eq!(collect(&h), (order(&[3]), Some(3)));
        // SAFETY: single-threaded.
        unsafe { del_init_rcu(&n[3]) };
        assert!(h.is_empty());
        assert_eq!(h.first_link(), make_nulls(3));
        assert_eq!(collect(&h), (Vec::new(), Some(3)));
    }

    #[test]
    fn reader_on_moved_node_ends_on_other_nulls() {
        let a = HlistNullsHead::new(0);
        let b = HlistNullsHead::new(1);
        let n: Vec<HlistNullsNode> = (0..2).map(|_| HlistNullsNode::new()).collect();
        // SAFETY: single-threaded; nodes outlive the lists.
        unsafe {
            add_head_rcu(&n[0], &a);
            add_head_rcu(&n[1], &b);
        }
        // SAFETY: nodes outlive the walk.
        let mut c = unsafe { a.iter_rcu() };
        let first = c.next().unwrap();
        assert_eq!(first.addr(), n[0].addr());
        // A second reader has loaded a.first (n[0]) but not yet n[0].next when n[0] moves.
        // SAFETY: nodes outlive the walk.
        let mut c2 = unsafe { a.iter_rcu() };
        // SAFETY: single-threaded.
        unsafe {
            del_init_rcu(&n[0]);
            add_tail_rcu(&n[0], &b);
        }
        let seen: Vec<usize> = c2.by_ref().map(HlistNullsNode::addr).collect();
        assert_eq!(seen, vec![n[0].addr()]);
        assert_eq!(c2.end_nulls(), Some(1), "walk was carried onto list b");
        assert_eq!(
            c.end_nulls(),
            Some(0),
            "the first reader had already read the end of a"
        );
    }
}
