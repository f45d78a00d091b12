//! One in-kernel test as the suites' tables list it: a name and a function.
//!
//! The descriptor sits at the bottom: the tables ([`super::SUITES`]) and every suite file
//! list [`Test`]s, and the runner above them ([`crate::ktest`], which re-exports both
//! names) reads the tables, so the runner and the tables do not import each other.

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
