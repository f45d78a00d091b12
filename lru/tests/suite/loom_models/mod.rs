//! The loom models of lru's lock-free code, built only with `--cfg loom`
//! (`RUSTFLAGS="--cfg loom" cargo test -p lru --release --test suite`).
mod loom_support;

mod batch;
mod hlist_nulls;
mod pagecache;
mod rcu;
