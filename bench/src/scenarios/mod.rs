//! The scenarios, platform neutral, and THE table the engine runs them from.
//!
//! Each experiment is a module declared here, and one list, `registered!`, names every
//! one: a line each, its module and its provider type (`seed001::Seed001`). From it, this
//! module lists their catalog entries in [`CATALOG`] (`crate::catalog::SCENARIOS`), and
//! [`providers`] adds the providers to every platform's registry, so a scenario added
//! there runs in the kernel (`kx bench`) and under `kx bench --host` alike; the summary,
//! the tables, the verdicts and the README's scenario table follow from its entry.
//!
//! A scenario is one module: `seed001/mod.rs` (the workload, its instance, its tests) and
//! `seed001/entry.rs` (its catalog entry: names, variants, comparisons, premises,
//! mechanism, published figure), the entry in a file of its own because it uses only
//! `abi`'s types: the engine reads the catalog, and the scenarios plug into the engine, so
//! the catalog must not depend on the scenarios' code. The `registration` tests tie the
//! list to the catalog: every catalog experiment has exactly one provider, with premises
//! and a published figure. `docs/experiments.md` walks through adding one.
//!
//! Each platform hands in what only it can provide: its `limit` floor (the kernel's takes a
//! real #PF on a not-present page, with invlpg; the host's is [`soft_floor`], a function
//! call, since host threads cannot take their own page faults) and its fault core
//! ([`crate::vm::VmHost`]). A platform may add providers of its own after this table (the
//! host adds the Linux reference's `linux` variants of seed001 and seed003).
//!
//! The seeds' five scenarios (`seed001-faultfree`, `seed004-readtwice`, `seed002-reclaim`,
//! `seed000-refault`, `seed003-pft`) run on the fault core through the platform's
//! `VmHost`: the kernel's real page faults, or the host's software MMU. Their instances
//! are [`fault_core::FaultCoreInstance`]s: what they share (the counters' order, the
//! checker first, the one teardown) is written once there.
//! `page-counter-802f1d` (Linux commit 802f1d522d5f, built by following the guide) runs
//! hierarchical charges in both `page_counter` layouts.

// The experiments, one module each (declared plainly, so that cargo fmt and cargo-mutants,
// which follow `mod` items, reach them).
pub mod page_counter;
pub mod seed000;
pub mod seed001;
pub mod seed002;
pub mod seed003;
pub mod seed004;

/// THE registration: one line per experiment, `module::Provider`, in table order (see the
/// module doc and docs/experiments.md). Hands the list to the macro `$then`: here
/// `catalog` lists the experiments' entries; [`providers`] adds their providers. A module
/// above with a catalog entry but no line here fails `every_experiment_module_is_registered`.
macro_rules! registered {
    ($then:ident) => {
        $then! {
            seed001::Seed001,
            seed004::Seed004,
            seed002::Seed002,
            seed000::Seed000,
            seed003::Seed003,
            page_counter::PageCounterRelayout,
        }
    };
}

/// [`CATALOG`]: the registered experiments' entries in registration order, then the
/// `limit` floor's.
macro_rules! catalog {
    ($($module:ident :: $provider:ident),+ $(,)?) => {
        /// Every scenario's catalog entry, in table order ([`crate::catalog::SCENARIOS`]).
        pub const CATALOG: &[Scenario] = &[$($module::CATALOG,)+ limit::CATALOG];
    };
}

registered!(catalog);

pub mod fault_core;
pub mod limit;
// After `registered!`, which it uses (a `macro_rules!` is in scope below its definition).
pub mod providers;
pub mod soft_floor;
#[cfg(test)]
pub(crate) mod tests;

pub use providers::{floor_only, registry};

// `abi`'s type, not `crate::catalog`'s re-export: the catalog lists these entries.
use abi::catalog::Scenario;

#[cfg(test)]
mod registration {
    use super::*;
    use crate::catalog;
    use crate::engine::Storage;

