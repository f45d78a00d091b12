//! The table of scenarios a platform can run, and the plan made from it for a request.
//!
//! A [`Registry`] holds providers ([`BenchScenario`]s) by catalog name; a name with no
//! provider is not built yet, and a request naming it gets it reported and skipped rather
//! than faked. [`Registry::plan`] turns a [`Request`] into what the engine will run, in
//! order: the `limit` floor first whenever a fault scenario is selected (their rows are
//! fractions of it), then the requested scenarios in the requested order, each with the
//! configs some provider supports and, per config, the union of the providers' variants
//! (the catalog's first, in its order, then any extra such as the host's `linux`), then,
//! when the request asks for it, the A/A control: the first comparison's baseline built a
//! second time and recorded as `A'`.

use super::request::Request;
use super::scenario::BenchScenario;
use crate::catalog::{self, Scenario};
use crate::record::{Plan, PlanScenario};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// Scenarios by catalog name.
#[derive(Default)]
pub struct Registry<'a> {
    entries: Vec<Box<dyn BenchScenario + 'a>>,
}

/// One variant of a planned config and the provider that runs it.
#[derive(Clone, Copy)]
pub struct PlannedVariant<'r> {
    /// Variant name (the provider builds this variant; for the A/A control, the baseline).
    pub name: &'static str,
    /// Who runs it.
    pub provider: &'r dyn BenchScenario,
    /// Whether this is the A/A control: a second instance of `name`, recorded as `name'`.
    pub control: bool,
}

impl PlannedVariant<'_> {
    /// The name in records: `name`, or `name'` for the control.
    #[must_use]
    pub fn record_name(&self) -> String {
        if self.control {
            crate::record::control_name(self.name)
        } else {
            self.name.into()
        }
    }
}

/// One config of a planned scenario.
pub struct PlannedConfig<'r> {
    /// Config name.
    pub name: String,
    /// Its variants, in interleaving order.
    pub variants: Vec<PlannedVariant<'r>>,
}

/// One planned scenario.
pub struct PlannedScenario<'r> {
    /// Its catalog entry.
    pub scenario: &'static Scenario,
    /// Its configs, in run order.
    pub configs: Vec<PlannedConfig<'r>>,
}

/// What the engine will run for a request.
pub struct Planned<'r> {
    /// Scenarios in run order.
    pub scenarios: Vec<PlannedScenario<'r>>,
    /// Requested scenarios without a provider (or without a provider for any requested
    /// config), reported and skipped.
    pub skipped: Vec<&'static str>,
    /// The `plan` record.
    pub record: Plan,
}

