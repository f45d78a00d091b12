//! One verdict per seed, the line a reviewer reads first: did this run reproduce the seed's
//! figure, fail to show it, or contradict it?
//!
//! For each scenario with a published figure the verdict takes the seed's largest figure
//! (the point of [`crate::catalog::Published::points`] with the largest `|ln ratio|`: its
//! headline) and our comparison of the same variants and config at the largest CPU count the
//! run measured (the nearest to the seed's thread counts, which are 1 to 208):
//!
//! - **reproduced**: the comparison is marked (its interval excludes 1 after Holm's
//!   correction, with the A/A control quiet, see [`crate::summary`]) and its direction is
//!   the seed's;
//! - **contradicted**: marked, in the opposite direction;
//! - **not shown**: not marked. The line then gives the smallest effect this run could have
//!   detected at that point: with the A/A control's spread (its per-round log ratios' standard
//!   error, from its interval) and its rounds, the effect a paired t-test finds 80% of the
//!   time at 5%, `(t_{0.975, n-1} + t_{0.80, n-1}) * se` (before Holm's correction, which
//!   only makes it larger); or why the control made the point unusable;
//! - **not measured**: the run has no comparison for the seed's variants and config.
//!
//! The kernel prints the lines at the top of its table, the runner at the top of its table
//! and of `index.html`, and in `results.json`.

use crate::catalog::PublishedPoint;
use crate::record::Comparison;
use crate::stats;
use crate::summary::Summary;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// What a run says about a seed's figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Marked, in the seed's direction.
    Reproduced,
    /// Not marked.
    NotShown,
    /// Marked, in the opposite direction.
    Contradicted,
    /// No comparison of the seed's variants and config in this run.
    NotMeasured,
}

impl Outcome {
    /// The word in tables.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::NotShown => "not shown",
            Outcome::Contradicted => "contradicted",
            Outcome::NotMeasured => "not measured",
        }
    }
}

/// One seed's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The scenario.
    pub scenario: &'static str,
    /// The verdict.
    pub outcome: Outcome,
    /// The seed's figure it is judged against.
    pub seed: &'static PublishedPoint,
    /// Our comparison at the largest CPU count (absent: not measured).
    pub ours: Option<Comparison>,
    /// The CPU counts the run measured the comparison at.
    pub cpus: Vec<u32>,
    /// For "not shown": the smallest effect this run could have detected at that point, as
    /// a fraction (0.05 = 5%), from the A/A control.
    pub detectable: Option<f64>,
}

/// The smallest effect (a fraction) a paired t-test at 5% finds with 80% power, given the
/// A/A control's comparison at the point.
#[must_use]
pub fn detectable(control: &Comparison) -> Option<f64> {
    let (lo, hi) = (control.ci_low?, control.ci_high?);
    let n = control.n.max(control.rounds);
    if n < 2 {
        return None;
    }
    let df = f64::from(n - 1);
    let t975 = stats::student_t_quantile(0.975, df);
    let half = stats::half_width(control.ratio, (lo, hi));
    let se = libm::log1p(half) / t975;
    Some(libm::expm1(
        (t975 + stats::student_t_quantile(0.80, df)) * se,
    ))
}

/// The verdicts of `summary`, one per scenario with a published figure that ran, in table
/// order.
#[must_use]
pub fn verdicts(summary: &Summary) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (name, s) in summary.scenarios() {
        let Some(s) = s else { continue };
        let Some(published) = s.published else {
            continue;
        };
        let Some(seed) = published.points.iter().max_by(|x, y| {
            libm::fabs(libm::log(x.ratio)).total_cmp(&libm::fabs(libm::log(y.ratio)))
        }) else {
            continue;
        };
        let ours: Vec<&Comparison> = summary
            .scenario_points(name)
            .filter(|p| p.config == seed.config)
            .flat_map(|p| &p.comparisons)
            .filter(|c| c.a == seed.a && c.b == seed.b)
            .collect();
        let cpus: Vec<u32> = ours.iter().map(|c| c.cpus).collect();
        let last = ours.iter().max_by_key(|c| c.cpus).map(|c| (*c).clone());
        let Some(c) = last else {
            out.push(Verdict {
                scenario: s.name,
                outcome: Outcome::NotMeasured,
                seed,
                ours: None,
                cpus,
                detectable: None,
            });
            continue;
        };
        let marked = c.marked.unwrap_or(c.significant);
        let same_direction = (c.ratio > 1.0) == (seed.ratio > 1.0);
        let outcome = match (marked, same_direction) {
            (true, true) => Outcome::Reproduced,
            (true, false) => Outcome::Contradicted,
            (false, _) => Outcome::NotShown,
        };
        let control = summary
            .points
            .iter()
            .find(|p| p.scenario == c.scenario && p.config == c.config && p.cpus == c.cpus)
            .and_then(|p| p.comparisons.iter().find(|x| x.control));
        let detectable = if outcome == Outcome::NotShown {
            control.and_then(detectable)
        } else {
            None
        };
        out.push(Verdict {
            scenario: s.name,
            outcome,
            seed,
            ours: Some(c),
            cpus,
            detectable,
        });
    }
    out
}

/// A signed percentage of a ratio: `+17.9%`.
struct Pct(f64);

impl fmt::Display for Pct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = alloc::format!("{:+.1}%", (self.0 - 1.0) * 100.0);
        f.pad(&s)
    }
}

