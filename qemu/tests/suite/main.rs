//! The runner's integration tests, one binary with a module per concept (`cargo test -p
//! qemu --test suite`): the results pipeline on synthetic logs (`bench_pipeline`), the `kx`
//! binary's exit statuses (`cli_exit`) and the host-thread benchmark end to end
//! (`host_bench`). None of them boots QEMU; the ones that load or measure the host's cores
//! take [`common::host_to_itself`].
#[path = "../common/mod.rs"]
mod common;
#[path = "../../../tests/src/results_dir.rs"]
mod results_dir;

mod bench_pipeline;
mod cli_exit;
mod host_bench;
