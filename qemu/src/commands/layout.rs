//! `kx layout`: boots the kernel with `run=layout`, which prints the cache-line layout report
//! of the key structs as the kernel's own build lays them out. It takes the machine and
//! build options ([`crate::cli::BootArgs`]) and nothing else.

use super::guest::{Guest, run};
use crate::cli::Options;
use crate::{RunError, RunnerExit};

/// Boots and reports.
pub fn execute(o: &Options) -> Result<RunnerExit, RunError> {
    run(&Guest::Layout, o)
}
