//! The in-kernel test framework: tests that register themselves, chosen from the command
//! line.
//!
//! Stable Rust has no `custom_test_frameworks`, so a test is a plain function marked
//! `#[ktest]` (kernel/ktest, as Asterinas's), which places its [`Test`] descriptor in the
//! linker section `.ktests`; the linker script keeps that section between `__start_ktests`
//! and `__stop_ktests`, and [`registered`] reads it. No table lists the tests. Each test
//! prints one `KTEST <name> ok` or `KTEST <name> FAILED: <reason>` line (abi::report), the
//! run ends with a `KTEST-SUMMARY` line, and the exit code says whether everything passed. A
//! selection naming a test that does not exist is a bad command line, not an empty pass; a
//! `PREFIX*` entry selects every test starting so (the slow ones aside). Before the first
//! test a `KTEST-PLAN` line names every selected test, so the host checks each reported.
//! Slow tests (`#[ktest(slow)]`: a long soak, the coherence known answers) run only when
//! named: `test=all` leaves them out. The same attribute writes each name into
//! `.ktest_names`, from which the runner lists the tests (`kx test --list`) without booting.
//!
//! Unsafe code here, and why: the registered tests are a linker section read as a slice
//! between its start and stop symbols.
#![allow(unsafe_code)]

pub use crate::tests::case::{Test, TestResult};
use abi::{ExitCode, TestSelection};
use alloc::string::String;
use alloc::vec::Vec;

unsafe extern "C" {
    // Bounds only (their bytes are the tests'): `Test` has no C layout to declare.
    static __start_ktests: u8;
    static __stop_ktests: u8;
}

/// The descriptors `#[ktest]` placed in `.ktests`, in the linker's order.
fn section() -> &'static [Test] {
    let start = (&raw const __start_ktests).cast::<Test>();
    let stop = &raw const __stop_ktests;
    let n = (stop as usize - start as usize) / core::mem::size_of::<Test>();
    // SAFETY: the linker script keeps every `.ktests` input section between the two
    // symbols, the first 8-aligned as `Test` is; `#[ktest]` puts only `Test` statics there,
    // whose size is a multiple of their alignment: the bytes between are `n` initialised
    // `Test`s in `.rodata`, never written.
    unsafe { core::slice::from_raw_parts(start, n) }
}

/// Every registered test, slow ones included, by name (the link order is not ours to keep).
pub fn registered() -> Vec<&'static Test> {
    let mut v: Vec<&'static Test> = section().iter().collect();
    v.sort_by_key(|t| t.name);
    v
}

/// Runs the selected tests and returns the exit code.
pub fn run(sel: TestSelection<'_>) -> ExitCode {
    // Every entry must select something: a name that does not exist, or a prefix that
    // matches no test `all` runs, is a bad command line, not an empty pass.
    let tests = registered();
    if let Some(entry) = sel.unmatched(tests.iter().map(|t| (t.name, t.slow))) {
        crate::println!("bad command line: {entry}. Tests:");
        for t in &tests {
            crate::println!(
                "  {}{}",
                t.name,
                if t.slow {
                    " (slow: only when named)"
                } else {
                    ""
                }
            );
        }
        return ExitCode::BadCmdline;
    }
    let (mut passed, mut failed) = (0u32, 0u32);
    let selected: Vec<&Test> = tests
        .into_iter()
        .filter(|t| sel.includes(t.name, t.slow))
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
