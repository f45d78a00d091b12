//! Synthetic benchmark logs for the runner's tests, written with the kernel's own record
//! writer (`bench::record`) from records built here, exactly as the kernel-side engine
//! prints them: boot noise, `plan`, per run a `KRESULT` run record and a `KPROGRESS` line
//! (per instance block a warm-up first, then the variants interleaved round by round in the
//! rows of a Williams square; the A/A control `A'` is a variant like any other; each
//! instance of a variant gets a placement offset of its own), the comparisons of each
//! point, the table, `end`, `KEXIT`. The rates come from a fixed formula with a small
//! deterministic jitter: they test the pipeline, they are not measurements, and the
//! `machine` record says so.
#![allow(dead_code)]

use bench::{
    Comparison, CpuShare, End, KResult, LockStat, Machine, Plan, PlanScenario, Platform, Progress,
    Run, Style, Summary, Table,
};
use std::fmt::Write;

/// One point of the log: (scenario, config, [(variant, rate at 1 CPU)]).
pub type PointSpec = (&'static str, &'static str, Vec<(&'static str, f64)>);

/// What to generate.
#[derive(Clone, Debug)]
pub struct Spec {
    /// (scenario, config, [(variant, base rate at 1 CPU)]).
    pub points: Vec<PointSpec>,
    /// CPU counts.
    pub cpus: Vec<u32>,
    /// Measured rounds.
    pub rounds: u32,
    /// Instance blocks (`rounds` is a multiple).
    pub instances: u32,
    /// Every run's ops are multiplied by this (exactly, for multiples of 1/4).
    pub scale: f64,
    /// Line end.
    pub crlf: bool,
    /// Whether the invariant checks "failed" (for the exit-status tests).
    pub invariants_ok: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            points: vec![
                (
                    "seed004-readtwice",
                    "2-per-memcg",
                    vec![("A", 400_000.0), ("B", 520_000.0), ("A'", 400_000.0)],
                ),
                (
                    "seed003-pft",
                    "anon",
                    vec![("A", 900_000.0), ("B", 880_000.0), ("A'", 900_000.0)],
                ),
                ("limit", "anon", vec![("floor", 2_000_000.0)]),
            ],
            cpus: vec![1, 2],
            rounds: 3,
            instances: 3,
            scale: 1.0,
            crlf: true,
            invariants_ok: true,
        }
    }
}

/// A deterministic jitter in [-1%, +1%] from a counter.
fn jitter(n: u64) -> f64 {
    let x = n
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    ((x >> 33) % 2001) as f64 / 100_000.0 - 0.01
}

