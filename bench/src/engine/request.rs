//! What a benchmark run is asked for: scenarios with their configs, CPU counts, rounds and
//! how long a run lasts, from the command line's [`abi::BenchConfig`] (the kernel's
//! `run=bench` keys; `kx bench --host` parses the same keys with the same parser).

pub use super::order::RunOrder;
use crate::catalog::Scenario;
use abi::BenchConfig;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Warm-up rounds before the measured ones (their runs are recorded with round 0 and are in
/// no statistic).
pub const WARMUP_ROUNDS: u32 = 1;

/// How long one run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLength {
    /// Every CPU runs batches until this many ns have passed on its clock.
    Timed {
        /// Duration, ns.
        ns: u64,
    },
    /// Every CPU runs batches until it completed this many operations.
    Counted {
        /// Operations per CPU.
        ops: u64,
    },
}

impl RunLength {
    /// A quarter of this length (at least 1 ns or 1 operation): how long the engine
    /// measures the `limit` floor between two runs of a fault scenario (`engine::run`).
    #[must_use]
    pub fn quarter(self) -> Self {
        match self {
            RunLength::Timed { ns } => RunLength::Timed {
                ns: (ns / 4).max(1),
            },
            RunLength::Counted { ops } => RunLength::Counted {
                ops: (ops / 4).max(1),
            },
        }
    }

    /// The `plan` record's `seconds` and `ops` (per CPU).
    #[must_use]
    pub fn for_plan(self) -> (Option<f64>, Option<u64>) {
        match self {
            RunLength::Timed { ns } => (Some(ns as f64 / 1e9), None),
            RunLength::Counted { ops } => (None, Some(ops)),
        }
    }
}

/// A request the machine cannot satisfy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// A CPU count above the CPUs the benchmark may use.
    TooManyCpus {
        /// The count asked for.
        asked: u32,
        /// CPUs available.
        online: u32,
    },
    /// `scenarios=` names a scenario the catalog does not have (the message names it and
    /// lists those there are).
    UnknownScenario(String),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::TooManyCpus { asked, online } => write!(
                f,
                "bench_cpus asks for {asked} CPUs, but only {online} are online"
            ),
            RequestError::UnknownScenario(e) => write!(f, "scenarios: {e}"),
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Scenarios in the order asked for, each with its configs.
    pub scenarios: Vec<(&'static Scenario, Vec<String>)>,
    /// CPU counts, increasing.
    pub cpus: Vec<u32>,
    /// Measured rounds per variant, config and CPU count, split evenly among the instances.
    pub rounds: u32,
    /// Instances of each variant per point, each built afresh (at a placement of its own)
    /// and measured for `rounds / instances` rounds after its own warm-up.
    pub instances: u32,
    /// Warm-up rounds before each instance's measured rounds.
    pub warmup_rounds: u32,
    /// How long a run lasts.
    pub length: RunLength,
    /// The order of the variants in each round.
    pub order: RunOrder,
    /// Whether every scenario with a comparison also runs its baseline a second time, as
    /// the A/A control (variant `A'`, see [`crate::record::control_name`]).
    pub control: bool,
    /// `ci_width=`: after the planned instances, a point gets more instances (each with
    /// its share of rounds) until every one of its comparisons' 95% interval half-width is
    /// at most this fraction (0.02 = 2%).
    pub ci_width: Option<f64>,
    /// `budget=`, ns: instances are added only while the benchmark's elapsed time is within
    /// its share of this, pro rata over the points (a point's share ends where the points
    /// before it and itself would end if the budget were spread evenly).
    pub budget_ns: Option<u64>,
    /// `objects=1`: print each instance's objects ([`super::scenario::Instance::objects`]).
    pub objects: bool,
    /// `lock_stat=all`: lock statistics for every class in every run (the `locks` of each
    /// run list every lock taken). Otherwise only the classes the running
    /// instance's premises read record ([`super::scenario::Instance::lock_classes`]).
    pub lock_stat_all: bool,
}

impl Request {
    /// Whether instances are added after the planned ones.
    #[must_use]
    pub fn adds_rounds(&self) -> bool {
        self.ci_width.is_some() || self.budget_ns.is_some()
    }

    /// Measured rounds of each instance.
    #[must_use]
    pub fn rounds_per_instance(&self) -> u32 {
        (self.rounds / self.instances.max(1)).max(1)
    }
}

impl Request {
    /// The request of `cfg` on a machine with `online` CPUs for the benchmark.
    pub fn from_config(cfg: &BenchConfig<'_>, online: u32) -> Result<Request, RequestError> {
        let cpus: Vec<u32> = cfg.cpu_counts(online).collect();
        if let Some(&asked) = cpus.iter().find(|&&c| c > online) {
            return Err(RequestError::TooManyCpus { asked, online });
        }
        crate::catalog::check_selection(&cfg.scenarios).map_err(RequestError::UnknownScenario)?;
        Ok(Request {
            scenarios: crate::catalog::selected(&cfg.scenarios)
                .map(|s| (s, cfg.configs(s).map(String::from).collect()))
                .collect(),
            cpus,
            rounds: cfg.rounds(),
            instances: cfg.instances(),
            warmup_rounds: WARMUP_ROUNDS,
            length: RunLength::Timed {
                ns: cfg.seconds().as_nanos(),
            },
            order: RunOrder::Williams,
            control: true,
            ci_width: cfg.ci_width.map(|h| f64::from(h) / 10_000.0),
            budget_ns: cfg.budget.map(|s| u64::from(s) * 1_000_000_000),
            objects: cfg.objects,
            lock_stat_all: cfg.lock_stat_all,
        })
    }
}
