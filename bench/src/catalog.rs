//! The benchmark's scenarios as data, in table order: each experiment's entry is a constant
//! of its own scenario module (`scenarios::seed001::CATALOG`, in `seed001/entry.rs`),
//! beside the code that runs it; [`SCENARIOS`] lists them in the order of the one
//! registration list (`registered!` in [`mod@crate::scenarios`]), with the `limit` floor last.
//!
//! Everything else about an experiment follows from its entry: the engine runs what it
//! names and labels its records with its strings; the premises it declares are the only
//! ones an instance may report; the summary, the tables, the verdicts and the plots put
//! its published figure beside ours; the coherence verdict reads its mechanism; and the
//! README's scenario table is generated from it ([`readme_table`], checked by the README
//! test). The entry's types are `abi`'s ([`abi::catalog`], re-exported here): they are the
//! contract a `KRESULT` line's names are read by.
//!
//! Each scenario reproduces one seed's experiment:
//!
//! * `seed001-faultfree`: Joanne Koong's `mem_cgroup_per_node` series (patch 1 pairs the
//!   read-mostly line with the cold group instead of the LRU heads; patch 2 updates stats
//!   through memcg + node, not the lruvec), each layout at both 128-byte offsets;
//! * `seed004-readtwice`: Alex Shi's per-memcg `lru_lock` (vm-scalability
//!   `case-lru-file-readtwice`);
//! * `seed002-reclaim`: Max Kellermann's cached FIFO tail in `lru_gen_memcg`;
//! * `seed000-refault`: Ridong Chen's grouping of `lru_gen_folio`'s atomic stats;
//! * `seed003-pft`: Suren Baghdasaryan's `vm_lock_seq` placement (mmtests pft);
//! * `page-counter-802f1d`: not a seed: Linux commit 802f1d522d5f (Feng Tang, v5.12) moved
//!   `struct page_counter`'s `parent` off the line of `usage` (will-it-scale page_fault2),
//!   added by following `docs/experiments.md`;
//! * `limit`: the hardware (or emulator) floor under every fault scenario.

pub use abi::catalog::*;

use abi::bench::ScenarioSelection;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Every scenario, in table order.
pub const SCENARIOS: &[Scenario] = crate::scenarios::CATALOG;

/// The scenario called `name`.
#[must_use]
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// The scenarios `selection` names, in its order (every one for `all`).
pub fn selected<'a>(
    selection: &ScenarioSelection<'a>,
) -> impl Iterator<Item = &'static Scenario> + 'a {
    selection.select(SCENARIOS)
}

