//! The benchmark's records and their line format: one `KRESULT {json}` line per record.
//!
//! Every machine-readable line a benchmark prints is `KRESULT ` followed by ONE JSON object
//! on the same line, whose `"type"` says which record it is. Strings are pure ASCII (see
//! [`crate::json`]), numbers are finite. In the order a run prints them:
//!
//! | `type` | keys (REQUIRED ones first) |
//! |---|---|
//! | `machine` | `cpu_model`, `vcpus`, `memory_mib`, `nodes`, `platform` (`qemu-tcg` \| `qemu-kvm` \| `other-hypervisor` \| `real-hardware` \| `host-threads`), `hypervisor` (CPUID vendor, `""` on bare metal), `tsc_hz`, `boot_protocol`, `cmdline` |
//! | `plan` | `scenarios` [{`name`, `configs` [..], `variants` [..]}], `cpus` [..], `rounds`, `warmup_rounds`, `seconds` (per run, or `null`), `ops` (per run, or `null`), `total_runs`; then `skipped` [..] (requested scenarios this build cannot run) |
//! | `note` | `text`: a sentence for the reader of the results (a skipped scenario, how a scenario was set up, what a platform's numbers mean) |
//! | `run` | `scenario`, `config`, `variant`, `cpus`, `round`, `warmup`, `order` (position in the round, from 1), `ops`, `ns`, `ops_per_s`; then `per_cpu` [{`cpu`, `ops`, `ns`}], `locks` {class -> {`acquisitions`, `contended`, `wait_total_cycles`, `wait_max_cycles`}}, `counters` {name -> integer}, `floor_ops_per_s`, `floors_ops_per_s` (the floor's rates measured right before and after the run: `[before, after]`) and `floor_fraction` (numbers or `null`), `pmu` (hardware counters, or `null` where the platform has none: see below) |
//! | `comparison` | `scenario`, `config`, `cpus`, `a`, `b`, `ratio`, `ci_low`, `ci_high` (numbers, or `null` with fewer than two rounds), `significant`; then `a_hmean`, `b_hmean`, `rounds`, `method`, `paired`, `n`, `p`, `p_adjusted` (`null`: the runner's summary fills it in), `control` (the A/A control) |
//! | `end` | `runs`, `comparisons`, `invariants_ok`, `failures` [..] (failed invariants and premises, and the error that stopped a run early), `elapsed_ns`; then `premises` [{`scenario`, `config`, `variant`, `cpus`, `name`, `held`, `figure`, `expect`}] |
//!
//! A `run` is one variant on one CPU count for one round; `round` counts the measured rounds
//! from 1 and is 0 for the warm-up round (`warmup: true`), which no statistic uses.
//! `ops_per_s` is `ops * 1e9 / ns` of the whole run (wall time of the slowest CPU). For a
//! fault scenario's run, `floor_ops_per_s` is the `limit` floor's rate at the same CPU
//! count, the larger of the two measured right before and right after the run (a quarter of
//! its length each, in the same instance block), and `floor_fraction` is `ops_per_s` over
//! it: the floor is paired with the run it divides, so drift between the start of the
//! benchmark and the run does not enter the fraction, and a dip of one floor measurement
//! alone (the floor's rate dips more often than the fault paths' under TCG on a shared
//! host) does not either. (A reference run
//! booted apart, as Linux in `kx bench`, has a `floor_fraction` against the run's floor
//! over the whole benchmark, [`crate::Summary::floor`], and no `floor_ops_per_s`.) A
//! `comparison` is paired by round: the geometric mean of the per-round ratios
//! B/A with a t-interval on their logarithms ([`crate::stats::paired_ratio_ci`]); the
//! harmonic means are kept for display. A variant name ending in `'` is the A/A control, a
//! second instance of the baseline ([`control_name`]). `end` closes a complete run: a log without
//! it is incomplete. Lines of the same run never interleave (each is printed whole).
//!
//! A run's `pmu` object holds what the CPUs' performance counters counted over the run, per
//! operation (every CPU's count over the run's `ops`): `cycles_per_op` (unhalted core
//! cycles), `instructions_per_op` (instructions retired), `llc_refs_per_op` and
//! `llc_misses_per_op` (the architectural last-level-cache events, `null` where the PMU does
//! not offer them), and `per_cpu` [{`cpu`, `cycles`, `instructions`, `llc_refs`,
//! `llc_misses`}], the raw counts. A CPU counts from just before its first batch to just
//! after its last, everything it executes (the untimed work and interrupts too). `pmu` is
//! `null` where the platform counts nothing (QEMU's TCG emulates no PMU; host threads).
//!
//! Progress lines are human-readable (they are also shown on a real machine's screen), see
//! [`crate::progress`]. The types below are the schema, once: serde's derives write a line
//! ([`KResult::line`], see [`crate::json`]) in the kernel and read it back in the runner
//! ([`parse_line`], which checks each record's consistency too: [`Record::check`]). The
//! kernel builds a record with its constructor and prints it with
//! `println!("{}", record.line())`.

use crate::stats::{self, StatsError};
use crate::two_level;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use serde::{Deserialize, Serialize};

pub use crate::json::KResult;
pub use abi::report::RESULT_TAG;

/// What the benchmark ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    /// QEMU with TCG (emulation timings).
    QemuTcg,
    /// QEMU with KVM.
    QemuKvm,
    /// A virtual machine under some other hypervisor (CPUID says which, in `hypervisor`).
    OtherHypervisor,
    /// A real machine booted from the USB stick.
    RealHardware,
    /// Host threads (`kx bench --host`).
    HostThreads,
}

impl Platform {
    /// The name in records.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Platform::QemuTcg => "qemu-tcg",
            Platform::QemuKvm => "qemu-kvm",
            Platform::OtherHypervisor => "other-hypervisor",
            Platform::RealHardware => "real-hardware",
            Platform::HostThreads => "host-threads",
        }
    }
}

/// The `machine` record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPUID brand string.
    pub cpu_model: String,
    /// CPUs online (vCPUs under QEMU).
    pub vcpus: u32,
    /// Usable memory, MiB.
    pub memory_mib: u64,
    /// NUMA nodes.
    pub nodes: u32,
    /// What it is.
    pub platform: Platform,
    /// CPUID hypervisor vendor (`TCGTCGTCGTCG`, `KVMKVMKVM`), empty on bare metal.
    pub hypervisor: String,
    /// TSC frequency, Hz.
    pub tsc_hz: u64,
    /// How it booted (`multiboot1`, `multiboot2`, ...).
    pub boot_protocol: String,
    /// The kernel command line.
    pub cmdline: String,
}

/// One scenario of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanScenario {
    /// Catalog name.
    pub name: String,
    /// Configs, in run order.
    pub configs: Vec<String>,
    /// Variants, in run (interleaving) order.
    pub variants: Vec<String>,
}

