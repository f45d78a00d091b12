//! Per-case results of an in-kernel test run, read back from the console line protocol.
//!
//! The kernel prints `KTEST <name> ok|FAILED: reason` per case, `KTEST-SUMMARY <p> passed,
//! <f> failed` at the end and `KEXIT <name>` before it exits (`abi::report`). A run passes
//! only when all of these agree: the exit code is success, every case line says ok, the
//! summary exists and matches the lines, every requested name ran exactly once, and the
//! `KEXIT` line (if any) names the same outcome as the exit code. Each disagreement is a
//! [`Problem`], so a kernel that exits success after a failed case, or loses a case, is caught.

use crate::Outcome;
use abi::ExitCode;
use abi::report::{EXIT_TAG, parse_plan_line, parse_summary_line, parse_test_line};
use std::fmt;

/// One test case's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseResult {
    /// Test name.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// Why it failed.
    pub reason: Option<String>,
}

/// Everything the console said about a test run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestReport {
    /// The case lines, in order.
    pub cases: Vec<CaseResult>,
    /// The summary line's `(passed, failed)`, if printed.
    pub summary: Option<(u32, u32)>,
    /// The name on the `KEXIT` line, if printed.
    pub exit_line: Option<String>,
    /// The tests the `KTEST-PLAN` line named, if printed.
    pub plan: Option<Vec<String>>,
}

/// A way the console output and the exit code disagree with a clean pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The run did not end with the kernel's success code.
    NotSuccess(Outcome),
    /// A case reported failure.
    Failed {
        /// Test name.
        name: String,
        /// Its reason, if it gave one.
        reason: Option<String>,
    },
    /// A requested case never reported.
    Missing(String),
    /// A case reported more than once.
    Duplicate(String),
    /// A case reported that the kernel's plan did not name.
    Unplanned(String),
    /// No case lines at all.
    NoCases,
    /// No summary line.
    NoSummary,
    /// The summary does not match the case lines.
    SummaryMismatch {
        /// `(passed, failed)` counted from the case lines.
        lines: (u32, u32),
        /// `(passed, failed)` the summary claims.
        summary: (u32, u32),
    },
    /// The `KEXIT` line names another outcome than the exit code.
    ExitLineMismatch {
        /// What `KEXIT` said.
        printed: String,
        /// What the exit device said.
        code: ExitCode,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NotSuccess(o) => write!(f, "{o}"),
            Problem::Failed { name, reason } => match reason {
                Some(r) => write!(f, "{name} FAILED: {r}"),
                None => write!(f, "{name} FAILED"),
            },
            Problem::Missing(n) => write!(f, "{n}: no result line (not run, or lost)"),
            Problem::Duplicate(n) => write!(f, "{n}: reported more than once"),
            Problem::Unplanned(n) => write!(f, "{n}: reported but not in the KTEST-PLAN line"),
            Problem::NoCases => f.write_str("no KTEST lines at all"),
            Problem::NoSummary => f.write_str("no KTEST-SUMMARY line"),
            Problem::SummaryMismatch { lines, summary } => write!(
                f,
                "summary says {} passed, {} failed; the case lines say {} passed, {} failed",
                summary.0, summary.1, lines.0, lines.1
            ),
            Problem::ExitLineMismatch { printed, code } => write!(
                f,
                "KEXIT line says `{printed}` but the exit code is {}",
                code.name()
            ),
        }
    }
}

impl TestReport {
    /// Reads the test lines out of console text.
    #[must_use]
    pub fn parse(serial: &str) -> Self {
        let mut r = TestReport::default();
        for line in serial.lines().map(|l| l.trim_end_matches('\r')) {
            if let Some(t) = parse_test_line(line) {
                r.cases.push(CaseResult {
                    name: t.name.to_owned(),
                    passed: t.passed,
                    reason: t.reason.map(str::to_owned),
                });
            } else if let Some(names) = parse_plan_line(line) {
                r.plan = Some(names.map(str::to_owned).collect());
            } else if let Some(s) = parse_summary_line(line) {
                r.summary = Some(s);
            } else if let Some(rest) = line
                .strip_prefix(EXIT_TAG)
                .and_then(|r| r.strip_prefix(' '))
            {
                r.exit_line = Some(rest.trim().to_owned());
            }
        }
        r
    }

    /// `(passed, failed)` counted from the case lines.
    #[must_use]
    pub fn counts(&self) -> (u32, u32) {
        let passed = self.cases.iter().filter(|c| c.passed).count() as u32;
        (passed, self.cases.len() as u32 - passed)
    }