impl<'a> Registry<'a> {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Registry {
            entries: Vec::new(),
        }
    }

    /// Adds a provider.
    pub fn add(&mut self, s: impl BenchScenario + 'a) -> &mut Self {
        self.entries.push(Box::new(s));
        self
    }

    /// Adds a boxed provider.
    pub fn add_boxed(&mut self, s: Box<dyn BenchScenario + 'a>) -> &mut Self {
        self.entries.push(s);
        self
    }

    /// The providers of `name`, in the order they were added.
    pub fn providers<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s dyn BenchScenario> {
        self.entries
            .iter()
            .map(|b| &**b as &dyn BenchScenario)
            .filter(move |s| s.name() == name)
    }

    /// Every provider's catalog name, in the order they were added (a name twice where two
    /// providers serve it).
    #[must_use]
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name()).collect()
    }

    /// Whether some provider runs `name`.
    #[must_use]
    pub fn is_built(&self, name: &str) -> bool {
        self.providers(name).next().is_some()
    }

    /// The names of the built scenarios, in catalog order.
    #[must_use]
    pub fn built(&self) -> Vec<&'static str> {
        catalog::SCENARIOS
            .iter()
            .map(|s| s.name)
            .filter(|n| self.is_built(n))
            .collect()
    }

    /// The variants of `scenario` under `config`: the catalog's, then extras, each with the
    /// first provider that runs it.
    fn variants(
        &self,
        scenario: &'static Scenario,
        config: &str,
        control: bool,
    ) -> Vec<PlannedVariant<'_>> {
        let mut out: Vec<PlannedVariant<'_>> = Vec::new();
        let offered: Vec<(&'static str, &dyn BenchScenario)> = self
            .providers(scenario.name)
            .filter(|p| p.supports(config))
            .flat_map(|p| p.variants().into_iter().map(move |v| (v, p)))
            .collect();
        let known = scenario.variants.iter().map(|v| v.name);
        let extra = offered
            .iter()
            .map(|(v, _)| *v)
            .filter(|v| scenario.variant(v).is_none());
        for name in known.chain(extra) {
            if out.iter().any(|v| v.name == name) {
                continue;
            }
            if let Some((_, provider)) = offered.iter().find(|(v, _)| *v == name) {
                out.push(PlannedVariant {
                    name,
                    provider: *provider,
                    control: false,
                });
            }
        }
        // The A/A control: the first comparison's baseline once more, last in the plan's
        // order (the rounds follow a Williams square, so its position is balanced like any
        // other's).
        if control
            && let Some(def) = scenario.comparisons.first()
            && let Some(a) = out.iter().find(|v| v.name == def.a).copied()
        {
            out.push(PlannedVariant { control: true, ..a });
        }
        out
    }

    /// What `request` runs with this table (see the module doc for the order).
    #[must_use]
    pub fn plan(&self, request: &Request) -> Planned<'_> {
        let mut scenarios: Vec<PlannedScenario<'_>> = Vec::new();
        let mut skipped = Vec::new();
        let plan_one = |s: &'static Scenario, configs: &[String]| -> Option<PlannedScenario<'_>> {
            let configs: Vec<PlannedConfig<'_>> = configs
                .iter()
                .map(|c| PlannedConfig {
                    name: c.clone(),
                    variants: self.variants(s, c, request.control),
                })
                .filter(|c| !c.variants.is_empty())
                .collect();
            (!configs.is_empty()).then_some(PlannedScenario {
                scenario: s,
                configs,
            })
        };
        for (s, configs) in &request.scenarios {
            if s.name == catalog::LIMIT {
                continue;
            }
            match plan_one(s, configs) {
                Some(p) => scenarios.push(p),
                None => skipped.push(s.name),
            }
        }
        let limit_requested = request
            .scenarios
            .iter()
            .find(|(s, _)| s.name == catalog::LIMIT);
        let fault_selected = scenarios.iter().any(|p| {
            p.configs
                .iter()
                .flat_map(|c| &c.variants)
                .any(|v| v.provider.floor_relative())
        });
        if let Some(limit) = catalog::scenario(catalog::LIMIT)
            && (limit_requested.is_some() || fault_selected)
        {
            let configs: Vec<String> = match limit_requested {
                Some((_, c)) => c.clone(),
                None => limit.configs.iter().map(|c| String::from(*c)).collect(),
            };
            match plan_one(limit, &configs) {
                Some(p) => scenarios.insert(0, p),
                None if limit_requested.is_some() => skipped.push(limit.name),
                None => {}
            }
        }
        let record_scenarios = scenarios
            .iter()
            .map(|p| {
                let mut variants: Vec<String> = Vec::new();
                for v in p.configs.iter().flat_map(|c| &c.variants) {
                    let name = v.record_name();
                    if !variants.contains(&name) {
                        variants.push(name);
                    }
                }
                PlanScenario {
                    name: p.scenario.name.into(),
                    configs: p.configs.iter().map(|c| c.name.clone()).collect(),
                    variants,
                }
            })
            .collect();
        let (seconds, ops) = request.length.for_plan();
        let mut record = Plan::new(
            record_scenarios,
            request.cpus.clone(),
            request.rounds,
            request.warmup_rounds,
            seconds,
            ops,
        )
        .with_instances(request.instances)
        .with_lock_stat_all(request.lock_stat_all);
        // Exact, since a config may have fewer variants than the scenario's union.
        let per_point = record.runs_per_point();
        record.total_runs = scenarios
            .iter()
            .flat_map(|p| &p.configs)
            .map(|c| c.variants.len() as u32)
            .sum::<u32>()
            * request.cpus.len() as u32
            * per_point;
        record.skipped = skipped.iter().map(|s| String::from(*s)).collect();
        Planned {
            scenarios,
            skipped,
            record,
        }
    }
}
