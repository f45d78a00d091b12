//! `kx test [NAME...]`: boots the kernel with `run=test` (all in-kernel tests, or the named
//! ones: a name or a `PREFIX*`) and reports each case; `kx test --list` lists the tests the
//! kernel ELF registers without booting ([`crate::ktests`]). A name that selects nothing is
//! refused from the ELF's registrations before anything boots ([`super::guest`]).

use super::guest::{Guest, read_tests, run, workspace};
use crate::cli::{BootArgs, CliError, Options};
use crate::{RunError, RunnerExit};
use boot::build_kernel;
use clap::Args;

/// `test`'s arguments.
#[derive(Args, Debug)]
pub struct TestArgs {
    /// The in-kernel tests to run, by name or `PREFIX*`, separated by spaces or commas
    /// [default: all]
    #[arg(value_name = "NAME", conflicts_with = "list")]
    names: Vec<String>,
    /// List the tests the kernel registers (`#[ktest]`) instead of running them: the
    /// kernel is built, not booted
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    boot: BootArgs,
}

/// `test`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Test {
    /// The tests to run (empty: all).
    pub names: Vec<String>,
    /// `--list`: list them instead (`names` is then empty).
    pub list: bool,
    /// The machine and the build.
    pub options: Options,
}

impl TestArgs {
    pub(super) fn resolve(self) -> Result<Test, CliError> {
        Ok(Test {
            names: self.names,
            list: self.list,
            options: self.boot.options()?,
        })
    }
}

/// Runs the tests, or lists them.
pub fn execute(t: &Test) -> Result<RunnerExit, RunError> {
    if t.list {
        return list(&t.options);
    }
    run(&Guest::Test(t.names.clone()), &t.options)
}

/// Lists the tests of `--kernel`'s ELF, or of the kernel built for `o.profile`.
fn list(o: &Options) -> Result<RunnerExit, RunError> {
    let ws = workspace(o)?;
    let elf = match &o.kernel {
        Some(elf) => elf.clone(),
        None => build_kernel(&ws, o.build())?.elf64,
    };
    print!("{}", crate::ktests::listing(&read_tests(&elf)?));
    Ok(RunnerExit::Success)
}
