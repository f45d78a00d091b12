//! A no_std model of Linux's memory cgroup controller (mm/memcontrol.c,
//! mm/page_counter.c), built on the `lru` crate's lruvecs.
//!
//! What it holds, and where each piece lives:
//!
//! - [`page_counter`]: hierarchical `struct page_counter` (`memory.max`, failcnt, watermark),
//!   usage alone on its cacheline.
//! - [`page_counter_802f1d`]: `struct page_counter` before and after Linux commit
//!   802f1d522d5f (`parent` off `usage`'s line) as two layout types with v5.11's walks, for
//!   the `page-counter-802f1d` benchmark scenario.
//! - [`stock`]: the per-CPU charge stock (`MEMCG_CHARGE_BATCH` = 64 pages).
//! - [`stats`]: per-CPU memcg and lruvec counters with the rstat-style flush threshold
//!   (`MEMCG_CHARGE_BATCH * nr_cpus` pending updates).
//! - [`percpu_ref`]: the css reference count, per CPU while the memcg is online and one
//!   atomic after offline (`struct percpu_ref`), switched under RCU.
//! - [`memcontrol`]: `struct mem_cgroup`, its css reference count and the two stat update
//!   paths of seed 001 (A: through the lruvec and `lruvec->pgdat`; B: with the memcg and
//!   node known), both updating the node's counters too.
//! - [`pn`]: `struct mem_cgroup_per_node` in three layouts: the base and paired layouts of
//!   seed 001 and mainline's layout with CONFIG_MEMCG_V1 (the memcg-v1 soft-limit fields
//!   between the read-mostly fields and the lruvec, the kernel seed 000 measured), with
//!   compile-time pairing assertions, placement at +0/+64 of a 128-byte pair and the layout
//!   report.
//! - [`tree`]: the hierarchy (create, lookup by id in an RCU-readable id table, offline
//!   with reparenting, free after a grace period of the nodes' RCU domain) and [`MemcgRef`]
//!   handles; the tree is the `lru::LruvecLookup` of folio batches.
//! - [`charge`]: `try_charge_memcg()`, charging and uncharging folios, `memory.max`.
//! - [`reclaim`]: `memory.reclaim` and `try_to_free_mem_cgroup_pages()`: root reclaim
//!   through each node's memcg FIFO (`shrink_many()`), or a subtree walk; [`reclaim_req`]
//!   parses the cgroupfs request string.
//! - [`lru_glue`]: everything done to `lru`: memcg FIFO online/offline/rotate/release,
//!   eviction through the free hook, reparenting of folios.
//!
//! Nothing here knows about x86: CPU ids and counts, node counts, the lock family
//! ([`ksync::LockFamily`]: every lock is `F::Lock<Class>`, ksync's ticket lock in the kernel
//! and on the host), the nodes (`lru::PgData`, which the page allocator owns) and their RCU
//! domain come in as parameters, so the same code runs in the kernel and, with threads
//! standing in for CPUs, in host tests.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod cacheline;
pub mod charge;
pub mod error;
pub mod lock_classes;
pub mod lru_glue;
pub mod memcontrol;
pub mod page_counter;
pub mod page_counter_802f1d;
pub mod percpu_ref;
pub mod pn;
pub mod reclaim;
pub mod reclaim_req;
pub mod stats;
pub mod stock;
mod sync;
pub mod tree;

pub use charge::{MAX_RECLAIM_PASSES, MAX_RECLAIM_RETRIES, UnchargeBatch};
pub use error::{MemcgError, MemcgId};
pub use lru_glue::{
    FolioFree, FolioFreeBatchFn, FolioFreeFn, FolioHooks, FolioOwner, FolioReleaseFn, TreeLru,
};
pub use memcontrol::{MemCgroup, NodeData};
pub use page_counter::{PAGE_COUNTER_MAX, PageCounter};
pub use pn::{
    MemCgroupPerNode, MemCgroupPerNodeBase, MemCgroupPerNodePaired, MemCgroupPerNodeV1, PnPlacement,
};
pub use reclaim_req::{ReclaimParseError, ReclaimRequest};
pub use stats::{MemcgEvent, NodeStatItem};
pub use stock::MEMCG_CHARGE_BATCH;
pub use tree::{MemcgConfig, MemcgRef, MemcgTree, ROOT_ID};
