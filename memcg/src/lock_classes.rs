//! The lock classes of the memcg hierarchy: the locks this crate declares, and where each
//! sits in the lock order.
//!
//! A class is what Linux's `lock_class_key` is to lockdep and lock_stat: a name, per-CPU
//! statistics and a node in the order graph (`ksync::lock_class!`). memcg declares the
//! classes of the locks it owns; the LRU's are `lru::lock_classes`.
//!
//! The order (outer first; the whole hierarchy is in docs/design.md, "The intended order"):
//! `memcg_tree` → `rstat_lock` → the lru locks (`lruvec->lru_lock` or `pgdat->lru_lock`),
//! and `memcg_tree` → `memcg_lru.lock` (reaping takes a memcg off every node's FIFO).
//! `memcg_stock.lock` is a leaf: the page counter it refills is atomic. lockdep
//! (`ksync::lockdep`) learns the order as the locks are taken and reports an inversion.

ksync::lock_class!(
    /// The memcg hierarchy's topology lock (Linux's `cgroup_mutex`).
    pub MemcgTreeLock, "memcg_tree"
);
ksync::lock_class!(
    /// Serialises stat flushes (Linux's `rstat_lock`).
    pub RstatLock, "rstat_lock"
);
ksync::lock_class!(
    /// One CPU's memcg charge stock (`memcg_stock.stock_lock`).
    pub StockLock, "memcg_stock.lock"
);
ksync::word_class!(
    /// The `usage` of a `page_counter` in the 802f1d model's layouts
    /// (`page_counter_802f1d`): a shared-word class, so a run counts how often another CPU
    /// charged or uncharged a counter between two writes of one (`ksync::handoff`).
    pub PageCounterUsageWord, "page_counter->usage"
);
