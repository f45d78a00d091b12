//! The engine's orchestration on host threads with synthetic scenarios: a per-CPU counter
//! that can be told to fail its setup, a batch or its invariant check, and the software
//! floor as `limit`. No assertion on speed: only on what runs, in which order, and what is
//! printed.

use super::*;
use crate::record::{Comparison, Machine, Platform, Run};
use crate::scenarios::soft_floor::SoftFloor;
use crate::table::Style;
use std::fmt;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;
use std::vec::Vec;
use std::{boxed::Box, format, vec};

/// The engine owns ksync's lock statistics while it runs: one engine test at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Host threads as CPUs: one scoped thread per CPU, declared to ksync, lined up at a
/// barrier; every output kept.
struct Threads {
    cpus: u32,
    epoch: Instant,
    out: Mutex<Vec<(Output, String)>>,
    quiescent: AtomicU64,
    /// The fault core the seeds' scenarios run on, told of every quiescent point.
    soft: Option<&'static crate::vm::soft::SoftHost>,
    /// Whether it pretends to have hardware counters (`pmu_start`/`pmu_stop`).
    pmu: bool,
    /// Per CPU: counters started and not stopped (1), or not (0); set on a start that finds
    /// them running, or a stop that finds them off, or a call from another CPU.
    pmu_running: [AtomicU32; 4],
    pmu_misuse: AtomicU32,
    pmu_stops: AtomicU32,
    /// Per CPU: inside untimed work (between `untimed_begins` and `untimed_ends`) or not;
    /// the pairs seen, and the calls out of order or from another CPU.
    untimed_inside: [AtomicU32; 4],
    untimed_pairs: AtomicU32,
    untimed_misuse: AtomicU32,
    /// `run_begins` calls, and `run_ends` calls.
    runs_begun: AtomicU32,
    runs_ended: AtomicU32,
}

impl Threads {
    fn new(cpus: u32) -> Self {
        Threads {
            cpus,
            epoch: Instant::now(),
            out: Mutex::new(Vec::new()),
            quiescent: AtomicU64::new(0),
            soft: None,
            pmu: false,
            pmu_running: Default::default(),
            pmu_misuse: AtomicU32::new(0),
            pmu_stops: AtomicU32::new(0),
            untimed_inside: Default::default(),
            untimed_pairs: AtomicU32::new(0),
            untimed_misuse: AtomicU32::new(0),
            runs_begun: AtomicU32::new(0),
            runs_ended: AtomicU32::new(0),
        }
    }

    fn lines(&self, kind: Output) -> Vec<String> {
        let out = self.out.lock().unwrap();
        out.iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// Every record as JSON, in order.
    fn records(&self) -> Vec<serde_json::Value> {
        self.lines(Output::Record)
            .iter()
            .map(|l| {
                let json = l.strip_prefix("KRESULT ").expect("a KRESULT line");
                serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {l}"))
            })
            .collect()
    }

    fn of_type(&self, t: &str) -> Vec<serde_json::Value> {
        self.records()
            .into_iter()
            .filter(|r| r["type"] == t)
            .collect()
    }
}

impl BenchPlatform for Threads {
    fn cpus(&self) -> u32 {
        self.cpus
    }

