//! What the five seed scenarios' instances share: a [`Ctx`] on the platform's fault core,
//! and the three things every one of them did with it in the same words.
//!
//! An instance of `seed000`..`seed004` holds one [`Ctx`] (a context, its memcgs, objects
//! and address spaces) plus state of its own (cursors, readers, counts). What the engine
//! asks of it splits in two:
//!
//! - what each scenario decides: its batch, the untimed work between batches (pft's
//!   unmap), its premises, its note, the counters it adds and the invariant it adds to the
//!   checker's. These are the methods of [`FaultCoreInstance`] a scenario writes, with
//!   the two that lend the shared part its context (as a [`VmCtx`], so the trait is the
//!   same whatever the platform and the variant's layouts);
//! - what is the same for all five, written once in the blanket [`Instance`] impl below:
//!   the run's counters are the fault core's event counts ([`Ctx::counters`]) followed by
//!   the scenario's own, in that order (the records' counter order); the check runs the
//!   fault core's invariant checker first ([`Ctx::check`]) and hands its census to the
//!   scenario's own check; teardown is [`Ctx::shutdown`] (the one safe release order).
//!
//! The variants of `seed000` and `seed001` name where the `mem_cgroup_per_node` starts in
//! its 128-byte pair with the same suffix (`A@+0`, `patch1@+64`): [`split_placement`]
//! reads it for both.

use crate::engine::ObjectDesc;
use crate::engine::premise::Premises;
use crate::engine::{BatchCtx, Instance, ScenarioError};
use crate::record::Run;
use crate::vm::{Ctx, Pn, VmHost};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use memcg::PnPlacement;
use mm::check::VmCensus;
use mm::vma::VmArea;

/// What the shared part needs of an instance's [`Ctx`], whatever its platform and layouts.
pub trait VmCtx {
    /// [`Ctx::counters`].
    fn counters(&self) -> Vec<(String, i64)>;
    /// [`Ctx::check`].
    fn check(&self) -> Result<VmCensus, String>;
    /// [`Ctx::shutdown`].
    fn shutdown(&mut self) -> Result<(), String>;
    /// [`Ctx::objects`].
    fn objects(&self) -> Vec<ObjectDesc>;
}

impl<H: VmHost, P: Pn, V: VmArea + 'static> VmCtx for Ctx<'_, H, P, V> {
    fn counters(&self) -> Vec<(String, i64)> {
        Ctx::counters(self)
    }
    fn check(&self) -> Result<VmCensus, String> {
        Ctx::check(self)
    }
    fn shutdown(&mut self) -> Result<(), String> {
        Ctx::shutdown(self)
    }
    fn objects(&self) -> Vec<ObjectDesc> {
        Ctx::objects(self)
    }
}

/// An instance of a scenario on the fault core: what it decides itself. Every type that
/// implements it is an [`Instance`] whose counters, check and teardown go through its
/// [`Ctx`] (see the module doc).
pub trait FaultCoreInstance: Sync {
    /// The instance's context.
    fn ctx(&self) -> &dyn VmCtx;

    /// The instance's context, to shut it down.
    fn ctx_mut(&mut self) -> &mut dyn VmCtx;

    /// [`Instance::run_batch`].
    fn batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError>;

    /// [`Instance::untimed_due`]. Default: never.
    fn untimed_due_now(&self, ctx: &BatchCtx) -> bool {
        let _ = ctx;
        false
    }

    /// [`Instance::untimed`]. Default: nothing.
    fn untimed_work(&self, ctx: &BatchCtx) -> Result<(), ScenarioError> {
        let _ = ctx;
        Ok(())
    }

    /// The counters the scenario adds after the fault core's. Default: none.
    fn own_counters(&self) -> Vec<(String, i64)> {
        Vec::new()
    }

    /// The scenario's invariant, after the fault core's checker passed with `census`.
    /// Default: none beyond the checker's.
    fn check_census(&self, census: &VmCensus) -> Result<(), String> {
        let _ = census;
        Ok(())
    }

    /// [`Instance::premises`].
    fn premise_checks(&self, runs: &[&Run]) -> Premises;

    /// [`Instance::lock_classes`]: the classes [`Self::premise_checks`] reads. Default:
    /// none.
    fn premise_classes(&self) -> Vec<&'static ksync::ClassData> {
        Vec::new()
    }

    /// [`Instance::note`]. Default: none.
    fn setup_note(&self) -> Option<String> {
        None
    }

    /// Objects beyond the context's memcgs and nodes that the scenario's operations share
    /// (a VMA). Default: none.
    fn own_objects(&self) -> Vec<ObjectDesc> {
        Vec::new()
    }
}

impl<T: FaultCoreInstance> Instance for T {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        self.batch(ctx)
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let mut c = self.ctx().counters();
        c.extend(self.own_counters());
        c
    }

    fn check(&self) -> Result<(), String> {
        let census = self.ctx().check()?;
        self.check_census(&census)
    }

    fn untimed_due(&self, ctx: &BatchCtx) -> bool {
        self.untimed_due_now(ctx)
    }

    fn untimed(&self, ctx: &BatchCtx) -> Result<(), ScenarioError> {
        self.untimed_work(ctx)
    }

    fn premises(&self, runs: &[&Run]) -> Premises {
        self.premise_checks(runs)
    }

    fn lock_classes(&self) -> Vec<&'static ksync::ClassData> {
        self.premise_classes()
    }

    fn note(&self) -> Option<String> {
        self.setup_note()
    }

    fn objects(&self) -> Vec<ObjectDesc> {
        let mut v = self.ctx().objects();
        v.extend(self.own_objects());
        v
    }

    fn teardown(mut self: Box<Self>) -> Result<(), ScenarioError> {
        self.ctx_mut().shutdown().map_err(ScenarioError::from)
    }
}

/// Splits a variant `LAYOUT@+0` or `LAYOUT@+64` into the layout's name and where the
/// per-node info starts in its 128-byte pair; `None` for any other suffix.
#[must_use]
pub fn split_placement(variant: &str) -> Option<(&str, PnPlacement)> {
    let (layout, at) = variant.split_once('@')?;
    let placement = match at {
        "+0" => PnPlacement::PairStart,
        "+64" => PnPlacement::PairMiddle,
        _ => return None,
    };
    Some((layout, placement))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_suffixes_are_plus_0_and_plus_64_only() {
        assert_eq!(
            split_placement("patch1+2@+0"),
            Some(("patch1+2", PnPlacement::PairStart))
        );
        assert_eq!(
            split_placement("A@+64"),
            Some(("A", PnPlacement::PairMiddle))
        );
        for bad in ["A", "A@", "A@+32", "A@64", "@+0x"] {
            assert_eq!(split_placement(bad), None, "{bad}");
        }
    }
}
