//! The intrusive folio list (`struct list_head` of folios).
//!
//! Models the `lruvec->lists[]` / `lrugen->folios[][][]` list heads of Linux: a doubly
//! linked list threaded through `folio->lru`. Built on intrusive-collections with its
//! `AtomicLink`, whose "linked" marker is claimed with a compare-exchange, so a folio can
//! never be pushed onto two lists even by a buggy caller (the push is refused first).
//! Head = most recently added (`list_add`), tail = next to evict (`lru_to_folio`).

use crate::folio::Folio;
use intrusive_collections::{LinkedList, intrusive_adapter};

mod adapter {
    #![allow(missing_docs)]
    use super::{Folio, intrusive_adapter};

    intrusive_adapter!(
        /// Adapter that threads `&'static Folio` through `Folio::lru`.
        pub FolioAdapter = &'static Folio: Folio { lru => intrusive_collections::linked_list::AtomicLink }
    );
}
pub use adapter::FolioAdapter;

/// A list of folios, 16 bytes like `struct list_head`.
pub type FolioList = LinkedList<FolioAdapter>;

/// A new empty folio list (`LIST_HEAD_INIT`).
#[must_use]
pub fn folio_list() -> FolioList {
    LinkedList::new(FolioAdapter::new())
}

const _: () = assert!(core::mem::size_of::<FolioList>() == 16);
