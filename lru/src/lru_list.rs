//! `enum lru_list` (include/linux/mmzone.h): the five classic LRU lists, a leaf.
//!
//! The lruvec holds one list head per entry ([`crate::lruvec`]), and the node's vmstat
//! counts folios per list ([`crate::vmstat::NodeStatItem::lru`]), so the enum sits below
//! both, as in Linux, where `enum lru_list` and `enum node_stat_item` share mmzone.h and
//! neither needs `struct lruvec`. It depends only on the folio's flags (which list a folio
//! belongs on, `folio_lru_list()`).

use crate::folio::{Folio, FolioFlags};

/// Number of classic LRU lists (`NR_LRU_LISTS`).
pub const NR_LRU_LISTS: usize = 5;

/// The classic LRU lists (`enum lru_list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum LruList {
    /// `LRU_INACTIVE_ANON`.
    InactiveAnon = 0,
    /// `LRU_ACTIVE_ANON`.
    ActiveAnon = 1,
    /// `LRU_INACTIVE_FILE`.
    InactiveFile = 2,
    /// `LRU_ACTIVE_FILE`.
    ActiveFile = 3,
    /// `LRU_UNEVICTABLE`.
    Unevictable = 4,
}

impl LruList {
    /// All lists in index order (`for_each_lru`).
    pub const ALL: [LruList; NR_LRU_LISTS] = [
        LruList::InactiveAnon,
        LruList::ActiveAnon,
        LruList::InactiveFile,
        LruList::ActiveFile,
        LruList::Unevictable,
    ];

    /// The list a folio belongs on by its flags (`folio_lru_list`).
    #[must_use]
    pub fn of(folio: &Folio) -> LruList {
        let f = folio.flags();
        if f.contains(FolioFlags::UNEVICTABLE) {
            return LruList::Unevictable;
        }
        match (folio.is_file_lru(), f.contains(FolioFlags::ACTIVE)) {
            (false, false) => LruList::InactiveAnon,
            (false, true) => LruList::ActiveAnon,
            (true, false) => LruList::InactiveFile,
            (true, true) => LruList::ActiveFile,
        }
    }

    /// The list's index.
    #[must_use]
    pub const fn idx(self) -> usize {
        self as usize
    }

    /// Whether this is an active list (`is_active_lru`).
    #[must_use]
    pub const fn is_active(self) -> bool {
        matches!(self, LruList::ActiveAnon | LruList::ActiveFile)
    }

    /// Whether this is a file list (`is_file_lru`).
    #[must_use]
    pub const fn is_file(self) -> bool {
        matches!(self, LruList::InactiveFile | LruList::ActiveFile)
    }
}
