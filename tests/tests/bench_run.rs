//! `kx bench --quick` end to end: the kernel boots (direct mode, 2 vCPUs) with `run=bench
//! quick=1`, runs every scenario it has built at every requested CPU count with warm-up and
//! measured rounds, and the runner writes a complete, well-formed results directory. The
//! scenarios checked are the ones the kernel's plan lists (it reports the others as not
//! built yet), so this test covers each seed scenario as it lands.

use qemu::RunnerExit;
use qemu::cli::BenchOptions;
use std::time::Duration;
use tests::results_dir::{Expect, check};

#[test]
fn quick_benchmark_writes_a_complete_results_directory() {
    let out = std::env::temp_dir().join(format!("kx-bench-quick-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let bench = BenchOptions {
        quick: true,
        ..BenchOptions::default()
    };
    let exit = tests::bench_direct(bench, &out, Duration::from_secs(120));
    assert_eq!(exit, RunnerExit::Success, "see {}", out.display());
    let r = check(
        &out,
        &Expect {
            platform: "qemu-tcg",
            cpus: vec![1, 2],
            rounds: abi::bench::QUICK_ROUNDS.into(),
        },
    );
    let plan = &r["plan"];
    let planned: Vec<&str> = plan["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(planned[0], "limit", "the floor runs first");
    // Every catalog scenario is either in the plan or reported as skipped, never both.
    let skipped: Vec<&str> = plan["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    for s in abi::catalog::SCENARIOS {
        assert!(
            planned.contains(&s.name) != skipped.contains(&s.name),
            "{}: planned {planned:?}, skipped {skipped:?}",
            s.name
        );
    }
    for name in &skipped {
        let said = format!("scenario {name} is not built into this benchmark yet: skipped");
        assert!(
            r["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == said.as_str()),
            "{}",
            r["notes"]
        );
    }
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
