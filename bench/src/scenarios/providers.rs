//! The registries a platform runs the scenarios from: its `limit` floor first, then one
//! provider per registered scenario (the `registered!` list of [`super`]) over the
//! platform's fault core, in registration order. Apart from the scenario modules (their
//! catalog entries depend only on `abi`'s types), so the catalog does not depend on the
//! engine the providers plug into.

use crate::engine::{BenchScenario, Registry};
use crate::vm::VmHost;
use alloc::boxed::Box;

/// Adds one provider per registered scenario over `host`, in registration order.
macro_rules! add_providers {
    ($($module:ident :: $provider:ident),+ $(,)?) => {
        fn add_registered<'a, H: VmHost>(r: &mut Registry<'a>, host: &'a H) {
            $(r.add(super::$module::$provider::new(host));)+
        }
    };
}

registered!(add_providers);

/// Every scenario built into the benchmark: the platform's `limit` floor and the registered
/// scenarios on its fault core, in catalog order.
#[must_use]
pub fn registry<'a, H: VmHost>(floor: Box<dyn BenchScenario + 'a>, host: &'a H) -> Registry<'a> {
    let mut r = Registry::new();
    r.add_boxed(floor);
    add_registered(&mut r, host);
    r
}

/// Only the `limit` floor (engine tests, and platforms without a fault core).
#[must_use]
pub fn floor_only<'a>(floor: Box<dyn BenchScenario + 'a>) -> Registry<'a> {
    let mut r = Registry::new();
    r.add_boxed(floor);
    r
}
