//! memcg's host integration tests, one binary with a module per concept (`cargo test -p memcg
//! --test suite`). The tests that read or set process-wide state each run in a process of
//! their own (`rusty_fork_test!`: the binary runs itself for that one test): the lock-order
//! checker's (`lockdep_inversion`, `lockdep_order`: its order graph is global) and the ones
//! that read the global lock statistics and event counters (`memory_reclaim`,
//! `reclaim_walk`). Built with `--cfg loom`, the binary holds the loom models instead
//! (`loom_models`).
#[cfg(not(loom))]
#[path = "../common/mod.rs"]
mod common;

#[cfg(not(loom))]
mod charge_max;
#[cfg(not(loom))]
mod charge_stock;
#[cfg(not(loom))]
mod hierarchy;
#[cfg(not(loom))]
mod layout;
#[cfg(all(not(loom), debug_assertions))]
mod lockdep_inversion;
#[cfg(all(not(loom), debug_assertions))]
mod lockdep_order;
#[cfg(not(loom))]
mod memory_reclaim;
#[cfg(not(loom))]
mod proptest_hierarchy;
#[cfg(not(loom))]
mod proptest_percpu_ref;
#[cfg(not(loom))]
mod reclaim_protection;
#[cfg(not(loom))]
mod reclaim_request;
#[cfg(not(loom))]
mod reclaim_walk;
#[cfg(not(loom))]
mod release;
#[cfg(not(loom))]
mod stats;
#[cfg(not(loom))]
mod stock;
#[cfg(not(loom))]
mod uncharge;

#[cfg(loom)]
mod loom_models;
