//! What a scenario is to the engine: a factory of *instances* (one per variant of a config
//! at a CPU count), each of which runs batches of operations on the chosen CPUs, reports its
//! counters, checks its invariants and tears itself down.
//!
//! The split follows how a Linux benchmark is run by mmtests or will-it-scale: setup (create
//! the memcgs, set the limits, map the regions, fill the objects) is done once before any
//! timing; the timed part is a per-CPU loop of a small unit of work (will-it-scale's
//! `testcase()` iteration, here a *batch*); teardown comes after. The engine keeps the
//! instances of every variant of a (scenario, config, CPU count) alive at once, so that it
//! can interleave them round by round (A B A B ...) without rebuilding anything between A and
//! B, and checks each instance's invariants after every run, with every CPU quiesced.
//!
//! Adding a scenario is implementing [`BenchScenario`] (and its [`Instance`]) with its catalog
//! entry (its configs, variants and comparisons, listed by [`crate::catalog`]) in one module,
//! and one line in the platform-neutral table ([`mod@crate::scenarios`]).

use super::premise::Premises;
use super::storage::Storage;
use crate::catalog;
use crate::record::Run;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// What an instance is built for.
///
/// `'s` is the lifetime of [`Setup::storage`], which the instance may borrow from: it
/// outlives every instance of the point.
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a, 's> {
    /// The config (`anon`, `1500`, ...).
    pub config: &'a str,
    /// The variant (`A`, `base@+64`, ...).
    pub variant: &'a str,
    /// How many CPUs will run batches: ids `0..cpus`.
    pub cpus: u32,
    /// Where the instance keeps what it and its borrowers share (its fault-core context):
    /// owned by the engine, dropped after the point's last instance.
    pub storage: &'s Storage,
}

/// What one batch is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchCtx {
    /// The CPU running it (the platform's id, also ksync's).
    pub cpu: u32,
    /// Its index among the run's CPUs, `0..cpus` (equal to `cpu` while the chosen CPUs are
    /// `0..cpus`, as on both platforms today).
    pub index: u32,
    /// Operations this CPU still owes a counted run (`u64::MAX` in a timed run): a batch
    /// should not do more than this.
    pub max_ops: u64,
    /// When a timed run ends, on the platform clock (`u64::MAX` in a counted run). A batch
    /// is normally far shorter and need not look at it; one that runs a whole run in one
    /// go (the Linux reference's child-process workers) stops at it.
    pub deadline_ns: u64,
}

/// A scenario's failure: setup, a batch or teardown could not be done. The engine adds
/// where it happened and ends the benchmark cleanly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError(pub String);

impl ScenarioError {
    /// An error saying `msg`.
    #[must_use]
    pub fn new(msg: impl Into<String>) -> ScenarioError {
        ScenarioError(msg.into())
    }

    /// A setup whose configuration `config` the scenario does not have.
    #[must_use]
    pub fn no_config(config: &str) -> ScenarioError {
        ScenarioError(format!("no config `{config}`"))
    }

    /// A setup whose variant `variant` the scenario does not have.
    #[must_use]
    pub fn no_variant(variant: &str) -> ScenarioError {
        ScenarioError(format!("no variant `{variant}`"))
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for ScenarioError {
    fn from(s: String) -> Self {
        ScenarioError(s)
    }
}

impl From<&str> for ScenarioError {
    fn from(s: &str) -> Self {
        ScenarioError(s.into())
    }
}

/// A scenario, or part of one: the variants of one catalog scenario that this code can run.
///
/// Several providers may serve one catalog name (the host run adds the Linux reference's
/// `linux` variant to seed001 and seed003 beside ours); the engine runs the union of their
/// variants, interleaved.
pub trait BenchScenario: Sync {
    /// The catalog name ([`catalog::Scenario::name`]).
    fn name(&self) -> &'static str;

    /// The variants this provider runs, in interleaving order. Default: every variant the
    /// catalog lists.
    fn variants(&self) -> Vec<&'static str> {
        catalog::scenario(self.name())
            .map(|s| s.variants.iter().map(|v| v.name).collect())
            .unwrap_or_default()
    }

    /// Whether this provider runs `config` (default: every config it is asked for).
    fn supports(&self, config: &str) -> bool {
        let _ = config;
        true
    }

    /// Whether its runs' rates are reported as a fraction of the `limit` floor at the same
    /// CPU count. Default: when the catalog marks the scenario as a fault path.
    fn floor_relative(&self) -> bool {
        catalog::scenario(self.name()).is_some_and(|s| s.fault_path)
    }

    /// Builds the instance for `setup` (memcgs, limits, regions, objects): everything that
    /// must exist before timing. Called with every CPU idle; may fail with a message.
    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError>;
}

/// One variant of one config, set up for a CPU count.
///
/// `run_batch` is called concurrently on every CPU of a run, the rest with every CPU idle.
pub trait Instance: Sync {
    /// Does one batch of operations on `ctx.cpu` and returns how many it completed (at least
    /// one, at most `ctx.max_ops`). Short: the engine checks the clock and passes a
    /// quiescent point between batches.
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError>;

