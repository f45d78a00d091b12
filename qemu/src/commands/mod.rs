//! What each `kx` subcommand does: build what it needs, boot, decode, report, pick the exit.
//!
//! [`execute`] runs a parsed command line: one arm per subcommand, each in its own module
//! ([`guest`] for the commands that boot the kernel, [`test_list`], [`image`]) or in the
//! benchmark's ([`crate::bench::run`] for `compare` and `import`, [`crate::bench::qr`] for
//! `import --qr`, [`crate::bench::threads`] for `bench --host`).

pub mod guest;
pub mod image;
pub mod test_list;

pub use guest::{BENCH_TIMEOUT, cmdline_for};

use crate::cli::{Cli, Command, Options};
use crate::{RunError, RunnerExit};
use ::boot::Workspace;

/// Runs a parsed command line to completion and says how to exit.
pub fn execute(cli: &Cli) -> RunnerExit {
    match try_execute(cli) {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("kx: {e}");
            RunnerExit::for_error(&e)
        }
    }
}

fn try_execute(cli: &Cli) -> Result<RunnerExit, RunError> {
    let o = &cli.options;
    match &cli.command {
        Command::Help(text) => {
            print!("{text}");
            Ok(RunnerExit::Success)
        }
        Command::Compare(dirs) => crate::bench::run::compare(dirs, o.out.as_deref()),
        Command::Bench if o.bench.host => crate::bench::threads::bench(o),
        Command::ImportQr(images) => {
            crate::bench::qr::import(workspace(o)?.root(), images, o.out.as_deref())
        }
        Command::Import(log) => {
            crate::bench::run::import(workspace(o)?.root(), log, o.out.as_deref())
        }
        Command::TestList => test_list::run(&workspace(o)?, o),
        Command::Image => image::run(&workspace(o)?, o),
        Command::Summary | Command::Run | Command::Layout | Command::Test(_) | Command::Bench => {
            guest::run(cli, &workspace(o)?)
        }
    }
}

/// The workspace, once the files named on the command line are checked: each must exist
/// and be a file.
fn workspace(o: &Options) -> Result<Workspace, RunError> {
    for f in [&o.kernel, &o.image, &o.bench.linux_kernel]
        .into_iter()
        .flatten()
    {
        if f.is_dir() {
            return Err(RunError::NotAFile(f.clone()));
        }
        if !f.is_file() {
            return Err(RunError::NotFound(f.clone()));
        }
    }
    Ok(Workspace::locate()?)
}
