//! lru's host integration tests, one binary with a module per concept (`cargo test -p lru
//! --test suite`). The tests that read process-wide counters (`folio_batches`,
//! `list_head_writes`) each run in a process of their own (`rusty_fork_test!`: the binary
//! runs itself for that one test), so no other test's thread adds to what they read. Built
//! with `--cfg loom`, the binary holds the loom models instead (`loom_models`).
#[cfg(not(loom))]
#[path = "../common/mod.rs"]
mod common;

#[cfg(not(loom))]
mod classic_reclaim;
#[cfg(not(loom))]
mod folio_batches;
#[cfg(not(loom))]
mod list_head_writes;
#[cfg(not(loom))]
mod lruvec_ops;
#[cfg(not(loom))]
mod memcg_fifo;
#[cfg(not(loom))]
mod mglru_reclaim;
#[cfg(not(loom))]
mod mglru_tiers;
#[cfg(not(loom))]
mod proptest_lru;

#[cfg(loom)]
mod loom_models;
