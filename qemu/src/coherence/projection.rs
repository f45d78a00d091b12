//! The projection: what the transfers counted under the plugin would cost on the seeds' own
//! machines. **A model, not a measurement**, and every place that shows it says so.
//!
//! The plugin counts, exactly, how many times per operation the lines holding a seed's
//! fields moved between the emulated CPUs in A and in B (`x_A`, `x_B`, from the mechanism
//! verdict's rounds). The emulator cannot say what those moves cost; the seeds' machines
//! did, in their published curves. The model joins the two with as few assumptions as it
//! can, each named here so a reader can disagree with one:
//!
//! 1. **Base time.** The time one thread of A takes per operation at the seed's thread count
//!    `N` is the seed's own figure: `t_A = N / rate` for a total rate (IOPS, pages/s),
//!    `1 / rate` for a per-thread one (`bench::catalog::Rate`). The model does not predict A;
//!    it predicts how far B lands from it. A seed that published a ratio only (seed004) has
//!    no base, and is listed as not projected.
//! 2. **Transfers at N.** Counted at `n` vCPUs (the largest count the run had that the host
//!    has cores for: oversubscribed vCPUs interleave coarsely and undercount, see the
//!    README), scaled by `g(N) / g(n)` with `g(k) = (k - 1) / k`: the chance that the last
//!    CPU to touch a line was another one, when `k` CPUs take turns at random. At one thread
//!    nothing moves.
//! 3. **Cost per transfer.** `c(N) = L (1 + q (N - 2))`. `L` is [`TRANSFER_NS`], a published
//!    figure for one line moved modified between two cores with nobody else asking; `q` is
//!    how much each further CPU contending for the line adds (queueing at the line's home
//!    and behind the other requesters), fitted by least squares on the log ratios of one
//!    seed's curve ([`CALIBRATION`], the seed with the most points) and then held fixed for
//!    every other seed, which are the checks.
//! 4. **B's time** is `t_B = t_A + (x_B - x_A) c(N)`, and the projected B/A of rates is
//!    `t_A / t_B`, in the seeds' direction of their figures.
//!
//! What it leaves out, so a reader knows where it must be wrong: time spent waiting for a
//! lock beyond the line's own move (seed004's mechanism is mostly that), moves across
//! sockets (costlier than `L`; the seeds' 4-socket points are the ones to expect too low),
//! lines other than the seed's fields, and any overlap of a miss with other work (an
//! out-of-order core hides part of a read miss; seed003's small counts show it).
//! seed002's mechanism is algorithmic (no fields), so it has no projection.

use bench::catalog::{self, PublishedPoint, Rate};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Nanoseconds one cache line takes to move, modified, from one core's cache to another's
/// on the same socket, unloaded: the "L2 to L2 modified intervention" latency that Intel's
/// Memory Latency Checker measured as 40.3-42.3 ns on a Xeon E5-2660 v4 (Broadwell-EP), as
/// John McCalpin reports in Intel's developer forum thread "Core-to-Core Communication
/// Latency in Skylake/Kaby Lake" (software.intel.com, topic 700477); the same thread quotes
/// Intel's Nehalem-era performance analysis guide at about 75 cycles for a read of a line
/// modified in another core. The upper end of the measured range is taken.
pub const TRANSFER_NS: f64 = 42.0;

/// The scenario whose published curve fixes the queueing factor `q`.
pub const CALIBRATION: &str = "seed003-pft";

/// The range searched for `q`, and its step.
const Q_MAX: f64 = 4.0;
const Q_STEP: f64 = 0.001;

/// What the projection takes from the mechanism verdict of one comparison at one CPU count:
/// transfers per operation on the seed's fields, per measured round, of A and B.
#[derive(Clone, Debug, PartialEq)]
pub struct Counted {
    /// Scenario.
    pub scenario: String,
    /// Configuration.
    pub config: String,
    /// Baseline variant.
    pub a: String,
    /// The other variant.
    pub b: String,
    /// CPUs.
    pub cpus: u32,
    /// Per measured round: A's, B's.
    pub rounds: (Vec<f64>, Vec<f64>),
}

