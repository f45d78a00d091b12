//! The benchmark records of a serial log, read back with everything that is wrong with them.
//!
//! A log is whatever came over serial: boot messages, `KPROGRESS` lines, `KRESULT` records,
//! the kernel's own table, `KEXIT`, with LF or CRLF line ends, from QEMU (`kx bench`) or
//! captured on a real machine (`kx import`), possibly cut off mid-line or mid-run. Every
//! `KRESULT` line is parsed with `bench::record::parse_line`; what does not hold together is a
//! [`Problem`]:
//!
//! - a line that does not parse, or a record that contradicts itself
//!   ([`Problem::Malformed`]); the log's last line cut off mid-record is
//!   [`Problem::TruncatedLastLine`];
//! - a second `machine`/`plan`/`end`, records after `end`;
//! - no `end` record ([`Problem::NoEnd`]), fewer runs than the plan announced, `end`'s counts
//!   disagreeing with the records;
//! - comparisons missing (recomputed from the runs, and listed) or contradicting their runs;
//! - `end` saying the invariant checks failed ([`Problem::InvariantsFailed`]), or that the
//!   benchmark stopped early on a scenario's error ([`Problem::Stopped`]).
//!
//! The Linux reference of a QEMU run ([`super::linux_qemu`]) adds its runs with
//! [`Collected::add_reference`], or its failure as [`Problem::Reference`].
//!
//! `note` records (a skipped scenario, how the Linux reference was set up, what a platform's
//! numbers mean) are kept in order in [`Collected::notes`]; they are no problem.
//!
//! [`Problem::severity`] sorts them into incomplete-or-malformed results
//! ([`crate::RunnerExit::BadResults`]) and failed invariants
//! ([`crate::RunnerExit::InvariantsFailed`]).

use bench::record::{LineError, parse_line};
use bench::{Comparison, End, Machine, Plan, Progress, Record, Run, Summary};
use std::fmt;

/// How bad a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The results are malformed or incomplete.
    BadResults,
    /// The benchmark's own invariant checks failed.
    InvariantsFailed,
}

/// One thing wrong with a log's records.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// A `KRESULT` line (1-based line number) that is not a valid record.
    Malformed {
        /// Line number in the log.
        line: usize,
        /// Why.
        error: String,
    },
    /// The log's last line is a `KRESULT` record cut off before its end.
    TruncatedLastLine {
        /// Line number in the log.
        line: usize,
    },
    /// A second record of a type that appears once.
    Duplicate {
        /// Line number in the log.
        line: usize,
        /// The record type.
        what: &'static str,
    },
    /// A record after `end`.
    AfterEnd {
        /// Line number in the log.
        line: usize,
    },
    /// No `end` record: the run did not finish (or its log was cut).
    NoEnd,
    /// Fewer `run` records than the plan announced.
    RunsMissing {
        /// `plan.total_runs`.
        planned: u32,
        /// `run` records found.
        found: usize,
    },
    /// `end`'s count of some record type disagrees with the log.
    CountMismatch {
        /// `run` or `comparison`.
        what: &'static str,
        /// What `end` says.
        end_says: u32,
        /// What the log has.
        found: usize,
    },
    /// Comparisons the runs allow but no record gave (recomputed from the runs).
    ComparisonsMissing(usize),
    /// A printed comparison whose numbers disagree with its own runs.
    ComparisonDisagrees {
        /// `scenario config cpus=N b/a`.
        which: String,
        /// The printed ratio.
        printed: f64,
        /// The ratio recomputed from the runs.
        recomputed: f64,
    },
    /// `end` says the invariant checks failed.
    InvariantsFailed(Vec<String>),
    /// `end` says the benchmark stopped early (a scenario's setup, batch or teardown
    /// failed), with its invariants holding.
    Stopped(Vec<String>),
    /// The Linux reference booted after the benchmark failed: its program's error, a run
    /// whose faults did not match its pages, a timeout ([`super::linux_qemu`]).
    Reference(String),
    /// `--coherence`: the plugin's counts are missing, unreadable or do not match the runs.
    Coherence(String),
    /// The cost boot ([`super::cost`]) failed, or its counts do not match its runs.
    Cost(String),
}

