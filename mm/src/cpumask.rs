//! `mm_cpumask`: the CPUs that may hold TLB entries of an address space.
//!
//! A CPU joins the mask the first time it faults in the address space (Linux sets it in
//! `switch_mm`); unmapping sends TLB shootdowns to the CPUs in it. The bit is only written
//! when it is clear, so faulting CPUs do not keep dirtying the mask's line.

use core::sync::atomic::{AtomicU64, Ordering};
use ksync::MAX_CPUS;

/// A set of CPU ids, updated atomically.
#[derive(Debug)]
pub struct CpuMask {
    bits: [AtomicU64; MAX_CPUS / 64],
}

impl Default for CpuMask {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuMask {
    /// The empty set.
    #[must_use]
    pub const fn new() -> Self {
        CpuMask {
            bits: [const { AtomicU64::new(0) }; MAX_CPUS / 64],
        }
    }

    /// Adds `cpu` (a read first: no write when it is already there).
    pub fn set(&self, cpu: usize) {
        let (w, b) = (cpu / 64 % (MAX_CPUS / 64), 1u64 << (cpu % 64));
        if self.bits[w].load(Ordering::Relaxed) & b == 0 {
            self.bits[w].fetch_or(b, Ordering::AcqRel);
        }
    }

    /// Whether `cpu` is in the set.
    #[must_use]
    pub fn contains(&self, cpu: usize) -> bool {
        let (w, b) = (cpu / 64 % (MAX_CPUS / 64), 1u64 << (cpu % 64));
        self.bits[w].load(Ordering::Acquire) & b != 0
    }

    /// The CPUs in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_CPUS).filter(|&c| self.contains(c))
    }

    /// Whether any CPU other than `me` is in the set.
    #[must_use]
    pub fn any_other_than(&self, me: usize) -> bool {
        self.bits.iter().enumerate().any(|(w, bits)| {
            let mut v = bits.load(Ordering::Acquire);
            if me / 64 == w {
                v &= !(1u64 << (me % 64));
            }
            v != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_query() {
        let m = CpuMask::new();
        assert!(!m.any_other_than(0));
        m.set(3);
        m.set(3);
        m.set(130);
        assert!(m.contains(3) && m.contains(130) && !m.contains(4));
        assert_eq!(m.iter().collect::<alloc::vec::Vec<_>>(), [3, 130]);
        assert!(m.any_other_than(3));
        assert!(!CpuMask::new().any_other_than(5));
        let n = CpuMask::new();
        n.set(5);
        assert!(!n.any_other_than(5));
    }
}