/// The projection of one run's counts onto the seeds' machines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// `L`, nanoseconds per unloaded transfer.
    pub transfer_ns: f64,
    /// The fitted queueing factor `q` (`None`: nothing to fit it on; `missing` says why).
    pub queueing: Option<f64>,
    /// The projected points, calibration first.
    pub points: Vec<ProjectedPoint>,
    /// Published points of the run's scenarios that have no projection, with the reason.
    pub missing: Vec<String>,
    /// A and B must differ by at least this many transfers per operation for a point to be
    /// a check of the model (the mechanism verdict's "absent" threshold).
    pub moved_at_least: f64,
}

/// One published point with the model's figure beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProjectedPoint {
    /// Scenario.
    pub scenario: String,
    /// Configuration.
    pub config: String,
    /// Baseline variant.
    pub a: String,
    /// The other variant.
    pub b: String,
    /// The seed's thread count `N`.
    pub threads: u32,
    /// The vCPUs the transfers were counted at (`n`).
    pub measured_cpus: u32,
    /// Transfers per operation on the seed's fields at `n`: A, B.
    pub measured: (f64, f64),
    /// The same scaled to `N`.
    pub scaled: (f64, f64),
    /// The cost of one transfer at `N`, nanoseconds.
    pub cost_ns: f64,
    /// Time per operation of one thread: A (the seed's figure), B (the model's).
    pub time_ns: (f64, f64),
    /// The model's B/A of rates.
    pub model_ratio: f64,
    /// The seed's B/A of rates.
    pub published_ratio: f64,
    /// Whether this point was used to fit `q`.
    pub calibrates: bool,
}

/// The share of a line's accesses that find it last touched by another CPU, when `k` CPUs
/// take turns at random.
fn other_cpu_share(k: u32) -> f64 {
    if k < 2 {
        0.0
    } else {
        f64::from(k - 1) / f64::from(k)
    }
}

/// Transfers per operation counted at `measured` vCPUs, scaled to `threads`.
#[must_use]
pub fn scale(x: f64, measured: u32, threads: u32) -> f64 {
    let at = other_cpu_share(measured);
    if at == 0.0 {
        return 0.0;
    }
    x * other_cpu_share(threads) / at
}

/// The cost of one transfer with `threads` CPUs contending, nanoseconds.
#[must_use]
pub fn cost_ns(threads: u32, q: f64) -> f64 {
    TRANSFER_NS * (1.0 + q * f64::from(threads.saturating_sub(2)))
}

/// One thread's time per operation of A in the seed's figure (`None`: the seed gave a ratio
/// only).
#[must_use]
pub fn base_ns(p: &PublishedPoint, rate: Rate) -> Option<f64> {
    let (a, _) = p.absolute?;
    // Not a positive rate (NaN included): no time to take.
    if a.is_nan() || a <= 0.0 {
        return None;
    }
    let per_thread = match rate {
        Rate::Total => a / f64::from(p.threads.max(1)),
        Rate::PerThread => a,
    };
    Some(1e9 / per_thread)
}

/// What a published point needs from the run to be projected.
#[derive(Clone, Copy, Debug)]
struct Input {
    point: &'static PublishedPoint,
    base_ns: f64,
    measured_cpus: u32,
    x: (f64, f64),
}

impl Input {
    fn project(&self, scenario: &str, q: f64, calibrates: bool) -> ProjectedPoint {
        let n = self.point.threads;
        let scaled = (
            scale(self.x.0, self.measured_cpus, n),
            scale(self.x.1, self.measured_cpus, n),
        );
        let cost = cost_ns(n, q);
        let t_b = self.base_ns + (scaled.1 - scaled.0) * cost;
        ProjectedPoint {
            scenario: scenario.into(),
            config: self.point.config.into(),
            a: self.point.a.into(),
            b: self.point.b.into(),
            threads: n,
            measured_cpus: self.measured_cpus,
            measured: self.x,
            scaled,
            cost_ns: cost,
            time_ns: (self.base_ns, t_b),
            model_ratio: self.base_ns / t_b,
            published_ratio: self.point.ratio,
            calibrates,
        }
    }
}

