//! `mm`: the fault core, platform neutral so that the same code runs in the kernel and on
//! host threads: address spaces (`mm_struct`) and their regions (`vm_area_struct` with the
//! per-VMA lock, read under RCU), page tables behind the [`pgtable::Mmu`] trait (the
//! kernel's real ones, or a software MMU on the host), `handle_mm_fault`, page-cache
//! objects, `zap_page_range` with its `mmu_gather`, reclaim through the reverse map, and
//! the invariant checker.
//!
//! It sits on the page allocator (`page_alloc`, the layer below: frames come from its
//! per-CPU lists and go back there), and calls `memcg` for charges and `lru` for folio
//! batches. The locks it declares, and their order with the others', are
//! [`lock_classes`]'s.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod addr;
pub mod backing;
pub mod check;
pub mod context;
pub mod counters;
pub mod cpumask;
pub mod fault;
pub mod fault_inject;
pub mod filemap;
pub mod folios;
pub mod lock_classes;
pub mod mm_struct;
pub mod mmap;
pub mod mmu_gather;
pub mod object;
pub mod page_cache;
pub mod pgtable;
pub mod rcu;
pub mod reclaim;
pub mod soft_mmu;
pub mod tlb_kept;
pub mod truncate;
pub mod vma;
pub mod vma_lock;

pub use addr::VirtAddr;