    fn on_cpus(&self, n: u32, f: &(dyn Fn(u32) + Sync)) -> Result<(), PlatformError> {
        if n == 0 || n > self.cpus {
            return Err(PlatformError(format!(
                "{n} CPUs asked, {} exist",
                self.cpus
            )));
        }
        let barrier = std::sync::Barrier::new(n as usize);
        std::thread::scope(|s| {
            for cpu in 0..n {
                let barrier = &barrier;
                s.spawn(move || {
                    ksync::cpu::set_this_thread_cpu(cpu as usize);
                    barrier.wait();
                    f(cpu);
                });
            }
        });
        Ok(())
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn quiescent(&self, cpu: u32) {
        self.quiescent.fetch_add(1, Ordering::Relaxed);
        if let Some(s) = self.soft {
            s.quiescent(cpu as usize);
        }
    }

    fn output(&self, kind: Output, text: &dyn fmt::Display) {
        self.out.lock().unwrap().push((kind, text.to_string()));
    }

    fn machine(&self) -> Machine {
        Machine {
            cpu_model: "test threads".into(),
            vcpus: self.cpus,
            memory_mib: 1,
            nodes: 1,
            platform: Platform::HostThreads,
            hypervisor: String::new(),
            tsc_hz: 0,
            boot_protocol: "none".into(),
            cmdline: "run=bench".into(),
        }
    }

    fn notes(&self) -> Vec<String> {
        vec!["synthetic platform".into()]
    }

    fn untimed_begins(&self, cpu: u32) {
        let on_itself = ksync::cpu::this_cpu() == cpu as usize;
        if self.untimed_inside[cpu as usize].swap(1, Ordering::Relaxed) != 0 || !on_itself {
            self.untimed_misuse.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn untimed_ends(&self, cpu: u32) {
        let on_itself = ksync::cpu::this_cpu() == cpu as usize;
        if self.untimed_inside[cpu as usize].swap(0, Ordering::Relaxed) != 1 || !on_itself {
            self.untimed_misuse.fetch_add(1, Ordering::Relaxed);
        }
        self.untimed_pairs.fetch_add(1, Ordering::Relaxed);
    }

    fn run_begins(&self) {
        self.runs_begun.fetch_add(1, Ordering::Relaxed);
    }

    fn run_ends(&self) {
        self.runs_ended.fetch_add(1, Ordering::Relaxed);
    }

    fn pmu_start(&self, cpu: u32) {
        if !self.pmu {
            return;
        }
        let on_itself = ksync::cpu::this_cpu() == cpu as usize;
        if self.pmu_running[cpu as usize].swap(1, Ordering::Relaxed) != 0 || !on_itself {
            self.pmu_misuse.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// CPU `c` counted `1000 + c` cycles, 3000 instructions, 40 LLC references, and LLC
    /// misses on CPU 0 alone (another CPU's PMU "cannot count them").
    fn pmu_stop(&self, cpu: u32) -> Option<crate::record::PmuCpu> {
        if !self.pmu {
            return None;
        }
        let on_itself = ksync::cpu::this_cpu() == cpu as usize;
        if self.pmu_running[cpu as usize].swap(0, Ordering::Relaxed) != 1 || !on_itself {
            self.pmu_misuse.fetch_add(1, Ordering::Relaxed);
        }
        self.pmu_stops.fetch_add(1, Ordering::Relaxed);
        Some(crate::record::PmuCpu {
            cpu: 99,
            cycles: 1000 + u64::from(cpu),
            instructions: 3000,
            llc_refs: Some(40),
            llc_misses: (cpu == 0).then_some(5),
        })
    }
}

ksync::lock_class!(
    /// The synthetic scenario's per-instance lock, taken once per batch.
    CounterLock, "test.counter"
);

/// What a [`Counter`] should get wrong, and when.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// Fail the setup of this variant.
    setup: Option<&'static str>,
    /// Fail a batch on this CPU in this (1-based) run of an instance.
    batch: Option<(u32, u32)>,
    /// Fail the check after this (1-based) run of an instance.
    check: Option<u32>,
}

/// A synthetic scenario: each CPU increments its own counter, ten per batch.
struct Counter {
    name: &'static str,
    variants: Option<Vec<&'static str>>,
    only_config: Option<&'static str>,
    floor_relative: Option<bool>,
    faults: Faults,
    torn_down: AtomicU32,
    built: AtomicU32,
    /// The most instances alive at once (counted at each build).
    most_alive: AtomicU32,
    /// What every instance says about its setup.
    note: Option<&'static str>,
    /// The variants in the order they were built.
    build_order: std::sync::Mutex<Vec<String>>,
}

impl Counter {
    fn new(name: &'static str) -> Self {
        Counter {
            name,
            variants: None,
            only_config: None,
            floor_relative: None,
            faults: Faults::default(),
            torn_down: AtomicU32::new(0),
            built: AtomicU32::new(0),
            most_alive: AtomicU32::new(0),
            note: None,
            build_order: std::sync::Mutex::new(Vec::new()),
        }
    }
}

struct CounterInstance<'a> {
    scenario: &'a Counter,
    per_cpu: Vec<AtomicU64>,
    runs: AtomicU32,
    lock: ksync::SpinMutex<CounterLock, u64>,
}

impl BenchScenario for Counter {
    fn name(&self) -> &'static str {
        self.name
    }

    fn variants(&self) -> Vec<&'static str> {
        self.variants.clone().unwrap_or_else(|| {
            crate::catalog::scenario(self.name)
                .unwrap()
                .variants
                .iter()
                .map(|v| v.name)
                .collect()
        })
    }

    fn supports(&self, config: &str) -> bool {
        self.only_config.is_none_or(|c| c == config)
    }

    fn floor_relative(&self) -> bool {
        self.floor_relative
            .unwrap_or_else(|| crate::catalog::scenario(self.name).is_some_and(|s| s.fault_path))
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        if self.faults.setup == Some(setup.variant) {
            return Err(ScenarioError::new("no memcg for you"));
        }
        self.build_order
            .lock()
            .unwrap()
            .push(setup.variant.to_string());
        let built = self.built.fetch_add(1, Ordering::Relaxed) + 1;
        let alive = built - self.torn_down.load(Ordering::Relaxed);
        self.most_alive.fetch_max(alive, Ordering::Relaxed);
        Ok(Box::new(CounterInstance {
            scenario: self,
            per_cpu: (0..setup.cpus).map(|_| AtomicU64::new(0)).collect(),
            runs: AtomicU32::new(0),
            lock: ksync::SpinMutex::new(0),
        }))
    }
}

impl Instance for CounterInstance<'_> {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let run = self.runs.load(Ordering::Relaxed) + 1;
        if self.scenario.faults.batch == Some((ctx.cpu, run)) {
            return Err(ScenarioError::new("the counter fell over"));
        }
        assert_eq!(ksync::this_cpu(), ctx.cpu as usize, "platform cpu id");
        *self.lock.lock() += 1;
        let n = 10.min(ctx.max_ops);
        self.per_cpu[ctx.index as usize].fetch_add(n, Ordering::Relaxed);
        Ok(n)
    }

    fn note(&self) -> Option<String> {
        self.scenario.note.map(String::from)
    }

    /// Its lock's statistics, as a premise would read them: recorded in its runs only.
    fn lock_classes(&self) -> Vec<&'static ksync::ClassData> {
        vec![<CounterLock as ksync::LockClass>::data()]
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let total: u64 = self.per_cpu.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        vec![("increments".into(), total as i64)]
    }

    fn check(&self) -> Result<(), String> {
        let run = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        if self.scenario.faults.check == Some(run) {
            return Err(format!("counter lost an increment after run {run}"));
        }
        Ok(())
    }

    fn teardown(self: Box<Self>) -> Result<(), ScenarioError> {
        self.scenario.torn_down.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A leaked scenario the test can still look at after the registry took a handle to it.
struct Shared<T: 'static>(&'static T);

impl<T: BenchScenario> BenchScenario for Shared<T> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        self.0.instantiate(setup)
    }
}

fn shared(c: Counter) -> (&'static Counter, Shared<Counter>) {
    let c: &'static Counter = Box::leak(Box::new(c));
    (c, Shared(c))
}