impl Problem {
    /// Which exit this problem calls for.
    #[must_use]
    pub fn severity(&self) -> Severity {
        match self {
            Problem::InvariantsFailed(_) => Severity::InvariantsFailed,
            _ => Severity::BadResults,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Malformed { line, error } => write!(f, "line {line}: {error}"),
            Problem::TruncatedLastLine { line } => {
                write!(
                    f,
                    "line {line}: the last record is cut off (the log ends mid-line)"
                )
            }
            Problem::Duplicate { line, what } => write!(f, "line {line}: a second `{what}` record"),
            Problem::AfterEnd { line } => write!(f, "line {line}: a record after `end`"),
            Problem::NoEnd => {
                f.write_str("no `end` record: the run did not finish or the log is cut")
            }
            Problem::RunsMissing { planned, found } => {
                write!(f, "{found} of the {planned} planned runs are in the log")
            }
            Problem::CountMismatch {
                what,
                end_says,
                found,
            } => write!(
                f,
                "`end` counts {end_says} {what} records, the log has {found}"
            ),
            Problem::ComparisonsMissing(n) => write!(
                f,
                "{n} comparison(s) missing from the log, recomputed from the runs"
            ),
            Problem::ComparisonDisagrees {
                which,
                printed,
                recomputed,
            } => write!(
                f,
                "comparison {which}: printed ratio {printed:.6}, its runs give {recomputed:.6}"
            ),
            Problem::InvariantsFailed(failures) => {
                f.write_str("the invariant checks failed")?;
                for x in failures {
                    write!(f, "; {x}")?;
                }
                Ok(())
            }
            Problem::Stopped(failures) => {
                f.write_str("the benchmark stopped early")?;
                for x in failures {
                    write!(f, "; {x}")?;
                }
                Ok(())
            }
            Problem::Reference(why) => write!(f, "the linux reference failed: {why}"),
            Problem::Coherence(why) => write!(f, "coherence: {why}"),
            Problem::Cost(why) => write!(f, "cost: {why}"),
        }
    }
}

/// Every record of a log, and what is wrong with them.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    /// The `machine` record.
    pub machine: Option<Machine>,
    /// The `plan` record.
    pub plan: Option<Plan>,
    /// `run` records, in log order.
    pub runs: Vec<Run>,
    /// `comparison` records, in log order.
    pub comparisons: Vec<Comparison>,
    /// The `end` record.
    pub end: Option<End>,
    /// The `note` records' text, in log order.
    pub notes: Vec<String>,
    /// `KPROGRESS` lines seen.
    pub progress_lines: usize,
    /// Everything wrong.
    pub problems: Vec<Problem>,
    /// The runs grouped, with comparisons (recomputed where missing).
    pub summary: Summary,
    /// What the coherence plugin counted (`kx bench --coherence`).
    pub coherence: Option<crate::coherence::results::CoherenceResults>,
    /// Each variant's counted cost per operation ([`super::cost`]; empty when not counted).
    pub costs: Vec<bench::Cost>,
    /// Per variant with a counted cost, the instructions its locked RMWs came from
    /// ([`super::rmw_sites`]).
    pub rmw_sites: Vec<super::rmw_sites::VariantRmwSites>,
}

