//! Checks a benchmark results directory the way a reader would rely on it: `results.json`
//! complete and consistent, every run the plan promised present (every scenario it lists,
//! every variant of it at every CPU count, every instance's warm-up and measured rounds),
//! the catalog's comparisons and the A/A control at every point where both variants ran
//! (two-level over the instances, with their p-values and marks; Holm's p on the primaries
//! only), `results.csv` with one row per run,
//! one SVG per scenario (XML, one series per config and variant, each in the legend) and
//! `index.html` (XML, every plot inlined). Shared by the kernel's `kx bench` test and the
//! runner's `kx bench --host` test (which includes this file).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What the run was asked for.
pub struct Expect {
    /// `machine.platform`.
    pub platform: &'static str,
    /// CPU counts.
    pub cpus: Vec<u64>,
    /// Measured rounds.
    pub rounds: u64,
    /// Instances of each variant per point.
    pub instances: u64,
}

fn xml(text: &str) -> roxmltree::Document<'_> {
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(text, opt).unwrap_or_else(|e| panic!("not XML: {e}"))
}

/// A series: scenario, config, variant.
type SeriesKey = (String, String, String);
/// Where a run sits: CPUs, round, instance.
type RunAt = (u64, u64, u64);

fn str_of(v: &serde_json::Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_owned()
}

