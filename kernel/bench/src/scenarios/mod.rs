//! The scenarios, platform neutral, and THE table the engine runs them from.
//!
//! [`registry`] is the one place a scenario is added: implement
//! [`crate::engine::BenchScenario`] (and its instance) in a module here, and add it to the
//! table below. Both platforms build their registry with it, so a scenario added here runs
//! in the kernel and under `kx bench --host` alike. Each platform hands in what only it can
//! provide: its `limit` floor (the kernel's takes a real #PF on a not-present page, with
//! invlpg; the host's is [`soft_floor`], a function call, since host threads cannot take
//! their own page faults) and, once the fault core lands, its memory and page-table side.
//! A platform may add providers of its own after this table (the host adds the Linux
//! reference's `linux` variants of seed001 and seed003).
//!
//! The seeds' five scenarios (`seed001-faultfree`, `seed004-readtwice`, `seed002-reclaim`,
//! `seed000-refault`, `seed003-pft`) run on the fault core through the platform's
//! [`VmHost`]: the kernel's real page faults, or the host's software MMU.

pub mod seed000;
pub mod seed001;
pub mod seed002;
pub mod seed003;
pub mod seed004;
pub mod soft_floor;
#[cfg(test)]
pub(crate) mod tests;

use crate::engine::{BenchScenario, Registry};
use crate::vm::VmHost;
use alloc::boxed::Box;

/// Every scenario built into the benchmark: the platform's `limit` floor and the seeds'
/// scenarios on its fault core, in catalog order.
#[must_use]
pub fn registry<'a, H: VmHost>(floor: Box<dyn BenchScenario + 'a>, host: &'a H) -> Registry<'a> {
    let mut r = Registry::new();
    r.add_boxed(floor);
    r.add(seed001::Seed001::new(host));
    r.add(seed004::Seed004::new(host));
    r.add(seed002::Seed002::new(host));
    r.add(seed000::Seed000::new(host));
    r.add(seed003::Seed003::new(host));
    r
}

/// Only the `limit` floor (engine tests, and platforms without a fault core).
#[must_use]
pub fn floor_only<'a>(floor: Box<dyn BenchScenario + 'a>) -> Registry<'a> {
    let mut r = Registry::new();
    r.add_boxed(floor);
    r
}
