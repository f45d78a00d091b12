//! Node-level vmstat counters: `enum node_stat_item`, `pgdat->vm_stat[]` and
//! `pgdat->per_cpu_nodestats` (include/linux/mmzone.h, mm/vmstat.c).
//!
//! Every LRU stat update in Linux reaches the node's counters as well as the memcg's and
//! the lruvec's (`__mod_lruvec_state()` starts with `__mod_node_page_state()`). The node
//! counter is two-level, as Linux's: each CPU keeps a small signed delta per item
//! (`vm_node_stat_diff[]`, an `s8`) that only it writes; once a delta's magnitude would
//! pass the node's `stat_threshold` it is folded into the node-wide atomic total
//! (`vm_stat[]`) with one atomic add and reset. Readers of [`NodeVmstat::state`] therefore
//! see a total that lags by at most `nr_cpus * stat_threshold` per item;
//! [`NodeVmstat::state_snapshot`] adds the per-CPU deltas (`node_page_state_snapshot()`).
//!
//! The threshold is Linux's `calculate_normal_threshold()`: `2 * fls(cpus) * (1 +
//! fls(memory / 128 MiB))`, at most 125.
//!
//! The memcg crate re-exports [`NodeStatItem`]: memcg and lruvec counters index by it too.
//!
//! Unsafe code here, and why: [`NodeVmstat::mod_state_unchecked`] is the update for a caller
//! that has checked the CPU against a count these counters cover (memcg's stat path checks
//! it once for the node's, the memcg's and the lruvec's counters, as Linux's
//! `__mod_lruvec_state` checks nothing): the slot is taken without a second check.
#![allow(unsafe_code)]

use crate::error::LruError;
use crate::sync::atomic::{AtomicI8, AtomicI64, Ordering};
use ksync::PerCpu;

/// Per-node (and per-memcg-per-node) state items (`enum node_stat_item`, the part this
/// model tracks). The first five are `NR_LRU_BASE + lru`, in `enum lru_list` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum NodeStatItem {
    /// `NR_INACTIVE_ANON`: anon pages on the inactive list (or older generations).
    NrInactiveAnon,
    /// `NR_ACTIVE_ANON`.
    NrActiveAnon,
    /// `NR_INACTIVE_FILE`.
    NrInactiveFile,
    /// `NR_ACTIVE_FILE`.
    NrActiveFile,
    /// `NR_UNEVICTABLE`.
    NrUnevictable,
    /// `NR_ANON_MAPPED`: anon pages mapped.
    NrAnonMapped,
    /// `NR_FILE_MAPPED`: page-cache pages (file and shmem) mapped into page tables.
    NrFileMapped,
    /// `NR_FILE_PAGES`: page-cache pages (includes shmem).
    NrFilePages,
    /// `NR_SHMEM`: shmem pages.
    NrShmem,
    /// `WORKINGSET_REFAULT_ANON`.
    WorkingsetRefaultAnon,
    /// `WORKINGSET_REFAULT_FILE`.
    WorkingsetRefaultFile,
    /// `WORKINGSET_ACTIVATE_ANON`.
    WorkingsetActivateAnon,
    /// `WORKINGSET_ACTIVATE_FILE`.
    WorkingsetActivateFile,
}

/// Number of [`NodeStatItem`]s (`NR_VM_NODE_STAT_ITEMS` for this model).
pub const NR_NODE_STAT_ITEMS: usize = 13;

impl NodeStatItem {
    /// All items, in index order.
    pub const ALL: [NodeStatItem; NR_NODE_STAT_ITEMS] = [
        Self::NrInactiveAnon,
        Self::NrActiveAnon,
        Self::NrInactiveFile,
        Self::NrActiveFile,
        Self::NrUnevictable,
        Self::NrAnonMapped,
        Self::NrFileMapped,
        Self::NrFilePages,
        Self::NrShmem,
        Self::WorkingsetRefaultAnon,
        Self::WorkingsetRefaultFile,
        Self::WorkingsetActivateAnon,
        Self::WorkingsetActivateFile,
    ];

