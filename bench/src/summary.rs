//! Runs grouped into table points: per scenario, config and CPU count, each variant's
//! statistics and each comparison, in the catalog's order.
//!
//! This is what the results table ([`crate::table`]), the runner's CSV/plots/HTML and
//! `kx compare` read. The comparisons are the ones the run printed where it printed them;
//! where one is missing (a log cut off before it, or a plan whose comparison failed) it is
//! recomputed from the runs with [`crate::stats`] and listed in [`Summary::recomputed`], and
//! a printed one that disagrees with its runs is listed in [`Summary::disagreeing`]. Variants
//! and scenarios the catalog does not know (e.g. a host run's `linux` reference) are kept,
//! after the known ones, in the order they first appear; only the catalog's own variants get
//! a floor fraction (a reference takes its faults some other way than the floor measures),
//! and the rows of scenario [`LINUX_REFERENCE`]: Linux booted in the same QEMU after the
//! benchmark (`kx bench` in QEMU), whose faults the same emulator executes as the floor's.
//!
//! Where the runs carry hardware counts ([`crate::record::RunPmu`]), each variant gets their
//! mean per op over its measured rounds ([`PmuPoint`]), and the table divides B's by A's.
//!
//! The summary also decides the marks (issue 32): each experiment's primary comparison
//! ([`crate::primary`]) is flagged ([`Comparison::primary`]) and Holm-Bonferroni runs over
//! the fixed family of one primary per experiment of the catalog, at a family-wise
//! [`stats::ALPHA`] (each primary's `p_adjusted`). A primary is marked
//! ([`Comparison::marked`]) only when its own interval excludes 1, its adjusted p is below
//! [`stats::ALPHA`] and the A/A control at the same point passes ([`control_state`]: it
//! exists, has two or more instances, and its 90% interval lies within the point's margin,
//! [`primary::control_margin`]: a quarter of the seed's effect there and at least
//! +-[`primary::CONTROL_MARGIN`], Schuirmann's two one-sided tests); otherwise a primary whose
//! interval excludes 1 says why not ([`Comparison::unmarked_why`]). Every other comparison
//! is exploratory: never marked, with its interval. An A/A control is marked by its own
//! interval: it is the noise, not a hypothesis.

use crate::catalog::{self, Scenario};
use crate::primary;
use crate::record::{self, Comparison, Run};
use crate::stats::{self, RateSummary};
use alloc::string::String;
use alloc::vec::Vec;

/// The scenario of `kx bench`'s Linux reference in QEMU (Linux's own fault path, booted in
/// the same emulator): its rows get a floor fraction like the fault scenarios'.
pub const LINUX_REFERENCE: &str = "linux";

/// One variant at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantPoint {
    /// Variant name.
    pub variant: String,
    /// Its measured rounds' rates.
    pub rates: Vec<f64>,
    /// The round of each rate (the same order).
    pub rounds: Vec<u32>,
    /// Their statistics.
    pub stats: RateSummary,
    /// Its rate as a fraction of the floor's: the geometric mean of its runs' fractions of
    /// the floor measured in their rounds (fault scenarios,
    /// [`crate::record::Run::floor_ops_per_s`]); for runs without a paired floor (a
    /// reference booted apart, a log from before the pairing), its harmonic mean over the
    /// run's floor at the same CPU count ([`Summary::floor`]).
    pub floor_fraction: Option<f64>,
    /// The 95% interval of a paired [`Self::floor_fraction`] over its runs (Student's t
    /// on the logarithms of the per-run fractions, [`stats::paired_ratio_ci`]): how far
    /// the rounds' fractions spread. `None` with fewer than two paired runs, and for a
    /// fraction over the run's floor.
    pub floor_ci: Option<(f64, f64)>,
    /// Hardware counts per op, when every measured round has them.
    pub pmu: Option<PmuPoint>,
}

/// A variant's hardware counts per op at one point: the mean over its measured rounds of
/// each run's figure (every CPU's count over the run's ops, [`crate::record::RunPmu`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PmuPoint {
    /// Unhalted core cycles per op.
    pub cycles_per_op: f64,
    /// Instructions retired per op.
    pub instructions_per_op: f64,
    /// LLC misses per op (`None`: some round did not count them).
    pub llc_misses_per_op: Option<f64>,
}

impl PmuPoint {
    /// The mean of `runs`' figures; `None` when some run has no counts (or there is none).
    #[must_use]
    pub fn of(runs: &[&Run]) -> Option<PmuPoint> {
        let pmus: Vec<&record::RunPmu> =
            runs.iter().map(|r| r.pmu.as_ref()).collect::<Option<_>>()?;
        let n = pmus.len() as f64;
        if pmus.is_empty() {
            return None;
        }
        let mean = |f: &dyn Fn(&record::RunPmu) -> f64| pmus.iter().map(|p| f(p)).sum::<f64>() / n;
        let misses: Option<Vec<f64>> = pmus.iter().map(|p| p.llc_misses_per_op).collect();
        Some(PmuPoint {
            cycles_per_op: mean(&|p| p.cycles_per_op),
            instructions_per_op: mean(&|p| p.instructions_per_op),
            llc_misses_per_op: misses.map(|m| m.iter().sum::<f64>() / n),
        })
    }