/// The `plan` record: what the run will do, printed before the first run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Scenarios, in run order.
    pub scenarios: Vec<PlanScenario>,
    /// CPU counts, increasing.
    pub cpus: Vec<u32>,
    /// Measured rounds per variant, configuration and CPU count.
    pub rounds: u32,
    /// Warm-up rounds before each instance's measured rounds.
    pub warmup_rounds: u32,
    /// Instances of each variant per point (a log from before issue 32 has one).
    #[serde(default = "one")]
    pub instances: u32,
    /// Duration of a run, seconds (when runs are timed).
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Operations per run (when runs are counted).
    #[serde(default)]
    pub ops: Option<u64>,
    /// `run` records to expect.
    pub total_runs: u32,
    /// Requested scenarios that this build cannot run yet (reported, not run).
    #[serde(default)]
    pub skipped: Vec<String>,
    /// `lock_stat=all`: every lock class recorded its statistics; otherwise only the
    /// classes each scenario's premises read did (and the runs' `locks` list those).
    #[serde(default)]
    pub lock_stat_all: bool,
}

impl Plan {
    /// A plan; `total_runs` is computed from the rest.
    #[must_use]
    pub fn new(
        scenarios: Vec<PlanScenario>,
        cpus: Vec<u32>,
        rounds: u32,
        warmup_rounds: u32,
        seconds: Option<f64>,
        ops: Option<u64>,
    ) -> Plan {
        let mut plan = Plan {
            scenarios,
            cpus,
            rounds,
            warmup_rounds,
            instances: 1,
            seconds,
            ops,
            total_runs: 0,
            skipped: Vec::new(),
            lock_stat_all: false,
        };
        plan.total_runs = plan.planned_runs();
        plan
    }

    /// The plan with `instances` instances per variant and point (each with its warm-up).
    #[must_use]
    pub fn with_instances(mut self, instances: u32) -> Plan {
        self.instances = instances.max(1);
        self.total_runs = self.planned_runs();
        self
    }

    /// The plan with every lock class recording (`lock_stat=all`) or not.
    #[must_use]
    pub fn with_lock_stat_all(mut self, all: bool) -> Plan {
        self.lock_stat_all = all;
        self
    }

    /// Runs per variant at one point: every instance's warm-up and the measured rounds.
    #[must_use]
    pub fn runs_per_point(&self) -> u32 {
        self.rounds + self.instances.max(1) * self.warmup_rounds
    }

    fn planned_runs(&self) -> u32 {
        self.scenarios
            .iter()
            .map(|s| (s.configs.len() * s.variants.len()) as u32)
            .sum::<u32>()
            * self.cpus.len() as u32
            * self.runs_per_point()
    }

    /// The plan the kernel's command line asks for on `online` CPUs: every selected
    /// scenario with its configs (seed002's from `memcgs=`) and catalog variants.
    #[must_use]
    pub fn from_config(cfg: &abi::BenchConfig<'_>, online: u32, warmup_rounds: u32) -> Plan {
        let scenarios = crate::catalog::selected(&cfg.scenarios)
            .map(|s| PlanScenario {
                name: s.name.into(),
                configs: cfg.configs(s).map(String::from).collect(),
                variants: s.variants.iter().map(|v| v.name.into()).collect(),
            })
            .collect();
        Plan::new(
            scenarios,
            cfg.cpu_counts(online).collect(),
            cfg.rounds(),
            warmup_rounds,
            Some(cfg.seconds().as_f64()),
            None,
        )
        .with_instances(cfg.instances())
        .with_lock_stat_all(cfg.lock_stat_all)
    }
}

/// One CPU's share of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuShare {
    /// CPU id.
    pub cpu: u32,
    /// Operations it completed.
    pub ops: u64,
    /// Its time, ns.
    pub ns: u64,
}

/// One lock class's statistics over a run (`ksync`'s counters, as deltas); a shared-word
/// class (`ksync::word_class!`) counts the word's writes as acquisitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockStat {
    /// Acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that had to wait.
    pub contended: u64,
    /// Cycles waited, summed.
    pub wait_total_cycles: u64,
    /// Longest wait, cycles.
    pub wait_max_cycles: u64,
    /// Acquisitions that found the word last written by another CPU since this CPU's
    /// previous one (`ksync::handoff`): the line went to another CPU and back.
    #[serde(default)]
    pub handoffs: u64,
    /// Acquisitions that could not be judged for a handoff (a CPU's first on the word).
    #[serde(default)]
    pub untracked: u64,
}

impl From<ksync::LockStatSnapshot> for LockStat {
    fn from(s: ksync::LockStatSnapshot) -> Self {
        LockStat {
            acquisitions: s.acquisitions,
            contended: s.contended,
            wait_total_cycles: s.wait_total_cycles,
            wait_max_cycles: s.wait_max_cycles,
            handoffs: s.handoffs,
            untracked: s.untracked,
        }
    }
}

/// One CPU's hardware counts over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmuCpu {
    /// CPU id.
    pub cpu: u32,
    /// Unhalted core cycles.
    pub cycles: u64,
    /// Instructions retired.
    pub instructions: u64,
    /// Last-level-cache references (`None`: not counted).
    #[serde(default)]
    pub llc_refs: Option<u64>,
    /// Last-level-cache misses (`None`: not counted).
    #[serde(default)]
    pub llc_misses: Option<u64>,
}

/// A run's hardware counts, per operation and per CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunPmu {
    /// Cycles over every CPU / ops.
    pub cycles_per_op: f64,
    /// Instructions over every CPU / ops.
    pub instructions_per_op: f64,
    /// LLC references / ops (`None`: not counted on every CPU).
    #[serde(default)]
    pub llc_refs_per_op: Option<f64>,
    /// LLC misses / ops.
    #[serde(default)]
    pub llc_misses_per_op: Option<f64>,
    /// The raw counts.
    #[serde(default)]
    pub per_cpu: Vec<PmuCpu>,
}

fn per_op(counts: impl Iterator<Item = Option<u64>>, ops: u64) -> Option<f64> {
    let mut sum: u128 = 0;
    for c in counts {
        sum += u128::from(c?);
    }
    Some(sum as f64 / ops as f64)
}

impl RunPmu {
    /// The per-op figures of `per_cpu` over `ops` operations (`ops` > 0).
    #[must_use]
    pub fn new(per_cpu: Vec<PmuCpu>, ops: u64) -> RunPmu {
        let ops = ops.max(1);
        RunPmu {
            cycles_per_op: per_op(per_cpu.iter().map(|c| Some(c.cycles)), ops).unwrap_or(0.0),
            instructions_per_op: per_op(per_cpu.iter().map(|c| Some(c.instructions)), ops)
                .unwrap_or(0.0),
            llc_refs_per_op: per_op(per_cpu.iter().map(|c| c.llc_refs), ops),
            llc_misses_per_op: per_op(per_cpu.iter().map(|c| c.llc_misses), ops),
            per_cpu,
        }
    }

