//! `page`: the bottom of the memory model, what every layer above shares.
//!
//! - [`folio`]: the folio descriptor (`struct folio` with its flags, counts, LRU link,
//!   mapping and memcg id), one per frame, and the zone types;
//! - [`link`], [`list`]: its list link and the intrusive folio lists built on it (the page
//!   allocator's free lists, the LRU's lists);
//! - [`nid`]: NUMA node ids;
//! - [`cacheline`], [`layout`]: the cache-line group helpers and compile-time placement
//!   asserts, and the field tables every layout report prints;
//! - [`error`]: what a folio operation can refuse.
//!
//! Below it is only `ksync` (the cache-padding type). Above it: the page allocator (`page_alloc`),
//! which keeps folios on its free lists, and the LRU model (`lru`), which keeps them on
//! its lists and re-exports these modules under its own name for the layers above it.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate alloc;

pub mod cacheline;
pub mod error;
pub mod folio;
pub mod layout;
pub mod link;
pub mod list;
pub mod nid;
pub mod sync;

pub use error::FolioError;
pub use folio::{Folio, FolioFlags, Zone};
pub use nid::NodeId;
