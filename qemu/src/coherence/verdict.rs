//! The mechanism verdict: did the seed's mechanism act, and did B remove it?
//!
//! For each comparison of a scenario whose catalog entry names its mechanism
//! (`bench::catalog::Mechanism`: fields, unit size, direction), at every CPU count of at least
//! 2, the transfers per operation on the units holding one of the named fields are taken per
//! measured round, for A, B and the A/A control A'. Then:
//!
//! - **not judged**: A' does not agree with A (their means differ by more than the wider of
//!   the two rounds' spreads and a tenth of A's mean): placement or timing moved the counts
//!   as much as a patch would, so neither word below would mean anything; or A or B has no
//!   measured round. The engine runs the control for a scenario's first baseline only; the
//!   other comparisons are judged without one, and their line says so;
//! - **mechanism absent**: A (B where B is the one expected to add them) has under
//!   [`ABSENT`] transfers per operation on those units: the experiment is not exercising
//!   its seed;
//! - **mechanism shown**: every round of B is below every round of A (above, for a seed
//!   whose patch adds the transfers): the difference is larger than the round-to-round
//!   spread;
//! - **B did not help** otherwise.
//!
//! Units are found through the hot lines the plugin reported (its top lines per run), named
//! by the objects the scenario listed (`KOBJECT`); a unit outside the top lines is not
//! counted, so the figures are lower bounds when many lines are hot.

use super::results::{CoherenceResults, CoherenceRun};
use bench::catalog::{self, Mechanism};
use std::fmt;

/// Transfers per operation on the seed's units below which the mechanism did not act.
pub const ABSENT: f64 = 0.01;

/// What the counts say about one comparison at one CPU count.
#[derive(Clone, Debug, PartialEq)]
pub struct MechanismVerdict {
    /// Scenario.
    pub scenario: String,
    /// Configuration.
    pub config: String,
    /// CPUs.
    pub cpus: u32,
    /// Variant A.
    pub a: String,
    /// Variant B.
    pub b: String,
    /// Per round, transfers per operation on the seed's units: A, B, A'.
    pub rounds: [Vec<f64>; 3],
    /// The word.
    pub word: Word,
}

/// The verdict's word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// B changed the seed's transfers the way the seed says, beyond the rounds' spread.
    Shown,
    /// A has none of the seed's transfers.
    Absent,
    /// The transfers are there and B did not change them enough.
    NotHelped,
    /// The control disagrees with A, or rounds are missing.
    NotJudged,
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Word::Shown => "mechanism shown",
            Word::Absent => "mechanism absent",
            Word::NotHelped => "B did not help",
            Word::NotJudged => "not judged",
        })
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn spread(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() { 0.0 } else { hi - lo }
}

/// Transfers per operation of one run on the units holding a field of `m`.
#[must_use]
pub fn on_fields(run: &CoherenceRun, m: &Mechanism) -> f64 {
    let Some(model) = run.model(m.line_bytes) else {
        return 0.0;
    };
    let n: u64 = model
        .hot
        .iter()
        .filter(|h| h.on.iter().any(|f| m.fields.contains(&f.as_str())))
        .map(|h| h.counts.transfers())
        .sum();
    run.per_op(n).unwrap_or(0.0)
}

/// The word for rounds `a`, `b` and control `a2` of a mechanism that B should reduce
/// (`b_reduces`) or add.
#[must_use]
pub fn judge(a: &[f64], b: &[f64], a2: &[f64], b_reduces: bool) -> Word {
    if a.is_empty() || b.is_empty() {
        return Word::NotJudged;
    }
    let tolerance = spread(a).max(spread(a2)).max(0.1 * mean(a));
    if !a2.is_empty() && (mean(a2) - mean(a)).abs() > tolerance {
        return Word::NotJudged;
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (with, without) = if b_reduces { (a, b) } else { (b, a) };
    if mean(with) < ABSENT {
        Word::Absent
    } else if max(without) < min(with) {
        Word::Shown
    } else {
        Word::NotHelped
    }
}

/// Every comparison's verdict at every CPU count of at least 2, in run order.
#[must_use]
pub fn verdicts(c: &CoherenceResults) -> Vec<MechanismVerdict> {
    let mut points: Vec<(String, String, u32)> = Vec::new();
    for r in c.runs.iter().filter(|r| !r.warmup && r.cpus >= 2) {
        let p = (r.scenario.clone(), r.config.clone(), r.cpus);
        if !points.contains(&p) {
            points.push(p);
        }
    }
    let mut out = Vec::new();
    for (scenario, config, cpus) in points {
        let Some(s) = catalog::scenario(&scenario) else {
            continue;
        };
        let Some(m) = &s.mechanism else {
            continue;
        };
        let rounds = |variant: &str| -> Vec<f64> {
            c.measured(&scenario, &config, cpus, variant)
                .into_iter()
                .map(|r| on_fields(r, m))
                .collect()
        };
        for d in s.comparisons {
            let control = bench::record::control_name(d.a);
            let r = [rounds(d.a), rounds(d.b), rounds(&control)];
            let word = judge(&r[0], &r[1], &r[2], m.b_reduces);
            out.push(MechanismVerdict {
                scenario: scenario.clone(),
                config: config.clone(),
                cpus,
                a: d.a.into(),
                b: d.b.into(),
                rounds: r,
                word,
            });
        }
    }
    out
}

/// One line per comparison and CPU count.
#[must_use]
pub fn lines(v: &[MechanismVerdict]) -> Vec<String> {
    v.iter()
        .map(|x| {
            let m = catalog::scenario(&x.scenario).and_then(|s| s.mechanism);
            format!(
                "{} {} cpus={} {} {:.4} vs {} {:.4} ({}; {}-byte units of {}): {}",
                x.scenario,
                x.config,
                x.cpus,
                x.a,
                mean(&x.rounds[0]),
                x.b,
                mean(&x.rounds[1]),
                if x.rounds[2].is_empty() {
                    "no A/A control here".to_owned()
                } else {
                    format!("A' {:.4}", mean(&x.rounds[2]))
                },
                m.map_or(0, |m| m.line_bytes),
                m.map_or_else(String::new, |m| m.fields.join("/")),
                x.word
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_the_rounds() {
        let a = [1.0, 1.1, 0.9];
        assert_eq!(judge(&a, &[0.2, 0.3], &[1.0, 1.05], true), Word::Shown);
        assert_eq!(judge(&a, &[0.95, 1.0], &[1.0, 1.05], true), Word::NotHelped);
        assert_eq!(judge(&[0.001], &[0.0], &[0.001], true), Word::Absent);
        assert_eq!(
            judge(&a, &[0.2], &[3.0, 3.1], true),
            Word::NotJudged,
            "A' disagrees"
        );
        assert_eq!(judge(&a, &[], &[1.0], true), Word::NotJudged);
        assert_eq!(
            judge(&a, &[0.2], &[], true),
            Word::Shown,
            "no control at this point"
        );
        // A seed whose patch adds the transfers: B above every round of A.
        assert_eq!(
            judge(&[0.1, 0.12], &[0.5, 0.6], &[0.11], false),
            Word::Shown
        );
        assert_eq!(judge(&[0.001], &[0.002], &[0.001], false), Word::Absent);
    }
}
