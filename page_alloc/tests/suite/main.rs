//! page_alloc's host integration tests, one binary with a module per concept (`cargo test
//! -p page_alloc --test suite`): the allocator's unit tests over made-up physical memory,
//! its model-based property test, and its concurrent threads.
#[path = "../common/mod.rs"]
mod common;

mod page_alloc;
mod page_alloc_proptest;
mod page_alloc_threads;