    /// `self / a`, figure by figure (B/A when `self` is B).
    #[must_use]
    pub fn over(&self, a: &PmuPoint) -> PmuRatio {
        let div = |b: f64, a: f64| (a > 0.0).then(|| b / a);
        PmuRatio {
            cycles: div(self.cycles_per_op, a.cycles_per_op),
            instructions: div(self.instructions_per_op, a.instructions_per_op),
            llc_misses: match (self.llc_misses_per_op, a.llc_misses_per_op) {
                (Some(b), Some(a)) => div(b, a),
                _ => None,
            },
        }
    }
}

/// B/A of two variants' [`PmuPoint`]s (`None` where A's figure is 0 or absent).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PmuRatio {
    /// Cycles per op.
    pub cycles: Option<f64>,
    /// Instructions per op.
    pub instructions: Option<f64>,
    /// LLC misses per op.
    pub llc_misses: Option<f64>,
}

/// One (scenario, config, CPU count).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Scenario.
    pub scenario: String,
    /// Config.
    pub config: String,
    /// CPU count.
    pub cpus: u32,
    /// Variants, in catalog order.
    pub variants: Vec<VariantPoint>,
    /// Comparisons (printed or recomputed), in catalog order.
    pub comparisons: Vec<Comparison>,
}

impl Point {
    /// The variant called `name`.
    #[must_use]
    pub fn variant(&self, name: &str) -> Option<&VariantPoint> {
        self.variants.iter().find(|v| v.variant == name)
    }
}

/// Every point of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Points by scenario (catalog order), config (run order), CPU count (increasing).
    pub points: Vec<Point>,
    /// Comparisons the runs allowed but no record gave, recomputed here.
    pub recomputed: Vec<Comparison>,
    /// Printed comparisons that disagree with their own runs: (printed, recomputed).
    pub disagreeing: Vec<(Comparison, Comparison)>,
    /// Per CPU count, the floor over the whole run: the harmonic mean of every measured
    /// `limit` run and every distinct floor a fault scenario's round was paired with. What a
    /// reference without paired floors divides by ([`Summary::floor`]).
    pub floors: Vec<(u32, f64)>,
}

/// (scenario rank, config first-seen index, CPUs, variant rank).
type SortKey = (usize, usize, u32, usize);

fn rank<'a>(order: &mut Vec<&'a str>, known: &[&str], name: &'a str) -> usize {
    if let Some(i) = known.iter().position(|k| *k == name) {
        return i;
    }
    let i = order.iter().position(|o| *o == name).unwrap_or_else(|| {
        order.push(name);
        order.len() - 1
    });
    known.len() + i
}

/// Whether the A/A control lets its point be judged: `Err` says why not, in words. It must
/// have two or more instances and be shown within `margin` by the equivalence test
/// ([`primary::control_margin`] of its point).
pub fn control_state(control: Option<&Comparison>, margin: f64) -> Result<(), String> {
    let Some(c) = control else {
        return Err("no A/A control at this point".into());
    };
    if c.instances < 2 {
        return Err(
            "one instance per variant: the placement noise between instances was not measured"
                .into(),
        );
    }
    match c.equivalent_within(margin) {
        Some(true) => Ok(()),
        Some(false) => Err(alloc::format!(
            "the A/A control {:+.1}% [{:+.1}%, {:+.1}%] is not shown within +-{:.1}%",
            (c.ratio - 1.0) * 100.0,
            (c.ci_low.unwrap_or(f64::NAN) - 1.0) * 100.0,
            (c.ci_high.unwrap_or(f64::NAN) - 1.0) * 100.0,
            margin * 100.0
        )),
        None => Err("the A/A control has no interval".into()),
    }
}

/// Per CPU count, the harmonic mean of the measured `limit` runs and of the distinct floors
/// the fault scenarios' rounds were paired with (one per scenario, config, instance and
/// round: every run of a round carries the same one): the floor sampled over the whole run,
/// not only at its start.
fn run_floors(measured: &[&Run]) -> Vec<(u32, f64)> {
    let mut seen: Vec<(&str, &str, u32, u32, u32)> = Vec::new();
    let mut rates: Vec<(u32, Vec<f64>)> = Vec::new();
    for r in measured {
        let rate = if r.scenario == catalog::LIMIT {
            r.ops_per_s
        } else if let Some(f) = r.floor_ops_per_s {
            let key = (
                r.scenario.as_str(),
                r.config.as_str(),
                r.cpus,
                r.instance,
                r.round,
            );
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            f
        } else {
            continue;
        };
        match rates.iter_mut().find(|(c, _)| *c == r.cpus) {
            Some((_, v)) => v.push(rate),
            None => rates.push((r.cpus, alloc::vec![rate])),
        }
    }
    rates
        .into_iter()
        .filter_map(|(c, v)| Some((c, stats::hmean(&v).ok()?)))
        .collect()
}

/// A variant's rate over the floor measured in the same rounds, when every one of its
/// measured `runs` was paired with one: the geometric mean of the per-run fractions, as a
/// comparison's paired ratio ([`stats::paired_ratio_ci`]), so a change of the emulator's
/// speed between blocks (at two vCPUs on two cores the floor alone moved by up to a third
/// between blocks, and mostly by a few percent between two runs of one round) cancels in
/// each fraction. Its interval is the spread of those fractions, which the pairing does
/// not remove: a floor or a run slowed by the host inside one round.
fn paired_floor_fraction(runs: &[&Run]) -> Option<stats::PairedCi> {
    let pairs: Option<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| Some((r.floor_ops_per_s?, r.ops_per_s)))
        .collect();
    stats::paired_ratio_ci(&pairs?).ok()
}

