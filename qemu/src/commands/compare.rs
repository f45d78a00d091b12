//! `kx compare DIR...`: compares benchmark results directories, the first the baseline of
//! the ratios, and writes an HTML page ([`crate::bench::run::compare`]). Nothing boots.

use crate::{RunError, RunnerExit};
use clap::Args;
use std::path::PathBuf;

/// `compare`'s arguments, which are all it needs.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct Compare {
    /// Results directories, the first the baseline of the ratios
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// The HTML page [default: next to the first DIR]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Compares the directories.
pub fn execute(c: &Compare) -> Result<RunnerExit, RunError> {
    crate::bench::run::compare(&c.dirs, c.out.as_deref())
}