/// Checks `dir` (see the module doc) and returns `results.json`.
pub fn check(dir: &Path, expect: &Expect) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let r: serde_json::Value = serde_json::from_str(&text).expect("results.json is JSON");
    assert_eq!(r["complete"], true, "problems: {}", r["problems"]);
    assert!(
        r["problems"].as_array().unwrap().is_empty(),
        "{}",
        r["problems"]
    );
    assert_eq!(r["end"]["invariants_ok"], true);
    assert_eq!(r["machine"]["platform"], expect.platform);
    let plan = &r["plan"];
    let cpus: Vec<u64> = plan["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(cpus, expect.cpus);
    assert_eq!(plan["rounds"], expect.rounds);
    assert_eq!(plan["instances"], expect.instances);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len() as u64, plan["total_runs"].as_u64().unwrap());

    // (scenario, config, variant) -> (cpus, round, instance) of its runs.
    let mut seen: BTreeMap<SeriesKey, Vec<RunAt>> = BTreeMap::new();
    for run in runs {
        for key in ["ops", "ns", "ops_per_s", "per_cpu", "locks", "counters"] {
            assert!(run.get(key).is_some(), "run without {key}: {run}");
        }
        assert!(run["ops"].as_u64().unwrap() > 0);
        seen.entry((
            str_of(&run["scenario"]),
            str_of(&run["config"]),
            str_of(&run["variant"]),
        ))
        .or_default()
        .push((
            run["cpus"].as_u64().unwrap(),
            run["round"].as_u64().unwrap(),
            run["instance"].as_u64().unwrap(),
        ));
    }
    // Per CPU count: each instance's warm-up (round 0) and its share of the rounds.
    let per = expect.rounds / expect.instances;
    let all_rounds: BTreeSet<RunAt> = expect
        .cpus
        .iter()
        .flat_map(|&c| {
            (0..expect.instances).flat_map(move |j| {
                std::iter::once((c, 0, j)).chain((1..=per).map(move |k| (c, j * per + k, j)))
            })
        })
        .collect();
    for scenario in plan["scenarios"].as_array().unwrap() {
        let name = str_of(&scenario["name"]);
        let configs: Vec<String> = scenario["configs"]
            .as_array()
            .unwrap()
            .iter()
            .map(str_of)
            .collect();
        let variants: Vec<String> = scenario["variants"]
            .as_array()
            .unwrap()
            .iter()
            .map(str_of)
            .collect();
        assert!(!configs.is_empty() && !variants.is_empty(), "{scenario}");
        for v in &variants {
            assert!(
                configs
                    .iter()
                    .any(|c| seen.contains_key(&(name.clone(), c.clone(), v.clone()))),
                "{name}: variant {v} never ran"
            );
        }
        for c in &configs {
            let ran: Vec<&String> = variants
                .iter()
                .filter(|v| seen.contains_key(&(name.clone(), c.clone(), (*v).clone())))
                .collect();
            assert!(!ran.is_empty(), "{name} {c}: no variant ran");
            for v in ran {
                let mut points = seen[&(name.clone(), c.clone(), v.clone())].clone();
                points.sort_unstable();
                let set: BTreeSet<RunAt> = points.iter().copied().collect();
                assert_eq!(set.len(), points.len(), "{name} {c} {v}: a run twice");
                assert_eq!(
                    set, all_rounds,
                    "{name} {c} {v}: runs at (cpus, round, instance)"
                );
            }
            // The catalog's comparisons wherever both sides ran, and the A/A control of the
            // first one's baseline (A'/A); every one two-level over the instances, Holm's p
            // on the primaries only.
            if let Some(cat) = bench::catalog::scenario(&name) {
                let mut defs: Vec<(String, String)> = cat
                    .comparisons
                    .iter()
                    .map(|d| (d.a.to_owned(), d.b.to_owned()))
                    .collect();
                if let Some(d) = cat.comparisons.first() {
                    let control = format!("{}'", d.a);
                    assert!(
                        variants.contains(&control),
                        "{name}: no A/A control {control}"
                    );
                    defs.push((d.a.to_owned(), control));
                }
                for (a, b) in &defs {
                    let has = |v: &str| seen.contains_key(&(name.clone(), c.clone(), v.to_owned()));
                    if !(has(a) && has(b)) {
                        continue;
                    }
                    for &cpus in &expect.cpus {
                        let is_it = |x: &&serde_json::Value| {
                            x["scenario"] == name.as_str()
                                && x["config"] == c.as_str()
                                && x["cpus"] == cpus
                                && x["a"] == a.as_str()
                                && x["b"] == b.as_str()
                        };
                        let found = r["comparisons"].as_array().unwrap().iter().find(is_it);
                        let Some(x) = found else {
                            // A point with a run excluded for host load is compared again
                            // by the runner, without that run: it must be there, and an
                            // excluded run of the point must say why.
                            let again = r["recomputed_comparisons"].as_array().unwrap();
                            assert!(
                                again.iter().any(|x| is_it(&x)),
                                "{name} {c} cpus={cpus}: no comparison {b}/{a}"
                            );
                            let excluded = runs.iter().any(|x| {
                                x["scenario"] == name.as_str()
                                    && x["config"] == c.as_str()
                                    && x["cpus"] == cpus
                                    && x["excluded"].is_string()
                            });
                            assert!(
                                excluded,
                                "{name} {c} cpus={cpus}: {b}/{a} recomputed with no run excluded"
                            );
                            continue;
                        };
                        assert_eq!(x["paired"], true, "{x}");
                        if expect.instances > 1 {
                            assert_eq!(x["method"], "two-level-instance-log-ratio-95", "{x}");
                            assert_eq!(x["instances"], expect.instances, "{x}");
                        }
                        let control = b.ends_with('\'');
                        assert_eq!(x["control"], control, "{x}");
                        let primary = x["primary"].as_bool().unwrap_or(false);
                        assert!(!(primary && control), "{x}");
                        assert_eq!(x["p_adjusted"].is_number(), primary, "{x}");
                        assert!(x["marked"].is_boolean(), "{x}");
                    }
                }
            }
        }
    }

    let mut csv = csv::Reader::from_path(dir.join("results.csv")).expect("results.csv");
    let header = csv.headers().expect("a CSV header").len();
    let mut rows = 0;
    for row in csv.records() {
        assert_eq!(row.expect("a CSV row").len(), header);
        rows += 1;
    }
    assert_eq!(rows, runs.len());

    let names: BTreeSet<String> = seen.keys().map(|k| k.0.clone()).collect();
    for name in &names {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg")))
            .unwrap_or_else(|e| panic!("{name}.svg: {e}"));
        let doc = xml(&svg);
        let colors: BTreeSet<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .filter_map(|n| n.attribute("stroke"))
            .filter(|c| *c != "#000000" && !c.eq_ignore_ascii_case("black"))
            .collect();
        let series: Vec<&(String, String, String)> = seen.keys().filter(|k| &k.0 == name).collect();
        assert_eq!(colors.len(), series.len(), "{name}: one colour per series");
        let texts: Vec<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(|t| t.trim().to_owned())
            .collect();
        for (_, _, v) in series {
            assert!(
                texts
                    .iter()
                    .any(|t| t == v || t.ends_with(&format!(" {v}"))),
                "{name}: no legend entry for {v}: {texts:?}"
            );
        }
    }
    // A forest plot per scenario with comparisons, beside its ops/s plot.
    let forests = names
        .iter()
        .filter(|n| bench::catalog::scenario(n).is_some_and(|s| !s.comparisons.is_empty()))
        .count();
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    let doc = xml(&html);
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("svg")).count(),
        names.len() + forests
    );
    for link in doc
        .descendants()
        .filter(|n| n.has_tag_name("a"))
        .filter_map(|n| n.attribute("href"))
    {
        assert!(
            dir.join(link).is_file(),
            "index.html links to {link}, which is missing"
        );
    }
    // It opens with one verdict per seed scenario that ran.
    let verdicts = doc
        .descendants()
        .find(|n| n.has_tag_name("table") && n.attribute("class") == Some("verdicts"))
        .expect("a verdict table");
    let seeds = names
        .iter()
        .filter(|n| bench::catalog::scenario(n).is_some_and(|s| s.published.is_some()))
        .count();
    assert_eq!(
        verdicts.children().filter(|n| n.has_tag_name("tr")).count(),
        seeds + 1
    );
    r
}

/// The acquisitions of lock class `class` in `run` (0 when it is not listed).
fn acquisitions(run: &serde_json::Value, class: &str) -> u64 {
    run["locks"][class]["acquisitions"].as_u64().unwrap_or(0)
}

