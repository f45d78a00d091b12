//! The host integration tests, one binary with a module per concept (`cargo test -p tests
//! --test suite`; one module: `cargo test -p tests --test suite in_kernel::`). The tests of
//! all modules run on the harness's threads in one process: the kernel is built once for all
//! of them, and every QEMU they start goes through the harness's one lock
//! ([`tests::one_qemu_at_a_time`]), so two never share the machine's two cores.
#![forbid(unsafe_code)]

mod bench_cmdline;
mod bench_cost;
mod bench_linux;
mod bench_run;
mod code_layout;
mod coherence;
mod cpu_models;
mod failures;
mod fault_arch;
mod in_kernel;
mod page_alloc;
mod profile;
mod qr_import;
mod readme;
mod smp;
mod usb_boot;
mod vm;
