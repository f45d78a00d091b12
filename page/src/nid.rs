//! NUMA node ids: the one type every crate of the workspace names a node by.
//!
//! Linux passes a node as `int nid` everywhere; here a node id is a [`NodeId`] in every
//! signature (the folio's node, a pgdat's, a lruvec's, a shadow entry's, a memcg's
//! per-node info and reclaim, a zone's, the NUMA topology's, the page allocator's, a
//! region's, a CPU's), so a node is never a `u32` in one place and a `usize` in another.
//!
//! An alias, not a newtype: node ids are small numbers that index per-node arrays
//! everywhere (`as usize` at each index is the one conversion), and no other `u32` in
//! those signatures is one a node id could be confused with (the frame numbers, addresses
//! and PTEs that could be are typed in `mm`). A leaf: [`crate::folio`] and
//! [`crate::error`] both use it.

/// A NUMA node id (Linux's `int nid`), `0..MAX_NUMNODES`.
pub type NodeId = u32;

/// Number of NUMA nodes a shadow entry can name (6 bits).
pub const MAX_NUMNODES: NodeId = 64;
