//! `lru`: a no_std model of Linux's LRU machinery, built to A/B-test cacheline placement.
//!
//! On the folio descriptor, node ids and layout tools of the `page` crate (re-exported here
//! as [`folio`], [`nid`], [`list`], [`cacheline`], [`layout`]): the per-(memcg, node)
//! [`lruvec`] with its lru_lock and Alex Shi's TestClearLRU isolation protocol, per-CPU
//! folio batches ([`swap`]), the multi-gen LRU ([`lru_gen`], [`lru_gen_folio`],
//! [`vmscan`]) with shadow-entry refault detection ([`workingset`]), the memcg FIFO of
//! hlist_nulls lists ([`hlist_nulls`], [`memcg_lru`]) read under QSBR [`rcu`], and the
//! layout report ([`layout_report`]).
//! Each seed's before/after variants exist side by side:
//! `lru_gen_folio` base/grouped (seed 000), FIFO tail insertion walk/cached (seed 002),
//! and the lock is per lruvec (seed 004).
//!
//! Nothing here knows about x86: every lock is `F::Lock<Class>`, its class declared in
//! [`lock_classes`], of a [`ksync::LockFamily`] `F` (the kernel, the host tests and the host
//! benchmarks all use [`ksync::Ticket`], so layouts and lock statistics are the same everywhere; loom models
//! substitute their own family), the CPU is a `cpu: usize` argument, CPU counts are fixed at
//! construction, and time comes in as a `now` argument.

#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod error;
pub mod events;
pub mod hlist_nulls;
pub mod layout_report;
pub mod lock_classes;
pub mod lru_gen;
pub mod lru_gen_folio;
pub mod lru_list;
pub mod lruvec;
pub mod memcg_lru;
pub mod pgdat;
pub mod release;
pub mod swap;
pub mod swap_cluster;
pub mod sync;
pub mod vmscan;
pub mod vmscan_classic;
pub mod vmstat;
pub mod workingset;

pub use ksync::rcu;
pub use page::{
    cacheline, cacheline_assert_apart, cacheline_assert_group_member, cacheline_assert_group_size,
    cacheline_assert_pair, folio, layout, layout_field, link, list, nid,
};

pub use error::LruError;
pub use folio::{Folio, FolioFlags, Zone};
pub use lru_gen::{LruGenFolio, LruGenMemcgNode};
pub use lru_gen_folio::{LruGenFolioBase, LruGenFolioGrouped};
pub use lruvec::{
    LruList, LruMode, Lruvec, LruvecGuard, LruvecHost, LruvecLock, LruvecLookup, LruvecStandalone,
};
pub use memcg_lru::{LruGenMemcg, MemcgFifoEntry, MemcgLruOp, TailMode};
pub use nid::NodeId;
pub use pgdat::PgData;
pub use rcu::Rcu;
pub use release::{FolioRelease, folio_put};
pub use swap::{FOLIO_BATCH_SIZE, FolioBatch, LruBatches, MoveStats};
pub use vmscan::{EvictStats, MAX_SWAPPINESS, SWAPPINESS_ANON_ONLY};
pub use vmstat::NodeStatItem;
pub use workingset::{RefaultOutcome, Shadow};