/// Checks that every catalog scenario ran (none skipped) and that each seed scenario's runs
/// did what the scenario says, as the fault core's counters and the lock statistics show:
/// the faults and frees behind seed001 and seed003, the EAGAIN requests and FIFO rotations of
/// seed002, the refaults of seed000, for seed004 which lru_lock each variant took (A:
/// the node's shared one, B: each memcg's own), and the page_counter walks of
/// page-counter-802f1d (every walk writes the shared parent's `usage` once); with
/// `lock_stat=all`, the page-table lock of seed003 and the FIFO lock of seed002 too (no
/// premise reads them, so they record only then). What every run must show is checked per run;
/// what needs the memcg to fill first (evictions, refaults) over each variant's runs
/// together, since a short run under TCG may end before. `skip` names the variants that are
/// not the fault core's (the host's `linux` reference).
pub fn check_seed_scenarios(r: &serde_json::Value, skip: &[&str]) {
    let planned: BTreeSet<&str> = r["plan"]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for s in bench::catalog::SCENARIOS {
        assert!(
            planned.contains(s.name),
            "{} not planned: {planned:?}",
            s.name
        );
    }
    assert!(
        r["plan"]["skipped"].as_array().unwrap().is_empty(),
        "{}",
        r["plan"]["skipped"]
    );
    // Locks no premise reads record only with `lock_stat=all`; without it a run lists
    // exactly its premises' classes (seed002 has none).
    let all_locks = r["plan"]["lock_stat_all"]
        .as_bool()
        .expect("plan.lock_stat_all");
    // (scenario, variant) -> counter totals over its runs.
    let mut totals: BTreeMap<(String, String), BTreeMap<String, i64>> = BTreeMap::new();
    for run in r["runs"].as_array().unwrap() {
        let variant = run["variant"].as_str().unwrap();
        if skip.contains(&variant) {
            continue;
        }
        let t = totals
            .entry((str_of(&run["scenario"]), variant.to_owned()))
            .or_default();
        for (k, v) in run["counters"].as_object().unwrap() {
            *t.entry(k.clone()).or_default() += v.as_i64().unwrap_or(0);
        }
        let ops = run["ops"].as_i64().unwrap();
        let c = |k: &str| run["counters"][k].as_i64().unwrap_or(0);
        match run["scenario"].as_str().unwrap() {
            "seed001-faultfree" => {
                assert!(c("faults") + c("cache_misses") >= ops, "{run}");
                assert!(c("released") > 0, "{run}");
                assert!(acquisitions(run, "lruvec->lru_lock") > 0, "{run}");
                assert_eq!(acquisitions(run, "pgdat->lru_lock"), 0, "{run}");
                let listed: Vec<&String> = run["locks"].as_object().unwrap().keys().collect();
                assert!(
                    all_locks || listed == ["lruvec->lru_lock"],
                    "only the premise's lock records: {run}"
                );
            }
            "seed003-pft" => {
                assert_eq!(c("faults"), ops, "{run}");
                assert!(!all_locks || acquisitions(run, "ptl") > 0, "{run}");
            }
            "seed002-reclaim" => {
                assert_eq!(c("reclaim_eagain"), ops, "{run}");
                assert!(
                    !all_locks || acquisitions(run, "memcg_lru.lock") > 0,
                    "{run}"
                );
                let listed = run["locks"].as_object().map_or(0, |l| l.len());
                assert!(all_locks || listed == 0, "no premise reads a lock: {run}");
            }
            "seed000-refault" => {
                assert_eq!(c("file_reads"), ops, "{run}");
                assert_eq!(c("verified"), ops, "{run}");
            }
            "seed004-readtwice" => {
                assert_eq!(c("file_reads"), ops, "{run}");
                let (node, own) = (
                    acquisitions(run, "pgdat->lru_lock"),
                    acquisitions(run, "lruvec->lru_lock"),
                );
                // A' is the A/A control: a second instance of A.
                match variant.trim_end_matches('\'') {
                    "A" => assert!(node > 0 && own == 0, "{run}"),
                    "B" => assert!(own > 0 && node == 0, "{run}"),
                    v => panic!("seed004: unknown variant {v}"),
                }
            }
            "page-counter-802f1d" => {
                assert_eq!(c("pages"), ops, "{run}");
                // Two 32-page refills per 64-page batch, one uncharge walk per batch.
                assert!(c("charge_walks") > 0 && c("uncharge_walks") > 0, "{run}");
                assert_eq!(
                    c("parent_usage_writes"),
                    c("charge_walks") + c("uncharge_walks"),
                    "{run}"
                );
                assert!(c("parent_reads") > c("parent_usage_writes"), "{run}");
            }
            _ => {}
        }
    }
    for ((scenario, variant), t) in &totals {
        let total = |k: &str| t.get(k).copied().unwrap_or(0);
        match scenario.as_str() {
            "seed000-refault" => assert!(total("refaults") > 0, "{scenario} {variant}: {t:?}"),
            "seed004-readtwice" => assert!(total("evicted") > 0, "{scenario} {variant}: {t:?}"),
            _ => {}
        }
    }
}