/// The `q` in `[0, Q_MAX]` that brings the model's log ratios nearest (least squares) to
/// the published ones of `inputs` at two threads or more; `None` when those points cannot
/// tell one `q` from another (no point, or no transfer difference on any).
fn calibrate(inputs: &[Input]) -> Option<f64> {
    let used: Vec<&Input> = inputs
        .iter()
        .filter(|i| i.point.threads >= 2 && i.point.ratio > 0.0)
        .filter(|i| {
            scale(i.x.1, i.measured_cpus, i.point.threads)
                != scale(i.x.0, i.measured_cpus, i.point.threads)
        })
        .collect();
    if used.is_empty() {
        return None;
    }
    let error = |q: f64| -> f64 {
        used.iter()
            .map(|i| {
                let model = i.project("", q, true).model_ratio;
                if model > 0.0 {
                    (model.ln() - i.point.ratio.ln()).powi(2)
                } else {
                    f64::INFINITY
                }
            })
            .sum()
    };
    let steps = (Q_MAX / Q_STEP).round() as u32;
    let mut best = (0.0, error(0.0));
    for s in 1..=steps {
        let q = f64::from(s) * Q_STEP;
        let e = error(q);
        if e < best.1 {
            best = (q, e);
        }
    }
    best.1.is_finite().then_some(best.0)
}

/// The A and B transfers of one published point: from the verdict of the same comparison
/// and configuration at the largest CPU count the host has cores for (the largest of all
/// when none fits), as `(cpus, (x_A, x_B))`.
fn counted(
    counts: &[Counted],
    scenario: &str,
    p: &PublishedPoint,
    host_cpus: u32,
) -> Option<(u32, (f64, f64))> {
    let same: Vec<&Counted> = counts
        .iter()
        .filter(|v| v.scenario == scenario && v.config == p.config && v.a == p.a && v.b == p.b)
        .filter(|v| !v.rounds.0.is_empty() && !v.rounds.1.is_empty())
        .collect();
    let fits = same
        .iter()
        .filter(|v| v.cpus <= host_cpus)
        .max_by_key(|v| v.cpus);
    let v = fits.or_else(|| same.iter().max_by_key(|v| v.cpus))?;
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    Some((v.cpus, (mean(&v.rounds.0), mean(&v.rounds.1))))
}

/// Projects every published point of the scenarios in `counts`, with `q` fitted on
/// [`CALIBRATION`]; `host_cpus` is how many cores ran the vCPUs; `moved_at_least` is the
/// transfer difference below which a point is not a check (see [`Projection::checks`]).
#[must_use]
pub fn project(counts: &[Counted], host_cpus: u32, moved_at_least: f64) -> Projection {
    let mut missing = Vec::new();
    let mut inputs: Vec<(&'static str, Input)> = Vec::new();
    for s in catalog::SCENARIOS {
        if !counts.iter().any(|v| v.scenario == s.name) {
            continue;
        }
        let (Some(_), Some(published)) = (&s.mechanism, &s.published) else {
            continue;
        };
        for p in published.points {
            let what = format!("{} {} {}->{} at {}", s.name, p.config, p.a, p.b, p.threads);
            let Some(base_ns) = base_ns(p, published.rate) else {
                missing.push(format!(
                    "{what}: the seed gives a ratio only, no time per operation to add the \
                     transfers to"
                ));
                continue;
            };
            let Some((measured_cpus, x)) = counted(counts, s.name, p, host_cpus) else {
                missing.push(format!(
                    "{what}: this comparison was not counted at 2 CPUs or more"
                ));
                continue;
            };
            inputs.push((
                s.name,
                Input {
                    point: p,
                    base_ns,
                    measured_cpus,
                    x,
                },
            ));
        }
    }
    let calibration: Vec<Input> = inputs
        .iter()
        .filter(|(s, _)| *s == CALIBRATION)
        .map(|(_, i)| *i)
        .collect();
    let queueing = calibrate(&calibration);
    let points = match queueing {
        Some(q) => {
            let mut v: Vec<ProjectedPoint> = Vec::new();
            for (s, i) in &inputs {
                let p = i.project(s, q, *s == CALIBRATION);
                if p.time_ns.1 > 0.0 {
                    v.push(p);
                } else {
                    // B's transfers removed more time than A takes: the model has left
                    // its range (a cost per transfer far above the seed's time per op).
                    missing.push(format!(
                        "{s} {} {}->{} at {}: the model gives B no time per operation left \
                         ({:.0} ns removed from {:.0} ns): outside its range",
                        p.config,
                        p.a,
                        p.b,
                        p.threads,
                        p.time_ns.0 - p.time_ns.1,
                        p.time_ns.0
                    ));
                }
            }
            v.sort_by_key(|p| !p.calibrates);
            v
        }
        None => {
            missing.push(format!(
                "nothing projected: the queueing factor is fitted on {CALIBRATION}'s published \
                 curve, and this run has no counts of it with a transfer difference between A \
                 and B"
            ));
            Vec::new()
        }
    };
    Projection {
        transfer_ns: TRANSFER_NS,
        queueing,
        points,
        missing,
        moved_at_least,
    }
}

/// How the model's checks compare with the seeds' figures ([`Projection::checks`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Checks {
    /// Points checked.
    pub points: usize,
    /// Of those, the points where the seed moved 1% or more (a direction to agree with).
    pub directed: usize,
    /// Of those, the points where the model moves the same way.
    pub agree: usize,
    /// Mean absolute difference, model minus seed, in percentage points.
    pub mean_error: f64,
    /// Points left out: no transfer difference between A and B was counted.
    pub without_transfers: usize,
}

