//! In-kernel test suites, one table per subsystem, run by [`crate::ktest`].

mod boot;
mod fault_arch;
mod mm;
mod page_alloc;
mod rcu;
mod smp;
mod traps;

use crate::ktest::Test;

/// Every suite, in run order.
pub static SUITES: &[&[Test]] = &[
    boot::TESTS,
    mm::TESTS,
    traps::TESTS,
    smp::TESTS,
    fault_arch::TESTS,
    rcu::TESTS,
    page_alloc::TESTS,
];
