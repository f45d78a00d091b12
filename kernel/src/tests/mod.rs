//! In-kernel test suites, one table per subsystem, run by [`crate::ktest`].

mod boot;
pub mod case;
mod coherence;
mod fault_arch;
mod mm;
mod msr;
mod page_alloc;
mod rcu;
mod smp;
mod traps;
mod vm;

use case::Test;

/// Every suite, in run order.
pub static SUITES: &[&[Test]] = &[
    boot::TESTS,
    mm::TESTS,
    traps::TESTS,
    smp::TESTS,
    fault_arch::TESTS,
    msr::TESTS,
    rcu::TESTS,
    page_alloc::TESTS,
    vm::TESTS,
];

/// Tests run only when named: too slow for `test=all` (the long soak), or meaningful only
/// under the coherence plugin, which judges their counts on the host (the known answers).
pub static SLOW_SUITES: &[&[Test]] = &[vm::SLOW_TESTS, coherence::TESTS];
