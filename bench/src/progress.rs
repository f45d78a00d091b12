//! The benchmark's progress line, printed after every run on serial and on the screen:
//!
//! ```text
//! KPROGRESS <step>/<total> <scenario> <config> <variant> cpus=<n> round=<r>/<R> <ops_per_s> ops/s
//! ```
//!
//! `step` counts runs from 1 to the plan's `total_runs`; `round` is 0 for the warm-up round
//! and 1..=R for the measured ones; the rate is an integer from 100 ops/s up and has three
//! decimals below (seed002's requests can be that slow). It is meant for people (a real
//! machine's screen shows nothing else while it runs), and the runner's progress bar reads it
//! with [`Progress::parse`]; the numbers that count are in the `KRESULT` run record printed
//! just before it.

use core::fmt;

pub use abi::report::PROGRESS_TAG;

/// One progress line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress<'a> {
    /// This run's number, from 1.
    pub step: u32,
    /// Runs in the plan.
    pub total: u32,
    /// Scenario.
    pub scenario: &'a str,
    /// Config.
    pub config: &'a str,
    /// Variant.
    pub variant: &'a str,
    /// CPU count.
    pub cpus: u32,
    /// Round (0: warm-up).
    pub round: u32,
    /// Measured rounds.
    pub rounds: u32,
    /// The run's rate.
    pub ops_per_s: f64,
}

impl fmt::Display for Progress<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PROGRESS_TAG} {}/{} {} {} {} cpus={} round={}/{} ",
            self.step,
            self.total,
            self.scenario,
            self.config,
            self.variant,
            self.cpus,
            self.round,
            self.rounds
        )?;
        if self.ops_per_s >= 100.0 {
            write!(f, "{:.0} ops/s", self.ops_per_s)
        } else {
            write!(f, "{:.3} ops/s", self.ops_per_s)
        }
    }
}

impl<'a> Progress<'a> {
    /// Reads a progress line (anything may precede the tag; a trailing `\r` is ignored).
    #[must_use]
    pub fn parse(line: &'a str) -> Option<Progress<'a>> {
        let start = line.find(PROGRESS_TAG)? + PROGRESS_TAG.len();
        let mut w = line[start..].trim_end_matches(['\r', '\n']).split(' ');
        if !w.next()?.is_empty() {
            return None;
        }
        let (step, total) = w.next()?.split_once('/')?;
        let (scenario, config, variant) = (w.next()?, w.next()?, w.next()?);
        let cpus = w.next()?.strip_prefix("cpus=")?;
        let (round, rounds) = w.next()?.strip_prefix("round=")?.split_once('/')?;
        let ops_per_s: f64 = w.next()?.parse().ok()?;
        if w.next()? != "ops/s" || w.next().is_some() || !ops_per_s.is_finite() {
            return None;
        }
        Some(Progress {
            step: step.parse().ok()?,
            total: total.parse().ok()?,
            scenario,
            config,
            variant,
            cpus: cpus.parse().ok()?,
            round: round.parse().ok()?,
            rounds: rounds.parse().ok()?,
            ops_per_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn prints_and_parses() {
        let p = Progress {
            step: 7,
            total: 120,
            scenario: "seed001-faultfree",
            config: "shmem",
            variant: "patch1+2@+64",
            cpus: 2,
            round: 0,
            rounds: 5,
            ops_per_s: 1_234_567.8,
        };
        let line = p.to_string();
        assert_eq!(
            line,
            "KPROGRESS 7/120 seed001-faultfree shmem patch1+2@+64 cpus=2 round=0/5 1234568 ops/s"
        );
        let back = Progress::parse(&line).unwrap();
        assert_eq!(
            (back.step, back.variant, back.round),
            (7, "patch1+2@+64", 0)
        );
        assert_eq!(back.ops_per_s, 1_234_568.0);
        let slow = Progress {
            ops_per_s: 12.3456,
            ..p
        }
        .to_string();
        assert!(slow.ends_with(" 12.346 ops/s"), "{slow}");
        assert_eq!(Progress::parse(&(slow + "\r")).unwrap().ops_per_s, 12.346);
    }

    #[test]
    fn rejects_other_and_cut_lines() {
        let line = "KPROGRESS 1/2 limit anon floor cpus=1 round=1/2 5 ops/s";
        assert!(Progress::parse(line).is_some());
        for cut in 1..line.len() - 1 {
            assert!(Progress::parse(&line[..cut]).is_none(), "{}", &line[..cut]);
        }
        assert!(
            Progress::parse("KPROGRESS 1/2 limit anon floor cpus=x round=1/2 5 ops/s").is_none()
        );
        assert!(Progress::parse("KTEST a ok").is_none());
    }
}