/// The log of `spec`.
pub fn log(spec: &Spec) -> String {
    let nl = if spec.crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    let line = |out: &mut String, s: &str| {
        out.push_str(s);
        out.push_str(nl);
    };
    line(
        &mut out,
        "memcg-lru kernel: booting (synthetic log for the runner's tests)",
    );
    line(&mut out, "smp: 2 CPUs online");
    let machine = Machine {
        cpu_model: "synthetic test data, not a measurement".into(),
        vcpus: 2,
        memory_mib: 256,
        nodes: 1,
        platform: Platform::QemuTcg,
        hypervisor: "TCGTCGTCGTCG".into(),
        tsc_hz: 2_100_000_000,
        boot_protocol: "multiboot1".into(),
        cmdline: "run=bench quick=1".into(),
    };
    line(&mut out, &machine.line());
    let mut scenarios: Vec<PlanScenario> = Vec::new();
    for (s, c, vs) in &spec.points {
        scenarios.push(PlanScenario {
            name: (*s).into(),
            configs: vec![(*c).into()],
            variants: vs.iter().map(|v| v.0.into()).collect(),
        });
    }
    let plan = Plan::new(
        scenarios,
        spec.cpus.clone(),
        spec.rounds,
        1,
        Some(0.1),
        None,
    )
    .with_instances(spec.instances);
    line(&mut out, &plan.line());
    let (mut step, mut n, mut runs, mut comparisons) = (0, 0u64, Vec::new(), Vec::new());
    for (s, c, vs) in &spec.points {
        for &cpus in &spec.cpus {
            let mut point_runs = Vec::new();
            let per = spec.rounds / spec.instances;
            let blocks = (0..spec.instances).flat_map(|j| {
                std::iter::once((j, 0)).chain((1..=per).map(move |k| (j, j * per + k)))
            });
            for (instance, round) in blocks {
                // The engine's order: the plan's in the warm-up, a Williams square's rows in
                // the measured rounds.
                let order: Vec<&(&str, f64)> = if round == 0 {
                    vs.iter().collect()
                } else {
                    bench::engine::RunOrder::Williams
                        .order(vs.len(), round)
                        .into_iter()
                        .map(|k| &vs[k])
                        .collect()
                };
                for (position, (v, base)) in order.into_iter().enumerate() {
                    n += 1;
                    step += 1;
                    // Each instance sits at a placement of its own: a fixed offset of up to
                    // 0.5% for all its rounds.
                    let place = 1.0 + 0.5 * jitter(u64::from(instance) * 7919 + v.len() as u64);
                    let rate = base * f64::from(cpus).powf(0.8) * (1.0 + jitter(n)) * place;
                    let ns = 100_000_000u64;
                    // A multiple of 4 before scaling, so a scale of k/4 is exact.
                    let ops = (rate * ns as f64 / 1e9 / 4.0).round() * 4.0;
                    let ops = (ops * spec.scale).round() as u64;
                    let mut r = Run::new(s, c, v, cpus, round, round == 0, ops, ns).unwrap();
                    r.order = position as u32 + 1;
                    r.instance = instance;
                    r.per_cpu = (0..cpus)
                        .map(|cpu| CpuShare {
                            cpu,
                            ops: ops / u64::from(cpus),
                            ns,
                        })
                        .collect();
                    r.locks.insert(
                        "lru_lock".into(),
                        LockStat {
                            acquisitions: ops / 15,
                            contended: ops / 150 * u64::from(cpus - 1),
                            wait_total_cycles: 1000 * n,
                            wait_max_cycles: 900,
                            ..LockStat::default()
                        },
                    );
                    r.counters.insert("pgfault".into(), ops as i64);
                    line(&mut out, &r.line());
                    let p = Progress {
                        step,
                        total: plan.total_runs,
                        scenario: s,
                        config: c,
                        variant: v,
                        cpus,
                        round,
                        rounds: spec.rounds,
                        ops_per_s: r.ops_per_s,
                    };
                    line(&mut out, &p.to_string());
                    point_runs.push(r);
                }
            }
            let mut defs: Vec<(&str, String)> = bench::catalog::scenario(s)
                .map_or(&[][..], |x| x.comparisons)
                .iter()
                .map(|d| (d.a, d.b.to_string()))
                .collect();
            if let Some(&(a, _)) = defs.first() {
                defs.push((a, bench::record::control_name(a)));
            }
            for (a, b) in &defs {
                if !vs.iter().any(|v| v.0 == *b) {
                    continue;
                }
                let cmp = Comparison::from_runs(s, c, cpus, a, b, &point_runs).unwrap();
                line(&mut out, &cmp.line());
                comparisons.push(cmp);
            }
            runs.extend(point_runs);
        }
    }
    let mut table = String::new();
    let _ = write!(
        table,
        "{}",
        Table::new(&Summary::new(&runs, &comparisons), Style::Compact)
    );
    for l in table.lines() {
        line(&mut out, l);
    }
    let end = End {
        runs: runs.len() as u32,
        comparisons: comparisons.len() as u32,
        invariants_ok: spec.invariants_ok,
        failures: if spec.invariants_ok {
            vec![]
        } else {
            vec!["lruvec 3: nr_pages 12 but 11 folios on its lists".into()]
        },
        elapsed_ns: 9_000_000_000,
        premises: vec![],
    };
    line(&mut out, &end.line());
    line(
        &mut out,
        if spec.invariants_ok {
            "KEXIT success"
        } else {
            "KEXIT test-failure"
        },
    );
    out
}

/// `log` cut in the middle of the first second-round `run` record after `fraction` of the
/// bytes: the point being run then has measured runs of its variants but no comparison.
pub fn truncated(log: &str, fraction: f64) -> String {
    let from = (log.len() as f64 * fraction) as usize;
    let start = log[from..]
        .match_indices("KRESULT {\"type\":\"run\"")
        .map(|(i, _)| from + i)
        .find(|&i| {
            log[i..]
                .split('\n')
                .next()
                .unwrap()
                .contains("\"round\":2,")
        })
        .unwrap();
    let len = log[start..].find('\n').unwrap();
    log[..start + len / 2].to_owned()
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kx-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the `kx` binary: (status, stdout, stderr).
pub fn kx(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kx"))
        .args(args)
        .output()
        .expect("kx runs");
    (
        out.status.code().expect("kx exits normally"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The host's cores for one test: the host-thread benchmark (which pins a worker on every
/// core) and the busy-host test (which loads one) each hold it, so neither runs beside the
/// other; the other tests of the binary are short and run beside either.
#[must_use = "the cores are this test's only while the guard lives"]
pub fn host_to_itself() -> std::sync::MutexGuard<'static, ()> {
    static CORES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that panicked while holding it left nothing behind.
    CORES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
