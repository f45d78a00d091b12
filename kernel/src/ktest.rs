//! The in-kernel test framework: a table of named tests, chosen from the command line.
//!
//! Stable Rust has no `custom_test_frameworks`, so tests are plain functions listed in
//! per-subsystem tables ([`crate::tests::SUITES`]). Each prints one `KTEST <name> ok` or
//! `KTEST <name> FAILED: <reason>` line (abi::report), the run ends with a `KTEST-SUMMARY`
//! line, and the exit code says whether everything passed. A selection naming a test that
//! does not exist is a bad command line, not an empty pass; a `PREFIX*` entry selects every
//! test starting so (the slow ones aside). Before the first test a `KTEST-PLAN` line names
//! every selected test, so the host checks each reported. Slow tests
//! ([`crate::tests::SLOW_SUITES`], a long soak) run only when named: `test=all` leaves them
//! out.

pub use crate::tests::case::{Test, TestResult};
use abi::{ExitCode, TestPattern, TestSelection};
use alloc::string::String;

/// Every registered test that `test=all` runs.
pub fn all() -> impl Iterator<Item = &'static Test> {
    crate::tests::SUITES.iter().flat_map(|s| s.iter())
}

/// Every registered test with whether it is slow (run only when named), the slow ones last.
pub fn registered() -> impl Iterator<Item = (&'static Test, bool)> {
    all().map(|t| (t, false)).chain(
        crate::tests::SLOW_SUITES
            .iter()
            .flat_map(|s| s.iter())
            .map(|t| (t, true)),
    )
}

/// Runs the selected tests and returns the exit code.
pub fn run(sel: TestSelection<'_>) -> ExitCode {
    // Every entry must select something: a name that does not exist, or a prefix that
    // matches no test `all` runs, is a bad command line, not an empty pass.
    for pattern in sel.patterns() {
        if !registered().any(|(t, slow)| pattern.matches(t.name, slow)) {
            let entry = match pattern {
                TestPattern::Name(n) => alloc::format!("no test named `{n}`"),
                TestPattern::Prefix(p) => {
                    alloc::format!("no test (slow ones aside) starts with `{p}`")
                }
            };
            crate::println!("bad command line: {entry}. Tests:");
            for (t, slow) in registered() {
                crate::println!(
                    "  {}{}",
                    t.name,
                    if slow { " (slow: only when named)" } else { "" }
                );
            }
            return ExitCode::BadCmdline;
        }
    }
    let (mut passed, mut failed) = (0u32, 0u32);
    let selected: alloc::vec::Vec<&Test> = registered()
        .filter(|(t, slow)| sel.includes(t.name, *slow))
        .map(|(t, _)| t)
        .collect();
    // The plan first, so the host knows every test that must report (a prefix's members are
    // the kernel's to know, not the host's).
    let mut plan = String::new();
    for (i, t) in selected.iter().enumerate() {
        if i > 0 {
            plan.push(',');
        }
        plan.push_str(t.name);
    }
    crate::println!("{} {} {plan}", abi::report::PLAN_TAG, selected.len());
    for t in selected {
        // A lock-order inversion found while the test ran fails it (lockdep, debug builds).
        let result = (t.run)().and_then(|()| match ksync::lockdep::take_inversion() {
            None => Ok(()),
            Some((held, taken)) => Err(alloc::format!(
                "lockdep: `{taken}` taken while holding `{held}`, against the order seen before"
            )),
        });
        match result {
            Ok(()) => {
                passed += 1;
                crate::println!("{} {} ok", abi::report::TEST_TAG, t.name);
            }
            Err(why) => {
                failed += 1;
                crate::println!("{} {} FAILED: {why}", abi::report::TEST_TAG, t.name);
            }
        }
    }
    crate::println!(
        "{} {passed} passed, {failed} failed",
        abi::report::SUMMARY_TAG
    );
    if failed == 0 {
        ExitCode::Success
    } else {
        ExitCode::TestFailure
    }
}

/// Fails the test with a formatted reason unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err(alloc::format!($($arg)+));
        }
    };
}
