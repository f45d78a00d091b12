//! `folio->lru`: the two list pointers of a folio (Linux's `struct list_head`, a leaf of
//! `<linux/types.h>`), below both the folio that embeds it and the lists that thread it.
//!
//! Each pointer is an atomic word read and written with relaxed loads and stores (plain
//! moves on x86), so no interleaving of two threads on one folio is a data race. `next`
//! doubles as the "linked" marker (`UNLINKED` while on no list) that a list claims when
//! it inserts the folio; how it is claimed, and under which promise, is the list's
//! business (see [`crate::list`]).

use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, Ordering};

/// The "on no list" value of [`FolioLink`]'s `next` (Linux poisons `lru.next` instead).
pub(crate) const UNLINKED: *mut FolioLink = core::ptr::without_provenance_mut(1);

/// `folio->lru`: the two list pointers of a folio.
#[repr(C, align(8))]
pub struct FolioLink {
    /// The next link, [`UNLINKED`] while on no list, null at the list's tail.
    pub(crate) next: AtomicPtr<FolioLink>,
    /// The previous link, null at the list's head; meaningless while unlinked.
    pub(crate) prev: AtomicPtr<FolioLink>,
}

impl FolioLink {
    /// A link on no list.
    #[must_use]
    pub const fn new() -> FolioLink {
        FolioLink {
            next: AtomicPtr::new(UNLINKED),
            prev: AtomicPtr::new(null_mut()),
        }
    }

    /// Whether the folio is on some list (its marker claimed).
    #[must_use]
    pub fn is_linked(&self) -> bool {
        self.next.load(Ordering::Relaxed) != UNLINKED
    }

    /// Claims the marker with a compare-exchange: fails if the folio is on a list or
    /// another thread claimed it first.
    pub(crate) fn claim_atomic(&self) -> bool {
        self.next
            .compare_exchange(UNLINKED, null_mut(), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
}

impl Default for FolioLink {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for FolioLink {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.is_linked() {
            "linked"
        } else {
            "unlinked"
        })
    }
}