    /// Counters (memcg and lruvec stats, fault counts, ...) as absolute values, in a fixed
    /// order of names; the engine records each run's change of them.
    fn counters(&self) -> Vec<(String, i64)> {
        Vec::new()
    }

    /// Checks the instance's invariants (every CPU is idle). Runs after every run; an `Err`
    /// ends the benchmark with `invariants_ok: false`.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether the CPU of `ctx` has work to do before its next batch that the seed's
    /// benchmark does not time (pft's unmap between its timed fault phases). The engine asks
    /// before every batch, so this is a cheap check. Default: never.
    fn untimed_due(&self, ctx: &BatchCtx) -> bool {
        let _ = ctx;
        false
    }

    /// That work ([`Self::untimed_due`] said so). The engine keeps its time out of the
    /// run's (the CPU's clock pauses and its deadline moves by as much) and tells the
    /// platform around it ([`super::BenchPlatform::untimed_begins`]), so that counters of
    /// the CPU's measured window leave it out too. Default: nothing.
    fn untimed(&self, ctx: &BatchCtx) -> Result<(), ScenarioError> {
        let _ = ctx;
        Ok(())
    }

    /// The premises of the seed's mechanism, judged over this variant's measured runs at
    /// one point (see [`super::premise`]), or the counter one of them needed that the runs
    /// did not report. Default: none.
    fn premises(&self, runs: &[&Run]) -> Premises {
        let _ = runs;
        Ok(Vec::new())
    }

    /// The lock classes (and shared-word classes, `ksync::word_class!`) whose statistics
    /// this instance's premises read. The engine records these in every run of the
    /// instance and lists them in the run's `locks` even when never taken, so that a
    /// premise reads a count, never an absence; the other classes record only with
    /// `lock_stat=all` ([`super::Request::lock_stat_all`]), so the measured path pays for
    /// no statistics a premise does not need. A premise that reads a class not named here
    /// gets [`super::premise::Missing`]. Default: none.
    fn lock_classes(&self) -> Vec<&'static ksync::ClassData> {
        Vec::new()
    }

    /// A sentence about how this instance was set up that belongs with the results (e.g.
    /// whether the Linux reference found a memcg to run in); printed once as a `note`.
    fn note(&self) -> Option<String> {
        None
    }

    /// The objects this instance's operations share between CPUs, named for the coherence
    /// plugin's hot lines (printed with `objects=1`). The default names none.
    fn objects(&self) -> Vec<ObjectDesc> {
        Vec::new()
    }

    /// Releases everything `instantiate` built (every CPU idle).
    fn teardown(self: Box<Self>) -> Result<(), ScenarioError>;
}

/// An object an instance uses, as the coherence report names the lines it spans.
#[derive(Clone, Debug)]
pub struct ObjectDesc {
    /// What it is, e.g. `mem_cgroup_per_node (memcg 1, node 0)`.
    pub label: String,
    /// Its (virtual) address.
    pub addr: usize,
    /// Its size in bytes.
    pub size: usize,
    /// Its fields, in offset order.
    pub fields: Vec<lru::layout::FieldDesc>,
}

impl ObjectDesc {
    /// The `KOBJECT` line for the object at physical address `phys` in instance `instance`
    /// of `scenario config variant cpus`: `KOBJECT <scenario> <config> <variant> <cpus>
    /// <instance> <phys> <size> <label>|<field>:<group>:<offset>:<size>;...`.
    #[must_use]
    pub fn line(
        &self,
        scenario: &str,
        config: &str,
        variant: &str,
        cpus: u32,
        instance: u32,
        phys: u64,
    ) -> String {
        let mut s = alloc::format!(
            "KOBJECT {scenario} {config} {variant} {cpus} {instance} {phys:#x} {} {}|",
            self.size,
            self.label.replace('|', "/")
        );
        for (i, f) in self.fields.iter().enumerate() {
            if i > 0 {
                s.push(';');
            }
            s.push_str(&alloc::format!(
                "{}:{}:{}:{}",
                f.name,
                f.group,
                f.offset,
                f.size
            ));
        }
        s
    }
}
