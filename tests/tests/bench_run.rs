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
    assert!(r["machine"]["tsc_hz"].as_u64().unwrap() > 0);
    assert_eq!(r["machine"]["hypervisor"], "TCGTCGTCGTCG");
    let _ = std::fs::remove_dir_all(&out);
}