    /// Whether the per-op figures are what the per-CPU counts give over `ops`.
    fn check(&self, ops: u64) -> Result<(), RecordError> {
        if self.per_cpu.is_empty() {
            return Err(RecordError::PmuMismatch);
        }
        let own = RunPmu::new(self.per_cpu.clone(), ops);
        let close = |x: f64, y: f64| x.is_finite() && (x - y).abs() <= 1e-9 * y.abs().max(1.0);
        let close_opt = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => close(x, y),
            (None, None) => true,
            _ => false,
        };
        if close(self.cycles_per_op, own.cycles_per_op)
            && close(self.instructions_per_op, own.instructions_per_op)
            && close_opt(self.llc_refs_per_op, own.llc_refs_per_op)
            && close_opt(self.llc_misses_per_op, own.llc_misses_per_op)
        {
            Ok(())
        } else {
            Err(RecordError::PmuMismatch)
        }
    }
}

/// The `run` record: one variant, one CPU count, one round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Catalog scenario name.
    pub scenario: String,
    /// Config name.
    pub config: String,
    /// Variant name.
    pub variant: String,
    /// CPUs that ran workers.
    pub cpus: u32,
    /// Measured round, from 1; 0 for the warm-up.
    pub round: u32,
    /// Whether this is a warm-up round (not in any statistic).
    pub warmup: bool,
    /// Its position in its round, from 1 (1 = the round's first run; the rounds follow a
    /// Williams square, so that every variant runs at every position equally often). 0 in
    /// records of runners that did not say.
    #[serde(default)]
    pub order: u32,
    /// Which instance of the variant ran it, from 0: each instance is built afresh, at a
    /// placement of its own (0 in logs from before issue 32, which built one).
    #[serde(default)]
    pub instance: u32,
    /// Why the runner left this run out of every statistic (the host was busy while it
    /// ran); the kernel never sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
    /// Operations completed on all CPUs.
    pub ops: u64,
    /// Wall time, ns.
    pub ns: u64,
    /// `ops * 1e9 / ns`.
    pub ops_per_s: f64,
    /// Per-CPU shares.
    #[serde(default)]
    pub per_cpu: Vec<CpuShare>,
    /// Lock statistics per class.
    #[serde(default)]
    pub locks: BTreeMap<String, LockStat>,
    /// memcg/lruvec stats and fault counts (deltas over the run).
    #[serde(default)]
    pub counters: BTreeMap<String, i64>,
    /// The `limit` floor's rate at the same CPU count, the larger of the two measured
    /// right before and right after this run in the same instance block (fault scenarios;
    /// see the module doc).
    #[serde(default)]
    pub floor_ops_per_s: Option<f64>,
    /// The two floor rates `floor_ops_per_s` is the larger of: measured right before and
    /// right after this run (`None` where there is no paired floor, or in a log written
    /// before the engine measured the floor around every run).
    #[serde(default)]
    pub floors_ops_per_s: Option<[f64; 2]>,
    /// This rate over `floor_ops_per_s` (fault scenarios), or over the run's floor at the
    /// same CPU count for a reference booted apart ([`crate::Summary::floor`]).
    #[serde(default)]
    pub floor_fraction: Option<f64>,
    /// Hardware counts (`None`: the platform has no PMU).
    #[serde(default)]
    pub pmu: Option<RunPmu>,
}

/// A record that cannot be built or does not hold together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// A run with no operations or no time (its rate is not a positive number).
    EmptyRun,
    /// A run on zero CPUs.
    NoCpus,
    /// `ops_per_s` disagrees with `ops` and `ns`.
    RateMismatch,
    /// A fraction, ratio or interval that is not a positive finite number, or an interval
    /// that does not contain its ratio.
    BadNumber,
    /// `significant` disagrees with the interval.
    SignificanceMismatch,
    /// A warm-up run with a round number, or a measured one with round 0.
    BadRound,
    /// The statistics could not be computed from the runs.
    Stats(StatsError),
    /// A run's `pmu` per-op figures disagree with its per-CPU counts (or it has none).
    PmuMismatch,
    /// A run's `floor_fraction` is not its rate over its `floor_ops_per_s`, or that is not
    /// the larger of its `floors_ops_per_s`.
    FloorMismatch,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::EmptyRun => f.write_str("a run with zero ops or zero ns"),
            RecordError::NoCpus => f.write_str("a run on zero CPUs"),
            RecordError::RateMismatch => f.write_str("ops_per_s is not ops * 1e9 / ns"),
            RecordError::BadNumber => {
                f.write_str("a ratio, interval or fraction that is not positive and finite")
            }
            RecordError::SignificanceMismatch => {
                f.write_str("`significant` disagrees with the interval")
            }
            RecordError::BadRound => f.write_str("round 0 is the warm-up round and only it"),
            RecordError::Stats(e) => write!(f, "statistics: {e}"),
            RecordError::PmuMismatch => {
                f.write_str("the pmu per-op figures are not the per-CPU counts over ops")
            }
            RecordError::FloorMismatch => f.write_str(
                "floor_fraction is not ops_per_s / floor_ops_per_s, or floor_ops_per_s not \
                     the larger of floors_ops_per_s",
            ),
        }
    }
}

impl Run {
    /// A run with its rate computed; per-CPU shares, locks, counters and the floor fraction
    /// are empty until the caller fills them in.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        scenario: &str,
        config: &str,
        variant: &str,
        cpus: u32,
        round: u32,
        warmup: bool,
        ops: u64,
        ns: u64,
    ) -> Result<Run, RecordError> {
        let run = Run {
            scenario: scenario.into(),
            config: config.into(),
            variant: variant.into(),
            cpus,
            round,
            warmup,
            order: 0,
            instance: 0,
            excluded: None,
            ops,
            ns,
            ops_per_s: rate(ops, ns),
            per_cpu: Vec::new(),
            locks: BTreeMap::new(),
            counters: BTreeMap::new(),
            floor_ops_per_s: None,
            floors_ops_per_s: None,
            floor_fraction: None,
            pmu: None,
        };
        run.check()?;
        Ok(run)
    }

    /// Pairs the run with the floor's rates measured right before and right after it:
    /// sets `floors_ops_per_s`, `floor_ops_per_s` (the larger) and `floor_fraction` (this
    /// rate over it).
    pub fn pair_with_floors(&mut self, before: f64, after: f64) -> Result<(), RecordError> {
        self.floors_ops_per_s = Some([before, after]);
        self.pair_with_floor(before.max(after))
    }

    /// Pairs the run with one floor rate: sets `floor_ops_per_s` and `floor_fraction`
    /// (this rate over it).
    pub fn pair_with_floor(&mut self, floor_ops_per_s: f64) -> Result<(), RecordError> {
        self.floor_ops_per_s = Some(floor_ops_per_s);
        self.floor_fraction = Some(self.ops_per_s / floor_ops_per_s);
        self.check()
    }

    /// Whether the run counts in statistics: not a warm-up, and not excluded.
    #[must_use]
    pub fn measured(&self) -> bool {
        !self.warmup && self.excluded.is_none()
    }

    /// Checks that the run holds together.
    pub fn check(&self) -> Result<(), RecordError> {
        if self.cpus == 0 {
            return Err(RecordError::NoCpus);
        }
        if self.ops == 0 || self.ns == 0 {
            return Err(RecordError::EmptyRun);
        }
        if self.warmup != (self.round == 0) {
            return Err(RecordError::BadRound);
        }
        let expect = rate(self.ops, self.ns);
        if !(self.ops_per_s.is_finite() && (self.ops_per_s - expect).abs() <= 1e-9 * expect) {
            return Err(RecordError::RateMismatch);
        }
        let bad = |x: Option<f64>| x.is_some_and(|f| !f.is_finite() || f <= 0.0);
        let floors = self.floors_ops_per_s;
        if bad(self.floor_fraction)
            || bad(self.floor_ops_per_s)
            || floors.is_some_and(|f| bad(Some(f[0])) || bad(Some(f[1])))
        {
            return Err(RecordError::BadNumber);
        }
        if let Some([before, after]) = floors
            && self.floor_ops_per_s != Some(before.max(after))
        {
            return Err(RecordError::FloorMismatch);
        }
        if let Some(floor) = self.floor_ops_per_s {
            let expect = self.ops_per_s / floor;
            if self
                .floor_fraction
                .is_none_or(|f| (f - expect).abs() > 1e-9 * expect)
            {
                return Err(RecordError::FloorMismatch);
            }
        }
        if let Some(p) = &self.pmu {
            p.check(self.ops)?;
        }
        Ok(())
    }
}

