//! One verdict per experiment, the line a reviewer reads first: did this run reproduce the
//! seed's figure, show a smaller or larger effect, fail to show it, contradict it, or could
//! it not judge?
//!
//! Each experiment is judged on its primary comparison only ([`crate::primary`]: the seed's
//! headline variants and config at the largest CPU count the run measured), against the
//! seed's figure at the thread count nearest to ours ([`crate::primary::seed_at`]), with
//! Holm's correction over the fixed family of one primary per experiment:
//!
//! - **not judged**: the A/A control at the same point is missing, has one instance (the
//!   placement noise between instances was not measured) or is not shown equivalent to 1
//!   within its margin ([`crate::primary::control_margin`]: a quarter of the seed's effect
//!   there on the log scale, at least +-5%; [`crate::summary::control_state`]); the line
//!   says which;
//! - **reproduced**: the interval excludes 1 after Holm's correction, in the seed's
//!   direction (the headline's), and it contains the seed's figure;
//! - **smaller than the seed** / **larger than the seed**: significant in the seed's
//!   direction, but the whole interval lies short of / beyond the seed's figure;
//! - **contradicted**: significant after the correction, in the opposite direction;
//! - **not shown**: not significant after the correction. The line gives the smallest effect
//!   this run could have detected there: with the primary's own standard error and degrees
//!   of freedom, the effect a t-test at Holm's strictest level (`alpha / m`, `m` the
//!   family's size) finds 80% of the time, `(t_{1 - alpha/2m, df} + t_{0.80, df}) se`;
//! - **not measured**: the run has no comparison for the seed's variants and config.
//!
//! The kernel prints the lines at the top of its table, the runner at the top of its table
//! and of `index.html`, and in `results.json`.

use crate::catalog::PublishedPoint;
use crate::primary;
use crate::record::Comparison;
use crate::stats;
use crate::summary::{self, Summary};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// What a run says about a seed's figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Significant after the correction, in the seed's direction, the seed's figure inside
    /// the interval.
    Reproduced,
    /// Significant in the seed's direction, the whole interval short of the seed's figure.
    Smaller,
    /// Significant in the seed's direction, the whole interval beyond the seed's figure.
    Larger,
    /// Not significant after the correction.
    NotShown,
    /// Significant after the correction, in the opposite direction.
    Contradicted,
    /// The A/A control does not let the point be judged.
    NotJudged,
    /// No comparison of the seed's variants and config in this run.
    NotMeasured,
}

impl Outcome {
    /// The word in tables.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::Smaller => "smaller than the seed",
            Outcome::Larger => "larger than the seed",
            Outcome::NotShown => "not shown",
            Outcome::Contradicted => "contradicted",
            Outcome::NotJudged => "not judged",
            Outcome::NotMeasured => "not measured",
        }
    }
}

/// One experiment's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The scenario.
    pub scenario: &'static str,
    /// The verdict.
    pub outcome: Outcome,
    /// The seed's headline, which names the primary comparison.
    pub seed: &'static PublishedPoint,
    /// The seed's figure the verdict holds ours to: the headline's comparison at the
    /// thread count nearest to our CPU count.
    pub seed_at: &'static PublishedPoint,
    /// Our primary comparison (absent: not measured).
    pub ours: Option<Comparison>,
    /// The CPU counts the run measured the comparison at.
    pub cpus: Vec<u32>,
    /// The A/A control at the primary's point: `Ok` when it lets the point be judged, else
    /// why not.
    pub control: Result<(), String>,
    /// The margin the control was held to ([`primary::control_margin`]).
    pub control_margin: f64,
    /// The control's ratio and interval, where there is one.
    pub control_cmp: Option<Comparison>,
    /// For "not shown": the smallest effect this run could have detected at that point
    /// after the correction, as a fraction (0.05 = 5%).
    pub detectable: Option<f64>,
}

