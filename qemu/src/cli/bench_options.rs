//! `kx bench`'s own options ([`BenchOptions`]), flattened into the `bench` subcommand: each
//! benchmark option is a validated kernel key value ([`super::KernelValue`]) or a switch of
//! the runner's (host threads, pinning, the Linux reference, the coherence plugin).

use super::error::CliError;
use super::values::{KernelValue, kernel_value};
use clap::Args;
use std::path::PathBuf;

/// seed002's memcg counts of a `kx bench` in QEMU without `--memcgs`: the kernel's default
/// leaves out 10,000 (under TCG its setup takes about a minute per variant and CPU count and
/// a tail-walk request 10-30 s: past the 10-minute budget of the default run);
/// `--memcgs 10,1500,10000` adds it, and host runs and real machines run it by default.
pub const TCG_MEMCGS: KernelValue = KernelValue::fixed("memcgs", "10,1500");

/// `kx bench`'s own options, as validated kernel key values (`None`: the kernel's default).
#[derive(Args, Clone, Debug, Default, PartialEq, Eq)]
#[command(next_help_heading = "Benchmark (kernel keys in parentheses; defaults are the kernel's)")]
pub struct BenchOptions {
    /// Run the scenarios on pinned host threads instead of booting, with Linux's own fault
    /// path as the `linux` reference (no QEMU needed, none of its options apply)
    #[arg(long, conflicts_with_all = QEMU_ONLY)]
    pub host: bool,
    /// Pin vCPUs (or --host threads) to SMT siblings too [default: one per physical core;
    /// vCPUs beyond the cores are left unpinned, with a warning]
    #[arg(long)]
    pub smt: bool,
    /// Refuse to start when other processes keep the host busy (more than 0.1 core over the
    /// 1 s sampled before the run): exit status 15
    #[arg(long)]
    pub strict: bool,
    /// Short run for tests and CI (quick=1: 2 rounds of 0.1 s, CPUs 1 and 2)
    #[arg(long)]
    pub quick: bool,
    /// all | NAME[,NAME...] (scenarios=)
    #[arg(long, value_name = "LIST", value_parser = kernel_value("scenarios"))]
    pub scenarios: Option<KernelValue>,
    /// CPU counts, e.g. 1,2,4, increasing, each <= --smp (bench_cpus=) [default: 1, 2, 4,
    /// ... up to --smp]
    #[arg(long, value_name = "LIST", value_parser = kernel_value("bench_cpus"))]
    pub cpus: Option<KernelValue>,
    /// Measured rounds per variant, 1..=100, a multiple of --instances (rounds=) [default:
    /// 4, quick 2; --coherence 1]
    #[arg(long, value_name = "N", value_parser = kernel_value("rounds"))]
    pub rounds: Option<KernelValue>,
    /// Instances of each variant per point, 1..=16, each built afresh at a new placement
    /// and measured for rounds/instances rounds (instances=) [default: 4, quick 2;
    /// --coherence 1]
    #[arg(long, value_name = "N", value_parser = kernel_value("instances"))]
    pub instances: Option<KernelValue>,
    /// Seconds per run, 0.01..=3600, e.g. 0.5 (seconds=) [default: 0.5, quick 0.1]
    #[arg(long, value_name = "S", value_parser = kernel_value("seconds"))]
    pub seconds: Option<KernelValue>,
    /// seed002's memcg counts, e.g. 10,1500 (memcgs=) [default: 10,1500,10000; kx bench in
    /// QEMU: 10,1500]
    #[arg(long, value_name = "LIST", value_parser = kernel_value("memcgs"))]
    pub memcgs: Option<KernelValue>,
    /// Add instance blocks until every comparison's 95% interval half-width is at most PCT
    /// percent, 0.01..=100 (ci_width=) [default: none, a fixed number of instances]
    #[arg(long, value_name = "PCT", value_parser = kernel_value("ci_width"))]
    pub ci_width: Option<KernelValue>,
    /// Stop adding instance blocks once the benchmark has run this long, pro rata per point,
    /// 1..=86400 (budget=) [default: none]
    #[arg(long, value_name = "SECS", value_parser = kernel_value("budget"))]
    pub budget: Option<KernelValue>,
    /// Lock statistics: `premises` records only the lock classes the scenarios' premises
    /// read, so the other locks on the measured path cost what they cost without
    /// CONFIG_LOCK_STAT; `all` records every class (the runs' `locks` and the HTML lock
    /// table list every lock taken, and every locked path pays for it, A and B alike)
    /// (lock_stat=) [default: premises]
    #[arg(long, value_name = "WHICH", value_parser = kernel_value("lock_stat"))]
    pub lock_stat: Option<KernelValue>,
    /// After the benchmark, boot Debian's Linux (linux-image-cloud-amd64) in the same QEMU
    /// as the `linux` reference rows, fetching it with apt-get into the kx cache if needed (a
    /// default run, not --quick, does this when the kernel is in the cache already): config
    /// `anon`, and in a run that is not --quick also `shmem` (--linux-shmem)
    #[arg(long)]
    pub linux: bool,
    /// The same with this Linux image (also $KX_LINUX_KERNEL)
    #[arg(long, value_name = "FILE")]
    pub linux_kernel: Option<PathBuf>,
    /// The reference (as --linux) with its cycles' pages mapped shared (MAP_SHARED |
    /// MAP_ANONYMOUS: a shmem object per cycle, truncated at its munmap), Linux's
    /// counterpart of seed001's shmem config, config `shmem`: alone it replaces the `anon`
    /// reference, with --linux it boots after it (a default run boots both)
    #[arg(long)]
    pub linux_shmem: bool,
    /// Count the cache lines that move between the vCPUs, per run, under the coherence
    /// plugin (TCG only; no Linux reference): transfers per operation and the hot lines with
    /// the code that moved them, in the terminal, results.json and coherence.csv
    #[arg(long, conflicts_with_all = ["host", "linux", "linux_kernel", "linux_shmem", "image"])]
    pub coherence: bool,
    /// Leave out the cost boot: after the timed boot, the same scenarios at one vCPU under
    /// the coherence plugin's counting mode, for each variant's instructions and locked RMWs
    /// per operation, and the same counts per page for the Linux reference (about a
    /// minute; a prebuilt --image has no cost boot)
    #[arg(long, conflicts_with_all = ["host", "coherence"])]
    pub no_cost: bool,
    /// With --coherence: run every vCPU on one host thread, round-robin (QEMU's
    /// `-accel tcg,thread=single`), so the vCPUs interleave at the emulator's time slices
    /// instead of the host scheduler's: the deterministic interleaving to compare
    /// oversubscribed counts with
    #[arg(long, requires = "coherence")]
    pub tcg_single: bool,
    /// With --coherence: each vCPU's private cache in the plugin's model, in KiB (a line
    /// not touched since that much else was leaves the cache, so old writes stop counting)
    /// [default: 1024]
    #[arg(long, value_name = "KIB", requires = "coherence",
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub cache_kib: Option<u64>,
    /// With --coherence: the ways of that cache [default: 8]
    #[arg(long, value_name = "N", requires = "coherence",
          value_parser = clap::value_parser!(u32).range(1..=32))]
    pub cache_ways: Option<u32>,
    /// With --coherence: how many hot lines the plugin reports per run and unit size (the
    /// mechanism figures count the seed's fields on these lines only) [default: 16]
    #[arg(long, value_name = "N", requires = "coherence",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub hot_lines: Option<u32>,
}

