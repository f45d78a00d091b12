//! A no_std model of Linux's memory cgroup controller (mm/memcontrol.c,
//! mm/page_counter.c), built on the `lru` crate's lruvecs.
//!
//! What it holds, and where each piece lives:
//!
//! - [`page_counter`]: hierarchical `struct page_counter` (`memory.max`, failcnt, watermark).
//! - [`stock`]: the per-CPU charge stock (`MEMCG_CHARGE_BATCH` = 64 pages).
//! - [`stats`]: per-CPU memcg and lruvec counters with the rstat-style flush threshold.
//!
//! Nothing here knows about x86: CPU ids and counts, node counts, the lock type
//! (`lock_api::RawMutex`) and the RCU grace-period source come in as parameters, so the
//! same code runs in the kernel and, with threads standing in for CPUs, in host tests.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate alloc;

pub mod cacheline;
pub mod charge;
pub mod error;
pub mod lru_glue;
pub mod memcontrol;
pub mod page_counter;
pub mod percpu;
pub mod pn;
pub mod rcu;
pub mod stats;
pub mod stock;
mod sync;
pub mod tree;

pub use charge::MAX_RECLAIM_RETRIES;
pub use error::{MemcgError, MemcgId};
pub use lru_glue::{FolioFreeFn, TreeLru};
pub use memcontrol::MemCgroup;
pub use page_counter::{PAGE_COUNTER_MAX, PageCounter};
pub use pn::{MemCgroupPerNode, MemCgroupPerNodeBase, MemCgroupPerNodePaired, PnPlacement};
pub use rcu::{ManualRcu, RcuPoll};
pub use stats::{MemcgEvent, NodeStatItem};
pub use stock::MEMCG_CHARGE_BATCH;
pub use tree::{MemcgConfig, MemcgRef, MemcgTree};
