//! The host runner: boots the kernel in QEMU and turns what happens into an outcome.
//!
//! A run is a [`launch::Launch`] (mode, vCPUs, memory, what to boot) turned into a QEMU
//! command line, started under a timeout that kills QEMU's whole process group
//! ([`process`]), with the serial console captured (and echoed when interactive). The QEMU
//! exit status is decoded with [`abi::ExitCode::from_qemu_status`] into an [`Outcome`], in
//! which a runner timeout is its own case, distinct from every kernel exit code. The
//! in-kernel test lines (`KTEST ...`) are parsed into per-case results ([`results`]).
//!
//! The `kx` binary ([`cli`], [`commands`]) builds the kernel with the `boot` crate and offers
//! `summary`, `test`, `run`, `bench`, `compare`, `import`, `layout` and `image`; the
//! benchmark's records, tables, plots and result directories are [`bench`](mod@bench)'s. Where the
//! benchmark's CPUs run: [`topology`] (the host's, from sysfs), [`placement`] (the choice of
//! host CPUs and its record), [`qmp`] (QEMU's vCPU thread ids); what else the host does
//! meanwhile: [`hostload`]. `unsafe` is confined to [`process`] (process group kill and
//! parent-death signal), [`accel`]'s `/dev/kvm` check (one `ioctl`) and
//! `bench::threads::sys` (affinity, clocks, mappings).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod accel;
pub mod bench;
pub mod booting;
pub mod cli;
pub mod coherence;
pub mod commands;
pub mod error;
pub mod exit;
pub mod firmware;
pub mod hash;
pub mod hostload;
pub mod ktests;
pub mod launch;
pub mod mode;
pub mod outcome;
pub mod placement;
pub mod process;
pub mod qmp;
pub mod results;
pub mod topology;

pub use error::RunError;
pub use exit::RunnerExit;
pub use launch::{Launch, Medium};
pub use mode::Mode;
pub use outcome::{Outcome, RunOutput};
pub use results::TestReport;
