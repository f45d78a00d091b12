//! The lock classes of the LRU: the locks this crate declares, and where each sits in the
//! lock order.
//!
//! A class is what Linux's `lock_class_key` is to lockdep and lock_stat: a name, per-CPU
//! statistics and a node in the order graph (`ksync::lock_class!`). Each crate declares the
//! classes of the locks it owns, so a new lock is added next to the code that takes it;
//! `ksync` knows none of its users' locks.
//!
//! The order (outer first; the whole hierarchy is in docs/design.md, "The intended order"):
//! `lru_drain_mutex` → `cpu_fbatches.lock` → `lruvec->lru_lock` or `pgdat->lru_lock`; memcg's
//! `memcg_tree` → `rstat_lock` → the lru locks, and `memcg_tree` → `memcg_lru.lock`. The lru
//! locks, `memcg_lru.lock` and ksync's `rcu_callbacks` (`ksync::rcu::RcuCallbackLock`) are
//! leaves: nothing is taken while one of them is held, and two lru locks are never held at
//! once. lockdep (`ksync::lockdep`) learns the
//! order as the locks are taken and reports an inversion.

ksync::lock_class!(
    /// Serialises `lru_add_drain_all` (`lru_drain_mutex`).
    pub LruDrainLock, "lru_drain_mutex"
);
ksync::lock_class!(
    /// One CPU's folio batches (`cpu_fbatches.lock`, a local_lock in Linux, and here
    /// where the platform's CPU ids are CPUs: `ksync::LocalLock`).
    pub FbatchLock, "cpu_fbatches.lock"
);
ksync::lock_class!(
    /// The sum of the stats of an `lru_add_drain_all` whose CPUs each drain their own: a
    /// leaf taken once per CPU after its drain (Linux's `lru_add_drain_all` keeps none; it
    /// only waits for the work).
    pub LruDrainStatsLock, "lru_add_drain_all stats"
);
ksync::lock_class!(
    /// A node's memcg FIFO lock (`pgdat->memcg_lru.lock`).
    pub MemcgLruLock, "memcg_lru.lock"
);
ksync::lock_class!(
    /// The per-node LRU lock every lruvec of a node shares (`pgdat->lru_lock`, before
    /// Alex Shi's series; seed 004's variant A).
    pub PgdatLruLock, "pgdat->lru_lock"
);
ksync::lock_class!(
    /// A lruvec's own LRU lock (`lruvec->lru_lock`, per memcg per node).
    pub LruLock, "lruvec->lru_lock"
);
ksync::word_class!(
    /// MGLRU's lockless `lrugen->refaulted[hist][type][tier]` counters, which every refault
    /// adds to (`lru_gen_refault`): a shared-word class, so a run counts how often another
    /// CPU added to a counter between two additions of one CPU (`ksync::handoff`).
    pub RefaultedWord, "lru_gen->refaulted[]"
);
