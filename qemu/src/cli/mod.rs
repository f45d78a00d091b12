//! The parts of the `kx` command line that several subcommands share: the option groups
//! they flatten in and what those resolve to. Each subcommand's own arguments, and the
//! subcommand enum itself, are in [`crate::commands`] (one file per subcommand).
//!
//! - [`Machine`] and [`Build`] (together [`BootArgs`]): what every command that boots takes;
//!   resolved into [`Options`] with the command's defaults and the checks that span several
//!   options: `--nodes` must fit the vCPUs and the memory, `--kernel` is for direct mode
//!   and `--image` for the others.
//! - [`BenchOptions`]: `bench`'s own, each benchmark value a [`KernelValue`] checked by the
//!   kernel's own command-line parser (`abi::cmdline`) as it is parsed, so the runner accepts
//!   exactly what the kernel does.
//! - [`CliError`]: every mistake, one line (clap's own without its usage:
//!   [`boot::usage`]); the runner prints it with one line pointing at the help and exits with
//!   [`crate::RunnerExit::Usage`]. Files that do not exist are checked when the command runs
//!   ([`crate::RunnerExit::NotFound`]).

mod bench_options;
mod error;
mod machine;
mod values;

pub use bench_options::{BenchOptions, TCG_MEMCGS, coherence_scenarios};
pub use error::{CliError, NodesProblem};
pub use machine::{BootArgs, Build, Machine, Options, host_cores};
pub use values::KernelValue;

/// `bench`'s guest memory without `--mem`: a heap (a quarter of it) with room for both of
/// seed002's variants at 10,000 memcgs each (about 4.3 KiB a memcg at 2 vCPUs).
pub const BENCH_MEM_MIB: u32 = 1024;
/// vCPUs of the commands other than `bench` without `--smp`.
pub const DEFAULT_SMP: u32 = 2;
/// Guest memory (MiB) of the commands other than `bench` without `--mem`.
pub const DEFAULT_MEM_MIB: u32 = 256;
/// Least memory per NUMA node, MiB.
pub const MIN_NODE_MIB: u32 = 16;
/// Most NUMA nodes (the kernel's `MAX_NUMNODES`).
pub const MAX_NODES: u32 = 64;
