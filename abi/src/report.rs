//! The line protocol on the kernel console that the host runner parses.
//!
//! Every machine-readable line starts with a fixed tag so it can be found among log output:
//! `KTEST-PLAN <n> <names>` before a test run, `KTEST <name> ok|FAILED[: reason]` for one
//! test, `KTEST-SUMMARY <p> passed, <f> failed` at
//! the end of a test run, and `KEXIT <name>` right before the kernel writes its exit code.
//! The benchmark prints `KRESULT {json}` records and `KPROGRESS <step>/<total> ...` lines;
//! their format is defined (writer and parser) by the `bench` crate's `record` module.

/// Prefix of a per-test result line.
pub const TEST_TAG: &str = "KTEST";
/// Prefix of the line, printed before the first test, that names every selected test:
/// `KTEST-PLAN <n> <name>,<name>,...`.
pub const PLAN_TAG: &str = "KTEST-PLAN";
/// Prefix of the test summary line.
pub const SUMMARY_TAG: &str = "KTEST-SUMMARY";
/// Prefix of the outcome line printed before exiting or halting.
pub const EXIT_TAG: &str = "KEXIT";
/// Prefix of a benchmark record line (`KRESULT {json}`).
pub const RESULT_TAG: &str = "KRESULT";
/// Prefix of a benchmark progress line (`KPROGRESS <step>/<total> ...`).
pub const PROGRESS_TAG: &str = "KPROGRESS";

/// One test's result as read back from a console line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestLine<'a> {
    /// Test name.
    pub name: &'a str,
    /// Whether it passed.
    pub passed: bool,
    /// The failure reason, if any.
    pub reason: Option<&'a str>,
}

/// Parses a `KTEST <name> ok` / `KTEST <name> FAILED: reason` line.
#[must_use]
pub fn parse_test_line(line: &str) -> Option<TestLine<'_>> {
    let rest = line.trim_end().strip_prefix(TEST_TAG)?.strip_prefix(' ')?;
    let (name, verdict) = rest.split_once(' ')?;
    if verdict == "ok" {
        return Some(TestLine {
            name,
            passed: true,
            reason: None,
        });
    }
    let reason = verdict.strip_prefix("FAILED")?;
    let reason = reason.strip_prefix(": ").filter(|r| !r.is_empty());
    Some(TestLine {
        name,
        passed: false,
        reason,
    })
}

/// Parses `KTEST-SUMMARY <p> passed, <f> failed` into `(p, f)`.
#[must_use]
pub fn parse_summary_line(line: &str) -> Option<(u32, u32)> {
    let rest = line.trim_end().strip_prefix(SUMMARY_TAG)?.trim_start();
    let (p, rest) = rest.split_once(" passed, ")?;
    let f = rest.strip_suffix(" failed")?;
    Some((p.parse().ok()?, f.parse().ok()?))
}

/// Parses `KTEST-PLAN <n> <name>,<name>,...` into the names; `None` when the count does not
/// match the names (a cut line).
#[must_use]
pub fn parse_plan_line(line: &str) -> Option<impl Iterator<Item = &str>> {
    let rest = line.trim_end().strip_prefix(PLAN_TAG)?.strip_prefix(' ')?;
    let (n, names) = rest.split_once(' ').unwrap_or((rest, ""));
    let n: usize = n.parse().ok()?;
    let count = names.split(',').filter(|s| !s.is_empty()).count();
    (count == n).then(|| names.split(',').filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_lines() {
        let names = |l| parse_plan_line(l).map(Iterator::collect::<Vec<_>>);
        assert_eq!(
            names("KTEST-PLAN 2 vm_a,vm_b\r"),
            Some(vec!["vm_a", "vm_b"])
        );
        assert_eq!(names("KTEST-PLAN 0 "), Some(vec![]));
        assert_eq!(
            names("KTEST-PLAN 3 vm_a,vm_b"),
            None,
            "a cut plan is no plan"
        );
        assert_eq!(names("KTEST vm_a ok"), None);
        assert_eq!(parse_test_line("KTEST-PLAN 1 vm_a"), None);
    }

    #[test]
    fn test_lines() {
        assert_eq!(
            parse_test_line("KTEST heap_alloc ok"),
            Some(TestLine {
                name: "heap_alloc",
                passed: true,
                reason: None
            })
        );
        assert_eq!(
            parse_test_line("KTEST x FAILED: 1 != 2\r"),
            Some(TestLine {
                name: "x",
                passed: false,
                reason: Some("1 != 2")
            })
        );
        assert_eq!(parse_test_line("KTEST-SUMMARY 1 passed, 0 failed"), None);
        assert_eq!(parse_test_line("KTEST x maybe"), None);
    }

    #[test]
    fn summary_line() {
        assert_eq!(
            parse_summary_line("KTEST-SUMMARY 12 passed, 1 failed"),
            Some((12, 1))
        );
        assert_eq!(
            parse_summary_line("KTEST-SUMMARY twelve passed, 1 failed"),
            None
        );
    }
}