/// Signed percent of a ratio.
fn pct(r: f64) -> f64 {
    (r - 1.0) * 100.0
}

impl Projection {
    /// How the checks compare with the seeds. The checks are every point but the
    /// calibration's, at two threads or more, where A and B differ by at least
    /// [`Projection::moved_at_least`] transfers per operation: where they do not (the
    /// mechanism absent at this placement), the model has nothing to project and is not
    /// checked.
    #[must_use]
    pub fn checks(&self) -> Checks {
        let moved =
            |p: &&ProjectedPoint| (p.measured.0 - p.measured.1).abs() >= self.moved_at_least;
        let candidates = || {
            self.points
                .iter()
                .filter(|p| !p.calibrates && p.threads >= 2)
        };
        let checks: Vec<&ProjectedPoint> = candidates().filter(moved).collect();
        let directed: Vec<&&ProjectedPoint> = checks
            .iter()
            .filter(|p| pct(p.published_ratio).abs() >= 1.0)
            .collect();
        Checks {
            points: checks.len(),
            without_transfers: candidates().count() - checks.len(),
            directed: directed.len(),
            agree: directed
                .iter()
                .filter(|p| pct(p.model_ratio) * pct(p.published_ratio) > 0.0)
                .count(),
            mean_error: checks
                .iter()
                .map(|p| (pct(p.model_ratio) - pct(p.published_ratio)).abs())
                .sum::<f64>()
                / checks.len().max(1) as f64,
        }
    }