/// The verdicts of `summary`, one per experiment of the catalog that ran, in catalog order.
#[must_use]
pub fn verdicts(summary: &Summary) -> Vec<Verdict> {
    let ran: Vec<&str> = summary.scenarios().into_iter().map(|(n, _)| n).collect();
    let family = primary::family_size();
    let mut out = Vec::new();
    for (s, published, seed) in primary::experiments() {
        if !ran.contains(&s.name) {
            continue;
        }
        let ours_all: Vec<&Comparison> = summary
            .scenario_points(s.name)
            .filter(|p| p.config == seed.config)
            .flat_map(|p| &p.comparisons)
            .filter(|c| c.a == seed.a && c.b == seed.b)
            .collect();
        let cpus: Vec<u32> = ours_all.iter().map(|c| c.cpus).collect();
        let ours = ours_all.iter().find(|c| c.primary).map(|c| (*c).clone());
        let Some(c) = ours else {
            out.push(Verdict {
                scenario: s.name,
                outcome: Outcome::NotMeasured,
                seed,
                seed_at: seed,
                ours: None,
                cpus,
                control: Err("not measured".into()),
                control_margin: primary::CONTROL_MARGIN,
                control_cmp: None,
                detectable: None,
            });
            continue;
        };
        let seed_at = primary::seed_at(published, seed, c.cpus);
        let control_cmp = summary
            .points
            .iter()
            .find(|p| p.scenario == c.scenario && p.config == c.config && p.cpus == c.cpus)
            .and_then(|p| p.comparisons.iter().find(|x| x.control))
            .cloned();
        let margin = primary::control_margin(s.name, c.cpus);
        let control = summary::control_state(control_cmp.as_ref(), margin);
        // The summary's mark is the decision: significant after Holm's correction, with
        // the control passing (`summary::Summary::assess`); the control is looked at again
        // here only to tell "not judged" from "not shown" and to say why.
        let outcome = if control.is_err() {
            Outcome::NotJudged
        } else if c.marked != Some(true) {
            Outcome::NotShown
        } else {
            against_seed(
                seed.ratio,
                seed_at.ratio,
                c.ratio,
                (c.ci_low.unwrap_or(c.ratio), c.ci_high.unwrap_or(c.ratio)),
            )
        };
        let detectable = (outcome == Outcome::NotShown)
            .then(|| c.detectable(stats::ALPHA / family as f64))
            .flatten();
        out.push(Verdict {
            scenario: s.name,
            outcome,
            seed,
            seed_at,
            ours: Some(c),
            cpus,
            control,
            control_margin: margin,
            control_cmp,
            detectable,
        });
    }
    out
}

/// The word for a comparison that is marked (significant after the correction, control
/// passed): our `ratio` with its interval `(lo, hi)` against the seed's headline ratio
/// `seed` and its figure `at` nearest our CPU count.
///
/// The direction is the headline's: the seed's figure at a small thread count may be no
/// effect at all (seed003's -0.02% at 1 CPU), and then any effect in the headline's
/// direction is larger than it. A headline of exactly 1 has no direction up. "Short of" the
/// figure is towards 1, "beyond" away from it; an interval that reaches the figure, even at
/// its edge, reproduces it.
fn against_seed(seed: f64, at: f64, ratio: f64, (lo, hi): (f64, f64)) -> Outcome {
    let up = seed > 1.0;
    if (ratio > 1.0) != up {
        return Outcome::Contradicted;
    }
    let (short, beyond) = if up {
        (hi < at, lo > at)
    } else {
        (lo > at, hi < at)
    };
    if short {
        Outcome::Smaller
    } else if beyond {
        Outcome::Larger
    } else {
        Outcome::Reproduced
    }
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

    /// The seed's figure the verdict holds ours to: `+1.4% @1 thread`.
    #[must_use]
    pub fn seed_text(&self) -> String {
        alloc::format!(
            "{} @{} thread{}",
            Pct(self.seed_at.ratio),
            self.seed_at.threads,
            if self.seed_at.threads == 1 { "" } else { "s" }
        )
    }

    /// The A/A control's result: `A'/A +0.4% [-1.2%, +2.0%]: within +-5.0%`, or why the
    /// point could not be judged.
    #[must_use]
    pub fn control_text(&self) -> String {
        match (&self.control, &self.control_cmp) {
            (Ok(()), Some(c)) => alloc::format!(
                "{}/{} {} [{}, {}]: within +-{:.1}%",
                c.b,
                c.a,
                Pct(c.ratio),
                Pct(c.ci_low.unwrap_or(c.ratio)),
                Pct(c.ci_high.unwrap_or(c.ratio)),
                self.control_margin * 100.0
            ),
            (Ok(()), None) => "passed".into(),
            (Err(why), _) => why.clone(),
        }
    }

    /// Why, for a verdict that is "not shown" or "not judged": the reason the mark was
    /// withheld, or the smallest detectable effect.
    #[must_use]
    pub fn why(&self) -> Option<String> {
        match self.outcome {
            Outcome::NotJudged => return self.control.clone().err(),
            Outcome::NotShown => {}
            _ => return None,
        }
        let c = self.ours.as_ref()?;
        let pre = match c.p_adjusted {
            Some(q) if c.significant => alloc::format!(
                "p = {q:.3} after Holm's correction over {} experiments",
                primary::family_size()
            ),
            _ => "interval includes 1".into(),
        };
        Some(match self.detectable {
            Some(d) => alloc::format!(
                "{pre}; smallest detectable here after the correction {:.1}%",
                d * 100.0
            ),
            None => pre,
        })
    }
}