fn agrees(x: &Comparison, y: &Comparison) -> bool {
    let close = |p: f64, q: f64| (p - q).abs() <= 1e-6 * p.abs().max(q.abs());
    let close_opt = |p: Option<f64>, q: Option<f64>| match (p, q) {
        (Some(p), Some(q)) => close(p, q),
        (None, None) => true,
        _ => false,
    };
    close(x.ratio, y.ratio)
        && close_opt(x.ci_low, y.ci_low)
        && close_opt(x.ci_high, y.ci_high)
        && x.significant == y.significant
}

impl Summary {
    /// Groups the measured `runs` (warm-ups are left out) and attaches `comparisons`.
    #[must_use]
    pub fn new(runs: &[Run], comparisons: &[Comparison]) -> Summary {
        let scenario_names: Vec<&str> = catalog::SCENARIOS.iter().map(|s| s.name).collect();
        let mut extra_scenarios = Vec::new();
        let mut configs: Vec<&str> = Vec::new();
        let mut extra_variants = Vec::new();
        let measured: Vec<&Run> = runs.iter().filter(|r| r.measured()).collect();
        // Sort keys: (scenario rank, config first-seen, cpus, variant rank).
        let mut keyed: Vec<(SortKey, &Run)> = measured
            .iter()
            .map(|r| {
                let s = rank(&mut extra_scenarios, &scenario_names, &r.scenario);
                let c = rank(&mut configs, &[], &r.config);
                let known: Vec<&str> = catalog::scenario(&r.scenario)
                    .map(|s| s.variants.iter().map(|v| v.name).collect())
                    .unwrap_or_default();
                let v = rank(&mut extra_variants, &known, &r.variant);
                ((s, c, r.cpus, v), *r)
            })
            .collect();
        keyed.sort_by_key(|(k, _)| *k);
        let mut points: Vec<Point> = Vec::new();
        for (_, r) in &keyed {
            let same_point = points.last().is_some_and(|p| {
                p.scenario == r.scenario && p.config == r.config && p.cpus == r.cpus
            });
            if !same_point {
                points.push(Point {
                    scenario: r.scenario.clone(),
                    config: r.config.clone(),
                    cpus: r.cpus,
                    variants: Vec::new(),
                    comparisons: Vec::new(),
                });
            }
            let p = points.last_mut().expect("pushed above");
            match p.variants.iter_mut().find(|v| v.variant == r.variant) {
                Some(v) => {
                    v.rates.push(r.ops_per_s);
                    v.rounds.push(r.round);
                }
                None => p.variants.push(VariantPoint {
                    variant: r.variant.clone(),
                    rates: alloc::vec![r.ops_per_s],
                    rounds: alloc::vec![r.round],
                    stats: stats::summarize(&[r.ops_per_s]).expect("checked run rate"),
                    floor_fraction: None,
                    floor_ci: None,
                    pmu: None,
                }),
            }
        }
        for p in &mut points {
            for v in &mut p.variants {
                // Every rate passed `Run::check`, so the summary exists.
                if let Ok(s) = stats::summarize(&v.rates) {
                    v.stats = s;
                }
                let of_variant: Vec<&Run> = measured
                    .iter()
                    .copied()
                    .filter(|r| {
                        r.scenario == p.scenario
                            && r.config == p.config
                            && r.cpus == p.cpus
                            && r.variant == v.variant
                    })
                    .collect();
                v.pmu = PmuPoint::of(&of_variant);
                if let Some(f) = paired_floor_fraction(&of_variant) {
                    v.floor_fraction = Some(f.ratio);
                    v.floor_ci = f.ci;
                }
            }
        }
        let mut summary = Summary {
            points,
            floors: run_floors(&measured),
            ..Summary::default()
        };
        summary.attach_floor();
        summary.attach_comparisons(runs, comparisons);
        summary.assess();
        summary
    }

    /// The floor over the whole run at `cpus` CPUs ([`Summary::floors`]).
    #[must_use]
    pub fn floor(&self, cpus: u32) -> Option<f64> {
        self.floors.iter().find(|(c, _)| *c == cpus).map(|f| f.1)
    }

    fn attach_floor(&mut self) {
        let floors = self.floors.clone();
        for p in &mut self.points {
            let Some(floor) = floors.iter().find(|(c, _)| *c == p.cpus).map(|f| f.1) else {
                continue;
            };
            if p.scenario == LINUX_REFERENCE {
                for v in p.variants.iter_mut().filter(|v| v.floor_fraction.is_none()) {
                    v.floor_fraction = Some(v.stats.hmean / floor);
                }
                continue;
            }
            let Some(s) = catalog::scenario(&p.scenario).filter(|s| s.fault_path) else {
                continue;
            };
            // Only our own variants run on the platform the floor measures; a reference
            // (the host run's `linux`) takes its faults some other way.
            for v in p.variants.iter_mut().filter(|v| {
                v.floor_fraction.is_none() && s.variant(v.variant.trim_end_matches('\'')).is_some()
            }) {
                v.floor_fraction = Some(v.stats.hmean / floor);
            }
        }
    }