    /// Every experiment module (a folder here with an `entry.rs`) is declared and registered:
    /// its entry's name is in the catalog, so a module whose `registered!` line was
    /// forgotten fails here rather than never running.
    #[test]
    fn every_experiment_module_is_registered() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/scenarios");
        let mut found = 0;
        for e in std::fs::read_dir(dir).expect("the scenarios folder") {
            let path = e.expect("an entry").path();
            let entry = path.join("entry.rs");
            if !entry.is_file() {
                continue;
            }
            found += 1;
            let text = std::fs::read_to_string(&entry).expect("entry.rs");
            let name = text
                .split("name: \"")
                .nth(1)
                .and_then(|t| t.split('"').next())
                .unwrap_or_else(|| panic!("{}: no `name: \"...\"`", entry.display()));
            assert!(
                catalog::scenario(name).is_some(),
                "{}: `{name}` is not registered (add its line to `registered!`)",
                path.display()
            );
        }
        assert_eq!(
            found,
            catalog::SCENARIOS.len() - 1,
            "every experiment but `limit`"
        );
    }

    /// The registration and the catalog agree: every catalog experiment has exactly one
    /// line in `registered!` (so the kernel and `--host` run it), every line names a
    /// catalog entry, and that entry declares its premises and its published figure (the
    /// catalog's own test checks what they hold).
    #[test]
    fn every_catalog_experiment_is_registered_once_with_premises_and_a_figure() {
        let host = tests::soft(1, 64);
        let r = registry(Box::new(soft_floor::SoftFloor), host);
        let names = r.names();
        for s in catalog::SCENARIOS {
            let n = names.iter().filter(|n| **n == s.name).count();
            assert_eq!(n, 1, "{}: registered {n} times", s.name);
        }
        for name in names {
            let s = catalog::scenario(name)
                .unwrap_or_else(|| panic!("{name}: registered without a catalog entry"));
            if name == catalog::LIMIT {
                continue;
            }
            assert!(
                !s.premises.is_empty(),
                "{name}: registered without a premise"
            );
            assert!(
                s.published.is_some_and(|p| !p.points.is_empty()),
                "{name}: registered without a published figure"
            );
        }
    }

    /// A scenario's rates are fractions of the `limit` floor exactly when the catalog marks
    /// it a fault path (seed002's requests and 802f1d's charges are not faults): no
    /// registered scenario overrides the catalog.
    #[test]
    fn rates_are_floor_fractions_exactly_for_the_catalogs_fault_paths() {
        let host = tests::soft(1, 64);
        let r = registry(Box::new(soft_floor::SoftFloor), host);
        for s in catalog::SCENARIOS
            .iter()
            .filter(|s| s.name != catalog::LIMIT)
        {
            for p in r.providers(s.name) {
                assert_eq!(p.floor_relative(), s.fault_path, "{}", s.name);
            }
        }
        let seed002 = catalog::scenario("seed002-reclaim").unwrap();
        assert!(!seed002.fault_path);
    }

    /// Every field a catalog mechanism names is a field of an object that the scenario's
    /// A and B instances name (`objects()`), so the coherence verdict can find its units;
    /// and each named object lies within the instance's reach (a non-null address, a size).
    #[test]
    fn every_mechanism_field_is_named_by_the_instances_objects() {
        let host = tests::soft(2, 64);
        let r = registry(Box::new(soft_floor::SoftFloor), host);
        for s in catalog::SCENARIOS {
            let Some(m) = s.mechanism else {
                continue;
            };
            let config = s.configs[0];
            let d = s.comparisons[0];
            for variant in [d.a, d.b] {
                let provider = r
                    .providers(s.name)
                    .next()
                    .unwrap_or_else(|| panic!("{}: not registered", s.name));
                let storage = Storage::new();
                let inst = provider
                    .instantiate(&crate::engine::Setup {
                        config,
                        variant,
                        cpus: 2,
                        storage: &storage,
                    })
                    .unwrap_or_else(|e| panic!("{} {variant}: {e}", s.name));
                let objects = inst.objects();
                for o in &objects {
                    assert!(o.addr != 0 && o.size > 0, "{}: {}", s.name, o.label);
                }
                for f in m.fields {
                    assert!(
                        objects
                            .iter()
                            .any(|o| o.fields.iter().any(|x| x.name == *f)),
                        "{} {variant}: no object names the mechanism's field `{f}`",
                        s.name
                    );
                }
                inst.teardown().unwrap();
            }
        }
    }
}
