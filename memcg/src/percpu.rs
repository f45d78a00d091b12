//! Per-CPU slots: one cacheline-aligned `T` per CPU, indexed by a CPU id the caller supplies.
//!
//! Models the kernel's `__percpu` allocations (`alloc_percpu()`, `this_cpu_ptr()`,
//! `per_cpu_ptr()`) without knowing anything about the platform: the number of CPUs is a
//! parameter and the CPU id is passed to every operation. The kernel passes the id of the
//! CPU it runs on with preemption disabled; host tests use one thread per CPU id.

use crate::cacheline::CacheAligned;
use crate::error::MemcgError;
use alloc::boxed::Box;
use alloc::vec::Vec;

/// One cacheline-aligned `T` per CPU.
#[derive(Debug)]
pub struct PerCpu<T> {
    slots: Box<[CacheAligned<T>]>,
}

impl<T> PerCpu<T> {
    /// Allocates `nr_cpus` slots, initialising slot `cpu` with `init(cpu)`.
    pub fn new(nr_cpus: usize, mut init: impl FnMut(usize) -> T) -> Self {
        let mut slots = Vec::with_capacity(nr_cpus);
        for cpu in 0..nr_cpus {
            slots.push(CacheAligned(init(cpu)));
        }
        Self {
            slots: slots.into_boxed_slice(),
        }
    }

    /// Number of CPUs (slots).
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.slots.len()
    }

    /// The slot of `cpu` (`per_cpu_ptr()`), or [`MemcgError::InvalidCpu`].
    #[inline]
    pub fn get(&self, cpu: usize) -> Result<&T, MemcgError> {
        self.slots
            .get(cpu)
            .map(|s| &s.0)
            .ok_or(MemcgError::InvalidCpu {
                cpu,
                nr_cpus: self.slots.len(),
            })
    }

    /// Every slot with its CPU id (`for_each_possible_cpu()`).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots.iter().enumerate().map(|(cpu, s)| (cpu, &s.0))
    }
}
