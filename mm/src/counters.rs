//! The fault path's own event counters, per CPU (`vm_event_states`: PGFAULT, ...).
//!
//! Each CPU counts into its own 128-byte slot with a relaxed load and store (it is the
//! only writer), so counting adds no shared-line traffic to the path being measured;
//! readers sum the slots. The benchmark records the change of every counter across a run.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use ksync::PerCpu;

/// What the fault path counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum VmEvent {
    /// Faults handled (resolved or failed).
    Fault,
    /// Faults that took the slow path (the region was write-locked).
    FaultSlowPath,
    /// Faults that failed: memcg over its limit after reclaim.
    FaultFailMemcg,
    /// Faults that failed: no free frame.
    FaultFailNoMemory,
    /// Faults that failed by fault injection (either knob).
    FaultFailInjected,
    /// Faults that found the PTE already installed (another CPU won the race).
    FaultRaced,
    /// Page-cache hits (mapped or read).
    CacheHit,
    /// Page-cache misses that read from the backing store or zero-filled.
    CacheMiss,
    /// Misses that found a shadow entry (refaults).
    Refault,
    /// Refaults that were recent enough to activate.
    RefaultActivate,
    /// Refaults of folios that were in the working set when evicted (`WORKINGSET_RESTORE`).
    WorkingsetRestore,
    /// Folios evicted by reclaim (frame freed, shadow stored).
    Evicted,
    /// Folios reclaim found busy and put back.
    EvictBusy,
    /// Folios released after their last reference (freed frames).
    Released,
    /// Pages unmapped by zap_page_range.
    Unmapped,
    /// TLB shootdowns sent by unmaps and evictions.
    Shootdown,
    /// Pages read by filemap_read.
    FileRead,
    /// Pages whose contents were verified against the backing store.
    Verified,
    /// `folio_activate` calls that queued an inactive, referenced folio for activation
    /// (Linux's PGACTIVATE, counted when queued rather than when the batch moves it).
    Activate,
    /// Page-counter updates made to uncharge released folios: one per run of folios of
    /// one memcg in a batch (`uncharge_batch()`), one per folio released alone.
    UnchargeBatches,
    /// `pcp->lock` holds taken to free released folios: one per run of frames of one zone
    /// in a batch (`free_unref_folios()`), one per folio freed alone.
    PcpFreeRounds,
    /// Writes to the memcgs' shared css reference counts (atomic-mode gets and puts, see
    /// `memcg::percpu_ref`), whoever made them; filled in from the memcg tree when read.
    CssAtomicWrites,
}

/// Number of [`VmEvent`]s.
pub const NR_VM_EVENTS: usize = 22;

impl VmEvent {
    /// Every event, in index order.
    pub const ALL: [VmEvent; NR_VM_EVENTS] = [
        Self::Fault,
        Self::FaultSlowPath,
        Self::FaultFailMemcg,
        Self::FaultFailNoMemory,
        Self::FaultFailInjected,
        Self::FaultRaced,
        Self::CacheHit,
        Self::CacheMiss,
        Self::Refault,
        Self::RefaultActivate,
        Self::WorkingsetRestore,
        Self::Evicted,
        Self::EvictBusy,
        Self::Released,
        Self::Unmapped,
        Self::Shootdown,
        Self::FileRead,
        Self::Verified,
        Self::Activate,
        Self::UnchargeBatches,
        Self::PcpFreeRounds,
        Self::CssAtomicWrites,
    ];

    /// The name in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Fault => "faults",
            Self::FaultSlowPath => "faults_slow_path",
            Self::FaultFailMemcg => "faults_failed_memcg",
            Self::FaultFailNoMemory => "faults_failed_nomem",
            Self::FaultFailInjected => "faults_failed_injected",
            Self::FaultRaced => "faults_raced",
            Self::CacheHit => "cache_hits",
            Self::CacheMiss => "cache_misses",
            Self::Refault => "refaults",
            Self::RefaultActivate => "refaults_activated",
            Self::WorkingsetRestore => "workingset_restore",
            Self::Evicted => "evicted",
            Self::EvictBusy => "evict_busy",
            Self::Released => "released",
            Self::Unmapped => "unmapped",
            Self::Shootdown => "shootdowns",
            Self::FileRead => "file_reads",
            Self::Verified => "verified",
            Self::Activate => "activations",
            Self::UnchargeBatches => "uncharge_batches",
            Self::PcpFreeRounds => "pcp_free_rounds",
            Self::CssAtomicWrites => "css_atomic_writes",
        }
    }
}

/// Per-CPU event counters.
#[derive(Debug)]
pub struct VmCounters {
    cpus: PerCpu<[AtomicU64; NR_VM_EVENTS]>,
}

impl VmCounters {
    /// Zeroed counters for `nr_cpus` CPUs.
    #[must_use]
    pub fn new(nr_cpus: usize) -> Self {
        VmCounters {
            cpus: PerCpu::new(nr_cpus, |_| core::array::from_fn(|_| AtomicU64::new(0))),
        }
    }

    /// Counts `n` events on `cpu` (folded into range).
    #[inline]
    pub fn add(&self, cpu: usize, ev: VmEvent, n: u64) {
        if let Some(c) = self.cpus.get(ksync::cpu::fold(cpu, self.cpus.nr_cpus())) {
            let c = &c[ev as usize];
            c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
        }
    }

    /// Sets the total of `ev` to `v` (for a figure kept elsewhere and copied in when read):
    /// CPU 0's slot holds it, the others are cleared. Only for events nobody [`Self::add`]s.
    pub fn set_total(&self, ev: VmEvent, v: u64) {
        for (cpu, c) in self.cpus.iter() {
            c[ev as usize].store(if cpu == 0 { v } else { 0 }, Relaxed);
        }
    }

    /// The total of `ev` over every CPU.
    #[must_use]
    pub fn total(&self, ev: VmEvent) -> u64 {
        self.cpus
            .iter()
            .map(|(_, c)| c[ev as usize].load(Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_cpu_and_sums() {
        let c = VmCounters::new(2);
        c.add(0, VmEvent::Fault, 3);
        c.add(1, VmEvent::Fault, 4);
        c.add(5, VmEvent::Refault, 1);
        assert_eq!(c.total(VmEvent::Fault), 7);
        assert_eq!(c.total(VmEvent::Refault), 1);
        assert_eq!(c.total(VmEvent::Evicted), 0);
        assert_eq!(VmEvent::ALL.len(), NR_VM_EVENTS);
        assert!(
            VmEvent::ALL
                .iter()
                .enumerate()
                .all(|(i, e)| *e as usize == i)
        );
    }
}
