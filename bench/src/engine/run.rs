//! The benchmark run: plan, points, rounds, records, table, end.
//!
//! In the order it prints: the `machine` record; the `plan`; a `note` per skipped scenario
//! and per platform remark; then per scenario (the `limit` floor first when a fault scenario
//! runs), config and CPU count — a *point* — `instances` instance blocks. A block builds
//! every variant afresh (the previous block's instances still alive, the build order rotated
//! by one variant per block), and at a fault scenario's point an instance of the `limit`
//! floor after them; tears the previous block down, runs a warm-up round (round 0, each
//! variant once, in the plan's order) and its share of the measured rounds, each round
//! running every variant in turn in the order of a Williams square's row
//! ([`super::RunOrder`]: mmtests' interleaving keeps drift out of the ratio, the square a
//! position effect), each run followed by its invariant check, its `run` record (with its
//! position, `order`, and its `instance`) and a `KPROGRESS` line. At a fault scenario's
//! point the block's floor instance is measured before its first run and after every run,
//! for a quarter of a run's length each time, unrecorded as a run of its own (the one after
//! a run is the one before the next, across rounds too): every run carries the larger of
//! the two floor rates around it (`floor_ops_per_s`) and its fraction of it, so the floor
//! column divides by a floor measured next to the run it divides, not once at the start of
//! the benchmark (a host slowed for the `limit` point alone used to scale every fraction of
//! the run) nor once per round (the floor's own rate under TCG dips by 10-25% for a
//! measurement at a time while the fault paths' next to it do not: one such dip used to
//! scale a whole round's fractions, the larger of two drops it). Then the block's premises
//! are judged on its own runs. After the last block, the point's `comparison` records (per
//! the catalog, and the A/A control's A'/A; two-level over the blocks, [`crate::two_level`])
//! and the last block's teardown. At the end the results table (both styles) and the `end`
//! record.
//!
//! Nothing a scenario does can panic the engine: a setup, batch, check or teardown failure
//! becomes a line in `end.failures` (an invariant violation also clears `invariants_ok`),
//! the benchmark stops there, what was measured is still tabulated, and [`Report::passed`]
//! is false (the kernel exits with the test-failure code).

use super::measure::{Marks, measure};
use super::platform::{BenchPlatform, Output};
use super::premise;
use super::registry::{PlannedConfig, PlannedVariant, Registry};
use super::request::{Request, RunLength};
use super::scenario::{Instance, Setup};
use super::storage::Storage;
use crate::catalog::{self, Scenario};
use crate::progress::Progress;
use crate::record::{self, Comparison, End, KResult, Note, Premise, Run};
use crate::summary::Summary;
use crate::table::{Style, Table};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// What a benchmark run printed, for its caller.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Every `run` record, in order.
    pub runs: Vec<Run>,
    /// Every `comparison` record, in order.
    pub comparisons: Vec<Comparison>,
    /// Every `note` record's text, in order.
    pub notes: Vec<String>,
    /// The `end` record.
    pub end: End,
}

impl Report {
    /// Whether the benchmark completed with every invariant holding.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.end.invariants_ok && self.end.failures.is_empty()
    }
}

/// A failure that ended the benchmark (already recorded).
struct Stopped;

/// One instance block: each variant's record name, whether it is floor-relative, and its
/// instance; and at a fault scenario's point, the block's own instance of the floor, with
/// the `limit` config and variant it was built for.
#[derive(Default)]
struct Built<'r> {
    variants: Vec<BuiltVariant<'r>>,
    floor: Option<(String, &'static str, Box<dyn Instance + 'r>)>,
}

/// Where a fault scenario's point gets its paired floor: the `limit` scenario's planned
/// config and variant.
#[derive(Clone, Copy)]
struct FloorSource<'c, 'r> {
    config: &'c str,
    variant: PlannedVariant<'r>,
}

/// One variant's instance in a block: its record name, whether it is floor-relative, and
/// the instance.
type BuiltVariant<'r> = (String, bool, Box<dyn Instance + 'r>);

