//! memcg's host integration tests, one binary with a module per concept (`cargo test -p memcg
//! --test suite`). The suites that read or set process-wide state stay binaries of their own:
//! the lock-order checker's (`lockdep_inversion`, `lockdep_order`), the ones that read the
//! global lock statistics and event counters (`memory_reclaim`, `reclaim_walk`), and the loom
//! models (`loom_*`, built only with `--cfg loom`).
#[path = "../common/mod.rs"]
mod common;

mod charge_max;
mod charge_stock;
mod hierarchy;
mod layout;
mod proptest_hierarchy;
mod proptest_percpu_ref;
mod reclaim_protection;
mod reclaim_request;
mod release;
mod stats;
mod stock;
mod uncharge;
