//! `kx bench --quick` end to end: the kernel boots (direct mode, 2 vCPUs) with `run=bench
//! quick=1`, runs every scenario at every requested CPU count with warm-up and measured
//! rounds, each seed scenario's runs show the faults, reclaims and locks the scenario is
//! about, the invariants held, and the runner writes a complete, well-formed results
//! directory. Under TCG there is no PMU: every run record says `pmu: null` and the table
//! says so once. `kx bench --mode uefi` runs from the GRUB image under OVMF as well.
use qemu::RunnerExit;
use qemu::cli::{BenchOptions, KernelValue};
use std::time::Duration;
use tests::results_dir::{Expect, check, check_seed_scenarios};

/// What the kernel's table says, once, where the CPU has no PMU under TCG.
const NO_PMU: &str = "no PMU (TCG): no hardware counters";

/// The kernel's own records and table (serial) under TCG, whose CPU models have no PMU (the
/// runner's `-cpu max` among them): `pmu` is null in every run record, the wide table says
/// so once, and prints no counter rows.
#[test]
fn tcg_runs_say_pmu_null_and_the_table_says_so_once() {
    let out = tests::boot_direct(
        "run=bench quick=1 scenarios=seed003-pft bench_cpus=1,2",
        Duration::from_secs(240),
    );
    tests::assert_exit(&out, abi::ExitCode::Success);
    let mut runs = 0;
    for line in out.lines() {
        let Some(json) = line.trim_end().split_once("KRESULT ").map(|x| x.1) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        if v["type"] == "run" {
            runs += 1;
            assert!(v.get("pmu").is_some_and(|p| p.is_null()), "{line}");
        }
    }
    assert!(runs > 0, "{}", tests::describe(&out));
    let serial: Vec<&str> = out.lines().collect();
    let start = serial
        .iter()
        .position(|l| l.starts_with("Results: harmonic mean"))
        .expect("the wide table");
    let end = serial[start..]
        .iter()
        .position(|l| l.contains("KRESULT {\"type\":\"end\""))
        .expect("the end record after the table")
        + start;
    let table = serial[start..end].join("\n");
    assert_eq!(table.matches(NO_PMU).count(), 1, "{table}");
    assert!(
        table.contains("CPUID leaf 0xA reports no architectural PMU"),
        "{table}"
    );
    assert!(!table.contains("hw counters per op"), "{table}");
}

#[test]
fn quick_benchmark_writes_a_complete_results_directory() {
    let out = std::env::temp_dir().join(format!("kx-bench-quick-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let bench = BenchOptions {
        quick: true,
        ..BenchOptions::default()
    };
    let exit = tests::bench_direct(bench, &out, Duration::from_secs(300));
    assert_eq!(exit, RunnerExit::Success, "see {}", out.display());
    let r = check(
        &out,
        &Expect {
            platform: "qemu-tcg",
            cpus: vec![1, 2],
            rounds: abi::bench::QUICK_ROUNDS.into(),
            instances: abi::bench::QUICK_INSTANCES.into(),
        },
    );
    let planned: Vec<&str> = r["plan"]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(planned[0], "limit", "the floor runs first");
    check_seed_scenarios(&r, &[]);
    // The floor took one real page fault per operation, and cleared each with invlpg.
    for run in r["runs"].as_array().unwrap() {
        if run["scenario"] == "limit" {
            assert_eq!(run["counters"]["page_faults_resolved"], run["ops"], "{run}");
            assert_eq!(run["counters"]["invlpg"], run["ops"], "{run}");
            assert_eq!(run["counters"]["page_fault_fixups"], 0, "{run}");
        }
    }
    // The vCPUs were pinned through QMP, one per host CPU, and the record says where.
    let placement = &r["host"]["placement"];
    assert_eq!(placement["mode"], "qemu", "{placement}");
    assert_eq!(placement["error"], serde_json::Value::Null, "{placement}");
    let threads = placement["threads"].as_array().unwrap();
    assert_eq!(threads.len(), tests::SMP as usize, "{placement}");
    let mut cpus: Vec<u64> = threads
        .iter()
        .map(|t| {
            assert!(t["tid"].as_i64().is_some_and(|tid| tid > 0), "{t}");
            t["host_cpu"].as_u64().unwrap()
        })
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    assert_eq!(
        cpus.len(),
        threads.len(),
        "one host CPU per vCPU: {placement}"
    );
    assert!(placement["topology"]["cores"].as_u64().unwrap() >= 1);
    assert!(placement["other_threads"]["tids"].as_array().is_some());
    // Others' load: measured before, and for every run record.
    let load = &r["host"]["host_load"];
    assert!(load["before"]["cores"].as_f64().is_some(), "{load}");
    assert_eq!(
        load["runs"].as_array().unwrap().len(),
        r["runs"].as_array().unwrap().len(),
        "{load}"
    );
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("host load during the runs:")),
        "{}",
        r["notes"]
    );
    assert!(r["machine"]["tsc_hz"].as_u64().unwrap() > 0);
    assert_eq!(r["machine"]["hypervisor"], "TCGTCGTCGTCG");
    // TCG emulates no PMU: the runner kept every run's `pmu` key, null, and the note.
    for run in r["runs"].as_array().unwrap() {
        assert!(run.get("pmu").is_some_and(|p| p.is_null()), "{run}");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches(NO_PMU).count(), 1, "the table says it once");
    let _ = std::fs::remove_dir_all(&out);
}

/// `kx bench --mode uefi`: the bench boots from the GRUB image under OVMF (a private copy of
/// its variable store), runs, and the runner writes the results directory from that boot,
/// whose record says it came through multiboot2 under UEFI firmware.
#[test]
fn the_bench_runs_under_uefi() {
    let out = std::env::temp_dir().join(format!("kx-bench-uefi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let bench = BenchOptions {
        quick: true,
        scenarios: Some(KernelValue::new("scenarios", "seed003-pft").unwrap()),
        cpus: Some(KernelValue::new("bench_cpus", "2").unwrap()),
        ..BenchOptions::default()
    };
    let exit = tests::bench_in(qemu::Mode::Uefi, bench, &out, Duration::from_secs(400));
    assert_eq!(exit, RunnerExit::Success, "see {}", out.display());
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["machine"]["boot_protocol"], "multiboot2-uefi");
    let scenarios: std::collections::BTreeSet<&str> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(
        scenarios.into_iter().collect::<Vec<_>>(),
        ["limit", "seed003-pft"]
    );
    assert!(
        r["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["scenario"] == "seed003-pft"),
        "no seed003 comparison: see {}",
        out.display()
    );
    let _ = std::fs::remove_dir_all(&out);
}
