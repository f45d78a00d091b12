//! What a folio operation can refuse: the descriptor's own checks (its node and frame
//! number at creation, its counts, its memcg id while it is listed). The layers above turn
//! it into theirs (`lru::LruError` has a variant of the same name for each, and a `From`).

use crate::nid::NodeId;
use core::fmt;

/// Why a folio operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FolioError {
    /// A node id at or above [`crate::nid::MAX_NUMNODES`].
    InvalidNode(NodeId),
    /// A frame number too large for a folio descriptor.
    InvalidPfn(u64),
    /// `folio_put` on a folio whose reference count is already zero.
    RefcountUnderflow,
    /// An unmap of a folio that has no page-table mapping.
    MapcountUnderflow,
    /// The folio is already on an LRU list (its LRU flag is set): its memcg cannot change.
    AlreadyOnLru,
}

impl fmt::Display for FolioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FolioError::InvalidNode(n) => write!(f, "node {n} out of range"),
            FolioError::InvalidPfn(p) => write!(f, "frame number {p:#x} out of range"),
            FolioError::RefcountUnderflow => f.write_str("folio refcount underflow"),
            FolioError::MapcountUnderflow => f.write_str("folio mapcount underflow"),
            FolioError::AlreadyOnLru => f.write_str("folio is already on an LRU list"),
        }
    }
}

impl core::error::Error for FolioError {}
