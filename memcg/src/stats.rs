//! Per-CPU memcg and lruvec statistics with rstat-style flushing (mm/memcontrol.c:
//! `memcg_vmstats_percpu`, `lruvec_stats_percpu`, `memcg_rstat_updated()`,
//! `mem_cgroup_css_rstat_flush()`, `mem_cgroup_flush_stats()`).
//!
//! Updates touch only the updating CPU's counters (`this_cpu_add()`): the owner loads and
//! stores its own slot, so the hot path has no locked instruction. Each update also adds
//! `|val|` to the CPU's `stats_updates`; once that reaches `MEMCG_CHARGE_BATCH` it is folded
//! into the memcg-wide atomic `stats_updates`, at every ancestor. A flush is due when the
//! memcg-wide count exceeds `MEMCG_CHARGE_BATCH * nr_cpus`: readers that call
//! `flush_if_needed` therefore see totals that are off by at most that many updates, and
//! totals are exact right after a forced flush.
//!
//! A flush walks a subtree children first. For every counter it takes each CPU's delta since
//! the last flush (`state - state_prev`), adds it to the memcg's local and hierarchical
//! totals, and leaves it in the parent's `pending` so the parent's hierarchical total picks it
//! up when the parent is flushed. Flushes are serialised by the caller (Linux's rstat lock).
//!
//! Unsafe code here, and why: the stat path checks the CPU once per update, against the
//! count every per-CPU structure of the memcg tree is built with
//! ([`crate::memcontrol::MemCgroup`]'s `mod_lruvec_state`), and then reaches the lruvec's
//! and the memcg's counters (and its ancestors') through `PerCpu::get_unchecked`, as
//! Linux's `this_cpu_add` checks nothing: the `_unchecked` functions below take that
//! promise from their caller.
#![allow(unsafe_code)]

use crate::stock::MEMCG_CHARGE_BATCH;
use crate::sync::{AtomicI64, AtomicU64, Ordering};
use ksync::PerCpu;

pub use lru::vmstat::{NR_NODE_STAT_ITEMS, NodeStatItem};

/// Per-memcg events (`enum vm_event_item`, the part memcg counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum MemcgEvent {
    /// `PGFAULT`: page faults.
    PgFault,
    /// `PGMAJFAULT`: faults that needed I/O.
    PgMajFault,
    /// Faults on pages that had been evicted (refaults seen by this memcg).
    PgRefault,
    /// `PGSCAN`: pages scanned by reclaim.
    PgScan,
    /// `PGSTEAL`: pages reclaimed.
    PgSteal,
    /// `PGACTIVATE`.
    PgActivate,
    /// `PGDEACTIVATE`.
    PgDeactivate,
}

/// Number of [`MemcgEvent`]s.
pub const NR_MEMCG_EVENTS: usize = 7;

impl MemcgEvent {
    /// All events, in index order.
    pub const ALL: [MemcgEvent; NR_MEMCG_EVENTS] = [
        Self::PgFault,
        Self::PgMajFault,
        Self::PgRefault,
        Self::PgScan,
        Self::PgSteal,
        Self::PgActivate,
        Self::PgDeactivate,
    ];

    /// The name `memory.stat` uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::PgFault => "pgfault",
            Self::PgMajFault => "pgmajfault",
            Self::PgRefault => "pgrefault",
            Self::PgScan => "pgscan",
            Self::PgSteal => "pgsteal",
            Self::PgActivate => "pgactivate",
            Self::PgDeactivate => "pgdeactivate",
        }
    }
}

/// Counters of a memcg: the node items summed over nodes, then the events.
pub(crate) const NR_MEMCG_ITEMS: usize = NR_NODE_STAT_ITEMS + NR_MEMCG_EVENTS;

#[inline]
pub(crate) fn memcg_index_of_event(ev: MemcgEvent) -> usize {
    NR_NODE_STAT_ITEMS + ev as usize
}

/// One CPU's counters and their value at the last flush (`state[]`, `state_prev[]`).
///
/// Opaque outside the crate; reached through [`LruvecStatsPercpu`].
#[derive(Debug)]
pub struct PcpCounters<const N: usize> {
    state: [AtomicI64; N],
    state_prev: [AtomicI64; N],
}

impl<const N: usize> PcpCounters<N> {
    fn new() -> Self {
        Self {
            state: core::array::from_fn(|_| AtomicI64::new(0)),
            state_prev: core::array::from_fn(|_| AtomicI64::new(0)),
        }
    }

    /// `this_cpu_add()`: only the owning CPU writes `state`, so a plain load and store do.
    #[inline]
    fn add(&self, idx: usize, val: i64) {
        let c = &self.state[idx];
        c.store(
            c.load(Ordering::Relaxed).wrapping_add(val),
            Ordering::Relaxed,
        );
    }

