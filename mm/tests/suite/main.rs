//! mm's host integration tests, one binary with a module per concept (`cargo test -p mm
//! --test suite`): the fault core's invariant checker, faults and soak. `vm_warn` runs in a
//! process of its own (`rusty_fork_test!`): it provokes the process-wide `WARN_ON_ONCE`
//! count, which must stay zero for every other test's invariant checks.
#[path = "../vm_common/mod.rs"]
mod vm_common;

mod vm_check;
mod vm_fault;
mod vm_soak;
mod vm_warn;
