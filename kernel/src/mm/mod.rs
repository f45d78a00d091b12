//! Memory management: physical frames, the kernel's address space, stacks, heap, and the
//! page allocator; `frame_pool` recycles the frames of the kernel's own page-table fixtures;
//! `stack_range` is the stack descriptor the per-CPU areas keep (a leaf below both).
//!
//! Boot order: `frame::init` (from the memory map) -> `arch::paging::init` (own page
//! tables, direct map) -> `stack` (guarded stacks) -> `heap` -> (SMP, NUMA) ->
//! `page_alloc::init` (memmap, handover of the free frames to the buddy allocator).

pub mod frame;
pub mod frame_pool;
pub mod heap;
pub mod page_alloc;
pub mod stack;
pub mod stack_range;

pub use crate::arch::paging::phys_to_virt;
