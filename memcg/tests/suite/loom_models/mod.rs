//! The loom models of memcg's lock-free code, built only with `--cfg loom`
//! (`RUSTFLAGS="--cfg loom" cargo test -p memcg --release --test suite`).
mod loom_support;

mod page_counter;
mod percpu_ref;
mod stock;
mod tree;
