//! `kx summary`: boots the kernel with `run=summary`, which prints the system summary (the
//! CPUs that came up, memory, NUMA nodes and zones). It takes the machine and build options
//! ([`crate::cli::BootArgs`]) and nothing else.

use super::guest::{Guest, run};
use crate::cli::Options;
use crate::{RunError, RunnerExit};

/// Boots and reports.
pub fn execute(o: &Options) -> Result<RunnerExit, RunError> {
    run(&Guest::Summary, o)
}