fn rate(ops: u64, ns: u64) -> f64 {
    ops as f64 * 1e9 / ns as f64
}

/// The `comparison` record: B over A at one config and CPU count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Scenario.
    pub scenario: String,
    /// Config.
    pub config: String,
    /// CPU count.
    pub cpus: u32,
    /// Baseline variant.
    pub a: String,
    /// Compared variant.
    pub b: String,
    /// `hmean(B) / hmean(A)` of the measured rounds' rates.
    pub ratio: f64,
    /// Low end of the 95% interval (`None`: fewer than two rounds).
    pub ci_low: Option<f64>,
    /// High end of the 95% interval.
    pub ci_high: Option<f64>,
    /// Whether the interval excludes 1.0.
    pub significant: bool,
    /// A's harmonic mean, ops/s.
    #[serde(default)]
    pub a_hmean: f64,
    /// B's harmonic mean, ops/s.
    #[serde(default)]
    pub b_hmean: f64,
    /// Measured rounds per side (the smaller side's count if they differ).
    #[serde(default)]
    pub rounds: u32,
    /// How the interval was computed ([`stats::PAIRED_METHOD`], or [`stats::METHOD`] when
    /// no round has both variants).
    #[serde(default)]
    pub method: String,
    /// Whether the ratio and interval are paired by round (the geometric mean of the
    /// per-round ratios B/A, Student's t on their logarithms).
    #[serde(default)]
    pub paired: bool,
    /// Pairs (rounds with both variants) behind a paired comparison, else the smaller
    /// side's rounds.
    #[serde(default)]
    pub n: u32,
    /// The two-sided p of the test that B/A is 1 (`None` with one round).
    #[serde(default)]
    pub p: Option<f64>,
    /// `p` after Holm-Bonferroni over the fixed family of the experiments' primary
    /// comparisons ([`crate::primary`]); `None` for every other comparison, and in a
    /// `comparison` record, which is printed before the run's other comparisons exist:
    /// [`crate::Summary`] fills it in.
    #[serde(default)]
    pub p_adjusted: Option<f64>,
    /// Whether this is the A/A control: the baseline against a second instance of itself
    /// (`b` is `a` with a `'`), the run's measured noise at this point.
    #[serde(default)]
    pub control: bool,
    /// The mark the tables show ([`crate::Summary`] decides it): a primary comparison,
    /// significant after the correction, with the A/A control at its point passing its
    /// equivalence test ([`crate::summary::control_state`]). `None` in a `comparison`
    /// record, whose line leaves the key out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marked: Option<bool>,
    /// Why a comparison whose own interval excludes 1 is not marked (exploratory, the
    /// adjusted p, or the A/A control); left out when there is no reason to give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmarked_why: Option<String>,
    /// The degrees of freedom of the interval's t (`None` without an interval, or in a log
    /// from before issue 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    /// Whether this is its experiment's primary comparison ([`crate::primary`]), the only
    /// one judged; the others are exploratory. `false` in a `comparison` record: the
    /// summary decides it.
    #[serde(default, skip_serializing_if = "core::ops::Not::not")]
    pub primary: bool,
    /// Instance blocks behind a two-level comparison ([`crate::two_level`]); 0 where the
    /// interval is over rounds only (one instance per variant, or a log from before issue
    /// 32).
    #[serde(default)]
    pub instances: u32,
    /// For a two-level comparison, the interval the rounds paired by round give
    /// ([`stats::PAIRED_METHOD`]), each round taken as independent: the rounds of one
    /// instance share its placement, so where an instance has several rounds this
    /// interval leaves part of the placement noise out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_ci_low: Option<f64>,
    /// High end of the rounds-only interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_ci_high: Option<f64>,
    /// The interval half-width the run aimed for (`ci_width=`, a fraction), if any.
    #[serde(default)]
    pub ci_target: Option<f64>,
    /// Whether the interval's half-width ([`stats::half_width`]) reached `ci_target`.
    #[serde(default)]
    pub width_reached: Option<bool>,
}

/// The instance means of every variant pooled for `b`/`a` at a point (the catalog's
/// variants and the A/A control, or `a` and `b` alone where one of them is not the
/// catalog's), with the rows of `a` and `b`; `None` with fewer than two instance blocks.
fn instance_table(
    scenario: &str,
    config: &str,
    cpus: u32,
    a: &str,
    b: &str,
    runs: &[Run],
) -> Option<(Vec<two_level::Cells>, usize, usize)> {
    let point: Vec<&Run> = runs
        .iter()
        .filter(|r| r.measured() && r.scenario == scenario && r.config == config && r.cpus == cpus)
        .collect();
    let blocks = point.iter().map(|r| r.instance).max()? as usize + 1;
    if blocks < 2 {
        return None;
    }
    let known = |v: &str| {
        crate::catalog::scenario(scenario)
            .is_some_and(|s| s.variant(v.strip_suffix('\'').unwrap_or(v)).is_some())
    };
    let mut names: Vec<&str> = Vec::new();
    if known(a) && known(b) {
        for r in &point {
            if known(&r.variant) && !names.contains(&r.variant.as_str()) {
                names.push(&r.variant);
            }
        }
    } else {
        names = alloc::vec![a, b];
    }
    let table = names
        .iter()
        .map(|v| {
            let of: Vec<(u32, f64)> = point
                .iter()
                .filter(|r| r.variant == *v)
                .map(|r| (r.instance, r.ops_per_s))
                .collect();
            two_level::cells(&of, blocks).ok()
        })
        .collect::<Option<Vec<_>>>()?;
    let ia = names.iter().position(|v| *v == a)?;
    let ib = names.iter().position(|v| *v == b)?;
    Some((table, ia, ib))
}

impl Comparison {
    /// The comparison of `b` with `a` over the measured `runs` of `scenario`/`config` at
    /// `cpus` (other runs in the slice are ignored).
    pub fn from_runs(
        scenario: &str,
        config: &str,
        cpus: u32,
        a: &str,
        b: &str,
        runs: &[Run],
    ) -> Result<Comparison, RecordError> {
        Comparison::from_runs_as(scenario, config, cpus, a, b, runs, true)
    }

