//! Per-CPU counts of events that the benchmark's premises need and that no Linux stat item
//! covers: writes to the classic list heads (`lruvec->lists[]`), lruvec stat updates by
//! the path they took, and the increments of MGLRU's lockless `evicted[]` and `refaulted[]`
//! counters per type and tier (seed 000: which of them land on the FIFO node's line
//! depends on the tier, and the counters themselves are reset as generations pass, so their
//! values cannot tell how often they were written).
//!
//! Seed 001's mechanism is the `lru_lock` holder writing the LRU list heads (line 1 of
//! `mem_cgroup_per_node`) while other CPUs read the read-mostly line it is paired with, and
//! its patch 2 moves stat updates off the lruvec. A head is written when a folio is added to
//! its list (`list_add` writes `head->next`, `list_add_tail` `head->prev`) and when the
//! first or last folio is deleted. Under MGLRU the generation lists live in
//! `lru_gen_folio` and `lists[]` is never written, so a benchmark of seed 001's pairing must
//! count these writes to show that it ran on the classic lists. A stat update goes through
//! the lruvec (`__mod_lruvec_state(lruvec, ..)`, which reads `lruvec->pgdat` and the
//! memcg's read-mostly line) or straight to the memcg and node (patch 2's
//! `mod_memcg_lruvec_state`-style path); memcg counts each at its entry point.
//!
//! The counts are kept per CPU (`this_cpu_inc`-style: a plain load and store of the CPU's
//! own padded slot, never a locked RMW, never a line another CPU writes), indexed by
//! [`ksync::this_cpu`], outside every struct the layouts describe. A reader sums the slots;
//! a benchmark takes the difference over a run. Two threads that declare the same CPU id
//! may lose counts (as two tasks on one CPU cannot in Linux).

#[cfg(not(loom))]
use ksync::{CachePadded, MAX_CPUS};

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU64, Ordering};

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum LruEvent {
    /// A write to a classic list head (`lruvec->lists[]`).
    ListHeadWrite,
    /// A lruvec stat update through the lruvec (`__mod_lruvec_state`).
    StatThroughLruvec,
    /// A lruvec stat update with the memcg and node the caller knows (seed 001's patch 2).
    StatDirect,
    /// A node walked past to find the tail of a memcg FIFO bin (`hlist_nulls_add_tail_rcu`
    /// in `lru_gen_rotate_memcg()` before seed 002's cached tail).
    FifoTailStep,
}

/// Number of [`LruEvent`]s.
pub const NR_LRU_EVENTS: usize = 4;

impl LruEvent {
    /// Every event, in index order.
    pub const ALL: [LruEvent; NR_LRU_EVENTS] = [
        Self::ListHeadWrite,
        Self::StatThroughLruvec,
        Self::StatDirect,
        Self::FifoTailStep,
    ];

    /// The name in benchmark counters.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::ListHeadWrite => "list_head_writes",
            Self::StatThroughLruvec => "stat_updates_lruvec",
            Self::StatDirect => "stat_updates_direct",
            Self::FifoTailStep => "memcg_fifo_tail_steps",
        }
    }
}

/// The lockless `lru_gen_folio` counters whose increments are counted per type and tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum TierCounter {
    /// `evicted[hist][type][tier]` (`lru_gen_eviction`).
    Evicted,
    /// `refaulted[hist][type][tier]` (`lru_gen_refault`).
    Refaulted,
}

/// Slots per [`TierCounter`]: one per type and tier.
#[cfg(not(loom))]
const TIER_SLOTS: usize = crate::folio::ANON_AND_FILE * crate::lru_gen::MAX_NR_TIERS;

#[cfg(not(loom))]
static TIERS: [CachePadded<[[AtomicU64; TIER_SLOTS]; 2]>; MAX_CPUS] =
    [const { CachePadded([const { [const { AtomicU64::new(0) }; TIER_SLOTS] }; 2]) }; MAX_CPUS];

/// Counts one increment of `counter[hist][ty][tier]` on this CPU.
#[inline]
pub fn count_tier(counter: TierCounter, ty: usize, tier: usize) {
    #[cfg(not(loom))]
    if let Some(slot) = TIERS.get(ksync::this_cpu())
        && let Some(c) = slot.0[counter as usize].get(ty * crate::lru_gen::MAX_NR_TIERS + tier)
    {
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
    #[cfg(loom)]
    let _ = (counter, ty, tier);
}

/// Increments of `counter[..][ty][tier]` so far, every CPU's.
#[must_use]
pub fn tier_total(counter: TierCounter, ty: usize, tier: usize) -> u64 {
    #[cfg(not(loom))]
    {
        let i = ty * crate::lru_gen::MAX_NR_TIERS + tier;
        TIERS
            .iter()
            .filter_map(|s| s.0[counter as usize].get(i))
            .map(|c| c.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
    #[cfg(loom)]
    {
        let _ = (counter, ty, tier);
        0
    }
}

#[cfg(not(loom))]
static EVENTS: [CachePadded<[AtomicU64; NR_LRU_EVENTS]>; MAX_CPUS] =
    [const { CachePadded([const { AtomicU64::new(0) }; NR_LRU_EVENTS]) }; MAX_CPUS];

/// Counts `n` events `ev` on this CPU.
#[inline]
pub fn count(ev: LruEvent, n: u64) {
    #[cfg(not(loom))]
    if let Some(slot) = EVENTS.get(ksync::this_cpu()) {
        let c = &slot.0[ev as usize];
        c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }
    #[cfg(loom)]
    let _ = (ev, n);
}

/// Events `ev` so far, every CPU's.
#[must_use]
pub fn total(ev: LruEvent) -> u64 {
    #[cfg(not(loom))]
    {
        EVENTS
            .iter()
            .map(|s| s.0[ev as usize].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
    #[cfg(loom)]
    {
        let _ = ev;
        0
    }
}

/// Events `ev` counted so far on the calling CPU alone (a test that runs its work on one
/// thread reads its own count, whatever other threads do meanwhile).
#[must_use]
pub fn this_cpu_count(ev: LruEvent) -> u64 {
    #[cfg(not(loom))]
    {
        EVENTS
            .get(ksync::this_cpu())
            .map_or(0, |s| s.0[ev as usize].load(Ordering::Relaxed))
    }
    #[cfg(loom)]
    {
        let _ = ev;
        0
    }
}

/// Writes to the classic list heads so far ([`LruEvent::ListHeadWrite`]).
#[must_use]
pub fn list_head_writes() -> u64 {
    total(LruEvent::ListHeadWrite)
}
