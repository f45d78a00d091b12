//! The lock classes of the page allocator: `pcp->lock` (outer) and `zone->lock`, and nothing
//! else is taken under them. The fault core's classes are `mm::lock_classes`, memcg's and
//! the LRU's `memcg::lock_classes` and `page::lock_classes`.
//!
//! A class is what Linux's `lock_class_key` is to lockdep and lock_stat: a name, per-CPU
//! statistics and a node in the order graph (`ksync::lock_class!`).

ksync::lock_class!(
    /// A zone's per-CPU page list lock (`pcp->lock`).
    pub PcpLock, "pcp->lock"
);
ksync::lock_class!(
    /// A zone's buddy free-list lock (`zone->lock`).
    pub ZoneLock, "zone->lock"
);