/// Checks that every name `selection` gives is a scenario; the error says which is not
/// and lists the names there are.
pub fn check_selection(selection: &ScenarioSelection<'_>) -> Result<(), String> {
    match selection.unknown(SCENARIOS) {
        None => Ok(()),
        Some(name) => Err(format!(
            "no scenario `{name}` (there are: {})",
            SCENARIOS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The README's scenario table, one row per scenario in table order: its name, configs,
/// variants (with their descriptions), what one operation is, and the seed's figure.
#[must_use]
pub fn readme_table() -> String {
    let code = |s: &str| format!("`{s}`");
    let mut t = String::from(
        "| scenario | configs | variants | op | seed's figure |\n|---|---|---|---|---|\n",
    );
    for s in SCENARIOS {
        let configs: Vec<String> = s.configs.iter().map(|c| code(c)).collect();
        let variants: Vec<String> = s
            .variants
            .iter()
            .map(|v| format!("`{}` ({})", v.name, v.description))
            .collect();
        let figure = s.published.map_or(
            "the hardware/emulator floor; every fault scenario's row shows its rate as a \
             fraction of it",
            |p| p.text,
        );
        t += &format!(
            "| {} | {} | {} | {} | {} |\n",
            code(s.name),
            configs.join(", "),
            variants.join(", "),
            s.op,
            figure
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_cmdline_safe() {
        for (i, s) in SCENARIOS.iter().enumerate() {
            assert!(SCENARIOS[..i].iter().all(|o| o.name != s.name));
            assert!(
                s.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
            assert!(!s.configs.is_empty() && !s.variants.is_empty());
            for (j, v) in s.variants.iter().enumerate() {
                assert!(s.variants[..j].iter().all(|o| o.name != v.name));
                assert!(!v.name.contains([' ', ',', '"']), "{}", v.name);
            }
            for c in s.configs {
                assert!(!c.contains([' ', ',', '"']), "{c}");
            }
        }
        assert_eq!(SCENARIOS.last().map(|s| s.name), Some(LIMIT));
    }

    #[test]
    fn comparisons_and_points_name_real_variants_and_configs() {
        for s in SCENARIOS {
            for c in s.comparisons {
                assert!(
                    s.variant(c.a).is_some() && s.variant(c.b).is_some(),
                    "{c:?}"
                );
            }
            for p in s.published.iter().flat_map(|p| p.points) {
                assert!(
                    s.comparisons.iter().any(|c| c.a == p.a && c.b == p.b),
                    "{} {p:?}",
                    s.name
                );
                assert!(s.has_config(p.config), "{p:?}");
                assert!(p.ratio.is_finite() && p.ratio > 0.0);
            }
        }
    }

    /// An experiment is registered with what makes its ratio mean something: the premises
    /// its runs are judged by and the published figure it is checked against (with where
    /// that figure comes from, in its text). Only the `limit` floor has neither.
    #[test]
    fn every_experiment_has_premises_and_a_published_figure() {
        for s in SCENARIOS {
            if s.name == LIMIT {
                assert!(s.published.is_none() && s.premises.is_empty());
                continue;
            }
            assert!(
                !s.premises.is_empty(),
                "{}: registered without a premise",
                s.name
            );
            for (i, p) in s.premises.iter().enumerate() {
                assert!(
                    s.premises[..i].iter().all(|o| o != p),
                    "{}: {p} twice",
                    s.name
                );
                assert!(
                    !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{}: premise name {p:?}",
                    s.name
                );
            }
            let published = s
                .published
                .unwrap_or_else(|| panic!("{}: registered without a published figure", s.name));
            assert!(
                !published.points.is_empty() && !published.text.is_empty(),
                "{}: a published figure needs its text and at least one point",
                s.name
            );
            assert!(!s.comparisons.is_empty(), "{}: no comparison", s.name);
        }
    }

    #[test]
    fn published_ratios_match_the_seeds_text() {
        let s = scenario("seed001-faultfree").unwrap();
        let p = published_near(s, "base@+64", "patch1@+64", "shmem", 16).unwrap();
        assert_eq!(p.threads, 20);
        assert!((p.ratio - 1.18).abs() < 0.005, "{}", p.ratio);
        let p = published_near(s, "base@+0", "patch1@+0", "shmem", 64).unwrap();
        assert!((p.ratio - 1.09).abs() < 0.005, "{}", p.ratio);
        let pft = scenario("seed003-pft").unwrap();
        let p = published_near(pft, "A", "B", "anon", 12).unwrap();
        assert!((p.ratio - (1.0 - 0.0638)).abs() < 0.0001, "{}", p.ratio);
        let refault = scenario("seed000-refault").unwrap();
        let p = published_near(refault, "A@+0", "B@+0", "file", 2).unwrap();
        assert_eq!(p.threads, 1);
        assert!((p.ratio - 1.014).abs() < 0.001);
        let p = published_near(refault, "A@+64", "B@+64", "file", 22).unwrap();
        assert_eq!(p.threads, 24);
        assert!(published_near(refault, "A@+0", "B@+0", "anon", 2).is_none());
        assert!(published_near(scenario(LIMIT).unwrap(), "a", "b", "anon", 1).is_none());
        let pc = scenario("page-counter-802f1d").unwrap();
        let p = published_near(pc, "A", "B", "one-memcg", 2).unwrap();
        assert_eq!(p.threads, 48);
        assert!((p.ratio - 1.044).abs() < 0.001, "{}", p.ratio);
        let p = published_near(pc, "A", "B", "one-memcg", 144).unwrap();
        assert!((p.ratio - 1.099).abs() < 0.001, "{}", p.ratio);
        assert!(published_near(pc, "A", "B", "siblings", 2).is_none());
    }

    #[test]
    fn a_selection_names_only_scenarios_of_the_table() {
        assert_eq!(check_selection(&ScenarioSelection::All), Ok(()));
        let ok = ScenarioSelection::Named("limit,seed003-pft");
        assert_eq!(check_selection(&ok), Ok(()));
        let names: Vec<_> = selected(&ok).map(|s| s.name).collect();
        assert_eq!(names, ["limit", "seed003-pft"]);
        let err = check_selection(&ScenarioSelection::Named("limit,seed999")).unwrap_err();
        assert!(
            err.starts_with("no scenario `seed999` (there are: seed001-faultfree, "),
            "{err}"
        );
    }

    /// One row per scenario, in table order, each naming its configs, its variants and the
    /// seed's figure.
    #[test]
    fn the_readme_table_has_a_row_per_scenario() {
        let t = readme_table();
        let rows: Vec<&str> = t.lines().skip(2).collect();
        assert_eq!(rows.len(), SCENARIOS.len());
        for (row, s) in rows.iter().zip(SCENARIOS) {
            assert!(row.starts_with(&format!("| `{}` |", s.name)), "{row}");
            for v in s.variants {
                assert!(row.contains(&format!("`{}` ({})", v.name, v.description)));
            }
            for c in s.configs {
                assert!(row.contains(&format!("`{c}`")));
            }
            if let Some(p) = s.published {
                assert!(row.ends_with(&format!("| {} |", p.text)), "{row}");
            }
        }
    }
}