    /// The projection as text, under a heading that says it is a model.
    #[must_use]
    pub fn text(&self) -> String {
        let mut s = String::from(
            "Projection to the seeds' machines: A MODEL, NOT A MEASUREMENT. B/A of rates = \
             t_A / (t_A + (x_B - x_A) c(N))\n",
        );
        let _ = writeln!(
            s,
            "  t_A: the seed's published time per operation of A at its N threads; x: \
             transfers/op on the seed's fields counted here at n vCPUs, scaled by \
             ((N-1)/N)/((n-1)/n);"
        );
        match self.queueing {
            Some(q) => {
                let _ = writeln!(
                    s,
                    "  c(N) = {:.0} ns x (1 + q (N-2)): {:.0} ns per unloaded transfer (Intel \
                     MLC, same socket, Xeon E5-2660 v4), q = {q:.3} fitted to {CALIBRATION}'s \
                     curve (rows marked *)",
                    self.transfer_ns, self.transfer_ns
                );
            }
            None => s.push_str("  not calibrated\n"),
        }
        if !self.points.is_empty() {
            let _ = writeln!(
                s,
                "  {:<34} {:<26} {:>4} {:>2} {:>7} {:>7} {:>7} {:>8} {:>8} {:>9} {:>8}",
                "scenario/config",
                "A -> B",
                "N",
                "n",
                "xA(N)",
                "xB(N)",
                "c(N)ns",
                "tA ns",
                "tB ns",
                "model B/A",
                "seed B/A"
            );
        }
        for p in &self.points {
            let _ = writeln!(
                s,
                "{} {:<34} {:<26} {:>4} {:>2} {:>7.3} {:>7.3} {:>7.0} {:>8.0} {:>8.0} {:>+8.2}% \
                 {:>+7.2}%",
                if p.calibrates { '*' } else { ' ' },
                format!("{}/{}", p.scenario, p.config),
                format!("{} -> {}", p.a, p.b),
                p.threads,
                p.measured_cpus,
                p.scaled.0,
                p.scaled.1,
                p.cost_ns,
                p.time_ns.0,
                p.time_ns.1,
                pct(p.model_ratio),
                pct(p.published_ratio)
            );
        }
        if self.points.iter().any(|p| !p.calibrates) {
            let c = self.checks();
            let _ = writeln!(
                s,
                "  checks (rows without *, {} points with transfers to project): the model's \
                 direction agrees with the seed's on {} of {} points where the seed moved 1% or \
                 more; mean |model - seed| {:.1} percentage points; {} points not checked: no \
                 transfer difference between A and B here (mechanism absent at that placement)",
                c.points, c.agree, c.directed, c.mean_error, c.without_transfers
            );
        }
        for m in &self.missing {
            let _ = writeln!(s, "  not projected: {m}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(threads: u32, absolute: (f64, f64)) -> &'static PublishedPoint {
        Box::leak(Box::new(PublishedPoint {
            a: "A",
            b: "B",
            config: "c",
            threads,
            ratio: absolute.1 / absolute.0,
            absolute: Some(absolute),
        }))
    }

    #[test]
    fn transfers_scale_with_the_share_of_accesses_from_other_cpus() {
        assert_eq!(scale(0.5, 2, 2), 0.5);
        assert_eq!(scale(0.5, 2, 1), 0.0, "one thread moves nothing");
        assert!((scale(0.5, 2, 4) - 0.75).abs() < 1e-12);
        assert!((scale(0.3, 4, 2) - 0.2).abs() < 1e-12);
        assert_eq!(scale(0.5, 1, 8), 0.0, "a 1-CPU count says nothing");
        assert_eq!(cost_ns(2, 0.5), TRANSFER_NS);
        assert!((cost_ns(12, 0.5) - 6.0 * TRANSFER_NS).abs() < 1e-9);
    }

    #[test]
    fn the_base_time_reads_the_seeds_unit() {
        let p = point(20, (4.0e6, 5.0e6));
        assert!((base_ns(p, Rate::Total).unwrap() - 5000.0).abs() < 1e-9);
        assert!((base_ns(p, Rate::PerThread).unwrap() - 250.0).abs() < 1e-9);
        let ratio_only = Box::leak(Box::new(PublishedPoint {
            absolute: None,
            ..*p
        }));
        assert_eq!(base_ns(ratio_only, Rate::Total), None);
    }

    /// Published points made by the model itself with a known `q` give that `q` back.
    #[test]
    fn calibration_recovers_the_queueing_factor_that_made_the_curve() {
        for q in [0.0, 0.25, 1.3] {
            let inputs: Vec<Input> = [1, 4, 12, 30, 56]
                .into_iter()
                .map(|n| {
                    let t_a = 2000.0 + 100.0 * f64::from(n);
                    let x = (0.05, 0.8);
                    let made = Input {
                        point: point(n, (1.0, 1.0)),
                        base_ns: t_a,
                        measured_cpus: 2,
                        x,
                    }
                    .project("", q, true);
                    Input {
                        point: point(n, (1.0, made.model_ratio)),
                        base_ns: t_a,
                        measured_cpus: 2,
                        x,
                    }
                })
                .collect();
            let got = calibrate(&inputs).unwrap();
            assert!((got - q).abs() <= Q_STEP, "fitted {got}, made with {q}");
        }
        let flat = [Input {
            point: point(8, (1.0, 0.9)),
            base_ns: 1000.0,
            measured_cpus: 2,
            x: (0.3, 0.3),
        }];
        assert_eq!(calibrate(&flat), None, "no transfer difference: no q");
    }

    fn verdict(
        scenario: &str,
        config: &str,
        a: &str,
        b: &str,
        cpus: u32,
        x: (f64, f64),
    ) -> Counted {
        Counted {
            scenario: scenario.into(),
            config: config.into(),
            cpus,
            a: a.into(),
            b: b.into(),
            rounds: (vec![x.0, x.0], vec![x.1, x.1]),
        }
    }

    /// `p` says why a point starting `what` was not projected, with `why` in the reason.
    fn assert_missing(p: &Projection, what: &str, why: &str) {
        assert!(
            p.missing
                .iter()
                .any(|m| m.starts_with(what) && m.contains(why)),
            "no `{what}` ... `{why}` in {:?}",
            p.missing
        );
    }

    /// The counts the coherence runs of issue 35 gave at 2 vCPUs, projected: seed003's B
    /// adds transfers and the seed lost throughput, the others remove them and gained.
    #[test]
    fn a_run_like_the_default_set_projects_each_seed_in_its_direction() {
        let v = [
            verdict("seed003-pft", "anon", "A", "B", 2, (0.0, 0.823)),
            verdict("seed003-pft", "anon", "A", "B", 8, (0.0, 0.5)),
            verdict(
                "seed001-faultfree",
                "shmem",
                "base@+0",
                "patch1@+0",
                2,
                (0.554, 0.0),
            ),
            verdict(
                "page-counter-802f1d",
                "one-memcg",
                "A",
                "B",
                2,
                (0.132, 0.0),
            ),
            verdict("seed004-readtwice", "2-per-memcg", "A", "B", 2, (0.2, 0.06)),
        ];
        let p = project(&v, 2, 0.01);
        let q = p.queueing.expect("seed003 calibrates");
        assert!(q > 0.0 && q < Q_MAX, "q = {q}");
        let find = |s: &str, n: u32| {
            p.points
                .iter()
                .find(|x| x.scenario == s && x.threads == n && x.b != "patch1+2@+0")
                .unwrap_or_else(|| panic!("{s} at {n} not projected"))
        };
        let seed003 = find("seed003-pft", 56);
        assert!(seed003.calibrates && seed003.model_ratio < 1.0);
        assert_eq!(seed003.measured_cpus, 2, "the count the host had cores for");
        assert_eq!(find("seed003-pft", 1).model_ratio, 1.0);
        let shmem = find("seed001-faultfree", 20);
        assert!(!shmem.calibrates && shmem.model_ratio > 1.0);
        assert!(find("page-counter-802f1d", 48).model_ratio > 1.0);
        assert_missing(&p, "seed004-readtwice", "ratio only");
        assert_missing(
            &p,
            "seed001-faultfree shmem base@+0->patch1+2@+0",
            "not counted",
        );
        assert!(
            !p.missing.iter().any(|m| m.starts_with("seed000")),
            "not in the run"
        );
        let text = p.text();
        assert!(text.starts_with("Projection to the seeds' machines: A MODEL, NOT A MEASUREMENT"));
        assert!(text.contains("* seed003-pft/anon"));
        let c = p.checks();
        assert_eq!((c.points, c.directed, c.agree), (6, 6, 6), "{text}");
        assert_eq!(c.without_transfers, 0);
        // The same run with seed001's mechanism absent (no transfers at that placement):
        // its points are projected as no change and left out of the checks.
        let mut absent = v.to_vec();
        absent[2] = verdict(
            "seed001-faultfree",
            "shmem",
            "base@+0",
            "patch1@+0",
            2,
            (0.0, 0.0),
        );
        let c = project(&absent, 2, 0.01).checks();
        assert_eq!(
            (c.points, c.directed, c.agree, c.without_transfers),
            (4, 4, 4, 2)
        );
    }

    /// Transfers B removes that would cost more than A's whole time per operation leave
    /// the model's range: said, not printed as a ratio.
    #[test]
    fn a_projection_past_zero_time_is_refused() {
        let v = [
            verdict("seed003-pft", "anon", "A", "B", 2, (0.0, 0.823)),
            verdict(
                "page-counter-802f1d",
                "one-memcg",
                "A",
                "B",
                2,
                (500.0, 0.0),
            ),
        ];
        let p = project(&v, 2, 0.01);
        assert!(!p.points.iter().any(|x| x.scenario == "page-counter-802f1d"));
        assert_missing(&p, "page-counter-802f1d", "outside its range");
    }

    #[test]
    fn without_the_calibration_seed_nothing_is_projected_and_the_text_says_why() {
        let v = [verdict(
            "page-counter-802f1d",
            "one-memcg",
            "A",
            "B",
            2,
            (0.132, 0.0),
        )];
        let p = project(&v, 2, 0.01);
        assert_eq!(p.queueing, None);
        assert!(p.points.is_empty());
        assert!(
            p.text()
                .contains("nothing projected: the queueing factor is fitted on seed003-pft")
        );
    }
}
