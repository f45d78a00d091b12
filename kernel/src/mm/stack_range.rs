//! A kernel stack's addresses: what the stack allocator hands out and a CPU's per-CPU area
//! records.
//!
//! A leaf, so that the per-CPU data ([`crate::percpu`]), which keeps the stack each CPU
//! entered the kernel on, does not depend on the allocator ([`super::stack`]) that maps
//! stacks through the page tables and the frame allocator: the descriptor sits below
//! both, the allocator above it returns one.

use x86_64::VirtAddr;

/// A mapped kernel stack.
#[derive(Clone, Copy, Debug)]
pub struct KernelStack {
    /// The unmapped page right below the stack.
    pub guard: VirtAddr,
    /// Lowest mapped byte.
    pub bottom: VirtAddr,
    /// One past the highest byte: the initial stack pointer.
    pub top: VirtAddr,
}