    /// The name `memory.stat` and `/proc/vmstat` use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::NrInactiveAnon => "inactive_anon",
            Self::NrActiveAnon => "active_anon",
            Self::NrInactiveFile => "inactive_file",
            Self::NrActiveFile => "active_file",
            Self::NrUnevictable => "unevictable",
            Self::NrAnonMapped => "anon",
            Self::NrFileMapped => "file_mapped",
            Self::NrFilePages => "file",
            Self::NrShmem => "shmem",
            Self::WorkingsetRefaultAnon => "workingset_refault_anon",
            Self::WorkingsetRefaultFile => "workingset_refault_file",
            Self::WorkingsetActivateAnon => "workingset_activate_anon",
            Self::WorkingsetActivateFile => "workingset_activate_file",
        }
    }

    /// The LRU list item of list `lru` (`NR_LRU_BASE + lru`).
    #[must_use]
    pub const fn lru(lru: crate::LruList) -> NodeStatItem {
        match lru {
            crate::LruList::InactiveAnon => Self::NrInactiveAnon,
            crate::LruList::ActiveAnon => Self::NrActiveAnon,
            crate::LruList::InactiveFile => Self::NrInactiveFile,
            crate::LruList::ActiveFile => Self::NrActiveFile,
            crate::LruList::Unevictable => Self::NrUnevictable,
        }
    }

    /// `WORKINGSET_REFAULT_BASE + type`.
    #[must_use]
    pub const fn workingset_refault(ty: usize) -> NodeStatItem {
        if ty == crate::folio::LRU_GEN_FILE {
            Self::WorkingsetRefaultFile
        } else {
            Self::WorkingsetRefaultAnon
        }
    }

    /// `WORKINGSET_ACTIVATE_BASE + type`.
    #[must_use]
    pub const fn workingset_activate(ty: usize) -> NodeStatItem {
        if ty == crate::folio::LRU_GEN_FILE {
            Self::WorkingsetActivateFile
        } else {
            Self::WorkingsetActivateAnon
        }
    }
}

/// One CPU's deltas (`struct per_cpu_nodestat`): written only by that CPU.
#[derive(Debug)]
struct PerCpuNodestat {
    diff: [AtomicI8; NR_NODE_STAT_ITEMS],
}

/// A node's counters: per-CPU deltas and the node-wide totals.
#[derive(Debug)]
pub struct NodeVmstat {
    per_cpu: PerCpu<PerCpuNodestat>,
    vm_stat: [AtomicI64; NR_NODE_STAT_ITEMS],
    stat_threshold: i8,
}

/// Linux's `fls()`: the 1-based index of the highest set bit, 0 for 0.
const fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// `calculate_normal_threshold()` for a node of `managed_pages` 4 KiB pages on `nr_cpus`
/// CPUs.
#[must_use]
pub fn stat_threshold(nr_cpus: usize, managed_pages: u64) -> i8 {
    let mem = managed_pages >> (27 - 12);
    let t = 2 * fls(nr_cpus as u64) * (1 + fls(mem));
    t.min(125) as i8
}

impl NodeVmstat {
    /// Zeroed counters for `nr_cpus` CPUs folding at `stat_threshold` (clamped to 0..=125).
    #[must_use]
    pub fn new(nr_cpus: usize, stat_threshold: i8) -> Self {
        NodeVmstat {
            per_cpu: PerCpu::new(nr_cpus, |_| PerCpuNodestat {
                diff: core::array::from_fn(|_| AtomicI8::new(0)),
            }),
            vm_stat: core::array::from_fn(|_| AtomicI64::new(0)),
            stat_threshold: stat_threshold.clamp(0, 125),
        }
    }

    /// The fold threshold.
    #[must_use]
    pub fn threshold(&self) -> i8 {
        self.stat_threshold
    }

    /// Number of CPUs the per-CPU deltas cover (ids `0..nr_cpus`).
    #[inline]
    #[must_use]
    pub fn nr_cpus(&self) -> usize {
        self.per_cpu.nr_cpus()
    }

    /// `__mod_node_page_state()` on `cpu`: add `delta` to this CPU's delta of `item`, and
    /// fold it into the node total once it passes the threshold.
    pub fn mod_state(&self, cpu: usize, item: NodeStatItem, delta: i64) -> Result<(), LruError> {
        let pcp = self.per_cpu.get(cpu).ok_or(LruError::InvalidCpu(cpu))?;
        self.mod_slot(pcp, item, delta);
        Ok(())
    }

