//! `page_alloc`: the physical memory layer, platform neutral so that the same code runs in
//! the kernel and on host threads (the host benchmark hands it a memory arena). Linux's
//! mm/page_alloc.c, mm/mm_init.c and mm/sparse.c, with the folio descriptor from `page`.
//!
//! - [`pfn`]: the frame size, [`Pfn`], and the frames each zone type may hold (the bottom
//!   layer: `pfn` < `memmap` < `buddy` < `pcp` < `zone` < `page_alloc`);
//! - [`numa`]: nodes, their memory and CPUs, distances (built by the kernel from the ACPI
//!   SRAT/SLIT, by host callers from a list of ranges);
//! - [`memmap`]: the sparse memmap, one [`page::Folio`] per frame in per-section arrays
//!   placed on each section's node ([`storage`] says where the arrays live);
//! - [`zone`], [`buddy`]: per node per zone buddy lists behind `zone->lock`;
//! - [`pcp`]: per-CPU page lists in front of order 0 behind `pcp->lock`;
//! - [`zonelist`]: node-local first, then by distance, Normal before DMA32;
//! - [`page_alloc`]: [`PageAlloc`], the calls every CPU makes; [`init`] (the handover,
//!   list sizes) and [`check`] (the invariant checker) extend it;
//! - [`kmalloc`]: the kernel heap's size classes in front of its first-fit heap;
//! - [`magazine`]: per-CPU magazines of small heap blocks in front of the size classes;
//! - [`stats`]: per-CPU per-zone counters; [`microbench`]: the order-0 alloc/free
//!   micro-benchmark shared by the host example and the kernel's `run=pagealloc`.
//!
//! The fault core that allocates from it is the layer above (`mm`). CPU ids are
//! arguments; the locks are ksync ticket locks of the classes `zone->lock` and `pcp->lock`
//! ([`lock_classes`]), whose statistics the benchmark reports.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod buddy;
pub mod check;
pub mod error;
pub mod init;
pub mod kmalloc;
pub mod lock_classes;
pub mod magazine;
pub mod memmap;
pub mod microbench;
pub mod numa;
pub mod page_alloc;
pub mod pcp;
pub mod pfn;
pub mod stats;
pub mod storage;
pub mod zone;
pub mod zonelist;

pub use buddy::{MAX_ORDER, NR_PAGE_ORDERS};
pub use check::Census;
pub use error::{AllocError, CheckError, FreeError, HandoverError, InitError};
pub use memmap::Memmap;
pub use numa::{NumaBuilder, NumaTopology, PfnRange};
pub use page_alloc::{PageAlloc, PcpConfig, PgData};
pub use pfn::{PAGE_SIZE, Pfn};
pub use stats::PageStats;
pub use storage::{HeapStorage, MemmapBlock, MemmapStorage};
pub use zone::Zone;
