//! Per-CPU slots: one `T` per CPU, each on its own 128-byte pair.
//!
//! Models the kernel's `alloc_percpu()` / `per_cpu_ptr()` as lru, memcg and the page
//! allocator use them: the number of CPUs is fixed at construction and the CPU id is passed
//! to every access (the kernel passes [`crate::this_cpu`], host tests one id per thread).
//! Slots are [`CachePadded`]: 128-byte aligned and sized, because the adjacent-line
//! prefetcher fetches aligned 128-byte pairs, so two CPUs' slots never share a line *nor a
//! pair* (seed 001: a neighbouring CPU's charge stock must not ride along with ours).
//!
//! `T` is shared: other CPUs may read a slot (and, through `T`'s own atomics or locks,
//! update it). Exclusive per-CPU access without a lock is the platform's business (the
//! kernel's `PerCpu::with` disables interrupts); this type only places the data.
//!
//! Unsafe code here, and why: [`PerCpu::get_unchecked`] hands out a slot without comparing
//! the id with the slot count, for a caller that has already compared it with a count every
//! structure it reaches is built with (the stat paths check the CPU once per update and
//! then reach three or four per-CPU structures, where Linux's `this_cpu_ptr` checks
//! nothing). Each bounds check is a compare and a branch with its error path.
#![allow(unsafe_code)]

use alloc::boxed::Box;
use alloc::vec::Vec;

/// A value that owns a whole 128-byte pair (64-byte line pair fetched together).
#[derive(Debug, Default)]
#[repr(C, align(128))]
pub struct CachePadded<T>(pub T);

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> core::ops::DerefMut for CachePadded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// One `T` per CPU, each in its own 128-byte pair.
#[derive(Debug)]
pub struct PerCpu<T> {
    slots: Box<[CachePadded<T>]>,
}

impl<T> PerCpu<T> {
    /// `nr_cpus` slots, slot `cpu` initialised with `init(cpu)`.
    pub fn new(nr_cpus: usize, mut init: impl FnMut(usize) -> T) -> Self {
        let mut v = Vec::with_capacity(nr_cpus);
        for cpu in 0..nr_cpus {
            v.push(CachePadded(init(cpu)));
        }
        PerCpu {
            slots: v.into_boxed_slice(),
        }
    }

    /// Number of slots.
    #[inline]
    #[must_use]
    pub fn nr_cpus(&self) -> usize {
        self.slots.len()
    }

    /// The slot of `cpu` (`per_cpu_ptr()`), `None` past the last CPU.
    #[inline]
    #[must_use]
    pub fn get(&self, cpu: usize) -> Option<&T> {
        self.slots.get(cpu).map(|s| &s.0)
    }

    /// The slot of `cpu` without the bounds check (`per_cpu_ptr()` with an id the caller
    /// has checked).
    ///
    /// # Safety
    ///
    /// `cpu < self.nr_cpus()`.
    #[inline(always)]
    #[must_use]
    pub unsafe fn get_unchecked(&self, cpu: usize) -> &T {
        debug_assert!(cpu < self.slots.len(), "cpu {cpu} of {}", self.slots.len());
        // SAFETY: the caller's promise: `cpu` is below the slot count.
        unsafe { &self.slots.get_unchecked(cpu).0 }
    }

    /// The slot of `cpu`, exclusively (only through `&mut self`).
    #[inline]
    pub fn get_mut(&mut self, cpu: usize) -> Option<&mut T> {
        self.slots.get_mut(cpu).map(|s| &mut s.0)
    }

    /// Every slot with its CPU id (`for_each_possible_cpu()`).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots.iter().enumerate().map(|(c, s)| (c, &s.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_own_their_pair() {
        let p = PerCpu::new(4, |c| c as u64 * 10);
        assert_eq!(p.nr_cpus(), 4);
        assert_eq!(p.get(3), Some(&30));
        assert_eq!(p.get(4), None);
        let a = core::ptr::from_ref(p.get(0).unwrap()) as usize;
        let b = core::ptr::from_ref(p.get(1).unwrap()) as usize;
        assert_eq!(a % 128, 0);
        assert_eq!(b - a, 128, "neighbouring CPUs are one pair apart");
        assert_eq!(p.iter().map(|(_, v)| *v).sum::<u64>(), 60);
        assert_eq!(core::mem::size_of::<CachePadded<u8>>(), 128);
    }

    #[test]
    fn unchecked_slots_are_the_checked_ones() {
        let p = PerCpu::new(5, |c| c * 7);
        for cpu in 0..p.nr_cpus() {
            // SAFETY: `cpu` is below the slot count.
            let u = unsafe { p.get_unchecked(cpu) };
            assert!(core::ptr::eq(u, p.get(cpu).unwrap()), "cpu {cpu}");
            assert_eq!(*u, cpu * 7);
        }
    }
}
