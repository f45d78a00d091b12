//! The in-kernel test framework: a table of named tests, chosen from the command line.
//!
//! Stable Rust has no `custom_test_frameworks`, so tests are plain functions listed in
//! per-subsystem tables ([`crate::tests::SUITES`]). Each prints one `KTEST <name> ok` or
//! `KTEST <name> FAILED: <reason>` line (abi::report), the run ends with a `KTEST-SUMMARY`
//! line, and the exit code says whether everything passed. A selection naming a test that
//! does not exist is a bad command line, not an empty pass. Slow tests
//! ([`crate::tests::SLOW_SUITES`], a long soak) run only when named: `test=all` leaves them
//! out.

use abi::{ExitCode, TestSelection};
use alloc::string::String;

/// Result of one test: `Err` carries the reason.
pub type TestResult = Result<(), String>;

/// A named test.
pub struct Test {
    /// Name used on the command line (`test=NAME`).
    pub name: &'static str,
    /// The test body.
    pub run: fn() -> TestResult,
}

/// Every registered test that `test=all` runs.
pub fn all() -> impl Iterator<Item = &'static Test> {
    crate::tests::SUITES.iter().flat_map(|s| s.iter())
}

/// Every registered test, the slow ones (run only when named) last.
pub fn registered() -> impl Iterator<Item = &'static Test> {
    all().chain(crate::tests::SLOW_SUITES.iter().flat_map(|s| s.iter()))
}

/// Runs the selected tests and returns the exit code.
pub fn run(sel: TestSelection<'_>) -> ExitCode {
    for name in sel.names() {
        if !registered().any(|t| t.name == name) {
            crate::println!("bad command line: no test named `{name}`. Tests:");
            for t in registered() {
                crate::println!("  {}", t.name);
            }
            return ExitCode::BadCmdline;
        }
    }
    let (mut passed, mut failed) = (0u32, 0u32);
    let selected: alloc::vec::Vec<&Test> = match sel {
        TestSelection::All => all().collect(),
        TestSelection::Named(_) => registered().filter(|t| sel.includes(t.name)).collect(),
    };
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
