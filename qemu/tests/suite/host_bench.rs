//! `kx bench --host --quick` end to end, through the `kx` binary: the engine on pinned host
//! threads writes the same complete, well-formed results directory as a kernel run (checked
//! by the same code, `tests/src/results_dir.rs`), says it ran on host threads, and the Linux
//! reference ran as the `linux` variant of seed001 and seed003 (with or without a memcg,
//! which the notes say): its worker is the kx binary itself, so it always can.

use crate::common;

use crate::results_dir;

use common::{kx, temp_dir};
use results_dir::{Expect, check, check_seed_scenarios};

#[test]
fn host_quick_benchmark_writes_a_complete_results_directory() {
    let _cores = common::host_to_itself();
    let dir = temp_dir("host-quick");
    let out = dir.join("r");
    let (code, stdout, stderr) = kx(&[
        "bench",
        "--host",
        "--quick",
        "--quiet",
        // Every lock class, so that the results' checks see the locks no premise reads
        // (the kernel's quick run checks the default).
        "--lock-stat",
        "all",
        "--out",
        &out.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let cores = qemu::cli::host_cores();
    let r = check(
        &out,
        &Expect {
            platform: "host-threads",
            cpus: if cores >= 2 { vec![1, 2] } else { vec![1] },
            rounds: abi::bench::QUICK_ROUNDS.into(),
            instances: abi::bench::QUICK_INSTANCES.into(),
        },
    );
    assert_eq!(r["host"]["tool"], "kx bench --host");
    assert!(
        r["host"]["host_kernel"]
            .as_str()
            .is_some_and(|k| k.starts_with("Linux "))
    );
    assert_eq!(r["machine"]["vcpus"], cores);
    assert!(
        r["machine"]["cpu_model"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("function calls, not traps")),
        "{notes:?}"
    );
    let plan = &r["plan"]["scenarios"];
    let names: Vec<&str> = plan
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "limit");
    assert_eq!(r["plan"]["lock_stat_all"], true);
    check_seed_scenarios(&r, &["linux"]);
    let linux_ran = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|run| run["variant"] == "linux")
        .map(|run| run["scenario"].as_str().unwrap())
        .collect::<std::collections::BTreeSet<_>>();
    // The worker is this very kx binary: nothing can stop the reference from running.
    assert!(
        !notes
            .iter()
            .any(|n| n.starts_with("linux reference: not run: ")),
        "{notes:?}"
    );
    {
        assert_eq!(
            linux_ran.into_iter().collect::<Vec<_>>(),
            ["seed001-faultfree", "seed003-pft"],
            "the Linux reference did not run as seed001's and seed003's `linux` variant"
        );
        for s in ["seed001-faultfree", "seed003-pft"] {
            let note = notes
                .iter()
                .find(|n| n.starts_with(&format!("{s} anon linux: Linux's own fault path")))
                .unwrap_or_else(|| panic!("{s}: no note on the memcg: {notes:?}"));
            assert!(
                note.contains("in a fresh cgroup v2 memcg") || note.contains("WITHOUT a memcg"),
                "{note}"
            );
        }
        for run in r["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|run| run["variant"] == "linux")
        {
            assert!(run["floor_fraction"].is_null(), "{run}");
            let minflt = run["counters"]["linux_minor_faults"].as_i64().unwrap();
            assert!(minflt >= run["ops"].as_i64().unwrap(), "{run}");
        }
    }
    for run in r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|run| run["scenario"] == "limit")
    {
        assert_eq!(run["counters"]["soft_pte_installs"], run["ops"], "{run}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_mode_rejects_qemu_options_and_too_many_cpus() {
    let (code, _, stderr) = kx(&["bench", "--host", "--smp", "4"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("the argument '--host' cannot be used with '--smp <N>'"),
        "{stderr}"
    );
    let many = (qemu::cli::host_cores() + 1).to_string();
    let (code, _, stderr) = kx(&["bench", "--host", "--cpus", &many]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("host cores"), "{stderr}");
}