    /// As [`Comparison::from_runs`], paired by round when `pair` and some round has both
    /// variants, else with the unpaired interval ([`stats::METHOD`], what logs from before
    /// issue 20 printed).
    pub fn from_runs_as(
        scenario: &str,
        config: &str,
        cpus: u32,
        a: &str,
        b: &str,
        runs: &[Run],
        pair: bool,
    ) -> Result<Comparison, RecordError> {
        let measured = |variant: &str| -> Vec<&Run> {
            runs.iter()
                .filter(|r| {
                    r.measured()
                        && r.scenario == scenario
                        && r.config == config
                        && r.cpus == cpus
                        && r.variant == variant
                })
                .collect()
        };
        let (ra, rb) = (measured(a), measured(b));
        let rates = |rs: &[&Run]| -> Vec<f64> { rs.iter().map(|r| r.ops_per_s).collect() };
        // The harmonic means, for display, and the unpaired interval if nothing pairs.
        let welch = stats::ratio_ci(&rates(&ra), &rates(&rb)).map_err(RecordError::Stats)?;
        let pairs: Vec<(f64, f64)> = ra
            .iter()
            .filter_map(|x| {
                let y = rb.iter().find(|y| y.round == x.round)?;
                Some((x.ops_per_s, y.ops_per_s))
            })
            .collect();
        let mut c = Comparison {
            scenario: scenario.into(),
            config: config.into(),
            cpus,
            a: a.into(),
            b: b.into(),
            ratio: welch.ratio,
            ci_low: welch.ci.map(|c| c.0),
            ci_high: welch.ci.map(|c| c.1),
            significant: welch.significant(),
            a_hmean: welch.a_hmean,
            b_hmean: welch.b_hmean,
            rounds: ra.len().min(rb.len()) as u32,
            method: stats::METHOD.into(),
            paired: false,
            n: ra.len().min(rb.len()) as u32,
            p: None,
            p_adjusted: None,
            control: is_control(a, b),
            marked: None,
            unmarked_why: None,
            df: welch.df.filter(|_| welch.ci.is_some()),
            primary: false,
            instances: 0,
            rounds_ci_low: None,
            rounds_ci_high: None,
            ci_target: None,
            width_reached: None,
        };
        if pairs.is_empty() || !pair {
            c.p = welch.df.zip(welch.ci).map(|(df, ci)| {
                // Welch's t statistic, back from the interval's half-width.
                let half = libm::log(ci.1 / welch.ratio);
                if half <= 0.0 {
                    return if welch.ratio == 1.0 { 1.0 } else { 0.0 };
                }
                let t = stats::student_t_quantile(0.5 + stats::CONFIDENCE / 2.0, df);
                stats::student_t_two_sided_p(libm::log(welch.ratio) * t / half, df)
            });
            return Ok(c);
        }
        let paired = stats::paired_ratio_ci(&pairs).map_err(RecordError::Stats)?;
        c.ratio = paired.ratio;
        c.ci_low = paired.ci.map(|c| c.0);
        c.ci_high = paired.ci.map(|c| c.1);
        c.significant = paired.significant();
        c.method = stats::PAIRED_METHOD.into();
        c.paired = true;
        c.n = paired.n as u32;
        c.rounds = paired.n as u32;
        c.p = paired.p;
        c.df = paired.ci.map(|_| (paired.n - 1) as f64);
        let Some((table, ia, ib)) = instance_table(scenario, config, cpus, a, b, runs) else {
            return Ok(c);
        };
        let two = two_level::instance_ratio_ci(&table, ia, ib).map_err(RecordError::Stats)?;
        if two.ci.is_none() {
            return Ok(c);
        }
        c.rounds_ci_low = c.ci_low;
        c.rounds_ci_high = c.ci_high;
        c.ratio = two.ratio;
        c.ci_low = two.ci.map(|c| c.0);
        c.ci_high = two.ci.map(|c| c.1);
        c.significant = two.significant();
        c.method = two_level::METHOD.into();
        c.instances = two.instances as u32;
        c.n = two.instances as u32;
        c.p = two.p;
        c.df = Some(two.df);
        Ok(c)
    }

    /// The standard error of `ln(ratio)` behind the interval (its log half-width over
    /// `t_{0.975, df}`); `None` without an interval or its degrees of freedom.
    #[must_use]
    pub fn se(&self) -> Option<f64> {
        let (lo, hi, df) = (self.ci_low?, self.ci_high?, self.df?);
        let t = stats::student_t_quantile(0.5 + stats::CONFIDENCE / 2.0, df);
        Some(libm::log(hi / lo) / (2.0 * t))
    }

    /// The two one-sided tests of equivalence at 5% (Schuirmann's TOST): whether the 90%
    /// interval of the ratio lies within `[1 / (1 + margin), 1 + margin]`. `None` without
    /// an interval.
    #[must_use]
    pub fn equivalent_within(&self, margin: f64) -> Option<bool> {
        let se = self.se()?;
        let half = stats::student_t_quantile(0.95, self.df?) * se;
        let bound = libm::log1p(margin);
        Some(libm::fabs(libm::log(self.ratio)) + half < bound)
    }

    /// The smallest ratio effect (a fraction: 0.05 = 5%) this comparison's test finds 80% of
    /// the time at two-sided level `alpha`: `exp((t_{1-alpha/2, df} + t_{0.80, df}) se) - 1`.
    #[must_use]
    pub fn detectable(&self, alpha: f64) -> Option<f64> {
        let (se, df) = (self.se()?, self.df?);
        let t =
            stats::student_t_quantile(1.0 - alpha / 2.0, df) + stats::student_t_quantile(0.80, df);
        Some(libm::expm1(t * se))
    }

    /// The interval's half-width as a fraction ([`stats::half_width`]); `None` without one.
    #[must_use]
    pub fn half_width(&self) -> Option<f64> {
        Some(stats::half_width(self.ratio, (self.ci_low?, self.ci_high?)))
    }

    /// Sets the width target and whether the interval reached it.
    pub fn set_target(&mut self, target: Option<f64>) {
        self.ci_target = target;
        self.width_reached = target.map(|t| self.half_width().is_some_and(|h| h <= t));
    }

    /// Checks that the comparison holds together.
    pub fn check(&self) -> Result<(), RecordError> {
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if !pos(self.ratio) {
            return Err(RecordError::BadNumber);
        }
        let prob = |p: Option<f64>| p.is_none_or(|p| (0.0..=1.0).contains(&p));
        if !prob(self.p) || !prob(self.p_adjusted) {
            return Err(RecordError::BadNumber);
        }
        match (self.ci_low, self.ci_high) {
            (None, None) if !self.significant => Ok(()),
            (None, None) => Err(RecordError::SignificanceMismatch),
            (Some(lo), Some(hi)) => {
                let tol = 1e-12 * self.ratio;
                if !pos(lo) || !pos(hi) || lo > self.ratio + tol || hi < self.ratio - tol {
                    return Err(RecordError::BadNumber);
                }
                if self.significant != (lo > 1.0 || hi < 1.0) {
                    return Err(RecordError::SignificanceMismatch);
                }
                Ok(())
            }
            _ => Err(RecordError::BadNumber),
        }
    }
}

