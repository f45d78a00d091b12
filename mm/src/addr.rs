//! Virtual addresses as a type of their own, at the platform boundary of the fault core.
//!
//! Linux passes a user address as `unsigned long address` and a frame as `unsigned long
//! pfn`, and a PTE as `pte_t` (a struct, so that one at least cannot be mixed up). Here the
//! [`Mmu`](super::pgtable::Mmu) trait, which the kernel implements on the x86 page tables
//! and the host on a software MMU, takes a [`VirtAddr`] where it means an address, a
//! [`Pfn`](page_alloc::Pfn) where it means a frame and a [`Pte`](super::pgtable::Pte) where it
//! means an entry, so an implementor or a caller cannot pass one for another. Each is a
//! `#[repr(transparent)]` `u64`: the types cost nothing, and a list of addresses can be
//! handed to code that wants plain numbers ([`VirtAddr::slice_as_u64`], the kernel's TLB
//! flush requests) without copying.
//!
//! The fault core's own bookkeeping (regions, the address a fault is at) still uses `u64`;
//! the conversions to and from it are explicit ([`VirtAddr::new`], [`VirtAddr::as_u64`]).
//!
//! Unsafe code here, and why: a slice of `VirtAddr` is viewed as a slice of `u64`
//! (`repr(transparent)`) for the MMU's batch calls.
#![allow(unsafe_code)]

/// A virtual address in an address space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct VirtAddr(u64);

impl VirtAddr {
    /// Address `va`.
    #[must_use]
    pub const fn new(va: u64) -> Self {
        VirtAddr(va)
    }

    /// The number.
    #[must_use]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The numbers of `vas`, in place.
    #[must_use]
    pub fn slice_as_u64(vas: &[VirtAddr]) -> &[u64] {
        // SAFETY: `VirtAddr` is `#[repr(transparent)]` over `u64`, so a slice of them has the
        // layout of a slice of `u64` of the same length; the borrow is carried over.
        unsafe { core::slice::from_raw_parts(vas.as_ptr().cast::<u64>(), vas.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_of_addresses_reads_as_their_numbers() {
        let vas = [VirtAddr::new(0x1000), VirtAddr::new(0x7fff_f000)];
        assert_eq!(VirtAddr::slice_as_u64(&vas), [0x1000, 0x7fff_f000]);
        assert!(VirtAddr::slice_as_u64(&[]).is_empty());
    }
}
