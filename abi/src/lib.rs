//! The contract between the kernel and the host tools that boot it.
//!
//! Both sides compile this crate: the kernel to report, the runner (`qemu`) to decode. It
//! holds the exit codes written to QEMU's `isa-debug-exit` port, the kernel command line
//! grammar (with the benchmark's keys), the benchmark's catalog of scenarios, and the tags of
//! the line protocol the in-kernel tests and benchmarks print on the console.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod catalog;
pub mod cmdline;
pub mod coherence;
pub mod exit;
pub mod fault_spec;
pub mod report;

pub use bench::{BenchConfig, ScenarioSelection};
pub use cmdline::{
    Action, CmdlineError, Config, Crash, NothingSelected, QrMode, TestPattern, TestSelection,
};
pub use exit::ExitCode;
