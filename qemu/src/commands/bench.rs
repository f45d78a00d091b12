//! `kx bench` (the default command): the benchmark scenarios in QEMU ([`super::guest`], then
//! [`crate::bench::run`]), or with `--host` on pinned host threads
//! ([`crate::bench::threads`]). Its options are the machine's, the build's and the
//! benchmark's own ([`BenchOptions`]); `--cpus` must fit in `--smp` (whose default here is
//! every host core) or, with `--host`, in the cores this process may run on.

use super::guest::{Guest, run};
use crate::cli::{
    BENCH_MEM_MIB, BenchOptions, Build, CliError, Machine, Options, TCG_MEMCGS, host_cores,
};
use crate::{RunError, RunnerExit};
use clap::Args;
use std::path::PathBuf;

/// `bench`'s arguments.
// The field docs are clap's help text (`<UTC timestamp>` is a placeholder, not HTML).
#[allow(rustdoc::invalid_html_tags)]
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    machine: Machine,
    #[command(flatten)]
    bench: BenchOptions,
    /// The results directory [default: results/<UTC timestamp>/]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    build: Build,
}

impl BenchArgs {
    /// The benchmark's options: the machine with `bench`'s defaults (every host core,
    /// [`BENCH_MEM_MIB`]), the kernel keys checked together, and under QEMU seed002's memcg
    /// counts cut to [`TCG_MEMCGS`] unless given.
    pub(super) fn resolve(self) -> Result<Options, CliError> {
        let b = self.bench;
        b.check()?;
        if b.host {
            // Clap has refused the machine's options: only the benchmark's remain.
            let cores = host_cores();
            if let Some(cpus) = b.largest_cpus().filter(|c| *c > cores) {
                return Err(CliError::CpusAboveHost { cpus, cores });
            }
            return Ok(Options {
                out: self.out,
                bench: b,
                profile: self.build.profile(),
                quiet: self.build.quiet(),
                ..Options::default()
            });
        }
        let mut o = self
            .machine
            .options(&self.build, host_cores(), BENCH_MEM_MIB)?;
        let smp = o.smp;
        if let Some(cpus) = b.largest_cpus().filter(|c| *c > smp) {
            return Err(CliError::CpusAboveSmp { cpus, smp });
        }
        o.out = self.out;
        o.bench = b;
        let b = &mut o.bench;
        if b.memcgs.is_none() && !b.quick {
            b.memcgs = Some(TCG_MEMCGS);
        }
        Ok(o)
    }
}

/// Runs the benchmark: on host threads with `--host`, else booted in QEMU.
pub fn execute(o: &Options) -> Result<RunnerExit, RunError> {
    if o.bench.host {
        crate::bench::threads::bench(o)
    } else {
        run(&Guest::Bench, o)
    }
}
