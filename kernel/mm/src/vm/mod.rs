//! The virtual-memory half of `mm`: address spaces, regions, page tables, page-cache
//! objects and the fault core.

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
