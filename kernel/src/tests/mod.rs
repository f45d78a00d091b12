//! In-kernel tests, one file per subsystem. Each test is a function marked `#[ktest]`
//! (`#[ktest(slow)]` for one that runs only when named), which registers it with
//! [`crate::ktest`]; no table lists them.

mod bench_platform;
mod boot;
pub mod case;
mod coherence;
mod fault_arch;
mod mm;
mod msr;
mod page_alloc;
mod rcu;
mod smp;
mod traps;
mod vm;