    /// Delta since the last flush; records the current value as flushed.
    #[inline]
    fn take_delta(&self, idx: usize) -> i64 {
        let v = self.state[idx].load(Ordering::Relaxed);
        let prev = self.state_prev[idx].swap(v, Ordering::Relaxed);
        v.wrapping_sub(prev)
    }
}

/// Flushed totals: hierarchical, local (this memcg/lruvec only) and pending from children.
#[derive(Debug)]
pub(crate) struct AggCounters<const N: usize> {
    state: [AtomicI64; N],
    state_local: [AtomicI64; N],
    state_pending: [AtomicI64; N],
}

impl<const N: usize> AggCounters<N> {
    fn new() -> Self {
        Self {
            state: core::array::from_fn(|_| AtomicI64::new(0)),
            state_local: core::array::from_fn(|_| AtomicI64::new(0)),
            state_pending: core::array::from_fn(|_| AtomicI64::new(0)),
        }
    }

    /// Folds every CPU's delta and the children's pending into the totals and passes the
    /// sum on to `parent`'s pending.
    fn flush(&self, pcp: &PerCpu<impl AsRef<PcpCounters<N>>>, parent: Option<&Self>) {
        for idx in 0..N {
            let mut local = 0i64;
            for (_, c) in pcp.iter() {
                local = local.wrapping_add(c.as_ref().take_delta(idx));
            }
            let pending = self.state_pending[idx].swap(0, Ordering::Relaxed);
            let delta = local.wrapping_add(pending);
            if local != 0 {
                self.state_local[idx].fetch_add(local, Ordering::Relaxed);
            }
            if delta != 0 {
                self.state[idx].fetch_add(delta, Ordering::Relaxed);
                if let Some(p) = parent {
                    p.state_pending[idx].fetch_add(delta, Ordering::Relaxed);
                }
            }
        }
    }
}

impl<const N: usize> AsRef<PcpCounters<N>> for PcpCounters<N> {
    fn as_ref(&self) -> &PcpCounters<N> {
        self
    }
}

/// A lruvec's per-CPU counters (`lruvec_stats_percpu`), owned by `mem_cgroup_per_node`.
pub type LruvecStatsPercpu = PerCpu<PcpCounters<NR_NODE_STAT_ITEMS>>;

/// Creates the per-CPU counters of one lruvec.
pub(crate) fn lruvec_stats_percpu(nr_cpus: usize) -> LruvecStatsPercpu {
    PerCpu::new(nr_cpus, |_| PcpCounters::new())
}

/// `this_cpu_add(pn->lruvec_stats_percpu->state[idx], val)`, for a CPU the caller has
/// checked.
///
/// # Safety
///
/// `cpu < pcp.nr_cpus()`.
#[inline(always)]
pub(crate) unsafe fn lruvec_stats_add_unchecked(
    pcp: &LruvecStatsPercpu,
    cpu: usize,
    item: NodeStatItem,
    val: i64,
) {
    // SAFETY: the caller's promise.
    unsafe { pcp.get_unchecked(cpu) }.add(item as usize, val);
}

/// A lruvec's flushed totals (`struct lruvec_stats`).
#[derive(Debug)]
pub struct LruvecStats {
    agg: AggCounters<NR_NODE_STAT_ITEMS>,
}

impl LruvecStats {
    pub(crate) fn new() -> Self {
        Self {
            agg: AggCounters::new(),
        }
    }

    /// Flushes `pcp` into these totals and passes the delta to `parent`.
    pub(crate) fn flush(&self, pcp: &LruvecStatsPercpu, parent: Option<&LruvecStats>) {
        self.agg.flush(pcp, parent.map(|p| &p.agg));
    }

    /// Hierarchical total at the last flush (`lruvec_page_state()`).
    pub fn state(&self, item: NodeStatItem) -> i64 {
        self.agg.state[item as usize].load(Ordering::Relaxed)
    }

    /// This lruvec's own total at the last flush (`lruvec_page_state_local()`).
    pub fn state_local(&self, item: NodeStatItem) -> i64 {
        self.agg.state_local[item as usize].load(Ordering::Relaxed)
    }
}

/// One CPU's memcg counters plus its share of the update count (opaque).
#[derive(Debug)]
pub struct MemcgVmstatsPercpu {
    stats_updates: AtomicU64,
    counters: PcpCounters<NR_MEMCG_ITEMS>,
}

impl AsRef<PcpCounters<NR_MEMCG_ITEMS>> for MemcgVmstatsPercpu {
    fn as_ref(&self) -> &PcpCounters<NR_MEMCG_ITEMS> {
        &self.counters
    }
}

/// A memcg's per-CPU counters (`memcg->vmstats_percpu`).
pub type MemcgVmstatsPcp = PerCpu<MemcgVmstatsPercpu>;