struct Engine<'p> {
    platform: &'p dyn BenchPlatform,
    request: &'p Request,
    runs: Vec<Run>,
    comparisons: Vec<Comparison>,
    notes: Vec<String>,
    failures: Vec<String>,
    invariants_ok: bool,
    step: u32,
    total: u32,
    /// Every premise judged.
    premises: Vec<Premise>,
    /// When the benchmark started (platform clock).
    t0: u64,
    /// Points planned, and points begun (for the budget's pro-rata share).
    points_total: u64,
    points_begun: u64,
}

/// Runs `request` with the scenarios of `registry` on `platform` and prints everything (see
/// the module doc). Never panics on a scenario's failure.
pub fn run(platform: &dyn BenchPlatform, registry: &Registry<'_>, request: &Request) -> Report {
    let t0 = platform.now_ns();
    platform.output(Output::Record, &platform.machine().line());
    let planned = registry.plan(request);
    platform.output(Output::Record, &planned.record.line());
    let mut e = Engine {
        platform,
        request,
        runs: Vec::new(),
        comparisons: Vec::new(),
        notes: Vec::new(),
        failures: Vec::new(),
        invariants_ok: true,
        step: 0,
        total: planned.record.total_runs,
        premises: Vec::new(),
        t0,
        points_total: planned
            .scenarios
            .iter()
            .map(|p| p.configs.len() as u64)
            .sum::<u64>()
            * request.cpus.len() as u64,
        points_begun: 0,
    };
    for name in &planned.skipped {
        e.note(format!(
            "scenario {name} is not built into this benchmark yet: skipped"
        ));
    }
    for n in platform.notes() {
        e.note(n);
    }
    ksync::stat::set_enabled(request.lock_stat_all);
    let floor = planned
        .scenarios
        .iter()
        .find(|p| p.scenario.name == catalog::LIMIT)
        .and_then(|p| p.configs.first())
        .and_then(|c| {
            Some(FloorSource {
                config: &c.name,
                variant: *c.variants.first()?,
            })
        });
    'all: for p in &planned.scenarios {
        for config in &p.configs {
            let paired = p.scenario.name != catalog::LIMIT
                && config.variants.iter().any(|v| v.provider.floor_relative());
            let floor = floor.filter(|_| paired);
            for &cpus in &request.cpus {
                if e.point(p.scenario, config, floor, cpus).is_err() {
                    break 'all;
                }
            }
        }
    }
    ksync::stat::set_enabled(false);
    let summary = Summary::new(&e.runs, &e.comparisons);
    for style in [Style::Wide, Style::Compact] {
        let table = Table::new(&summary, style)
            .with_notes(&e.notes)
            .with_premises(&e.premises);
        platform.output(Output::Table(style), &table);
    }
    let end = End {
        runs: e.runs.len() as u32,
        comparisons: e.comparisons.len() as u32,
        invariants_ok: e.invariants_ok,
        failures: e.failures.clone(),
        elapsed_ns: platform.now_ns().saturating_sub(t0),
        premises: e.premises.clone(),
    };
    platform.output(Output::Record, &end.line());
    Report {
        runs: e.runs,
        comparisons: e.comparisons,
        notes: e.notes,
        end,
    }
}