/// The name of the A/A control variant of `a`: a second instance of it, `a'`.
#[must_use]
pub fn control_name(a: &str) -> String {
    alloc::format!("{a}'")
}

/// Whether `b` over `a` is an A/A control (`b` is `a'`).
#[must_use]
pub fn is_control(a: &str, b: &str) -> bool {
    b.strip_suffix('\'') == Some(a)
}

/// The `note` record: one sentence for whoever reads the results (printed under the table
/// and kept in `results.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The sentence (ASCII is safest on a serial console; anything is escaped).
    pub text: String,
}

impl Note {
    /// A note saying `text`.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Note {
        Note { text: text.into() }
    }
}

/// One premise of a scenario's mechanism, judged once per variant and point (scenario,
/// config, CPU count) over that variant's measured runs: an event the seed's mechanism needs
/// (refault increments on the node's line, list-head writes, activations, the lock class
/// taken, no `mmap_lock` fallbacks, ...) and whether the runs showed it. A premise that does
/// not hold fails the benchmark like a violated invariant: the figures of such a run are
/// not a result of the mechanism.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Premise {
    /// Catalog scenario.
    pub scenario: String,
    /// Its config.
    pub config: String,
    /// The variant judged.
    pub variant: String,
    /// CPU count.
    pub cpus: u32,
    /// The variant's instance whose runs were judged (from 0; each is judged alone).
    #[serde(default)]
    pub instance: u32,
    /// What is counted (`list_head_writes_per_op`, ...).
    pub name: String,
    /// Whether the runs showed it (false where it was not applicable).
    pub held: bool,
    /// Whether it was judged: a premise about sharing between CPUs is not applicable at
    /// one CPU (recorded with its figure, neither held nor failed).
    #[serde(default = "yes")]
    pub applicable: bool,
    /// Whether it is about sharing between CPUs (a handoff, a contended lock).
    #[serde(default)]
    pub across_cpus: bool,
    /// The figure behind the verdict (per operation where that is its unit).
    pub figure: f64,
    /// What the figure had to be, in words (`> 0`, `>= 0.9`, `== 0`).
    pub expect: String,
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// The `end` record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// `run` records printed.
    pub runs: u32,
    /// `comparison` records printed.
    pub comparisons: u32,
    /// Whether every invariant check after every run held.
    pub invariants_ok: bool,
    /// What failed, one line each: every invariant violation, and the error that stopped
    /// the benchmark early (a scenario that could not be set up, a batch that failed).
    /// Empty when the run completed with its invariants holding.
    #[serde(default)]
    pub failures: Vec<String>,
    /// From the plan to the end, ns.
    pub elapsed_ns: u64,
    /// Every premise judged, in run order (a premise that did not hold is also a line of
    /// `failures`).
    #[serde(default)]
    pub premises: Vec<Premise>,
}

/// Any record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// `machine`.
    Machine(Machine),
    /// `plan`.
    Plan(Plan),
    /// `run`.
    Run(Run),
    /// `comparison`.
    Comparison(Comparison),
    /// `note`.
    Note(Note),
    /// `end`.
    End(End),
}

impl Record {
    /// Checks the record's internal consistency.
    pub fn check(&self) -> Result<(), RecordError> {
        match self {
            Record::Run(r) => r.check(),
            Record::Comparison(c) => c.check(),
            Record::Machine(_) | Record::Plan(_) | Record::Note(_) | Record::End(_) => Ok(()),
        }
    }
}

impl KResult for Machine {
    const TYPE: &'static str = "machine";
}

impl KResult for Plan {
    const TYPE: &'static str = "plan";
}

impl KResult for Run {
    const TYPE: &'static str = "run";
}

impl KResult for Comparison {
    const TYPE: &'static str = "comparison";
}

impl KResult for Note {
    const TYPE: &'static str = "note";
}

impl KResult for End {
    const TYPE: &'static str = "end";
}

impl fmt::Display for Record {
    /// The record's `KRESULT` line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Record::Machine(r) => f.write_str(&r.line()),
            Record::Plan(r) => f.write_str(&r.line()),
            Record::Run(r) => f.write_str(&r.line()),
            Record::Comparison(r) => f.write_str(&r.line()),
            Record::Note(r) => f.write_str(&r.line()),
            Record::End(r) => f.write_str(&r.line()),
        }
    }
}

/// Why a `KRESULT` line could not be read.
#[derive(Debug)]
pub enum LineError {
    /// Not valid JSON, or not a record (a missing required key, a wrong type, an unknown
    /// `type`). A line cut off mid-way ends here too.
    Json(serde_json::Error),
    /// Valid, but inconsistent.
    Invalid(RecordError),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::Json(e) => write!(f, "not a record: {e}"),
            LineError::Invalid(e) => write!(f, "inconsistent record: {e}"),
        }
    }
}