fn request(names: &[&str], cpus: &[u32], rounds: u32, length: RunLength) -> Request {
    Request {
        scenarios: names
            .iter()
            .map(|n| {
                let s = crate::catalog::scenario(n).unwrap();
                (s, s.configs.iter().map(|c| String::from(*c)).collect())
            })
            .collect(),
        cpus: cpus.to_vec(),
        rounds,
        instances: 1,
        warmup_rounds: 1,
        length,
        order: RunOrder::Williams,
        control: true,
        ci_width: None,
        budget_ns: None,
        objects: false,
        lock_stat_all: false,
    }
}

const COUNTED: RunLength = RunLength::Counted { ops: 95 };

/// (scenario, variant, cpus, round) of every run record, in order.
fn run_order(p: &Threads) -> Vec<(String, String, u64, u64)> {
    p.of_type("run")
        .iter()
        .map(|r| {
            (
                r["scenario"].as_str().unwrap().to_string(),
                r["variant"].as_str().unwrap().to_string(),
                r["cpus"].as_u64().unwrap(),
                r["round"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A `limit` floor whose every other measurement is slow (each one-operation batch then
/// sleeps 5 ms): a floor whose rate dips for one measurement at a time.
#[derive(Default)]
struct BlinkingFloor {
    /// Measurements of every instance so far (each ends with its invariant check).
    measured: AtomicU32,
}

struct BlinkingInstance<'a> {
    floor: &'a BlinkingFloor,
    measured: AtomicU32,
}

impl BenchScenario for BlinkingFloor {
    fn name(&self) -> &'static str {
        crate::catalog::LIMIT
    }

    fn instantiate<'a>(
        &'a self,
        _setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        Ok(Box::new(BlinkingInstance {
            floor: self,
            measured: AtomicU32::new(0),
        }))
    }
}

impl Instance for BlinkingInstance<'_> {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        if self.measured.load(Ordering::Relaxed) % 2 == 1 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(1.min(ctx.max_ops))
    }

    fn check(&self) -> Result<(), String> {
        self.measured.fetch_add(1, Ordering::Relaxed);
        self.floor.measured.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn teardown(self: Box<Self>) -> Result<(), ScenarioError> {
        Ok(())
    }
}

#[test]
fn each_run_divides_by_the_larger_of_the_floors_measured_around_it() {
    let _g = serial();
    let p = Threads::new(1);
    let floor: &'static BlinkingFloor = Box::leak(Box::default());
    let mut reg = crate::scenarios::floor_only(Box::new(Shared(floor)));
    reg.add(Counter::new("seed003-pft"));
    let report = run(&p, &reg, &request(&["seed003-pft"], &[1], 2, COUNTED));
    assert!(report.passed(), "{:?}", report.end);
    // The `limit` point's three runs, then pft's block: one floor before its first run and
    // one after each of its nine (the warm-up's three and two rounds of three), each a
    // quarter of a run's 95 operations.
    assert_eq!(floor.measured.load(Ordering::Relaxed), 3 + 1 + 9);
    let pft: Vec<_> = p
        .of_type("run")
        .into_iter()
        .filter(|r| r["scenario"] == "seed003-pft")
        .collect();
    assert_eq!(pft.len(), 9);
    // Fast and slow floors alternate, so every run has one of each beside it: a slow one
    // (23 operations, each after 5 ms) is below 200 operations per second, a fast one
    // (23 operations of nothing) far above 2000.
    for r in &pft {
        let f = r["floor_ops_per_s"].as_f64().expect("a paired floor");
        assert!(f > 2000.0, "a run divided by a dipped floor: {r}");
        let around = &r["floors_ops_per_s"];
        let (before, after) = (around[0].as_f64().unwrap(), around[1].as_f64().unwrap());
        assert_eq!(f, before.max(after), "{r}");
        assert!(
            before.min(after) < 200.0,
            "no dipped floor beside the run: {r}"
        );
    }
    // The floor after a run is the one before the next.
    for w in pft.windows(2) {
        assert_eq!(w[0]["floors_ops_per_s"][1], w[1]["floors_ops_per_s"][0]);
    }
}

#[test]
fn limit_first_then_every_point_interleaved_after_a_warmup() {
    let _g = serial();
    let p = Threads::new(2);
    let mut reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    reg.add(Counter::new("seed003-pft"));
    let report = run(&p, &reg, &request(&["seed003-pft"], &[1, 2], 2, COUNTED));
    assert!(report.passed(), "{:?}", report.end);

    let types: Vec<String> = p
        .records()
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types[..2], ["machine", "plan"]);
    assert_eq!(types.last().unwrap(), "end");
    let plan = &p.of_type("plan")[0];
    assert_eq!(plan["scenarios"][0]["name"], "limit");
    assert_eq!(
        plan["scenarios"][1]["variants"],
        serde_json::json!(["A", "B", "A'"])
    );
    assert_eq!(plan["total_runs"], (1 + 3) * 2 * 3);
    assert_eq!(plan["ops"], 95);
    assert!(plan["seconds"].is_null());

    let mut expect = Vec::new();
    for cpus in [1u64, 2] {
        for round in 0..=2u64 {
            expect.push(("limit".to_string(), "floor".to_string(), cpus, round));
        }
    }
    // The warm-up in the plan's order, the measured rounds in the rows of a Williams
    // square (0 1 2, then 1 2 0); A' is the A/A control, a second instance of A.
    for cpus in [1u64, 2] {
        for (round, order) in [
            (0u64, ["A", "B", "A'"]),
            (1, ["A", "B", "A'"]),
            (2, ["B", "A'", "A"]),
        ] {
            for v in order {
                expect.push(("seed003-pft".into(), v.into(), cpus, round));
            }
        }
    }
    assert_eq!(run_order(&p), expect);
    let positions: Vec<u64> = p
        .of_type("run")
        .iter()
        .filter(|r| r["scenario"] == "seed003-pft")
        .map(|r| r["order"].as_u64().unwrap())
        .collect();
    assert_eq!(positions, [1, 2, 3].repeat(6));
    assert_eq!(report.runs.len(), expect.len());

    for r in p.of_type("run") {
        let cpus = r["cpus"].as_u64().unwrap();
        assert_eq!(r["warmup"], r["round"] == 0);
        assert_eq!(r["per_cpu"].as_array().unwrap().len() as u64, cpus);
        for c in r["per_cpu"].as_array().unwrap() {
            assert_eq!(c["ops"], 95, "{r}");
        }
        assert_eq!(r["ops"].as_u64().unwrap(), 95 * cpus);
        if r["scenario"] == "seed003-pft" {
            let f = r["floor_fraction"]
                .as_f64()
                .expect("a fault scenario's floor");
            let floor = r["floor_ops_per_s"].as_f64().expect("its paired floor");
            assert!((f - r["ops_per_s"].as_f64().unwrap() / floor).abs() < 1e-9 * f);
            // Ten increments per batch: ten batches of 95 ops per CPU, each under the lock.
            assert_eq!(r["locks"]["test.counter"]["acquisitions"], 10 * cpus, "{r}");
            assert_eq!(r["counters"]["increments"], 95 * cpus);
            assert!(r["locks"].get("bench.run_error").is_none());
        } else {
            assert!(r["floor_fraction"].is_null());
            assert!(r["locks"].get("test.counter").is_none(), "{r}");
            assert_eq!(r["counters"]["soft_pte_installs"], 95 * cpus);
        }
    }
    let cmps = p.of_type("comparison");
    assert_eq!(cmps.len(), 4);
    for (c, (cpus, b)) in cmps.iter().zip([(1, "B"), (1, "A'"), (2, "B"), (2, "A'")]) {
        assert_eq!((c["a"].as_str(), c["b"].as_str()), (Some("A"), Some(b)));
        assert_eq!(c["cpus"], cpus);
        assert_eq!((c["rounds"].as_u64(), c["n"].as_u64()), (Some(2), Some(2)));
        assert_eq!(c["paired"], true);
        assert_eq!(c["control"], b == "A'");
        assert!(c["p_adjusted"].is_null());
    }
    let end = &p.of_type("end")[0];
    assert_eq!(end["runs"], 24);
    // The platform hears of the recorded runs only (a counter pairs its n-th run with the
    // n-th record), not of the floor measured around each of pft's runs.
    assert_eq!(p.runs_begun.load(Ordering::Relaxed), 24);
    assert_eq!(p.runs_ended.load(Ordering::Relaxed), 24);
    assert_eq!(end["comparisons"], 4);
    assert_eq!(end["invariants_ok"], true);
    assert!(end["failures"].as_array().unwrap().is_empty());

    // Progress after every run, numbered against the plan.
    let progress = p.lines(Output::Progress);
    assert_eq!(progress.len(), 24);
    let last = crate::Progress::parse(&progress[23]).unwrap();
    assert_eq!((last.step, last.total, last.variant), (24, 24, "A"));
    // Both tables, with the platform's note under them.
    for style in [Style::Wide, Style::Compact] {
        let t = p.lines(Output::Table(style));
        assert_eq!(t.len(), 1);
        assert!(t[0].contains("seed003-pft") && t[0].contains("synthetic platform"));
    }
    // Quiescent points between batches, none after the last: the counter's batches of 10
    // make 9 per CPU and run of 95 ops, the floor's batches of 64 make 1 at its own point.
    // Around pft's runs it is measured for 23 ops, one batch: no quiescent point.
    let cpu_runs = |variants: u64| -> u64 { [1u64, 2].iter().map(|c| c * 3 * variants).sum() };
    assert_eq!(
        p.quiescent.load(Ordering::Relaxed),
        9 * cpu_runs(3) + cpu_runs(1)
    );
}

#[test]
fn pmu_counts_become_per_op_figures_and_absent_ones_null() {
    let _g = serial();
    let without = Threads::new(2);
    let mut reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    reg.add(Counter::new("seed003-pft"));
    let req = request(&["seed003-pft"], &[1, 2], 1, COUNTED);
    assert!(run(&without, &reg, &req).passed());
    for r in without.of_type("run") {
        assert!(r["pmu"].is_null(), "{r}");
    }

    let mut with = Threads::new(2);
    with.pmu = true;
    let report = run(&with, &reg, &req);
    assert!(report.passed(), "{:?}", report.end);
    assert_eq!(
        with.pmu_misuse.load(Ordering::Relaxed),
        0,
        "start/stop paired, on the CPU"
    );
    // One start and one stop per CPU per run: 1 + 2 CPUs, 2 rounds (warm-up and one), for
    // the floor's one variant and pft's three.
    // The floor paired with pft's rounds has no record, so no counts either.
    assert_eq!(with.pmu_stops.load(Ordering::Relaxed), 3 * 2 * (1 + 3));
    for r in with.of_type("run") {
        let cpus = r["cpus"].as_u64().unwrap();
        let ops = r["ops"].as_f64().unwrap();
        let pmu = &r["pmu"];
        let cycles: u64 = (0..cpus).map(|c| 1000 + c).sum();
        assert_eq!(
            pmu["cycles_per_op"].as_f64().unwrap(),
            cycles as f64 / ops,
            "{r}"
        );
        assert_eq!(
            pmu["instructions_per_op"].as_f64().unwrap(),
            3000.0 * cpus as f64 / ops
        );
        assert_eq!(
            pmu["llc_refs_per_op"].as_f64().unwrap(),
            40.0 * cpus as f64 / ops
        );
        // Misses are per op only when every CPU counted them.
        if cpus == 1 {
            assert_eq!(pmu["llc_misses_per_op"].as_f64().unwrap(), 5.0 / ops);
        } else {
            assert!(pmu["llc_misses_per_op"].is_null(), "{r}");
        }
        let per_cpu = pmu["per_cpu"].as_array().unwrap();
        assert_eq!(per_cpu.len() as u64, cpus);
        for (i, c) in per_cpu.iter().enumerate() {
            assert_eq!(
                c["cpu"], i as u64,
                "the engine names the CPU, not the platform"
            );
            assert_eq!(c["cycles"], 1000 + i as u64);
        }
    }
    let measured: Vec<&Run> = report.runs.iter().filter(|r| r.measured()).collect();
    assert!(
        measured
            .iter()
            .all(|r| r.pmu.is_some() && r.check().is_ok())
    );
}

#[test]
fn every_line_parses_as_a_record() {
    let _g = serial();
    let p = Threads::new(2);
    let mut reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    reg.add(Counter::new("seed003-pft"));
    let report = run(&p, &reg, &request(&["seed003-pft"], &[2], 2, COUNTED));
    assert!(report.passed());
    for l in p.lines(Output::Record) {
        crate::record::parse_line(&l).unwrap().unwrap();
    }
}

#[test]
fn not_built_is_skipped_and_said() {
    let _g = serial();
    let p = Threads::new(1);
    let reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    let report = run(
        &p,
        &reg,
        &request(&["seed001-faultfree", "seed002-reclaim"], &[1], 1, COUNTED),
    );
    assert!(report.passed());
    assert!(
        report.runs.is_empty(),
        "no fault scenario runs, so no floor"
    );
    let plan = &p.of_type("plan")[0];
    assert_eq!(
        plan["skipped"],
        serde_json::json!(["seed001-faultfree", "seed002-reclaim"])
    );
    assert_eq!(plan["total_runs"], 0);
    let notes: Vec<String> = p
        .of_type("note")
        .iter()
        .map(|n| n["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        notes,
        [
            "scenario seed001-faultfree is not built into this benchmark yet: skipped",
            "scenario seed002-reclaim is not built into this benchmark yet: skipped",
            "synthetic platform",
        ]
    );
    assert_eq!(report.notes, notes);
    assert_eq!(p.lines(Output::Message).len(), 3);
}

#[test]
fn a_scenario_off_the_fault_path_runs_without_the_floor() {
    let _g = serial();
    let p = Threads::new(2);
    let mut reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    reg.add(Counter::new("seed002-reclaim"));
    let mut req = request(&["seed002-reclaim"], &[2], 1, COUNTED);
    req.scenarios[0].1 = vec!["10".into()];
    let report = run(&p, &reg, &req);
    assert!(report.passed());
    let order = run_order(&p);
    assert!(order.iter().all(|r| r.0 == "seed002-reclaim"), "{order:?}");
    // A, B and the A/A control A', warm-up and one round.
    assert_eq!(order.len(), 6);
    assert!(
        p.of_type("run")
            .iter()
            .all(|r| r["floor_fraction"].is_null())
    );
}

/// Each instance block builds every variant afresh while the previous block is still
/// alive (so at new addresses), warms it up, runs its share of the rounds, and is torn down
/// after the next block is built.
#[test]
fn every_instance_block_is_built_afresh_warmed_up_and_judged_alone() {
    let _g = serial();
    let p = Threads::new(1);
    let (c, handle) = shared(Counter::new("seed003-pft"));
    let mut reg = Registry::new();
    reg.add(handle);
    let mut req = request(&["seed003-pft"], &[1], 6, COUNTED);
    req.instances = 3;
    let report = run(&p, &reg, &req);
    assert!(report.passed(), "{:?}", report.end);
    // A, B, A' built three times; torn down three times.
    assert_eq!(c.built.load(Ordering::Relaxed), 9);
    assert_eq!(c.torn_down.load(Ordering::Relaxed), 9);
    assert_eq!(p.of_type("plan")[0]["total_runs"], 3 * (6 + 3));
    assert_eq!(report.runs.len(), 3 * (6 + 3));
    // (instance, round, warm-up) of A's runs: a warm-up per block, two rounds each.
    let a: Vec<(u32, u32, bool)> = report
        .runs
        .iter()
        .filter(|r| r.variant == "A")
        .map(|r| (r.instance, r.round, r.warmup))
        .collect();
    assert_eq!(
        a,
        [
            (0, 0, true),
            (0, 1, false),
            (0, 2, false),
            (1, 0, true),
            (1, 3, false),
            (1, 4, false),
            (2, 0, true),
            (2, 5, false),
            (2, 6, false)
        ]
    );
    // Block 1's three instances were built while block 0's three were alive.
    assert_eq!(c.most_alive.load(Ordering::Relaxed), 6);
    // The build order rotates, so no variant is always built last (A' is the control, built
    // as A).
    assert_eq!(
        *c.build_order.lock().unwrap(),
        ["A", "B", "A", "B", "A", "A", "A", "A", "B"]
    );
}

/// A setup note that every variant, instance and CPU count repeats is printed once per
/// scenario and config.
#[test]
fn a_repeated_setup_note_is_printed_once() {
    let _g = serial();
    let p = Threads::new(2);
    let mut c = Counter::new("seed003-pft");
    c.note = Some("64 pages per CPU");
    let mut reg = Registry::new();
    reg.add(c);
    let mut req = request(&["seed003-pft"], &[1, 2], 4, COUNTED);
    req.instances = 2;
    let report = run(&p, &reg, &req);
    assert!(report.passed(), "{:?}", report.end);
    let mine: Vec<&String> = report
        .notes
        .iter()
        .filter(|n| n.starts_with("seed003-pft"))
        .collect();
    assert_eq!(mine, ["seed003-pft anon: 64 pages per CPU"]);
    assert_eq!(p.of_type("note").len(), report.notes.len());
}

#[test]
fn extra_variants_join_the_interleaving_for_their_configs_only() {
    let _g = serial();
    let p = Threads::new(1);
    let mut reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    reg.add(Counter::new("seed001-faultfree"));
    let mut linux = Counter::new("seed001-faultfree");
    linux.variants = Some(vec!["linux"]);
    linux.only_config = Some("anon");
    linux.floor_relative = Some(false);
    reg.add(linux);
    let report = run(&p, &reg, &request(&["seed001-faultfree"], &[1], 1, COUNTED));
    assert!(report.passed(), "{:?}", report.end);
    let plan = &p.of_type("plan")[0];
    let variants = &plan["scenarios"][1]["variants"];
    assert_eq!(variants.as_array().unwrap().len(), 8);
    assert_eq!(variants[6], "linux");
    assert_eq!(variants[7], "base@+0'");
    // limit 1 + anon 8 + shmem 7 variants (each with the A/A control), one CPU count,
    // warm-up + 1 round.
    assert_eq!(plan["total_runs"], (1 + 8 + 7) * 2);
    assert_eq!(report.runs.len(), (1 + 8 + 7) * 2);
    let anon: Vec<String> = run_order(&p)
        .into_iter()
        .filter(|r| r.0 == "seed001-faultfree" && r.3 == 1)
        .map(|r| r.1)
        .take(8)
        .collect();
    assert_eq!(
        anon,
        [
            "base@+0",
            "base@+64",
            "base@+0'",
            "patch1@+0",
            "linux",
            "patch1@+64",
            "patch1+2@+64",
            "patch1+2@+0",
        ],
        "round 1 is the Williams square's first row, 0 1 7 2 6 3 5 4"
    );
    for r in p.of_type("run").iter().filter(|r| r["variant"] == "linux") {
        assert_eq!(r["config"], "anon");
        assert!(r["floor_fraction"].is_null());
    }
    assert!(
        p.of_type("comparison")
            .iter()
            .all(|c| c["a"] != "linux" && c["b"] != "linux")
    );
    // Four per config, and the control per config.
    assert_eq!(p.of_type("comparison").len(), 10);
}

#[test]
fn an_invariant_violation_ends_the_benchmark() {
    let _g = serial();
    let p = Threads::new(2);
    let mut reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    let mut c = Counter::new("seed003-pft");
    c.faults.check = Some(2);
    let (c, handle) = shared(c);
    reg.add(handle);
    let report = run(&p, &reg, &request(&["seed003-pft"], &[1, 2], 2, COUNTED));
    assert!(!report.passed());
    assert!(!report.end.invariants_ok);
    assert_eq!(report.end.failures.len(), 1, "{:?}", report.end.failures);
    assert!(
        report.end.failures[0]
            .starts_with("seed003-pft anon A cpus=1 round=1: invariant violated: counter lost"),
        "{}",
        report.end.failures[0]
    );
    // limit at 1 and 2 CPUs (3 runs each), then seed003 A0 B0 A'0: A's second run fails its
    // check.
    assert_eq!(report.runs.len(), 6 + 3);
    let end = &p.of_type("end")[0];
    assert_eq!(end["invariants_ok"], false);
    assert_eq!(end["runs"], 9);
    assert!(p.of_type("comparison").is_empty());
    // The three instances of the point were torn down, and no later point was built.
    assert_eq!(c.built.load(Ordering::Relaxed), 3);
    assert_eq!(c.torn_down.load(Ordering::Relaxed), 3);
    assert!(
        p.lines(Output::Message)
            .iter()
            .any(|m| m.starts_with("benchmark stopped: seed003-pft"))
    );
}

#[test]
fn a_failing_batch_stops_every_cpu_and_ends_cleanly() {
    let _g = serial();
    let p = Threads::new(2);
    let mut c = Counter::new("seed003-pft");
    c.faults.batch = Some((1, 3));
    let (c, handle) = shared(c);
    let mut reg = Registry::new();
    reg.add(handle);
    let report = run(&p, &reg, &request(&["seed003-pft"], &[2], 3, COUNTED));
    assert!(!report.passed());
    assert!(
        report.end.invariants_ok,
        "a batch error is not an invariant"
    );
    // Round 2 runs B A' A: B's instance is the first to run a third time.
    assert_eq!(
        report.end.failures,
        ["seed003-pft anon B cpus=2 round=2: a batch on cpu 1 failed: the counter fell over"]
    );
    assert_eq!(report.runs.len(), 6);
    assert_eq!(c.torn_down.load(Ordering::Relaxed), 3);
    assert_eq!(p.of_type("end")[0]["runs"], 6);
}

#[test]
fn a_failing_setup_tears_down_what_was_built() {
    let _g = serial();
    let p = Threads::new(1);
    let mut c = Counter::new("seed003-pft");
    c.faults.setup = Some("B");
    let (c, handle) = shared(c);
    let mut reg = Registry::new();
    reg.add(handle);
    let report = run(&p, &reg, &request(&["seed003-pft"], &[1], 1, COUNTED));
    assert_eq!(
        report.end.failures,
        ["seed003-pft anon B cpus=1 instance=0: setup failed: no memcg for you"]
    );
    assert!(report.runs.is_empty());
    assert_eq!(c.built.load(Ordering::Relaxed), 1);
    assert_eq!(c.torn_down.load(Ordering::Relaxed), 1);
}

#[test]
fn a_timed_run_lasts_its_duration() {
    let _g = serial();
    let p = Threads::new(2);
    let reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    let ns = 3_000_000;
    let report = run(
        &p,
        &reg,
        &request(&["limit"], &[1, 2], 1, RunLength::Timed { ns }),
    );
    assert!(report.passed());
    assert_eq!(report.runs.len(), 4);
    for r in &report.runs {
        assert!(r.ns >= ns, "{r:?}");
        assert!(r.per_cpu.iter().all(|c| c.ns >= ns && c.ops > 0), "{r:?}");
    }
    let plan = &p.of_type("plan")[0];
    assert_eq!(plan["seconds"], 0.003);
}

#[test]
fn platform_failure_is_reported_not_panicked() {
    let _g = serial();
    let p = Threads::new(1);
    let reg = crate::scenarios::floor_only(Box::new(SoftFloor));
    let report = run(&p, &reg, &request(&["limit"], &[2], 1, COUNTED));
    assert_eq!(
        report.end.failures,
        [
            "limit anon floor cpus=2 round=0: the platform could not run the CPUs: 2 CPUs asked, 1 exist"
        ]
    );
}

#[test]
fn the_request_follows_the_command_line() {
    let cfg = abi::cmdline::parse(
        "run=bench scenarios=seed002-reclaim,limit bench_cpus=1,2 rounds=4 seconds=0.25 memcgs=7",
        false,
    )
    .unwrap()
    .bench;
    let r = Request::from_config(&cfg, 2).unwrap();
    assert_eq!(r.cpus, [1, 2]);
    assert_eq!(r.rounds, 4);
    assert_eq!(r.warmup_rounds, WARMUP_ROUNDS);
    assert_eq!(r.length, RunLength::Timed { ns: 250_000_000 });
    assert_eq!(r.scenarios[0].0.name, "seed002-reclaim");
    assert_eq!(r.scenarios[0].1, ["7"]);
    assert_eq!(r.scenarios[1].1, ["anon"]);
    assert_eq!(
        Request::from_config(&cfg, 1),
        Err(RequestError::TooManyCpus {
            asked: 2,
            online: 1
        })
    );
    let quick = abi::cmdline::parse("run=bench quick=1", false)
        .unwrap()
        .bench;
    let r = Request::from_config(&quick, 16).unwrap();
    assert_eq!(r.cpus, [1, 2]);
}

/// Every seed scenario, every config and variant, at 1 and 2 CPUs, on the host's fault
/// core: each run does its operations and passes its invariant check, every comparison the
/// catalog defines is made, and everything is torn down (the context's census at teardown).
#[test]
fn every_seed_scenario_runs_on_the_soft_fault_core() {
    let _g = serial();
    let soft: &'static crate::vm::soft::SoftHost =
        Box::leak(Box::new(crate::vm::soft::SoftHost::new(2, 256).unwrap()));
    let free0 = soft.free_frames();
    let mut p = Threads::new(2);
    p.soft = Some(soft);
    let reg = crate::scenarios::registry(Box::new(SoftFloor), soft);
    let names = [
        "seed001-faultfree",
        "seed004-readtwice",
        "seed002-reclaim",
        "seed000-refault",
        "seed003-pft",
    ];
    // seed004's premises (evictions and activations per read) need its readers to get past
    // the memcg's limit, which a timed 20 ms run of a debug build does not always do: it
    // runs a counted length, four passes over its file per CPU; the others 20 ms each.
    let readtwice = "seed004-readtwice";
    let timed: Vec<&str> = names.iter().copied().filter(|n| *n != readtwice).collect();
    let mut req = request(&timed, &[1, 2], 1, RunLength::Timed { ns: 20_000_000 });
    // seed002 at 10 and 150 memcgs (the catalog's counts are for the real run).
    let seed002 = timed.iter().position(|n| *n == "seed002-reclaim").unwrap();
    req.scenarios[seed002].1 = vec!["10".into(), "150".into()];
    let mut report = run(&p, &reg, &req);
    assert!(report.passed(), "{:?}", report.end);
    let ops = 4 * crate::scenarios::seed004::FILE_PAGES;
    let counted = run(
        &p,
        &reg,
        &request(&[readtwice], &[1, 2], 1, RunLength::Counted { ops }),
    );
    assert!(counted.passed(), "{:?}", counted.end);
    report.runs.extend(counted.runs);
    report.comparisons.extend(counted.comparisons);
    for name in names {
        let s = crate::catalog::scenario(name).unwrap();
        let configs: Vec<String> = if name == "seed002-reclaim" {
            vec!["10".into(), "150".into()]
        } else {
            s.configs.iter().map(|c| String::from(*c)).collect()
        };
        for config in &configs {
            for v in s.variants {
                for cpus in [1, 2] {
                    let runs: Vec<_> = report
                        .runs
                        .iter()
                        .filter(|r| {
                            r.scenario == name
                                && &r.config == config
                                && r.variant == v.name
                                && r.cpus == cpus
                        })
                        .collect();
                    assert_eq!(runs.len(), 2, "{name} {config} {} {cpus}", v.name);
                    assert!(
                        runs.iter().all(|r| r.per_cpu.len() == cpus as usize
                            && r.per_cpu.iter().all(|c| c.ops > 0)),
                        "{runs:?}"
                    );
                }
            }
            for c in s.comparisons {
                assert!(
                    report.comparisons.iter().any(|x| x.scenario == name
                        && &x.config == config
                        && x.a == c.a
                        && x.b == c.b),
                    "{name} {config}: no {}/{}",
                    c.b,
                    c.a
                );
            }
        }
    }
    // What the scenarios did, in the records' counters.
    let counter = |scenario: &str, name: &str| -> i64 {
        report
            .runs
            .iter()
            .filter(|r| r.scenario == scenario)
            .map(|r| r.counters.get(name).copied().unwrap_or(0))
            .sum()
    };
    assert!(counter("seed001-faultfree", "faults") > 0);
    assert!(
        counter("seed004-readtwice", "evicted") > 0,
        "readtwice reclaims"
    );
    assert!(counter("seed000-refault", "refaults") > 0, "refaults");
    assert!(counter("seed002-reclaim", "reclaim_eagain") > 0);
    assert!(counter("seed003-pft", "faults") > 0);
    assert_eq!(soft.free_frames(), free0, "every frame came back");
}

/// A one-CPU platform on a virtual clock whose runs slow down with their position in the
/// round: the run at 0-based position `k` of a round costs `1000 * 1.1^k` ns per operation,
/// whatever the variant (a cache or frequency effect that punishes whoever runs later).
/// Every variant is the same code, so every true ratio is 1.
struct Positional {
    now: AtomicU64,
    /// Runs so far (one `on_cpus` call each).
    runs: AtomicU64,
    /// Variants per round.
    per_round: u64,
    out: Mutex<Vec<(Output, String)>>,
}

impl BenchPlatform for Positional {
    fn cpus(&self) -> u32 {
        1
    }
    fn on_cpus(&self, n: u32, f: &(dyn Fn(u32) + Sync)) -> Result<(), PlatformError> {
        assert_eq!(n, 1);
        self.runs.fetch_add(1, Ordering::Relaxed);
        ksync::cpu::set_this_thread_cpu(0);
        f(0);
        Ok(())
    }
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
    fn quiescent(&self, _cpu: u32) {}
    fn output(&self, kind: Output, text: &dyn fmt::Display) {
        self.out.lock().unwrap().push((kind, text.to_string()));
    }
    fn machine(&self) -> Machine {
        Threads::new(1).machine()
    }
}

/// The instance of [`Positional`]'s scenario: ten operations per batch at the position's cost.
struct PositionalInstance(&'static Positional);

impl Instance for PositionalInstance {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let p = self.0;
        let position = (p.runs.load(Ordering::Relaxed) - 1) % p.per_round;
        let cost = 1000.0 * libm::pow(1.1, position as f64);
        let n = 10.min(ctx.max_ops);
        p.now.fetch_add((cost * n as f64) as u64, Ordering::Relaxed);
        Ok(n)
    }
    fn teardown(self: Box<Self>) -> Result<(), ScenarioError> {
        Ok(())
    }
}

struct PositionalScenario(&'static Positional);

impl BenchScenario for PositionalScenario {
    fn name(&self) -> &'static str {
        "seed003-pft"
    }
    fn floor_relative(&self) -> bool {
        false
    }
    fn instantiate<'a>(
        &'a self,
        _setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        Ok(Box::new(PositionalInstance(self.0)))
    }
}

/// seed003's B/A and A'/A at one CPU after six rounds in `order` on [`Positional`].
fn positional(order: RunOrder) -> (crate::record::Comparison, crate::record::Comparison) {
    let (report, _) = positional_run(|r| r.order = order);
    assert_eq!(report.runs.len(), 3 * 7);
    let get = |b: &str| {
        report
            .comparisons
            .iter()
            .find(|c| c.b == b)
            .unwrap()
            .clone()
    };
    (get("B"), get("A'"))
}

/// A run of seed003 at one CPU on [`Positional`], six rounds (one Williams square of three
/// variants), `adjust`ed.
fn positional_run(adjust: impl FnOnce(&mut Request)) -> (Report, &'static Positional) {
    let p: &'static Positional = Box::leak(Box::new(Positional {
        now: AtomicU64::new(0),
        runs: AtomicU64::new(0),
        per_round: 3,
        out: Mutex::new(Vec::new()),
    }));
    let mut reg = Registry::new();
    reg.add(PositionalScenario(p));
    let mut req = request(&["seed003-pft"], &[1], 6, COUNTED);
    adjust(&mut req);
    let report = run(p, &reg, &req);
    assert!(report.passed(), "{:?}", report.end);
    (report, p)
}

