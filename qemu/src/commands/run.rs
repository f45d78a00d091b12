//! `kx run`: boots the kernel with the `--append` command line as is (empty by default) and
//! reports how it ended. It takes the machine and build options ([`crate::cli::BootArgs`])
//! and nothing else.

use super::guest::{Guest, run};
use crate::cli::Options;
use crate::{RunError, RunnerExit};

/// Boots and reports.
pub fn execute(o: &Options) -> Result<RunnerExit, RunError> {
    run(&Guest::Run, o)
}