/// Reads one console line: `None` if it has no `KRESULT {` (anything may precede the tag,
/// e.g. a terminal program's timestamp; a trailing `\r` is ignored), else the record or why
/// it is not one.
pub fn parse_line(line: &str) -> Option<Result<Record, LineError>> {
    let tag = alloc::format!("{RESULT_TAG} {{");
    let start = line.find(&tag)? + RESULT_TAG.len() + 1;
    let json = line[start..].trim_end_matches(['\r', '\n']);
    Some(match serde_json::from_str::<Record>(json) {
        Err(e) => Err(LineError::Json(e)),
        Ok(r) => r.check().map(|()| r).map_err(LineError::Invalid),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn run(variant: &str, round: u32, ops: u64) -> Run {
        Run::new(
            "seed004-readtwice",
            "1-per-memcg",
            variant,
            2,
            round,
            round == 0,
            ops,
            1_000_000_000,
        )
        .unwrap()
    }

    fn full_run() -> Run {
        let mut r = Run::new(
            "seed001-faultfree",
            "shmem",
            "patch1+2@+64",
            4,
            3,
            false,
            123_456,
            987_654_321,
        )
        .unwrap();
        r.per_cpu = (0..4)
            .map(|cpu| CpuShare {
                cpu,
                ops: 30_000 + u64::from(cpu),
                ns: 987_000_000,
            })
            .collect();
        r.locks.insert(
            "lru_lock".into(),
            LockStat {
                acquisitions: 10,
                contended: 3,
                wait_total_cycles: 999,
                wait_max_cycles: 500,
                handoffs: 2,
                untracked: 1,
            },
        );
        r.locks
            .insert("zone \"lock\"\n".into(), LockStat::default());
        r.counters.insert("pgfault".into(), 123_456);
        r.counters.insert("nr_anon_delta".into(), -7);
        r.pair_with_floors(r.ops_per_s / 0.5, r.ops_per_s / 0.4125)
            .unwrap();
        r.pmu = Some(RunPmu::new(
            (0..4)
                .map(|cpu| PmuCpu {
                    cpu,
                    cycles: 9_000_000 + u64::from(cpu),
                    instructions: 4_000_000,
                    llc_refs: Some(60_000),
                    llc_misses: (cpu != 2).then_some(1_000),
                })
                .collect(),
            123_456,
        ));
        r
    }

    /// Writes with the kernel's writer, parses with serde_json (no serde derive involved),
    /// and checks every field by name.
    #[test]
    fn kernel_line_parses_as_plain_json() {
        let line = full_run().line();
        assert!(line.starts_with("KRESULT {\"type\":\"run\",") && line.is_ascii());
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line["KRESULT ".len()..]).unwrap();
        assert_eq!(v["scenario"], "seed001-faultfree");
        assert_eq!(v["variant"], "patch1+2@+64");
        assert_eq!(v["cpus"], 4);
        assert_eq!(v["round"], 3);
        assert_eq!(v["warmup"], false);
        assert_eq!(v["ops"], 123_456);
        assert_eq!(v["ns"], 987_654_321u64);
        assert_eq!(v["ops_per_s"].as_f64().unwrap(), full_run().ops_per_s);
        assert_eq!(v["per_cpu"][3]["ops"], 30_003);
        assert_eq!(v["locks"]["lru_lock"]["contended"], 3);
        assert_eq!(v["locks"]["zone \"lock\"\n"]["acquisitions"], 0);
        assert_eq!(v["counters"]["nr_anon_delta"], -7);
        let f = v["floor_fraction"].as_f64().unwrap();
        assert!((f - 0.4125).abs() < 1e-12, "{f}");
        assert_eq!(
            v["floor_ops_per_s"].as_f64().unwrap(),
            full_run().floor_ops_per_s.unwrap()
        );
        assert_eq!(
            v["floors_ops_per_s"][1].as_f64(),
            full_run().floor_ops_per_s
        );
        assert!(
            v["floors_ops_per_s"][0].as_f64().unwrap() < v["floor_ops_per_s"].as_f64().unwrap()
        );
        let pmu = &v["pmu"];
        assert_eq!(
            pmu["cycles_per_op"].as_f64().unwrap(),
            36_000_006.0 / 123_456.0
        );
        assert_eq!(
            pmu["instructions_per_op"].as_f64().unwrap(),
            16e6 / 123_456.0
        );
        assert_eq!(
            pmu["llc_refs_per_op"].as_f64().unwrap(),
            240_000.0 / 123_456.0
        );
        assert!(
            pmu["llc_misses_per_op"].is_null(),
            "CPU 2 did not count misses"
        );
        assert_eq!(pmu["per_cpu"][3]["cycles"], 9_000_003);
        assert!(pmu["per_cpu"][2]["llc_misses"].is_null());
        assert_eq!(pmu["per_cpu"][1]["llc_misses"], 1_000);
        // Without counters the key is there, null.
        let plain = run("A", 1, 10).line();
        let v: serde_json::Value = serde_json::from_str(&plain["KRESULT ".len()..]).unwrap();
        assert!(
            v.get("pmu").is_some_and(serde_json::Value::is_null),
            "{plain}"
        );
    }

    #[test]
    fn pmu_figures_must_be_the_counts_over_ops() {
        let mut r = full_run();
        assert_eq!(r.check(), Ok(()));
        r.pmu.as_mut().unwrap().cycles_per_op *= 1.01;
        assert_eq!(r.check(), Err(RecordError::PmuMismatch));
        let mut r = full_run();
        r.pmu.as_mut().unwrap().llc_misses_per_op = Some(0.5);
        assert_eq!(r.check(), Err(RecordError::PmuMismatch));
        let mut r = full_run();
        r.pmu.as_mut().unwrap().per_cpu.clear();
        assert_eq!(r.check(), Err(RecordError::PmuMismatch));
    }

    #[test]
    fn comparison_and_end_lines() {
        let runs: Vec<Run> = [
            ("A", 1, 100),
            ("B", 1, 180),
            ("A", 2, 102),
            ("B", 2, 178),
            ("A", 0, 50),
        ]
        .into_iter()
        .map(|(v, r, o)| run(v, r, o))
        .collect();
        let c =
            Comparison::from_runs("seed004-readtwice", "1-per-memcg", 2, "A", "B", &runs).unwrap();
        assert_eq!(c.rounds, 2);
        assert!((c.ratio - 179.0 / 101.0).abs() < 0.01);
        assert!(c.significant && c.check().is_ok());
        let v: serde_json::Value = serde_json::from_str(&c.line()[8..]).unwrap();
        for key in [
            "scenario",
            "config",
            "cpus",
            "a",
            "b",
            "ratio",
            "ci_low",
            "ci_high",
            "significant",
            "a_hmean",
            "b_hmean",
            "rounds",
            "method",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        let one =
            Comparison::from_runs("seed004-readtwice", "1-per-memcg", 2, "A", "B", &runs[..2])
                .unwrap();
        let v: serde_json::Value = serde_json::from_str(&one.line()[8..]).unwrap();
        assert!(v["ci_low"].is_null() && v["significant"] == false);
        assert_eq!(
            Comparison::from_runs("seed004-readtwice", "2-per-memcg", 2, "A", "B", &runs),
            Err(RecordError::Stats(StatsError::Empty))
        );
        let end = End {
            runs: 5,
            comparisons: 1,
            invariants_ok: false,
            failures: vec!["lruvec \"x\" lost 1 folio".into()],
            premises: vec![],
            elapsed_ns: 12,
        };
        let v: serde_json::Value = serde_json::from_str(&end.line()[8..]).unwrap();
        assert_eq!(v["failures"][0], "lruvec \"x\" lost 1 folio");
        assert_eq!(v["invariants_ok"], false);
    }

    #[test]
    fn constructors_refuse_what_cannot_be_written() {
        let r =
            |cpus, round, warmup, ops, ns| Run::new("s", "c", "v", cpus, round, warmup, ops, ns);
        assert_eq!(r(0, 1, false, 1, 1), Err(RecordError::NoCpus));
        assert_eq!(r(1, 1, false, 0, 1), Err(RecordError::EmptyRun));
        assert_eq!(r(1, 1, false, 1, 0), Err(RecordError::EmptyRun));
        assert_eq!(r(1, 0, false, 1, 1), Err(RecordError::BadRound));
        assert_eq!(r(1, 2, true, 1, 1), Err(RecordError::BadRound));
        let mut ok = r(1, 1, false, 3, 7).unwrap();
        ok.ops_per_s *= 1.001;
        assert_eq!(ok.check(), Err(RecordError::RateMismatch));
        let mut paired = r(1, 1, false, 3, 1_000_000_000).unwrap();
        assert_eq!(paired.pair_with_floor(6.0), Ok(()));
        assert_eq!(paired.floor_fraction, Some(0.5));
        paired.floor_fraction = Some(0.51);
        assert_eq!(paired.check(), Err(RecordError::FloorMismatch));
        paired.floor_fraction = None;
        assert_eq!(paired.check(), Err(RecordError::FloorMismatch));
        assert_eq!(paired.pair_with_floor(0.0), Err(RecordError::BadNumber));
        // Two floors around the run: it divides by the larger.
        let mut around = r(1, 1, false, 3, 1_000_000_000).unwrap();
        assert_eq!(around.pair_with_floors(4.0, 6.0), Ok(()));
        assert_eq!(
            (around.floor_ops_per_s, around.floor_fraction),
            (Some(6.0), Some(0.5))
        );
        assert_eq!(around.floors_ops_per_s, Some([4.0, 6.0]));
        around.floors_ops_per_s = Some([7.0, 6.0]);
        assert_eq!(around.check(), Err(RecordError::FloorMismatch));
        around.floors_ops_per_s = Some([f64::NAN, 6.0]);
        assert_eq!(around.check(), Err(RecordError::BadNumber));
    }

    #[test]
    fn plan_counts_its_runs() {
        let cfg = abi::cmdline::parse(
            "run=bench quick=1 bench_cpus=1,2 rounds=6 instances=3 \
             scenarios=seed001-faultfree,seed002-reclaim",
            false,
        )
        .unwrap()
        .bench;
        let p = Plan::from_config(&cfg, 2, 1);
        // seed001: 2 configs x 6 variants; seed002: 2 quick memcg counts x 2 variants; each
        // at 2 CPU counts, 6 measured rounds and a warm-up per instance.
        assert_eq!(p.total_runs, (12 + 4) * 2 * (6 + 3));
        assert_eq!(p.instances, 3);
        assert_eq!(p.scenarios[1].configs, ["10", "1500"]);
        assert_eq!(p.seconds, Some(0.1));
        let v: serde_json::Value = serde_json::from_str(&p.line()[8..]).unwrap();
        assert_eq!(v["scenarios"][0]["variants"][5], "patch1+2@+64");
        assert_eq!(v["total_runs"], 288);
        assert!(v["ops"].is_null());
    }

    mod parse {
        use super::*;

        fn machine() -> Machine {
            Machine {
                cpu_model: "QEMU Virtual CPU \u{e9}".into(),
                vcpus: 2,
                memory_mib: 256,
                nodes: 1,
                platform: Platform::QemuTcg,
                hypervisor: "TCGTCGTCGTCG".into(),
                tsc_hz: 2_000_000_000,
                boot_protocol: "multiboot1".into(),
                cmdline: "run=bench quick=1".into(),
            }
        }

        #[test]
        fn every_record_round_trips() {
            let runs = vec![
                run("A", 1, 100),
                run("B", 1, 110),
                run("A", 2, 99),
                run("B", 2, 111),
            ];
            let cmp = Comparison::from_runs("seed004-readtwice", "1-per-memcg", 2, "A", "B", &runs)
                .unwrap();
            let cfg = abi::cmdline::parse("run=bench", false).unwrap().bench;
            let records = [
                Record::Machine(machine()),
                Record::Plan(Plan::from_config(&cfg, 4, 1)),
                Record::Run(full_run()),
                Record::Comparison(cmp),
                Record::Note(Note::new(
                    "linux reference: no cgroup2 at /sys/fs/cgroup \"x\"",
                )),
                Record::End(End {
                    runs: 4,
                    comparisons: 1,
                    invariants_ok: false,
                    failures: vec!["a premise did not hold".into()],
                    elapsed_ns: 5,
                    premises: vec![Premise {
                        scenario: "seed004-readtwice".into(),
                        config: "2-readers-per-file".into(),
                        variant: "A".into(),
                        cpus: 2,
                        instance: 1,
                        name: "activations_per_op".into(),
                        held: false,
                        applicable: true,
                        across_cpus: false,
                        figure: 0.0,
                        expect: "> 0".into(),
                    }],
                }),
            ];
            for r in records {
                let line = r.to_string();
                let back = parse_line(&line).unwrap().unwrap();
                assert_eq!(back, r, "{line}");
                // CRLF and a prefix before the tag are tolerated.
                let noisy = alloc::format!("[12:00:01] {line}\r");
                assert_eq!(parse_line(&noisy).unwrap().unwrap(), r);
            }
        }

        /// Lines of the hand-written writer that serde's replaced spell some values
        /// differently (`1e21`, `1.5e-5`, `\u0008`, `\u000c`): logs written before still
        /// read back as the same records.
        #[test]
        fn lines_of_the_old_writer_read_the_same() {
            let runs: Vec<Run> = [("A", 1, 100), ("B", 1, 180), ("A", 2, 102), ("B", 2, 178)]
                .into_iter()
                .map(|(v, r, o)| Run::new("s", "c", v, 2, r, false, o, 1_000_000_000).unwrap())
                .collect();
            let mut c = Comparison::from_runs("s", "c", 2, "A", "B", &runs).unwrap();
            c.set_target(Some(0.05));
            // The old writer wrote no degrees of freedom.
            c.df = None;
            c.p = Some(1.5e-5);
            c.a_hmean = 1e21;
            c.b_hmean = 1.5e-7;
            let old = r#"KRESULT {"type":"comparison","scenario":"s","config":"c","cpus":2,"a":"A","b":"B","ratio":1.772336443959847,"ci_low":1.4557270406174325,"ci_high":2.157805950527605,"significant":true,"a_hmean":1e21,"b_hmean":1.5e-7,"rounds":2,"method":"paired-t-log-ratio-95","paired":true,"n":2,"p":1.5e-5,"p_adjusted":null,"control":false,"ci_target":0.05,"width_reached":false}"#;
            let note = Note::new("\u{8}\u{c}\u{7f}\u{e9}\u{1f600}");
            let old_note =
                r#"KRESULT {"type":"note","text":"\u0008\u000c\u007f\u00e9\ud83d\ude00"}"#;
            for (old, r) in [(old, Record::Comparison(c)), (old_note, Record::Note(note))] {
                let new = r.to_string();
                assert_ne!(new, old, "the spelling changed");
                assert_eq!(parse_line(old).unwrap().unwrap(), r, "{old}");
                assert_eq!(parse_line(&new).unwrap().unwrap(), r, "{new}");
            }
        }

        #[test]
        fn bad_lines_are_errors_not_records() {
            assert!(parse_line("KTEST a ok").is_none());
            assert!(parse_line("boot: KRESULT tag without json").is_none());
            let line = full_run().line();
            for cut in [line.len() - 1, line.len() / 2, 9] {
                assert!(
                    matches!(parse_line(&line[..cut]), Some(Err(LineError::Json(_)))),
                    "{cut}"
                );
            }
            let missing = line.replace("\"ops_per_s\"", "\"rate\"");
            assert!(matches!(
                parse_line(&missing),
                Some(Err(LineError::Json(_)))
            ));
            let unknown = r#"KRESULT {"type":"bogus","x":1}"#;
            assert!(matches!(parse_line(unknown), Some(Err(LineError::Json(_)))));
            let cooked = line.replace("\"cycles_per_op\":", "\"cycles_per_op\":1");
            assert!(matches!(
                parse_line(&cooked),
                Some(Err(LineError::Invalid(RecordError::PmuMismatch)))
            ));
            let wrong = line.replace("\"ops\":123456", "\"ops\":123457");
            assert!(matches!(
                parse_line(&wrong),
                Some(Err(LineError::Invalid(RecordError::RateMismatch)))
            ));
        }
    }
}