#[test]
fn ci_width_adds_instances_until_every_interval_is_narrow_enough() {
    let _g = serial();
    // The Williams order's per-round ratios swing by the position effect (x1.1 per place)
    // while their mean over a square is 1: each added instance block narrows the intervals.
    let (report, _) = positional_run(|r| r.ci_width = Some(0.05));
    let n = report.runs.iter().map(|r| r.round).max().unwrap();
    assert!(n > 6 && n < 100 && n % 6 == 0, "{n} rounds");
    let blocks = report.runs.iter().map(|r| r.instance).max().unwrap() + 1;
    assert_eq!(blocks, n / 6, "an instance block per six rounds");
    assert_eq!(report.comparisons.len(), 2);
    for c in &report.comparisons {
        assert_eq!(
            (c.ci_target, c.width_reached),
            (Some(0.05), Some(true)),
            "{c:?}"
        );
        assert!(c.half_width().unwrap() <= 0.05);
        assert_eq!((c.rounds, c.instances), (n, blocks));
        assert_eq!(c.method, crate::two_level::METHOD);
    }
    // One block fewer was not enough for some comparison.
    let fewer: Vec<Run> = report
        .runs
        .iter()
        .filter(|r| r.round <= n - 6)
        .cloned()
        .collect();
    assert!(report.comparisons.iter().any(|c| {
        Comparison::from_runs(&c.scenario, &c.config, c.cpus, &c.a, &c.b, &fewer)
            .unwrap()
            .half_width()
            .unwrap()
            > 0.05
    }));
    // A spent budget adds nothing, and the results say the width was not reached.
    let (report, _) = positional_run(|r| {
        r.ci_width = Some(0.05);
        r.budget_ns = Some(1);
    });
    assert_eq!(report.runs.len(), 3 * 7);
    assert!(
        report
            .comparisons
            .iter()
            .all(|c| c.width_reached == Some(false))
    );
}

#[test]
fn a_fixed_order_biases_the_ratio_and_the_williams_one_does_not() {
    let _g = serial();
    // A B A' every round: B always pays one step, A' two.
    let (b, control) = positional(RunOrder::Fixed);
    assert!((b.ratio - 1.0 / 1.1).abs() < 1e-3, "{b:?}");
    assert!((control.ratio - 1.0 / 1.21).abs() < 1e-3, "{control:?}");
    assert!(b.significant && control.significant);
    // A B A', A' B A, ...: over every two rounds each variant's mean position is the same.
    let (b, control) = positional(RunOrder::Williams);
    assert!((b.ratio - 1.0).abs() < 1e-3, "{b:?}");
    assert!((control.ratio - 1.0).abs() < 1e-3, "{control:?}");
    assert!(!b.significant && !control.significant, "{b:?} {control:?}");
}

mod premise;