/// A memcg's statistics: per-CPU counters and flushed totals (`memcg_vmstats_percpu`,
/// `memcg_vmstats`).
#[derive(Debug)]
pub struct MemcgVmstats {
    pcp: MemcgVmstatsPcp,
    agg: AggCounters<NR_MEMCG_ITEMS>,
    /// Updates not yet flushed, folded in from the CPUs in batches.
    stats_updates: AtomicU64,
}

impl MemcgVmstats {
    pub(crate) fn new(nr_cpus: usize) -> Self {
        Self {
            pcp: PerCpu::new(nr_cpus, |_| MemcgVmstatsPercpu {
                stats_updates: AtomicU64::new(0),
                counters: PcpCounters::new(),
            }),
            agg: AggCounters::new(),
            stats_updates: AtomicU64::new(0),
        }
    }

    /// `__this_cpu_add(memcg->vmstats_percpu->state[idx], val)`, then this memcg's level
    /// of `memcg_rstat_updated()`, on the one per-CPU slot both touch (Linux reaches it
    /// once, through `this_cpu_ptr()`), for a CPU the caller has checked: whether the walk
    /// goes on to the parent ([`Self::rstat_updated_unchecked`]).
    ///
    /// # Safety
    ///
    /// `cpu < self.nr_cpus()`.
    #[inline(always)]
    pub(crate) unsafe fn add_updated_unchecked(&self, cpu: usize, idx: usize, val: i64) -> bool {
        // SAFETY: the caller's promise.
        let statc = unsafe { self.pcp.get_unchecked(cpu) };
        statc.counters.add(idx, val);
        self.updated(statc, val)
    }

    /// One level of `memcg_rstat_updated()`, for a CPU the caller has checked. Returns
    /// `false` when a flush is already due, so the caller stops walking up (ancestors are
    /// at least as far behind).
    ///
    /// # Safety
    ///
    /// `cpu < self.nr_cpus()`.
    #[inline(always)]
    pub(crate) unsafe fn rstat_updated_unchecked(&self, cpu: usize, val: i64) -> bool {
        // SAFETY: the caller's promise.
        self.updated(unsafe { self.pcp.get_unchecked(cpu) }, val)
    }

    /// Number of CPUs the counters were built for.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.pcp.nr_cpus()
    }

    /// The flush threshold: `MEMCG_CHARGE_BATCH * nr_cpus` pending updates.
    #[inline]
    pub fn flush_threshold(&self) -> u64 {
        MEMCG_CHARGE_BATCH * self.pcp.nr_cpus() as u64
    }

    /// `memcg_vmstats_needs_flush()`.
    #[inline]
    pub fn needs_flush(&self) -> bool {
        self.stats_updates.load(Ordering::Relaxed) > self.flush_threshold()
    }

    /// Updates counted and folded into the memcg-wide count since the last flush.
    pub fn pending_updates(&self) -> u64 {
        self.stats_updates.load(Ordering::Relaxed)
    }

    /// One level of `memcg_rstat_updated()` on `statc`, this memcg's slot of the running
    /// CPU.
    #[inline(always)]
    fn updated(&self, statc: &MemcgVmstatsPercpu, val: i64) -> bool {
        if self.needs_flush() {
            return false;
        }
        let n = statc.stats_updates.load(Ordering::Relaxed) + val.unsigned_abs();
        if n < MEMCG_CHARGE_BATCH {
            statc.stats_updates.store(n, Ordering::Relaxed);
        } else {
            self.stats_updates.fetch_add(n, Ordering::Relaxed);
            statc.stats_updates.store(0, Ordering::Relaxed);
        }
        true
    }

    /// Folds this memcg's per-CPU deltas and its children's pending into its totals and
    /// passes them on to `parent` (one memcg of `mem_cgroup_css_rstat_flush()`).
    pub(crate) fn flush(&self, parent: Option<&MemcgVmstats>) {
        self.agg.flush(&self.pcp, parent.map(|p| &p.agg));
        for (_, c) in self.pcp.iter() {
            c.stats_updates.store(0, Ordering::Relaxed);
        }
        self.stats_updates.store(0, Ordering::Relaxed);
    }

    /// Hierarchical total of a node item at the last flush (`memcg_page_state()`).
    pub fn page_state(&self, item: NodeStatItem) -> i64 {
        self.agg.state[item as usize].load(Ordering::Relaxed)
    }

    /// This memcg's own total of a node item at the last flush.
    pub fn page_state_local(&self, item: NodeStatItem) -> i64 {
        self.agg.state_local[item as usize].load(Ordering::Relaxed)
    }

    /// Hierarchical event count at the last flush (`memcg_events()`).
    pub fn events(&self, ev: MemcgEvent) -> u64 {
        self.agg.state[memcg_index_of_event(ev)].load(Ordering::Relaxed) as u64
    }

    /// This memcg's own event count at the last flush.
    pub fn events_local(&self, ev: MemcgEvent) -> u64 {
        self.agg.state_local[memcg_index_of_event(ev)].load(Ordering::Relaxed) as u64
    }
}
