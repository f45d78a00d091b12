//! lru's host integration tests, one binary with a module per concept (`cargo test -p lru
//! --test suite`). The suites that read process-wide counters stay binaries of their own
//! (`folio_batches`, `list_head_writes`), and so do the loom models (`loom_*`, built only with
//! `--cfg loom`).
#[path = "../common/mod.rs"]
mod common;

mod classic_reclaim;
mod lruvec_ops;
mod memcg_fifo;
mod mglru_reclaim;
mod mglru_tiers;
mod proptest_lru;
