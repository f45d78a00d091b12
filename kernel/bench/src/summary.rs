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
//! a floor fraction (a reference takes its faults some other way than the floor measures).

use crate::catalog::{self, Scenario};
use crate::record::{Comparison, Run};
use crate::stats::{self, RateSummary};
use alloc::string::String;
use alloc::vec::Vec;

/// One variant at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantPoint {
    /// Variant name.
    pub variant: String,
    /// Its measured rounds' rates.
    pub rates: Vec<f64>,
    /// Their statistics.
    pub stats: RateSummary,
    /// Harmonic mean over `limit`'s at the same CPU count (fault scenarios).
    pub floor_fraction: Option<f64>,
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
                Some(v) => v.rates.push(r.ops_per_s),
                None => p.variants.push(VariantPoint {
                    variant: r.variant.clone(),
                    rates: alloc::vec![r.ops_per_s],
                    stats: stats::summarize(&[r.ops_per_s]).expect("checked run rate"),
                    floor_fraction: None,
                }),
            }
        }
        for p in &mut points {
            for v in &mut p.variants {
                // Every rate passed `Run::check`, so the summary exists.
                if let Ok(s) = stats::summarize(&v.rates) {
                    v.stats = s;
                }
            }
        }
        let mut summary = Summary {
            points,
            ..Summary::default()
        };
        summary.attach_floor();
        summary.attach_comparisons(runs, comparisons);
        summary
    }

    fn attach_floor(&mut self) {
        let floors: Vec<(u32, f64)> = self
            .points
            .iter()
            .filter(|p| p.scenario == catalog::LIMIT)
            .filter_map(|p| Some((p.cpus, p.variants.first()?.stats.hmean)))
            .collect();
        for p in &mut self.points {
            let Some(s) = catalog::scenario(&p.scenario).filter(|s| s.fault_path) else {
                continue;
            };
            let Some(floor) = floors.iter().find(|(c, _)| *c == p.cpus).map(|f| f.1) else {
                continue;
            };
            // Only our own variants run on the platform the floor measures; a reference
            // (the host run's `linux`) takes its faults some other way.
            for v in p
                .variants
                .iter_mut()
                .filter(|v| s.variant(&v.variant).is_some())
            {
                v.floor_fraction = Some(v.stats.hmean / floor);
            }
        }
    }

    fn attach_comparisons(&mut self, runs: &[Run], given: &[Comparison]) {
        for p in &mut self.points {
            let defs = catalog::scenario(&p.scenario).map_or(&[][..], |s| s.comparisons);
            let matches = |c: &&Comparison| {
                c.scenario == p.scenario && c.config == p.config && c.cpus == p.cpus
            };
            for d in defs {
                if p.variant(d.a).is_none() || p.variant(d.b).is_none() {
                    continue;
                }
                let printed = given
                    .iter()
                    .filter(matches)
                    .find(|c| c.a == d.a && c.b == d.b);
                let own = Comparison::from_runs(&p.scenario, &p.config, p.cpus, d.a, d.b, runs);
                match (printed, own) {
                    (Some(c), Ok(own)) => {
                        if !agrees(c, &own) {
                            self.disagreeing.push((c.clone(), own));
                        }
                        p.comparisons.push(c.clone());
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
                if !defs.iter().any(|d| d.a == c.a && d.b == c.b) {
                    p.comparisons.push(c.clone());
                }
            }
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
            }
        }
        out
    }

    #[test]
    fn groups_in_catalog_order_without_warmups() {
        let s = Summary::new(&runs(), &[]);
        let names: Vec<_> = s.scenarios().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["seed003-pft", "limit", "mystery"]);
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
                .filter(|p| p.scenario != "seed003-pft")
                .all(|p| p.variants[0].floor_fraction.is_none())
        );
        assert_eq!(p.variant("linux").unwrap().floor_fraction, None);
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
        assert_eq!(s.points[0].comparisons, [good]);
        assert_eq!(s.points[1].comparisons, [bad, linux]);
    }
}
