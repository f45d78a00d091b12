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
//! `seed000-refault`, `seed003-pft`) are not in the table yet: they need the fault path of
//! the `mm` crate. Until they are, a request for them is reported as skipped.

pub mod soft_floor;

use crate::engine::{BenchScenario, Registry};
use alloc::boxed::Box;

/// Every scenario built into the benchmark, around the platform's `limit` floor.
#[must_use]
pub fn registry<'a>(floor: Box<dyn BenchScenario + 'a>) -> Registry<'a> {
    let mut r = Registry::new();
    r.add_boxed(floor);
    r
}