    fn attach_comparisons(&mut self, runs: &[Run], given: &[Comparison]) {
        for p in &mut self.points {
            let catalog_defs = catalog::scenario(&p.scenario).map_or(&[][..], |s| s.comparisons);
            let mut defs: Vec<(&str, String)> = catalog_defs
                .iter()
                .map(|d| (d.a, String::from(d.b)))
                .collect();
            if let Some(d) = catalog_defs.first() {
                defs.push((d.a, record::control_name(d.a)));
            }
            let matches = |c: &&Comparison| {
                c.scenario == p.scenario && c.config == p.config && c.cpus == p.cpus
            };
            // A run excluded after the kernel printed its comparisons (the runner saw the
            // host busy) makes them stale: the point's comparisons are recomputed.
            let stale = runs.iter().any(|r| {
                r.excluded.is_some()
                    && r.scenario == p.scenario
                    && r.config == p.config
                    && r.cpus == p.cpus
            });
            for (a, b) in &defs {
                let (a, b) = (*a, b.as_str());
                if p.variant(a).is_none() || p.variant(b).is_none() {
                    continue;
                }
                let printed = given
                    .iter()
                    .filter(matches)
                    .find(|c| c.a == a && c.b == b)
                    .filter(|_| !stale);
                // A log from before issue 20 printed the unpaired interval: check it as such.
                let pair = printed.is_none_or(|c| c.paired || c.method != stats::METHOD);
                let own =
                    Comparison::from_runs_as(&p.scenario, &p.config, p.cpus, a, b, runs, pair);
                match (printed, own) {
                    (Some(c), Ok(own)) => {
                        let mut c = c.clone();
                        if !agrees(&c, &own) {
                            self.disagreeing.push((c.clone(), own.clone()));
                        }
                        // A log from before issue 20 printed no p: the runs give it.
                        if c.p.is_none() && agrees(&c, &own) {
                            c.p = own.p;
                        }
                        p.comparisons.push(c);
                    }
                    (Some(c), Err(_)) => p.comparisons.push(c.clone()),
                    (None, Ok(own)) => {
                        self.recomputed.push(own.clone());
                        p.comparisons.push(own);
                    }
                    (None, Err(_)) => {}
                }
            }
            // Printed comparisons outside the catalog (another tool's pairs) are kept too.
            for c in given.iter().filter(matches) {
                if !defs.iter().any(|(a, b)| *a == c.a && *b == c.b) {
                    p.comparisons.push(c.clone());
                }
            }
        }
    }

    /// The primary comparisons, Holm over the fixed family and the marks (module doc).
    fn assess(&mut self) {
        let family = primary::family_size();
        let mut raw = alloc::vec![1.0f64; family];
        let mut at: Vec<Option<(usize, usize)>> = alloc::vec![None; family];
        for (k, (s, _, seed)) in primary::experiments().enumerate() {
            at[k] = self.primary_of(s.name, seed);
            if let Some((i, j)) = at[k] {
                let c = &mut self.points[i].comparisons[j];
                c.primary = true;
                raw[k] = c.p.unwrap_or(1.0);
            }
        }
        let adjusted = stats::holm(&raw);
        for (&pos, adj) in at.iter().zip(adjusted) {
            if let Some((i, j)) = pos {
                self.points[i].comparisons[j].p_adjusted = Some(adj);
            }
        }
        for p in &mut self.points {
            let control = p.comparisons.iter().find(|c| c.control).cloned();
            for c in &mut p.comparisons {
                if c.control {
                    c.marked = Some(c.significant);
                    continue;
                }
                if !c.primary {
                    c.marked = Some(false);
                    c.unmarked_why = c
                        .significant
                        .then(|| "exploratory: not its experiment's primary comparison".into());
                    continue;
                }
                let adjusted_ok = c.p_adjusted.is_some_and(|q| q < stats::ALPHA);
                let margin = primary::control_margin(c.scenario.as_str(), c.cpus);
                let why = match control_state(control.as_ref(), margin) {
                    Err(why) => Some(why),
                    Ok(()) if !adjusted_ok => Some(match c.p_adjusted {
                        Some(q) => alloc::format!(
                            "p = {q:.3} after Holm's correction over the {family} experiments"
                        ),
                        None => "no p-value".into(),
                    }),
                    Ok(()) => None,
                };
                c.marked = Some(c.significant && why.is_none());
                c.unmarked_why = if c.significant { why } else { None };
            }
        }
    }

