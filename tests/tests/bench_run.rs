//! `kx bench --quick` end to end: the kernel boots (direct mode, 2 vCPUs) with `run=bench
//! quick=1`, runs every scenario at every requested CPU count with warm-up and measured
//! rounds, each seed scenario's runs show the faults, reclaims and locks the scenario is
//! about, the invariants held, and the runner writes a complete, well-formed results
//! directory.
#![forbid(unsafe_code)]

use qemu::RunnerExit;
use qemu::cli::BenchOptions;
use std::time::Duration;
use tests::results_dir::{Expect, check, check_seed_scenarios};

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
    let _ = std::fs::remove_dir_all(&out);
}