impl Engine<'_> {
    fn note(&mut self, text: String) {
        let note = Note::new(text);
        self.platform.output(Output::Record, &note.line());
        self.platform.output(Output::Message, &note.text);
        self.notes.push(note.text);
    }

    fn fail(&mut self, what: String) -> Stopped {
        self.platform
            .output(Output::Message, &format_args!("benchmark stopped: {what}"));
        self.failures.push(what);
        Stopped
    }

    /// One (scenario, config, CPU count): per instance block build, warm up and measure
    /// (each round after `floor`'s run, where the point has one); then compare and tear
    /// down (module doc).
    fn point<'r>(
        &mut self,
        scenario: &'static Scenario,
        config: &PlannedConfig<'r>,
        floor: Option<FloorSource<'_, 'r>>,
        cpus: u32,
    ) -> Result<(), Stopped> {
        self.points_begun += 1;
        let per_instance = self.request.rounds_per_instance();
        let mut result = Ok(());
        // Declared before the instances, so it outlives them: it holds their contexts.
        let storage = Storage::new();
        let mut alive: Built<'_> = Built::default();
        let mut measured = 0;
        for instance in 0.. {
            let planned = instance < self.request.instances;
            if !planned && !self.another_instance(scenario, &config.name, cpus, measured) {
                break;
            }
            if !planned {
                // The progress total grows by the block, where everyone can see it.
                self.total +=
                    config.variants.len() as u32 * (per_instance + self.request.warmup_rounds);
            }
            // The previous block's instances stay alive while this one is built, so no
            // allocation of this block reuses theirs: each block has a placement of its own.
            let built = self.build(scenario, config, floor, cpus, instance, &storage);
            result = result.and(self.teardown(scenario, &config.name, cpus, &mut alive));
            alive = match built {
                Ok(b) => b,
                Err((stopped, partial)) => {
                    alive = partial;
                    result = result.and(Err(stopped));
                    break;
                }
            };
            if result.is_err() {
                break;
            }
            result = self.rounds(
                scenario,
                &config.name,
                cpus,
                instance,
                measured,
                per_instance,
                &alive,
            );
            measured += per_instance;
            if result.is_ok() {
                result = self.judge_premises(scenario, &config.name, cpus, instance, &alive);
            }
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            self.compare(scenario, &config.name, cpus);
        }
        result.and(self.teardown(scenario, &config.name, cpus, &mut alive))
    }

    /// Builds instance `instance` of every variant of the point; on a failure, the
    /// instances built so far come back with the error, for teardown.
    ///
    /// The build order rotates by one variant per block (block `j` starts with variant
    /// `j mod V`), so no variant is always the last built: the allocator's state after the
    /// others' builds (which free lists are warm, how fragmented the zone is) becomes part of
    /// each instance's random placement instead of a fixed offset of one variant. The
    /// returned block is in the plan's order; `floor`'s instance, where the point has one,
    /// is built after the variants.
    fn build<'r>(
        &mut self,
        scenario: &'static Scenario,
        config: &PlannedConfig<'r>,
        floor: Option<FloorSource<'_, 'r>>,
        cpus: u32,
        instance: u32,
        storage: &'r Storage,
    ) -> Result<Built<'r>, (Stopped, Built<'r>)> {
        let n = config.variants.len();
        let mut slots: Vec<Option<BuiltVariant<'r>>> = (0..n).map(|_| None).collect();
        for k in (0..n).map(|k| (k + instance as usize) % n.max(1)) {
            let v = &config.variants[k];
            let setup = Setup {
                config: &config.name,
                variant: v.name,
                cpus,
                storage,
            };
            match v.provider.instantiate(&setup) {
                Ok(inst) => {
                    if self.request.objects {
                        for o in inst.objects() {
                            if let Some(pa) = self.platform.phys_addr(o.addr) {
                                let line = o.line(
                                    scenario.name,
                                    &config.name,
                                    &v.record_name(),
                                    cpus,
                                    instance,
                                    pa,
                                );
                                self.platform.output(Output::Object, &line);
                            }
                        }
                    }
                    // Once per scenario and config for the catalog's variants: they,
                    // their instances and the CPU counts repeat it (seed002's page counts
                    // differ by a page or two between instances; the control's repeats its
                    // baseline's). A variant the catalog does not know (a reference such as
                    // `linux`) says something else, under its own name.
                    if let Some(note) = inst.note().filter(|_| !v.control) {
                        let head = if scenario.variant(v.name).is_some() {
                            format!("{} {}: ", scenario.name, config.name)
                        } else {
                            format!("{} {} {}: ", scenario.name, config.name, v.name)
                        };
                        if !self.notes.iter().any(|t| t.starts_with(&head)) {
                            self.note(head + &note);
                        }
                    }
                    slots[k] = Some((v.record_name(), v.provider.floor_relative(), inst));
                }
                Err(err) => {
                    let stopped = self.fail(format!(
                        "{} {} {} cpus={cpus} instance={instance}: setup failed: {err}",
                        scenario.name,
                        config.name,
                        v.record_name()
                    ));
                    let partial = Built {
                        variants: slots.into_iter().flatten().collect(),
                        floor: None,
                    };
                    return Err((stopped, partial));
                }
            }
        }
        let mut built = Built {
            variants: slots.into_iter().flatten().collect(),
            floor: None,
        };
        if let Some(f) = floor {
            let setup = Setup {
                config: f.config,
                variant: f.variant.name,
                cpus,
                storage,
            };
            match f.variant.provider.instantiate(&setup) {
                Ok(inst) => built.floor = Some((f.config.into(), f.variant.name, inst)),
                Err(err) => {
                    let stopped = self.fail(format!(
                        "{} {config} cpus={cpus} instance={instance}: setup of its paired {} \
                         {} {} failed: {err}",
                        scenario.name,
                        catalog::LIMIT,
                        f.config,
                        f.variant.name,
                        config = config.name,
                    ));
                    return Err((stopped, built));
                }
            }
        }
        Ok(built)
    }

    /// Tears down and empties `alive`.
    fn teardown(
        &mut self,
        scenario: &'static Scenario,
        config: &str,
        cpus: u32,
        alive: &mut Built<'_>,
    ) -> Result<(), Stopped> {
        let mut result = Ok(());
        let floor = alive
            .floor
            .take()
            .map(|(c, v, inst)| (format!("(paired {} {c} {v})", catalog::LIMIT), inst));
        for (variant, inst) in alive
            .variants
            .drain(..)
            .map(|(v, _, inst)| (v, inst))
            .chain(floor)
        {
            if let Err(err) = inst.teardown() {
                let s = self.fail(format!(
                    "{} {config} {variant} cpus={cpus}: teardown failed: {err}",
                    scenario.name
                ));
                result = result.and(Err(s));
            }
        }
        result
    }

    /// One instance block's warm-up and its `count` measured rounds, numbered from
    /// `done + 1`, in the request's order.
    #[allow(clippy::too_many_arguments)]
    fn rounds(
        &mut self,
        scenario: &'static Scenario,
        config: &str,
        cpus: u32,
        instance: u32,
        done: u32,
        count: u32,
        block: &Built<'_>,
    ) -> Result<(), Stopped> {
        let warmups = self.request.warmup_rounds;
        let instances = &block.variants;
        // The floor measured after a run is the one before the next, across rounds too.
        let mut floor_before = None;
        for i in 0..warmups + count {
            let (round, warmup) = if i < warmups {
                (0, true)
            } else {
                (done + i - warmups + 1, false)
            };
            let order = if warmup {
                (0..instances.len()).collect()
            } else {
                self.request.order.order(instances.len(), round)
            };
            for (position, &k) in order.iter().enumerate() {
                let (variant, floor_relative, inst) = &instances[k];
                let at = format!(
                    "{} {config} {variant} cpus={cpus} round={round}",
                    scenario.name
                );
                if floor_before.is_none() {
                    floor_before = self.floor_rate(&at, "before", block, cpus, round, warmup)?;
                }
                let names = (scenario.name, config, variant.as_str());
                let length = self.request.length;
                let mut run =
                    self.one_run(&at, names, cpus, round, warmup, &**inst, Marks::On, length)?;
                run.order = position as u32 + 1;
                run.instance = instance;
                let floor_after = self.floor_rate(&at, "after", block, cpus, round, warmup)?;
                let floors = floor_before.zip(floor_after);
                floor_before = floor_after;
                if let Some((before, after)) = floors.filter(|_| *floor_relative)
                    && let Err(why) = run.pair_with_floors(before, after)
                {
                    return Err(self.fail(format!(
                        "{} {config} {variant} cpus={cpus} round={round}: cannot pair the run \
                         with its floor: {why}",
                        scenario.name
                    )));
                }
                self.step += 1;
                self.platform.output(Output::Record, &run.line());
                let progress = Progress {
                    step: self.step,
                    total: self.total,
                    scenario: scenario.name,
                    config,
                    variant,
                    cpus,
                    round,
                    rounds: self.request.rounds.max(done + count),
                    ops_per_s: run.ops_per_s,
                };
                self.platform.output(Output::Progress, &progress);
                self.runs.push(run);
            }
        }
        Ok(())
    }

    /// Whether the point gets another instance block after `done` measured rounds:
    /// `ci_width=` or `budget=` asked for more, some comparison's interval is still wider
    /// than the target (or has none), the budget's share of this point is not spent, and
    /// the rounds stay within [`abi::bench::MAX_ROUNDS`]. A block brings new placements, so
    /// stopping when the interval is narrow cannot lock one placement's offset into it.
    fn another_instance(
        &self,
        scenario: &'static Scenario,
        config: &str,
        cpus: u32,
        done: u32,
    ) -> bool {
        let r = self.request;
        if !r.adds_rounds() || done + r.rounds_per_instance() > abi::bench::MAX_ROUNDS {
            return false;
        }
        if let Some(budget) = r.budget_ns {
            let share = budget as u128 * u128::from(self.points_begun)
                / u128::from(self.points_total.max(1));
            let elapsed = self.platform.now_ns().saturating_sub(self.t0);
            if u128::from(elapsed) >= share {
                return false;
            }
        }
        let Some(target) = r.ci_width else {
            return true;
        };
        self.point_comparisons(scenario, config, cpus)
            .into_iter()
            .filter_map(|(a, b)| {
                Comparison::from_runs(scenario.name, config, cpus, a, &b, &self.runs).ok()
            })
            .any(|c| c.half_width().is_none_or(|h| h > target))
    }

    /// The comparisons of a point whose variants both ran: the catalog's and the A/A
    /// control's.
    fn point_comparisons(
        &self,
        scenario: &'static Scenario,
        config: &str,
        cpus: u32,
    ) -> Vec<(&'static str, String)> {
        let present = |v: &str| {
            self.runs.iter().any(|r| {
                r.scenario == scenario.name
                    && r.config == config
                    && r.cpus == cpus
                    && r.variant == v
            })
        };
        let mut defs: Vec<(&'static str, String)> = scenario
            .comparisons
            .iter()
            .map(|d| (d.a, String::from(d.b)))
            .collect();
        if let Some(d) = scenario.comparisons.first() {
            defs.push((d.a, record::control_name(d.a)));
        }
        defs.retain(|(a, b)| present(a) && present(b));
        defs
    }

    /// The rate of `block`'s floor instance over a quarter of a run's length, measured as
    /// any run is but unmarked and not recorded (module doc), `when` (before or after) the
    /// run `at`; `None` at a point without a floor.
    fn floor_rate(
        &mut self,
        at: &str,
        when: &str,
        block: &Built<'_>,
        cpus: u32,
        round: u32,
        warmup: bool,
    ) -> Result<Option<f64>, Stopped> {
        let Some((c, v, f)) = &block.floor else {
            return Ok(None);
        };
        let at = format!("{at}: the paired {} {c} {v} {when} it", catalog::LIMIT);
        let names = (catalog::LIMIT, c.as_str(), *v);
        let length = self.request.length.quarter();
        let run = self.one_run(&at, names, cpus, round, warmup, &**f, Marks::Off, length)?;
        Ok(Some(run.ops_per_s))
    }

    /// Measures `inst` as the run of scenario, config and variant `names` (`marks`: whether
    /// the platform hears of it) and checks its invariant after; a failure of either stops
    /// the benchmark with `at` in front of it.
    #[allow(clippy::too_many_arguments)]
    fn one_run(
        &mut self,
        at: &str,
        (scenario, config, variant): (&str, &str, &str),
        cpus: u32,
        round: u32,
        warmup: bool,
        inst: &dyn Instance,
        marks: Marks,
        length: RunLength,
    ) -> Result<Run, Stopped> {
        let m = match measure(self.platform, inst, cpus, length, marks) {
            Ok(m) => m,
            Err(f) => return Err(self.fail(format!("{at}: {f}"))),
        };
        if let Err(why) = inst.check() {
            self.invariants_ok = false;
            return Err(self.fail(format!("{at}: invariant violated: {why}")));
        }
        let mut run = match Run::new(
            scenario,
            config,
            variant,
            cpus,
            round,
            warmup,
            m.ops(),
            m.ns(),
        ) {
            Ok(r) => r,
            Err(why) => return Err(self.fail(format!("{at}: cannot record the run: {why}"))),
        };
        run.per_cpu = m.per_cpu;
        run.locks = m.locks;
        run.counters = m.counters;
        run.pmu = m.pmu.map(|per_cpu| record::RunPmu::new(per_cpu, run.ops));
        Ok(run)
    }

    /// Judges the premises of every instance of block `instance` over its measured runs;
    /// one that did not hold fails the benchmark as a violated invariant does.
    fn judge_premises(
        &mut self,
        scenario: &'static Scenario,
        config: &str,
        cpus: u32,
        instance: u32,
        instances: &Built<'_>,
    ) -> Result<(), Stopped> {
        let mut failed = Vec::new();
        for (variant, _, inst) in &instances.variants {
            let runs: Vec<&Run> = self
                .runs
                .iter()
                .filter(|r| {
                    !r.warmup
                        && r.instance == instance
                        && r.scenario == scenario.name
                        && r.config == config
                        && r.variant == *variant
                        && r.cpus == cpus
                })
                .collect();
            let checks = match inst.premises(&runs) {
                Ok(checks) => checks,
                Err(premise::Missing(what)) => {
                    failed.push(format!(
                        "{} {config} {variant} cpus={cpus}: a premise needs {what}, which the \
                         runs did not report",
                        scenario.name
                    ));
                    continue;
                }
            };
            for p in checks {
                // A premise about sharing cannot hold at one CPU: recorded, not judged.
                let applicable = cpus >= 2 || !p.across_cpus;
                let premise = Premise {
                    scenario: scenario.name.into(),
                    config: config.into(),
                    variant: variant.clone(),
                    cpus,
                    instance,
                    name: p.name.into(),
                    held: p.held && applicable,
                    applicable,
                    across_cpus: p.across_cpus,
                    figure: p.figure,
                    expect: p.expect,
                };
                if !scenario.premises.contains(&p.name) {
                    failed.push(format!(
                        "{} {config} {variant} cpus={cpus}: premise {} is not declared in the \
                         catalog (it declares {:?})",
                        scenario.name, p.name, scenario.premises
                    ));
                } else if applicable && !premise.held {
                    failed.push(format!(
                        "{} {config} {variant} cpus={cpus} instance={instance}: premise {} did not \
                         hold: {} (expected {})",
                        scenario.name, premise.name, premise.figure, premise.expect
                    ));
                }
                self.premises.push(premise);
            }
        }
        if failed.is_empty() {
            return Ok(());
        }
        self.invariants_ok = false;
        let mut stopped = Stopped;
        for f in failed {
            stopped = self.fail(f);
        }
        Err(stopped)
    }

    fn compare(&mut self, scenario: &'static Scenario, config: &str, cpus: u32) {
        for (a, b) in self.point_comparisons(scenario, config, cpus) {
            match Comparison::from_runs(scenario.name, config, cpus, a, &b, &self.runs) {
                Ok(mut c) => {
                    c.set_target(self.request.ci_width);
                    self.platform.output(Output::Record, &c.line());
                    self.comparisons.push(c);
                }
                Err(why) => self.note(format!(
                    "{} {config} cpus={cpus}: no comparison {b}/{a}: {why}",
                    scenario.name
                )),
            }
        }
    }
}