impl Verdict {
    /// What we measured, in words: `shmem patch1@+0/base@+0 +5.2% [+1.1%, +9.4%] @2` and
    /// the CPU counts measured.
    #[must_use]
    pub fn ours_text(&self) -> String {
        let Some(c) = &self.ours else {
            return alloc::format!(
                "no {}/{} comparison at config {} in this run",
                self.seed.b,
                self.seed.a,
                self.seed.config
            );
        };
        let ci = match (c.ci_low, c.ci_high) {
            (Some(lo), Some(hi)) => alloc::format!(" [{}, {}]", Pct(lo), Pct(hi)),
            _ => String::from(" [1 round]"),
        };
        let cpus: Vec<String> = self.cpus.iter().map(|c| alloc::format!("{c}")).collect();
        alloc::format!(
            "{} {}/{} ours {}{ci} @{} (run at {} CPUs)",
            c.config,
            c.b,
            c.a,
            Pct(c.ratio),
            c.cpus,
            cpus.join(",")
        )
    }

    /// Why, for a verdict that is not "reproduced": the reason the mark was withheld, or
    /// the smallest detectable effect.
    #[must_use]
    pub fn why(&self) -> Option<String> {
        if self.outcome != Outcome::NotShown {
            return None;
        }
        let c = self.ours.as_ref()?;
        if let Some(w) = &c.unmarked_why {
            return Some(w.clone());
        }
        Some(match self.detectable {
            Some(d) => alloc::format!(
                "interval includes 1; smallest detectable here {:.1}%",
                d * 100.0
            ),
            None => "interval includes 1".into(),
        })
    }
}

impl fmt::Display for Verdict {
    /// `seed001-faultfree: reproduced: shmem patch1@+0/base@+0 ours +5.2% [...] @2 (run at
    /// 1,2 CPUs); seed +17.9% @20 threads`, and the reason for "not shown".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}; seed {} @{} threads",
            self.scenario,
            self.outcome.name(),
            self.ours_text(),
            Pct(self.seed.ratio),
            self.seed.threads
        )?;
        if let Some(why) = self.why() {
            write!(f, " ({why})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Run;

    /// seed004 at 1 and 2 CPUs, 4 drifting rounds: B at `b` times A (a little noise), the
    /// control A' at `control` times A (a little noise).
    fn runs(b: f64, control: f64) -> Vec<Run> {
        let mut out = Vec::new();
        for cpus in [1u32, 2] {
            for (round, noise) in [(1u32, 1.0), (2, 1.01), (3, 0.99), (4, 1.005)] {
                for (v, k) in [("A", 1.0), ("B", b * noise), ("A'", control / noise)] {
                    let ops = (1e6 * k * (1.0 + 0.1 * f64::from(round))) as u64;
                    out.push(
                        Run::new(
                            "seed004-readtwice",
                            "2-per-memcg",
                            v,
                            cpus,
                            round,
                            false,
                            ops,
                            1_000_000_000,
                        )
                        .unwrap(),
                    );
                }
            }
        }
        out
    }

    fn verdict(b: f64, control: f64) -> Verdict {
        let v = verdicts(&Summary::new(&runs(b, control), &[]));
        assert_eq!(v.len(), 1, "{v:?}");
        v[0].clone()
    }

    #[test]
    fn the_three_verdicts() {
        // The seed: +80% at 208 readers, 2 per memcg.
        let v = verdict(1.5, 1.0);
        assert_eq!(v.outcome, Outcome::Reproduced, "{v}");
        assert_eq!((v.seed.threads, v.cpus.as_slice()), (208, &[1, 2][..]));
        assert_eq!(v.ours.as_ref().unwrap().cpus, 2);
        let line = alloc::format!("{v}");
        assert!(
            line.starts_with("seed004-readtwice: reproduced: 2-per-memcg B/A ours +50."),
            "{line}"
        );
        assert!(
            line.ends_with("@2 (run at 1,2 CPUs); seed +80.0% @208 threads"),
            "{line}"
        );
        assert_eq!(verdict(0.7, 1.0).outcome, Outcome::Contradicted);
        let v = verdict(1.001, 1.0);
        assert_eq!(v.outcome, Outcome::NotShown, "{v}");
        let d = v.detectable.unwrap();
        assert!(d > 0.0 && d < 0.1, "{d}");
        assert!(
            alloc::format!("{v}").contains("smallest detectable here"),
            "{v}"
        );
        // A real effect is not shown when the control moved as much.
        let v = verdict(1.5, 1.3);
        assert_eq!(v.outcome, Outcome::NotShown, "{v}");
        assert!(
            alloc::format!("{v}").contains("the A/A control moved: +"),
            "{v}"
        );
    }

    #[test]
    fn noisier_controls_can_detect_less() {
        let quiet = Summary::new(&runs(1.0, 1.0), &[]);
        let control = |s: &Summary| {
            s.comparisons()
                .find(|c| c.control && c.cpus == 2)
                .unwrap()
                .clone()
        };
        let d_quiet = detectable(&control(&quiet)).unwrap();
        let mut noisy = runs(1.0, 1.0);
        for r in noisy
            .iter_mut()
            .filter(|r| r.variant == "A'" && r.round % 2 == 0)
        {
            r.ops = r.ops * 11 / 10;
            r.ops_per_s = r.ops as f64 * 1e9 / r.ns as f64;
        }
        let d_noisy = detectable(&control(&Summary::new(&noisy, &[]))).unwrap();
        assert!(d_noisy > 2.0 * d_quiet, "{d_noisy} vs {d_quiet}");
    }
}