    /// Where the primary comparison of experiment `scenario` is: its headline's variants
    /// and config at the largest CPU count the run has them.
    fn primary_of(&self, scenario: &str, seed: &catalog::PublishedPoint) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize, u32)> = None;
        for (i, p) in self.points.iter().enumerate() {
            if p.scenario != scenario || p.config != seed.config {
                continue;
            }
            if let Some(j) = p
                .comparisons
                .iter()
                .position(|c| c.a == seed.a && c.b == seed.b)
                && best.is_none_or(|b| p.cpus > b.2)
            {
                best = Some((i, j, p.cpus));
            }
        }
        best.map(|(i, j, _)| (i, j))
    }

    /// The points of `scenario`, in order.
    pub fn scenario_points<'a>(&'a self, scenario: &'a str) -> impl Iterator<Item = &'a Point> {
        self.points.iter().filter(move |p| p.scenario == scenario)
    }

    /// The scenarios present, in order, with their catalog entry when there is one.
    #[must_use]
    pub fn scenarios(&self) -> Vec<(&str, Option<&'static Scenario>)> {
        let mut out: Vec<(&str, Option<&'static Scenario>)> = Vec::new();
        for p in &self.points {
            if out.last().is_none_or(|(n, _)| *n != p.scenario) {
                out.push((&p.scenario, catalog::scenario(&p.scenario)));
            }
        }
        out
    }

    /// Every comparison in the table, in order.
    pub fn comparisons(&self) -> impl Iterator<Item = &Comparison> {
        self.points.iter().flat_map(|p| &p.comparisons)
    }

    /// Whether some variant somewhere has hardware counts.
    #[must_use]
    pub fn has_pmu(&self) -> bool {
        self.points
            .iter()
            .any(|p| p.variants.iter().any(|v| v.pmu.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primary::CONTROL_MARGIN;

    fn run(s: &str, c: &str, v: &str, cpus: u32, round: u32, ops: u64) -> Run {
        Run::new(s, c, v, cpus, round, round == 0, ops, 1_000_000_000).unwrap()
    }

    fn runs() -> Vec<Run> {
        let mut out = Vec::new();
        for cpus in [2, 1] {
            for round in 0..=3 {
                out.push(run(
                    "limit",
                    "anon",
                    "floor",
                    cpus,
                    round,
                    1000 * u64::from(cpus),
                ));
                out.push(run(
                    "seed003-pft",
                    "anon",
                    "B",
                    cpus,
                    round,
                    400 + u64::from(round),
                ));
                out.push(run(
                    "seed003-pft",
                    "anon",
                    "A",
                    cpus,
                    round,
                    500 - u64::from(round),
                ));
                out.push(run("seed003-pft", "anon", "linux", cpus, round, 300));
                out.push(run("mystery", "x", "only", cpus, round, 7));
                out.push(run(
                    LINUX_REFERENCE,
                    "anon",
                    "mmap-touch-munmap",
                    cpus,
                    round,
                    250,
                ));
            }
        }
        out
    }

    #[test]
    fn groups_in_catalog_order_without_warmups() {
        let s = Summary::new(&runs(), &[]);
        let names: Vec<_> = s.scenarios().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["seed003-pft", "limit", "mystery", LINUX_REFERENCE]);
        let p = &s.points[0];
        assert_eq!((p.scenario.as_str(), p.cpus), ("seed003-pft", 1));
        let order: Vec<_> = p.variants.iter().map(|v| v.variant.as_str()).collect();
        assert_eq!(order, ["A", "B", "linux"]);
        assert_eq!(p.variants[0].rates, [499.0, 498.0, 497.0]);
        assert_eq!(s.points[1].cpus, 2);
        let f = p.variant("A").unwrap().floor_fraction.unwrap();
        assert!((f - p.variant("A").unwrap().stats.hmean / 1000.0).abs() < 1e-12);
        assert!(
            s.points
                .iter()
                .filter(|p| p.scenario != "seed003-pft" && p.scenario != LINUX_REFERENCE)
                .all(|p| p.variants[0].floor_fraction.is_none())
        );
        // Linux in the same QEMU: 250/s against the floor's 1000/s at 1 CPU.
        let linux = s
            .points
            .iter()
            .find(|p| p.scenario == LINUX_REFERENCE && p.cpus == 1)
            .unwrap();
        assert_eq!(linux.variants[0].floor_fraction, Some(0.25));
        assert_eq!(p.variant("linux").unwrap().floor_fraction, None);
    }

    /// A variant whose runs were paired with the floor measured in their rounds divides by
    /// those floors, not by the `limit` point; one unpaired run falls back to the point.
    #[test]
    fn paired_floors_are_the_fractions_denominator() {
        let mut runs = runs();
        for r in runs
            .iter_mut()
            .filter(|r| r.scenario == "seed003-pft" && r.variant == "B" && r.cpus == 1)
        {
            // Rounds 1..3 (rates 401..403) paired with floors of 4 x, 1 x and 2 x their rate.
            let floor = r.ops_per_s * [1.0, 4.0, 1.0, 2.0][r.round as usize];
            r.pair_with_floor(floor).unwrap();
        }
        let s = Summary::new(&runs, &[]);
        let p = &s.points[0];
        assert_eq!((p.scenario.as_str(), p.cpus), ("seed003-pft", 1));
        let b = p.variant("B").unwrap();
        // The geometric mean of 1/4, 1 and 1/2, and the t-interval of their logarithms
        // (mean -ln 2, standard deviation ln 2, so a half-width of t(0.975, 2) ln 2 / sqrt 3).
        assert!((b.floor_fraction.unwrap() - 0.5).abs() < 1e-12, "{b:?}");
        let (lo, hi) = b.floor_ci.unwrap();
        let half = 4.302_652_7 * core::f64::consts::LN_2 / libm::sqrt(3.0);
        assert!((lo - 0.5 * libm::exp(-half)).abs() < 1e-6, "{lo}");
        assert!((hi - 0.5 * libm::exp(half)).abs() < 1e-6, "{hi}");
        // The run's floor at 1 CPU: the limit point's three runs and B's three paired
        // floors (each once, though A's runs share their rounds); at 2 CPUs the limit's.
        let floor = stats::hmean(&[1000.0, 1000.0, 1000.0, 1604.0, 402.0, 806.0]).unwrap();
        assert!((s.floor(1).unwrap() - floor).abs() < 1e-9, "{:?}", s.floors);
        assert_eq!(s.floor(2), Some(2000.0));
        assert_eq!(s.floor(3), None);
        // A has no paired floor: its fraction is over the run's floor.
        let a = p.variant("A").unwrap();
        assert!((a.floor_fraction.unwrap() - a.stats.hmean / floor).abs() < 1e-12);

        let one = runs
            .iter_mut()
            .find(|r| r.variant == "B" && r.cpus == 1 && r.round == 3)
            .unwrap();
        one.floor_ops_per_s = None;
        one.floor_fraction = None;
        let s = Summary::new(&runs, &[]);
        let b = s.points[0].variant("B").unwrap();
        assert!((b.floor_fraction.unwrap() - b.stats.hmean / s.floor(1).unwrap()).abs() < 1e-12);
        assert_eq!(
            b.floor_ci, None,
            "no interval for a fraction over the run's floor"
        );
    }

    #[test]
    fn missing_comparisons_are_recomputed_and_wrong_ones_flagged() {
        let runs = runs();
        let s = Summary::new(&runs, &[]);
        assert_eq!(s.recomputed.len(), 2);
        assert_eq!(s.comparisons().count(), 2);
        let good = Comparison::from_runs("seed003-pft", "anon", 1, "A", "B", &runs).unwrap();
        let mut bad = Comparison::from_runs("seed003-pft", "anon", 2, "A", "B", &runs).unwrap();
        bad.ratio *= 1.5;
        let linux = Comparison::from_runs("seed003-pft", "anon", 2, "A", "linux", &runs).unwrap();
        let s = Summary::new(&runs, &[good.clone(), bad.clone(), linux.clone()]);
        assert!(s.recomputed.is_empty());
        assert_eq!(s.disagreeing.len(), 1);
        assert_eq!(s.disagreeing[0].0, bad);
        // The summary adds the primary flag, the corrected p and the mark; the rest is as
        // printed.
        let printed = |c: &Comparison| Comparison {
            primary: false,
            p_adjusted: None,
            marked: None,
            unmarked_why: None,
            ..c.clone()
        };
        let got =
            |i: usize| -> Vec<Comparison> { s.points[i].comparisons.iter().map(printed).collect() };
        assert_eq!(got(0), [good]);
        assert_eq!(got(1), [bad, linux]);
    }

    /// seed003 at `cpus` over three instance blocks of one round each, the blocks drifting:
    /// B at `b` times A, the control A' at `control` times, B's instances off by `+-noise`
    /// (a placement offset), A''s by a tenth of that.
    fn blocks(cpus: u32, b: f64, control: f64, noise: f64) -> Vec<Run> {
        let mut out = Vec::new();
        for (j, off) in [(0u32, 1.0), (1, -1.0), (2, 0.5)] {
            for (v, k) in [
                ("A", 1.0),
                ("B", b * (1.0 + noise * off)),
                ("A'", control * (1.0 - 0.1 * noise * off)),
            ] {
                let ops = (1_000_000.0 * k * (1.0 + 0.05 * f64::from(j))) as u64;
                let mut r = Run::new(
                    "seed003-pft",
                    "anon",
                    v,
                    cpus,
                    j + 1,
                    false,
                    ops,
                    1_000_000_000,
                )
                .unwrap();
                r.instance = j;
                out.push(r);
            }
        }
        out
    }

    fn find(s: &Summary, cpus: u32, b: &str) -> Comparison {
        s.points
            .iter()
            .find(|p| p.cpus == cpus)
            .and_then(|p| p.comparisons.iter().find(|c| c.b == b))
            .unwrap()
            .clone()
    }

    #[test]
    fn only_the_primary_is_judged_and_its_control_must_be_equivalent() {
        // B +20% at 1 and 2 CPUs, the control quiet.
        let mut runs = blocks(1, 1.2, 1.0, 0.002);
        runs.extend(blocks(2, 1.2, 1.0, 0.002));
        let s = Summary::new(&runs, &[]);
        let (b1, k1, b2, k2) = (
            find(&s, 1, "B"),
            find(&s, 1, "A'"),
            find(&s, 2, "B"),
            find(&s, 2, "A'"),
        );
        assert_eq!(b2.method, crate::two_level::METHOD);
        assert!(b1.significant && b2.significant);
        // The primary is the seed's comparison at the most CPUs; 1 CPU is exploratory.
        assert!(b2.primary && !b1.primary && !k1.primary && !k2.primary);
        assert_eq!(b1.p_adjusted, None);
        assert_eq!(b1.marked, Some(false));
        assert_eq!(
            b1.unmarked_why.as_deref(),
            Some("exploratory: not its experiment's primary comparison")
        );
        // Holm over the fixed family: the other five experiments were not run (p = 1).
        let family = crate::primary::family_size();
        let want = stats::holm(&[b2.p.unwrap(), 1.0, 1.0, 1.0, 1.0, 1.0]);
        assert_eq!(family, 6);
        assert_eq!(b2.p_adjusted, Some(want[0]));
        assert_eq!((b2.marked, b2.unmarked_why.as_deref()), (Some(true), None));
        assert!(
            k2.control && k2.p_adjusted.is_none(),
            "the controls are not in the family"
        );
        // The control +10%: significant or not, it is not equivalent to 1 within 5%.
        let mut runs = blocks(1, 1.2, 1.0, 0.002);
        runs.extend(blocks(2, 1.2, 1.1, 0.002));
        let s = Summary::new(&runs, &[]);
        let b2 = find(&s, 2, "B");
        assert!(b2.significant);
        assert_eq!(b2.marked, Some(false));
        let why = b2.unmarked_why.unwrap();
        assert!(
            why.starts_with("the A/A control +10.0%")
                && why.ends_with("is not shown within +-5.0%"),
            "{why}"
        );
        // A control that did not move but is too noisy to show it is within 5% fails too.
        let noisy: Vec<Run> = blocks(2, 1.2, 1.0, 0.002)
            .into_iter()
            .map(|mut r| {
                if r.variant == "A'" {
                    r.ops = r.ops * [94, 107, 98][r.instance as usize] / 100;
                    r.ops_per_s = r.ops as f64;
                }
                r
            })
            .collect();
        let k = find(&Summary::new(&noisy, &[]), 2, "A'");
        assert!(
            !k.significant && k.equivalent_within(CONTROL_MARGIN) == Some(false),
            "{k:?}"
        );
        assert!(control_state(Some(&k), CONTROL_MARGIN).is_err());
    }

    #[test]
    fn holm_over_the_six_experiments_can_take_a_mark_away() {
        // Find B's placement noise at which the primary's p lies between 0.05 / 6 and 0.05:
        // significant alone, not after Holm over the family.
        let mut found = None;
        for step in 1..400 {
            let noise = f64::from(step) * 0.0005;
            let s = Summary::new(&blocks(2, 1.05, 1.0, noise), &[]);
            let b = find(&s, 2, "B");
            let p = b.p.unwrap();
            if 0.05 / 6.0 < p && p < 0.05 {
                found = Some(b);
                break;
            }
        }
        let b = found.expect("some noise puts p between alpha / 6 and alpha");
        assert!(b.primary && b.significant);
        assert!(b.p_adjusted.unwrap() >= 0.05);
        assert_eq!(b.marked, Some(false));
        let why = b.unmarked_why.as_deref().unwrap();
        assert!(
            why.contains("after Holm's correction over the 6 experiments"),
            "{why}"
        );
    }

    /// B/A of the hardware counters is figure by figure, and `None` where A's figure is zero
    /// (a counter that did not count) or absent: never an infinity in the table.
    #[test]
    fn pmu_ratios_need_a_nonzero_a() {
        let a = PmuPoint {
            cycles_per_op: 200.0,
            instructions_per_op: 0.0,
            llc_misses_per_op: Some(2.0),
        };
        let b = PmuPoint {
            cycles_per_op: 100.0,
            instructions_per_op: 50.0,
            llc_misses_per_op: Some(3.0),
        };
        assert_eq!(
            b.over(&a),
            PmuRatio {
                cycles: Some(0.5),
                instructions: None,
                llc_misses: Some(1.5)
            }
        );
        let no_llc = PmuPoint {
            llc_misses_per_op: None,
            ..a
        };
        assert_eq!(b.over(&no_llc).llc_misses, None);
        assert_eq!(no_llc.over(&b).llc_misses, None);
    }

    /// A printed comparison agrees with its recomputation to a millionth, and an interval
    /// absent on both sides (too few rounds) agrees; absent on one side does not.
    #[test]
    fn agreement_is_within_a_millionth_and_absent_intervals_agree() {
        let runs = runs();
        let c = Comparison::from_runs("seed003-pft", "anon", 1, "A", "B", &runs).unwrap();
        assert!(agrees(&c, &c));
        let mut near = c.clone();
        near.ratio *= 1.0 + 1e-8;
        assert!(agrees(&c, &near));
        let mut off = c.clone();
        off.ratio *= 1.0 + 1e-4;
        assert!(!agrees(&c, &off), "a ratio off by a ten-thousandth");
        let no_interval = Comparison {
            ci_low: None,
            ci_high: None,
            ..c.clone()
        };
        assert!(agrees(&no_interval, &no_interval.clone()));
        assert!(!agrees(&no_interval, &c), "an interval on one side only");
    }

    /// Two instances per variant measure the placement noise: enough for the control; one
    /// is not, and a missing control says so.
    #[test]
    fn a_control_of_two_instances_is_enough() {
        let s = Summary::new(&blocks(1, 1.2, 1.0, 0.002), &[]);
        let mut k = find(&s, 1, "A'");
        assert_eq!(control_state(Some(&k), CONTROL_MARGIN), Ok(()));
        k.instances = 2;
        assert_eq!(control_state(Some(&k), CONTROL_MARGIN), Ok(()));
        k.instances = 1;
        assert!(
            control_state(Some(&k), CONTROL_MARGIN)
                .unwrap_err()
                .starts_with("one instance per variant")
        );
        assert_eq!(
            control_state(None, CONTROL_MARGIN).unwrap_err(),
            "no A/A control at this point"
        );
    }

    /// A printed comparison is checked with the interval it was printed with: a paired one
    /// as paired, one from a log before issue 20 (unpaired, Welch's method) as unpaired.
    /// Either agrees with its runs when checked its own way; checked the other way it would
    /// not (the two intervals differ on these runs).
    #[test]
    fn a_printed_comparison_is_checked_as_it_was_printed() {
        let runs = runs();
        let paired =
            Comparison::from_runs_as("seed003-pft", "anon", 1, "A", "B", &runs, true).unwrap();
        let mut old =
            Comparison::from_runs_as("seed003-pft", "anon", 1, "A", "B", &runs, false).unwrap();
        old.paired = false;
        assert!(paired.paired && paired.method != stats::METHOD);
        assert_eq!(old.method, stats::METHOD);
        assert!(
            !agrees(&paired, &old),
            "the test needs runs whose paired and unpaired intervals differ"
        );
        for printed in [paired, old] {
            let s = Summary::new(&runs, core::slice::from_ref(&printed));
            assert!(
                s.disagreeing.is_empty(),
                "paired: {}: {:?}",
                printed.paired,
                s.disagreeing
            );
        }
    }

    /// A run excluded for host load makes only its own point's printed comparisons stale
    /// (recomputed): a printed comparison at another CPU count, config or scenario is still
    /// checked against the runs.
    #[test]
    fn an_excluded_run_makes_only_its_own_point_stale() {
        let mut runs = runs();
        let mut bad = Comparison::from_runs("seed003-pft", "anon", 1, "A", "B", &runs).unwrap();
        bad.ratio *= 1.5;
        let busy = || Some(String::from("host busy"));
        // Excluded runs at three other points: seed003 at 2 CPUs, `limit` at 1 CPU, and a
        // seed003 config of its own at 1 CPU.
        let mut other_config = run("seed003-pft", "file", "A", 1, 1, 500);
        other_config.excluded = busy();
        runs.push(other_config);
        for r in runs.iter_mut().filter(|r| {
            r.round == 1
                && ((r.scenario == "seed003-pft" && r.cpus == 2 && r.variant == "A")
                    || (r.scenario == "limit" && r.cpus == 1))
        }) {
            r.excluded = busy();
        }
        let s = Summary::new(&runs, core::slice::from_ref(&bad));
        assert_eq!(s.disagreeing.len(), 1, "still checked: {:?}", s.disagreeing);
        assert_eq!(s.disagreeing[0].0.ratio, bad.ratio);
        // An exclusion at its own point makes it stale: recomputed, not flagged.
        runs.iter_mut()
            .find(|r| {
                r.scenario == "seed003-pft" && r.cpus == 1 && r.variant == "B" && r.round == 2
            })
            .unwrap()
            .excluded = busy();
        let s = Summary::new(&runs, &[bad]);
        assert!(s.disagreeing.is_empty(), "{:?}", s.disagreeing);
    }

    /// A printed p-value is the kernel's and is kept when the comparison agrees; one a log
    /// did not print is taken from the runs.
    #[test]
    fn a_printed_p_is_kept_and_a_missing_one_recomputed() {
        let runs = runs();
        let own = Comparison::from_runs("seed003-pft", "anon", 1, "A", "B", &runs).unwrap();
        assert!(own.p.is_some_and(|p| p < 0.01), "{:?}", own.p);
        let printed = Comparison {
            p: Some(0.5),
            ..own.clone()
        };
        let s = Summary::new(&runs, &[printed]);
        assert_eq!(find(&s, 1, "B").p, Some(0.5));
        let old_log = Comparison {
            p: None,
            ..own.clone()
        };
        let s = Summary::new(&runs, &[old_log]);
        assert_eq!(find(&s, 1, "B").p, own.p);
    }

    /// A printed comparison at a point where one of its variants has no measured run is not
    /// shown: there is no row to show it beside.
    #[test]
    fn a_comparison_without_its_variants_runs_is_dropped() {
        let all = runs();
        let printed = Comparison::from_runs("seed003-pft", "anon", 1, "A", "B", &all).unwrap();
        let without_b: Vec<Run> = all
            .into_iter()
            .filter(|r| !(r.scenario == "seed003-pft" && r.cpus == 1 && r.variant == "B"))
            .collect();
        let s = Summary::new(&without_b, &[printed]);
        let point = s
            .points
            .iter()
            .find(|p| p.scenario == "seed003-pft" && p.cpus == 1)
            .unwrap();
        assert!(
            point.comparisons.iter().all(|c| c.b != "B"),
            "{:?}",
            point.comparisons
        );
        assert!(s.disagreeing.is_empty());
        assert!(s.recomputed.iter().all(|c| c.cpus != 1 || c.b != "B"));
    }

    /// The primary comparison is the headline's config at the largest CPU count: a point of
    /// another config at more CPUs is exploratory.
    #[test]
    fn the_primary_is_in_the_headlines_config() {
        let mut runs = blocks(1, 1.2, 1.0, 0.002);
        runs.extend(blocks(2, 1.2, 1.0, 0.002));
        runs.extend(blocks(4, 1.2, 1.0, 0.002).into_iter().map(|mut r| {
            r.config = "other".into();
            r
        }));
        let s = Summary::new(&runs, &[]);
        assert!(find(&s, 2, "B").primary);
        let other = s
            .points
            .iter()
            .find(|p| p.config == "other")
            .and_then(|p| p.comparisons.iter().find(|c| c.b == "B"))
            .unwrap();
        assert!(!other.primary && other.cpus == 4, "{other:?}");
    }
}