    /// Everything that keeps this run from being a clean pass; empty means it passed.
    /// `requested` are the names asked for on the command line (`None`: all).
    #[must_use]
    pub fn problems(&self, outcome: Outcome, requested: Option<&[String]>) -> Vec<Problem> {
        let mut p = Vec::new();
        if !outcome.is_success() {
            p.push(Problem::NotSuccess(outcome));
        }
        for c in self.cases.iter().filter(|c| !c.passed) {
            p.push(Problem::Failed {
                name: c.name.clone(),
                reason: c.reason.clone(),
            });
        }
        let mut seen: Vec<&str> = Vec::new();
        for c in &self.cases {
            if seen.contains(&c.name.as_str()) {
                p.push(Problem::Duplicate(c.name.clone()));
            }
            seen.push(&c.name);
        }
        // Every test asked for by name, and every test the kernel's plan named (a prefix's
        // members), must report.
        let planned = self.plan.iter().flatten();
        let mut expected: Vec<&String> = requested.into_iter().flatten().collect();
        for n in planned {
            if !expected.contains(&n) {
                expected.push(n);
            }
        }
        for n in expected {
            if !seen.contains(&n.as_str()) {
                p.push(Problem::Missing(n.clone()));
            }
        }
        if let Some(plan) = &self.plan {
            for c in &self.cases {
                if !plan.contains(&c.name) {
                    p.push(Problem::Unplanned(c.name.clone()));
                }
            }
        }
        if self.cases.is_empty() {
            p.push(Problem::NoCases);
        }
        match self.summary {
            None => p.push(Problem::NoSummary),
            Some(s) if s != self.counts() => p.push(Problem::SummaryMismatch {
                lines: self.counts(),
                summary: s,
            }),
            Some(_) => {}
        }
        if let (Some(printed), Outcome::Kernel(code)) = (&self.exit_line, outcome)
            && printed != code.name()
        {
            p.push(Problem::ExitLineMismatch {
                printed: printed.clone(),
                code,
            });
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const OK: Outcome = Outcome::Kernel(ExitCode::Success);

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn clean_run_has_no_problems() {
        let serial = "boot...\r\nKTEST heap ok\r\nKTEST paging ok\r\n\
                      KTEST-SUMMARY 2 passed, 0 failed\r\nKEXIT success\r\n";
        let r = TestReport::parse(serial);
        assert_eq!(r.cases.len(), 2);
        assert_eq!(r.summary, Some((2, 0)));
        assert_eq!(r.exit_line.as_deref(), Some("success"));
        assert_eq!(r.problems(OK, None), []);
        assert_eq!(r.problems(OK, Some(&names(&["paging"]))), []);
    }

    #[test]
    fn failure_and_missing_and_bad_summary_are_reported() {
        let serial = "KTEST a ok\nKTEST b FAILED: 1 != 2\nKTEST-SUMMARY 2 passed, 0 failed\n\
                      KEXIT test-failure\n";
        let r = TestReport::parse(serial);
        let p = r.problems(
            Outcome::Kernel(ExitCode::TestFailure),
            Some(&names(&["a", "b", "c"])),
        );
        assert!(p.contains(&Problem::NotSuccess(Outcome::Kernel(ExitCode::TestFailure))));
        assert!(p.contains(&Problem::Failed {
            name: "b".into(),
            reason: Some("1 != 2".into())
        }));
        assert!(p.contains(&Problem::Missing("c".into())));
        assert!(p.contains(&Problem::SummaryMismatch {
            lines: (1, 1),
            summary: (2, 0)
        }));
        assert!(
            !p.iter()
                .any(|x| matches!(x, Problem::ExitLineMismatch { .. }))
        );
    }

    #[test]
    fn the_plan_line_names_what_must_report() {
        let serial = "KTEST-PLAN 3 vm_a,vm_b,vm_c\nKTEST vm_a ok\nKTEST vm_c ok\nKTEST x ok\n\
                      KTEST-SUMMARY 3 passed, 0 failed\nKEXIT success\n";
        let r = TestReport::parse(serial);
        assert_eq!(
            r.plan.as_deref(),
            Some(&names(&["vm_a", "vm_b", "vm_c"])[..])
        );
        let p = r.problems(OK, None);
        assert_eq!(
            p,
            [
                Problem::Missing("vm_b".into()),
                Problem::Unplanned("x".into())
            ]
        );
    }

    #[test]
    fn success_code_with_a_failed_line_is_not_a_pass() {
        let r = TestReport::parse("KTEST a FAILED\nKTEST-SUMMARY 0 passed, 1 failed\n");
        let p = r.problems(OK, None);
        assert_eq!(
            p,
            [Problem::Failed {
                name: "a".into(),
                reason: None
            }]
        );
    }

    #[test]
    fn empty_duplicate_and_exit_line_disagreements() {
        let r = TestReport::parse("nothing here\n");
        let p = r.problems(Outcome::Timeout(Duration::from_secs(1)), None);
        assert!(p.contains(&Problem::NoCases) && p.contains(&Problem::NoSummary));
        let r = TestReport::parse(
            "KTEST a ok\nKTEST a ok\nKTEST-SUMMARY 2 passed, 0 failed\nKEXIT panic\n",
        );
        let p = r.problems(OK, None);
        assert!(p.contains(&Problem::Duplicate("a".into())));
        assert!(p.contains(&Problem::ExitLineMismatch {
            printed: "panic".into(),
            code: ExitCode::Success
        }));
    }
}