impl fmt::Display for Verdict {
    /// `seed001-faultfree: reproduced: shmem patch1@+0/base@+0 ours +5.2% [...] @2 (run at
    /// 1,2 CPUs); seed +17.9% @20 threads; control ...`, and the reason for "not shown".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}; seed {}",
            self.scenario,
            self.outcome.name(),
            self.ours_text(),
            self.seed_text(),
        )?;
        if self.outcome != Outcome::NotMeasured && self.outcome != Outcome::NotJudged {
            write!(f, "; control {}", self.control_text())?;
        }
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

    /// seed004 at 1 and 2 CPUs, `instances` instances of 2 rounds each: B at `b` times A,
    /// the control A' at `control` times A, each instance with a small placement offset and
    /// each round a little noise.
    fn runs_with(b: f64, control: f64, instances: u32) -> Vec<Run> {
        runs_of("seed004-readtwice", "2-per-memcg", b, control, instances)
    }

    /// [`runs_with`] for another experiment's `scenario` and `config`.
    fn runs_of(scenario: &str, config: &str, b: f64, control: f64, instances: u32) -> Vec<Run> {
        let mut out = Vec::new();
        let offset = [1.0, 1.004, 0.997, 1.002];
        let noise = [1.0, 1.002, 0.999, 1.001];
        for cpus in [1u32, 2] {
            for j in 0..instances {
                for k in 0..2u32 {
                    let round = j * 2 + k + 1;
                    for (vi, (v, f)) in [("A", 1.0), ("B", b), ("A'", control)]
                        .into_iter()
                        .enumerate()
                    {
                        let place = offset[(j as usize + vi) % 4];
                        let drift = 1.0 + 0.1 * f64::from(round);
                        let n = noise[(round as usize + vi) % 4];
                        let ops = (1e6 * f * place * drift * n) as u64;
                        let mut r =
                            Run::new(scenario, config, v, cpus, round, false, ops, 1_000_000_000)
                                .unwrap();
                        r.instance = j;
                        out.push(r);
                    }
                }
            }
        }
        out
    }

    fn verdict_with(b: f64, control: f64, instances: u32) -> Verdict {
        let v = verdicts(&Summary::new(&runs_with(b, control, instances), &[]));
        assert_eq!(v.len(), 1, "{v:?}");
        v[0].clone()
    }

    fn verdict(b: f64, control: f64) -> Verdict {
        verdict_with(b, control, 3)
    }

    #[test]
    fn the_verdict_words_follow_the_seeds_figure() {
        // The seed: +80% at 208 readers, 2 per memcg.
        let v = verdict(1.8, 1.0);
        assert_eq!(v.outcome, Outcome::Reproduced, "{v}");
        assert_eq!((v.seed_at.threads, v.cpus.as_slice()), (208, &[1, 2][..]));
        let c = v.ours.as_ref().unwrap();
        assert_eq!((c.cpus, c.instances), (2, 3));
        assert!(c.primary);
        let line = alloc::format!("{v}");
        assert!(
            line.starts_with("seed004-readtwice: reproduced: 2-per-memcg B/A ours +80."),
            "{line}"
        );
        assert!(
            line.contains("@2 (run at 1,2 CPUs); seed +80.0% @208 threads"),
            "{line}"
        );
        assert!(
            line.contains("; control A'/A ") && line.ends_with(": within +-15.8%"),
            "{line}"
        );
        assert_eq!(verdict(1.5, 1.0).outcome, Outcome::Smaller);
        assert_eq!(verdict(2.5, 1.0).outcome, Outcome::Larger);
        assert_eq!(verdict(0.7, 1.0).outcome, Outcome::Contradicted);
        let v = verdict(1.001, 1.0);
        assert_eq!(v.outcome, Outcome::NotShown, "{v}");
        let d = v.detectable.unwrap();
        assert!(d > 0.0 && d < 0.1, "{d}");
        assert!(
            alloc::format!("{v}").contains("smallest detectable here after the correction"),
            "{v}"
        );
    }

    #[test]
    fn a_point_whose_control_fails_or_was_not_measured_is_not_judged() {
        // A real effect is not judged when the control moved by more than the margin.
        let v = verdict(1.8, 1.3);
        assert_eq!(v.outcome, Outcome::NotJudged, "{v}");
        assert!(
            !alloc::format!("{v}").contains("; control "),
            "a point not judged says why once, not the control's figures: {v}"
        );
        assert!(
            alloc::format!("{v}")
                .contains("(the A/A control +29.9% [+28.9%, +31.0%] is not shown within +-15.8%)"),
            "{v}"
        );
        // One instance: placement noise unmeasured, whatever the rounds say.
        let v = verdict_with(1.8, 1.0, 1);
        assert_eq!(v.outcome, Outcome::NotJudged, "{v}");
        assert!(
            alloc::format!("{v}").contains("one instance per variant"),
            "{v}"
        );
        // No control at all.
        let runs: Vec<Run> = runs_with(1.8, 1.0, 3)
            .into_iter()
            .filter(|r| r.variant != "A'")
            .collect();
        let v = verdicts(&Summary::new(&runs, &[]))[0].clone();
        assert_eq!(v.outcome, Outcome::NotJudged, "{v}");
        assert!(alloc::format!("{v}").contains("no A/A control"), "{v}");
    }

    /// A seed whose effect is a slowdown (seed003: B/A 0.90 at 56 threads): the words
    /// follow its direction, against the published figure nearest our CPU count (at 2 CPUs
    /// the 1-thread point, B/A 0.9998).
    #[test]
    fn a_slowdown_seed_is_judged_in_its_direction() {
        let verdict = |b: f64| {
            let s = Summary::new(&runs_of("seed003-pft", "anon", b, 1.0, 3), &[]);
            let v = verdicts(&s);
            let v = v
                .iter()
                .find(|v| v.scenario == "seed003-pft")
                .unwrap()
                .clone();
            assert!(v.seed.ratio < 1.0 && v.seed_at.ratio < 1.0, "{v}");
            v
        };
        assert_eq!(
            verdict(0.8).outcome,
            Outcome::Larger,
            "a slowdown beyond the seed's"
        );
        assert_eq!(verdict(1.2).outcome, Outcome::Contradicted, "a speed-up");
        assert_eq!(verdict(1.0).outcome, Outcome::NotShown);
    }

    /// The control judged is the one at the primary comparison's own point: a control that
    /// failed at another CPU count does not stop the verdict.
    #[test]
    fn the_control_is_the_primarys_own_points() {
        let mut runs = runs_with(1.8, 1.0, 3);
        for r in runs.iter_mut().filter(|r| r.cpus == 1 && r.variant == "A'") {
            r.ops = (r.ops as f64 * 1.3) as u64;
        }
        let s = Summary::new(&runs, &[]);
        let v = verdicts(&s)[0].clone();
        assert_eq!(v.outcome, Outcome::Reproduced, "{v}");
        assert_eq!(v.control_cmp.as_ref().map(|c| c.cpus), Some(2), "{v}");
        assert!(v.control.is_ok(), "{v}");
    }

    /// The words at their edges: an interval that touches the seed's figure reproduces it,
    /// one just short of it (towards 1) is smaller, just past it larger; a ratio of
    /// exactly 1 is not in a speed-up's direction, and a headline of exactly 1 counts as
    /// no speed-up.
    #[test]
    fn the_words_at_their_edges() {
        let up = |lo, hi| against_seed(1.8, 1.5, 1.5, (lo, hi));
        assert_eq!(up(1.4, 1.5), Outcome::Reproduced, "hi at the figure");
        assert_eq!(up(1.5, 1.6), Outcome::Reproduced, "lo at the figure");
        assert_eq!(up(1.3, 1.49), Outcome::Smaller);
        assert_eq!(up(1.51, 1.7), Outcome::Larger);
        let down = |lo, hi| against_seed(0.9, 0.95, 0.95, (lo, hi));
        assert_eq!(down(0.95, 0.97), Outcome::Reproduced, "lo at the figure");
        assert_eq!(down(0.93, 0.95), Outcome::Reproduced, "hi at the figure");
        assert_eq!(down(0.96, 0.98), Outcome::Smaller);
        assert_eq!(down(0.90, 0.94), Outcome::Larger);
        assert_eq!(
            against_seed(1.8, 1.5, 1.0, (0.99, 1.01)),
            Outcome::Contradicted,
            "exactly 1 is no speed-up"
        );
        assert_eq!(
            against_seed(0.9, 0.95, 1.0, (0.96, 1.0)),
            Outcome::Smaller,
            "exactly 1 is in a slowdown's direction (not above 1), short of its figure"
        );
        assert_eq!(
            against_seed(1.0, 1.0, 0.98, (0.97, 0.99)),
            Outcome::Larger,
            "a headline of 1 is not a speed-up: a slowdown is in its direction"
        );
    }

    /// "Not shown" says how large an effect the run could have seen after the correction
    /// (larger than without it), and why the mark was withheld; our interval is printed.
    #[test]
    fn not_shown_says_what_could_have_been_seen() {
        let v = verdict(1.001, 1.0);
        assert_eq!(v.outcome, Outcome::NotShown, "{v}");
        let c = v.ours.as_ref().unwrap();
        let uncorrected = c.detectable(stats::ALPHA).unwrap();
        assert!(
            v.detectable.unwrap() > uncorrected,
            "after Holm over {} experiments: {:?} vs {uncorrected} uncorrected",
            primary::family_size(),
            v.detectable
        );
        // Significant alone but not after the correction, and not significant at all.
        let with = |significant: bool| {
            let mut w = v.clone();
            let c = w.ours.as_mut().unwrap();
            c.significant = significant;
            c.p_adjusted = Some(0.2);
            w.why().unwrap()
        };
        assert!(
            with(true).starts_with("p = 0.200 after Holm's correction over "),
            "{}",
            with(true)
        );
        assert!(
            with(false).starts_with("interval includes 1; smallest detectable"),
            "{}",
            with(false)
        );
        let text = v.ours_text();
        assert!(text.contains(" [+") || text.contains(" [-"), "{text}");
        assert!(!text.contains("[1 round]"), "{text}");
    }

    #[test]
    fn noisier_controls_can_detect_less() {
        let primary = |s: &Summary| s.comparisons().find(|c| c.primary).unwrap().clone();
        let quiet = primary(&Summary::new(&runs_with(1.0, 1.0, 3), &[]));
        let mut noisy = runs_with(1.0, 1.0, 3);
        for r in noisy
            .iter_mut()
            .filter(|r| r.variant == "A'" && r.instance == 1)
        {
            r.ops = r.ops * 11 / 10;
            r.ops_per_s = r.ops as f64 * 1e9 / r.ns as f64;
        }
        let noisy = primary(&Summary::new(&noisy, &[]));
        let (dq, dn) = (
            quiet.detectable(0.05).unwrap(),
            noisy.detectable(0.05).unwrap(),
        );
        assert!(dn > 2.0 * dq, "{dn} vs {dq}");
        // Holm's strictest level asks for a larger effect than the plain one.
        assert!(quiet.detectable(0.05 / 6.0).unwrap() > dq);
    }
}