/// The options `bench --host` refuses: QEMU's, the machine's and the Linux reference's
/// (which boots in QEMU). Clap's ids, the fields' names.
const QEMU_ONLY: [&str; 12] = [
    "mode",
    "smp",
    "mem",
    "nodes",
    "timeout",
    "accel",
    "append",
    "kernel",
    "image",
    "linux",
    "linux_kernel",
    "linux_shmem",
];

impl BenchOptions {
    /// The kernel command-line words these options stand for.
    #[must_use]
    pub fn kernel_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        if self.coherence && self.scenarios.is_none() {
            keys.push(format!("scenarios={}", coherence_scenarios()));
        }
        for value in [
            &self.scenarios,
            &self.cpus,
            &self.rounds,
            &self.instances,
            &self.seconds,
            &self.memcgs,
            &self.ci_width,
            &self.budget,
            &self.lock_stat,
        ]
        .into_iter()
        .flatten()
        {
            keys.push(value.to_string());
        }
        if self.quick {
            keys.push("quick=1".into());
        }
        if self.coherence {
            keys.push("objects=1".into());
            // Counts need no timing interval: one instance of one round unless asked.
            if self.instances.is_none() {
                keys.push("instances=1".into());
                if self.rounds.is_none() {
                    keys.push("rounds=1".into());
                }
            }
        }
        keys
    }

    /// Checks the kernel keys together (each was checked alone as it was parsed): `rounds`
    /// must be a multiple of `instances`; and the coherence model's cache geometry.
    pub fn check(&self) -> Result<(), CliError> {
        let line = format!("run=bench {}", self.kernel_keys().join(" "));
        if let Err(e) = abi::cmdline::parse(&line, false) {
            return Err(CliError::Arguments(e.to_string()));
        }
        let mut model = coherence::Config::new(0, PathBuf::new());
        self.coherence_model(&mut model);
        for g in model.geometries() {
            g.check()
                .map_err(|why| CliError::Arguments(format!("--cache-kib/--cache-ways: {why}")))?;
        }
        Ok(())
    }

    /// Puts the coherence model's options (cache size and ways, hot lines) into `c`.
    pub fn coherence_model(&self, c: &mut coherence::Config) {
        if let Some(k) = self.cache_kib {
            c.cache_kib = k;
        }
        if let Some(w) = self.cache_ways {
            c.ways = w as usize;
        }
        if let Some(t) = self.hot_lines {
            c.top = t as usize;
        }
    }

    /// Whether `--coherence` runs its default set (no `--scenarios` given).
    #[must_use]
    pub fn coherence_default_set(&self) -> bool {
        self.coherence && self.scenarios.is_none()
    }

    /// The largest `--cpus` entry.
    pub(crate) fn largest_cpus(&self) -> Option<u32> {
        self.cpus.as_ref().and_then(|l| {
            l.value()
                .split(',')
                .filter_map(|n| n.parse::<u32>().ok())
                .max()
        })
    }
}

/// `--coherence`'s scenarios when none are named: the floor and every experiment whose
/// catalog entry names a mechanism (seed002's cost is algorithmic, and its thousands of
/// memcgs cost minutes under the plugin).
#[must_use]
pub fn coherence_scenarios() -> String {
    bench::catalog::SCENARIOS
        .iter()
        .filter(|s| s.name == bench::catalog::LIMIT || s.mechanism.is_some())
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runners_own_default_is_a_value_the_kernel_accepts() {
        assert_eq!(
            KernelValue::new(TCG_MEMCGS.key(), TCG_MEMCGS.value()),
            Ok(TCG_MEMCGS)
        );
    }
}