    /// [`Self::mod_state`] for a CPU the caller has checked.
    ///
    /// # Safety
    ///
    /// `cpu < self.nr_cpus()`.
    #[inline(always)]
    pub unsafe fn mod_state_unchecked(&self, cpu: usize, item: NodeStatItem, delta: i64) {
        // SAFETY: the caller's promise.
        let pcp = unsafe { self.per_cpu.get_unchecked(cpu) };
        self.mod_slot(pcp, item, delta);
    }

    #[inline(always)]
    fn mod_slot(&self, pcp: &PerCpuNodestat, item: NodeStatItem, delta: i64) {
        let p = &pcp.diff[item as usize];
        // Only this CPU writes its slot: a plain load and store (`__this_cpu_read/write`).
        // The sum is Linux's `long` addition: a delta near `i64::MAX` wraps as it would
        // there, and no caller passes one (a stat moves by a folio's pages at most).
        let x = delta.wrapping_add(i64::from(p.load(Ordering::Relaxed)));
        if x.unsigned_abs() > self.stat_threshold as u64 {
            self.vm_stat[item as usize].fetch_add(x, Ordering::Relaxed);
            p.store(0, Ordering::Relaxed);
        } else {
            // |x| <= threshold <= 125 fits in an i8.
            p.store(x as i8, Ordering::Relaxed);
        }
    }

    /// `node_page_state()`: the node total, lagging the true value by at most
    /// `nr_cpus * threshold`.
    #[must_use]
    pub fn state(&self, item: NodeStatItem) -> i64 {
        self.vm_stat[item as usize].load(Ordering::Relaxed)
    }

    /// `node_page_state_snapshot()`: the node total plus every CPU's pending delta.
    #[must_use]
    pub fn state_snapshot(&self, item: NodeStatItem) -> i64 {
        self.per_cpu
            .iter()
            .map(|(_, c)| i64::from(c.diff[item as usize].load(Ordering::Relaxed)))
            .sum::<i64>()
            + self.state(item)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn deltas_fold_past_the_threshold() {
        let v = NodeVmstat::new(2, 4);
        for _ in 0..4 {
            v.mod_state(0, NodeStatItem::NrShmem, 1).unwrap();
        }
        assert_eq!(v.state(NodeStatItem::NrShmem), 0, "still per-CPU");
        assert_eq!(v.state_snapshot(NodeStatItem::NrShmem), 4);
        v.mod_state(0, NodeStatItem::NrShmem, 1).unwrap();
        assert_eq!(v.state(NodeStatItem::NrShmem), 5, "folded at |x| > 4");
        v.mod_state(1, NodeStatItem::NrShmem, -300).unwrap();
        assert_eq!(
            v.state(NodeStatItem::NrShmem),
            -295,
            "large deltas fold at once"
        );
        assert_eq!(v.state_snapshot(NodeStatItem::NrShmem), -295);
        assert_eq!(
            v.mod_state(2, NodeStatItem::NrShmem, 1),
            Err(LruError::InvalidCpu(2))
        );
    }

    #[test]
    fn the_unchecked_update_is_the_checked_one() {
        let (a, b) = (NodeVmstat::new(3, 4), NodeVmstat::new(3, 4));
        assert_eq!(a.nr_cpus(), 3);
        for (cpu, delta) in [(0, 3), (2, -2), (1, 7), (2, -9), (0, 2)] {
            a.mod_state(cpu, NodeStatItem::NrFileMapped, delta).unwrap();
            // SAFETY: every CPU here is below 3.
            unsafe { b.mod_state_unchecked(cpu, NodeStatItem::NrFileMapped, delta) };
            assert_eq!(
                a.state(NodeStatItem::NrFileMapped),
                b.state(NodeStatItem::NrFileMapped)
            );
            assert_eq!(
                a.state_snapshot(NodeStatItem::NrFileMapped),
                b.state_snapshot(NodeStatItem::NrFileMapped)
            );
        }
        assert_eq!(
            b.state(NodeStatItem::NrFileMapped),
            1,
            "folded past the threshold"
        );
    }

    #[test]
    fn threshold_follows_linux() {
        // 1 CPU, 128 MiB: 2 * 1 * (1 + 1) = 4; 256 CPUs and 1 TiB: capped at 125.
        assert_eq!(stat_threshold(1, 32768), 4);
        assert_eq!(stat_threshold(256, 1 << 28), 125);
        assert_eq!(stat_threshold(2, 0), 4);
    }
}
