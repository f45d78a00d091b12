//! `kx test --list`: the in-kernel tests the kernel ELF registers, read from the ELF
//! without booting ([`crate::ktests`]).

use super::guest::read_tests;
use crate::cli::Options;
use crate::{RunError, RunnerExit};
use boot::{Workspace, build_kernel};

/// Lists the tests of `--kernel`'s ELF, or of the kernel built for `o.profile`.
pub fn run(ws: &Workspace, o: &Options) -> Result<RunnerExit, RunError> {
    let elf = match &o.kernel {
        Some(elf) => elf.clone(),
        None => build_kernel(ws, o.build())?.elf64,
    };
    print!("{}", crate::ktests::listing(&read_tests(&elf)?));
    Ok(RunnerExit::Success)
}
