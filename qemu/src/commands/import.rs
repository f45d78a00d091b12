//! `kx import LOG`: a serial log from a real machine becomes a results directory
//! ([`crate::bench::run::import`]); `kx import --qr IMAGE...` reads the same records from
//! photos or screenshots of the QR codes the kernel shows ([`crate::bench::qr`]). Nothing
//! boots.

use crate::cli::CliError;
use crate::{RunError, RunnerExit};
use boot::Workspace;
use clap::Args;
use std::path::PathBuf;

/// `import`'s arguments.
// The field docs are clap's help text (`<UTC timestamp>` is a placeholder, not HTML).
#[allow(rustdoc::invalid_html_tags)]
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The serial log (one); with --qr the images (PNG or JPEG, as many as hold the codes)
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// Read the QR codes in photos or screenshots instead of a serial log
    #[arg(long)]
    qr: bool,
    /// The results directory [default: results/<UTC timestamp>/]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// What `import` reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// One serial log.
    Log(PathBuf),
    /// Images of the QR codes (`--qr`).
    Qr(Vec<PathBuf>),
}

/// `import`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// What it reads.
    pub source: Source,
    /// The results directory (`None`: a new one under results/).
    pub out: Option<PathBuf>,
}

impl ImportArgs {
    /// Without `--qr`, exactly one file: a second is an error, not ignored.
    pub(super) fn resolve(self) -> Result<Import, CliError> {
        let mut files = self.files;
        let source = if self.qr {
            Source::Qr(files)
        } else if files.len() > 1 {
            return Err(CliError::UnexpectedArgument(files[1].display().to_string()));
        } else {
            Source::Log(files.remove(0))
        };
        Ok(Import {
            source,
            out: self.out,
        })
    }
}

/// Imports the log or the images into a results directory.
pub fn execute(i: &Import) -> Result<RunnerExit, RunError> {
    let ws = Workspace::locate()?;
    match &i.source {
        Source::Log(log) => crate::bench::run::import(ws.root(), log, i.out.as_deref()),
        Source::Qr(images) => crate::bench::qr::import(ws.root(), images, i.out.as_deref()),
    }
}