impl Collected {
    /// Reads every record of `log`.
    #[must_use]
    pub fn from_log(log: &str) -> Collected {
        let mut c = Collected::default();
        let lines: Vec<&str> = log.split('\n').collect();
        // The last line with anything on it: a record cut there is a truncated log (a
        // capture program may still have added a newline after the cut).
        let last_line = lines.iter().rposition(|l| !l.trim().is_empty());
        for (i, line) in lines.iter().enumerate() {
            let n = i + 1;
            let last = Some(i) == last_line;
            if Progress::parse(line).is_some() {
                c.progress_lines += 1;
                continue;
            }
            let record = match parse_line(line) {
                None => continue,
                Some(Ok(r)) => r,
                Some(Err(LineError::Json(e))) if last && e.is_eof() => {
                    c.problems.push(Problem::TruncatedLastLine { line: n });
                    continue;
                }
                Some(Err(e)) => {
                    c.problems.push(Problem::Malformed {
                        line: n,
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            c.add(n, record);
        }
        c.finish();
        c
    }

    fn add(&mut self, line: usize, record: Record) {
        if self.end.is_some() {
            self.problems.push(Problem::AfterEnd { line });
            return;
        }
        let dup = |what| Problem::Duplicate { line, what };
        match record {
            Record::Machine(m) if self.machine.is_none() => self.machine = Some(m),
            Record::Machine(_) => self.problems.push(dup("machine")),
            Record::Plan(p) if self.plan.is_none() => self.plan = Some(p),
            Record::Plan(_) => self.problems.push(dup("plan")),
            Record::Run(r) => self.runs.push(r),
            Record::Comparison(cmp) => self.comparisons.push(cmp),
            Record::Note(n) => self.notes.push(n.text),
            Record::End(e) => self.end = Some(e),
        }
    }

    fn finish(&mut self) {
        self.summary = Summary::new(&self.runs, &self.comparisons);
        match &self.end {
            None => self.problems.push(Problem::NoEnd),
            Some(end) => {
                if end.runs as usize != self.runs.len() {
                    self.problems.push(Problem::CountMismatch {
                        what: "run",
                        end_says: end.runs,
                        found: self.runs.len(),
                    });
                }
                if end.comparisons as usize != self.comparisons.len() {
                    self.problems.push(Problem::CountMismatch {
                        what: "comparison",
                        end_says: end.comparisons,
                        found: self.comparisons.len(),
                    });
                }
            }
        }
        if let Some(plan) = &self.plan
            && (plan.total_runs as usize) > self.runs.len()
        {
            self.problems.push(Problem::RunsMissing {
                planned: plan.total_runs,
                found: self.runs.len(),
            });
        }
        if !self.summary.recomputed.is_empty() {
            self.problems
                .push(Problem::ComparisonsMissing(self.summary.recomputed.len()));
        }
        for (printed, own) in &self.summary.disagreeing {
            self.problems.push(Problem::ComparisonDisagrees {
                which: format!(
                    "{} {} cpus={} {}/{}",
                    printed.scenario, printed.config, printed.cpus, printed.b, printed.a
                ),
                printed: printed.ratio,
                recomputed: own.ratio,
            });
        }
        if let Some(end) = &self.end {
            if !end.invariants_ok {
                self.problems
                    .push(Problem::InvariantsFailed(end.failures.clone()));
            } else if !end.failures.is_empty() {
                self.problems.push(Problem::Stopped(end.failures.clone()));
            }
        }
    }

    /// Adds the runs of a reference measured outside the log (the Linux reference booted
    /// after the benchmark), each with its floor fraction against this run's floor at the
    /// same CPU count ([`bench::Summary::floor`]: every `limit` run and every floor a fault
    /// scenario's round was paired with), and the note that says what they are; the
    /// summary is made again.
    pub fn add_reference(&mut self, runs: Vec<Run>, note: String) {
        for mut r in runs {
            r.floor_fraction = self.summary.floor(r.cpus).map(|f| r.ops_per_s / f);
            self.runs.push(r);
        }
        self.notes.push(note);
        self.summary = Summary::new(&self.runs, &self.comparisons);
    }

    /// Excludes from every statistic the measured runs that `load` flagged (other processes
    /// took more than [`crate::hostload::BUSY_CORES`] beyond what the interval resolves,
    /// [`crate::hostload::busy`]), each with the reason
    /// in the run record; the summary is made again, the affected points' comparisons
    /// recomputed without them. Returns how many runs were excluded.
    pub fn exclude_busy(&mut self, load: &crate::hostload::HostLoadRecord) -> usize {
        let mut n = 0;
        for l in load.runs.iter().filter(|l| l.flagged && l.round > 0) {
            let same = |r: &Run| {
                r.scenario == l.scenario
                    && r.config == l.config
                    && r.variant == l.variant
                    && r.cpus == l.cpus
                    && r.round == l.round
            };
            let at = match self.runs.get(l.run) {
                Some(r) if same(r) => Some(l.run),
                _ => self.runs.iter().position(same),
            };
            if let Some(r) = at.and_then(|i| self.runs.get_mut(i))
                && r.excluded.is_none()
            {
                r.excluded = Some(format!(
                    "the host was busy: other processes used {:.2} cores (above {})",
                    l.host_load.unwrap_or(f64::NAN),
                    crate::hostload::BUSY_CORES
                ));
                n += 1;
            }
        }
        if n > 0 {
            self.summary = Summary::new(&self.runs, &self.comparisons);
        }
        n
    }

    /// Whether any record was found at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.machine.is_none()
            && self.plan.is_none()
            && self.runs.is_empty()
            && self.comparisons.is_empty()
            && self.notes.is_empty()
            && self.end.is_none()
    }

    /// Why [`Collected::is_empty`] holds, for the message that refuses the log: the first
    /// line that looked like a record and was not one (and how many more there were), or that
    /// no line looked like a record at all.
    #[must_use]
    pub fn why_empty(&self) -> String {
        let mut bad = self.problems.iter().filter_map(|p| match p {
            Problem::Malformed { line, error } => Some((*line, error.as_str())),
            _ => None,
        });
        match bad.next() {
            None => "no KRESULT records in it".into(),
            Some((line, error)) => {
                let more = bad.count();
                let tail = if more == 0 {
                    String::new()
                } else {
                    format!(" (and {more} more invalid KRESULT lines)")
                };
                format!("no valid KRESULT record in it: line {line}: {error}{tail}")
            }
        }
    }

    /// The worst problem's severity (`None`: complete and consistent).
    #[must_use]
    pub fn worst(&self) -> Option<Severity> {
        self.problems.iter().map(Problem::severity).max()
    }

    /// Whether the results are complete and consistent.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.problems.is_empty()
    }
}
