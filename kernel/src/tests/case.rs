//! One in-kernel test as `#[ktest]` registers it: a name, a function, whether it is slow.
//!
//! The descriptor sits at the bottom: every test file's `#[ktest]` functions place one in
//! the `.ktests` section (kernel/ktest), and the runner above them ([`crate::ktest`], which
//! re-exports both names) reads the section, so neither imports the other.

use alloc::string::String;

/// Result of one test: `Err` carries the reason.
pub type TestResult = Result<(), String>;

/// A named test.
pub struct Test {
    /// Name used on the command line (`test=NAME`).
    pub name: &'static str,
    /// The test body.
    pub run: fn() -> TestResult,
    /// Run only when named (`#[ktest(slow)]`): `test=all` and prefixes leave it out.
    pub slow: bool,
}
