//! Memory management: physical frames, the kernel's address space, stacks and heap.
//!
//! Boot order: `frame::init` (from the memory map) -> `arch::x86_64::paging::init` (own page
//! tables, direct map) -> `stack` (guarded stacks) -> `heap`.

pub mod frame;
pub mod heap;
pub mod stack;

pub use crate::arch::x86_64::paging::phys_to_virt;
