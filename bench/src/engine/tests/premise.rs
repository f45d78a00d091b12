//! Premises and untimed work in the engine: every premise an instance states is judged over
//! its variant's measured runs and recorded in `end`; one that does not hold fails the
//! benchmark like a violated invariant; untimed work is kept out of the run's time and
//! counted as `untimed_ns`.

use super::*;
use crate::engine::premise::{self, PremiseCheck};
use crate::record::Run;

/// Increments per batch, and the premise each variant reports over its runs.
struct Premised {
    /// The variant whose premise fails.
    failing: Option<&'static str>,
    /// Sleep this long before the first batch of every run, untimed.
    untimed_ms: u64,
    /// The premise's name (the catalog declares `activations_per_op` for this scenario).
    premise: &'static str,
    /// Whether the premise is about sharing between CPUs.
    across_cpus: bool,
    /// The counter the premise reads (`events`, which the instance reports).
    counter: &'static str,
    /// Whether each operation takes [`PremiseTestLock`] and [`OtherTestLock`] once, the
    /// instance names the first in its lock classes, and the premise reads the
    /// acquisitions of this class instead of the counter.
    lock: Option<&'static str>,
}

impl Premised {
    fn new(failing: Option<&'static str>) -> Self {
        Premised {
            failing,
            untimed_ms: 0,
            premise: DECLARED,
            across_cpus: false,
            counter: "events",
            lock: None,
        }
    }
}

ksync::lock_class!(
    /// The lock a [`Premised`] premise may read, named in its instance's lock classes.
    PremiseTestLock, "test.premise_lock"
);
ksync::lock_class!(
    /// A lock its operations take that no premise reads.
    OtherTestLock, "test.other_lock"
);

/// The premise seed004's catalog entry declares, which the fake instance reports.
const DECLARED: &str = "activations_per_op";

struct PremisedInstance {
    variant: &'static str,
    failing: bool,
    untimed_ms: u64,
    premise: &'static str,
    across_cpus: bool,
    counter: &'static str,
    lock: Option<&'static str>,
    ops: AtomicU64,
    /// Per CPU: whether this run's untimed work was done (reset by `check`, after every
    /// run).
    paused: [std::sync::atomic::AtomicBool; 2],
}

impl BenchScenario for Premised {
    fn name(&self) -> &'static str {
        "seed004-readtwice"
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let variant = if setup.variant == "A" { "A" } else { "B" };
        Ok(Box::new(PremisedInstance {
            variant,
            failing: self.failing == Some(variant),
            untimed_ms: self.untimed_ms,
            premise: self.premise,
            across_cpus: self.across_cpus,
            counter: self.counter,
            lock: self.lock,
            ops: AtomicU64::new(0),
            paused: Default::default(),
        }))
    }
}

impl Instance for PremisedInstance {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let n = 10.min(ctx.max_ops);
        // A variant whose mechanism "did not run" counts nothing.
        if !self.failing {
            self.ops.fetch_add(n, Ordering::Relaxed);
        }
        if self.lock.is_some() {
            let (premise, other) = (
                ksync::SpinMutex::<PremiseTestLock, ()>::new(()),
                ksync::SpinMutex::<OtherTestLock, ()>::new(()),
            );
            for _ in 0..n {
                drop(premise.lock());
                drop(other.lock());
            }
        }
        Ok(n)
    }

    fn untimed_due(&self, ctx: &BatchCtx) -> bool {
        self.untimed_ms != 0 && !self.paused[ctx.index as usize].load(Ordering::Relaxed)
    }

    fn untimed(&self, ctx: &BatchCtx) -> Result<(), ScenarioError> {
        assert!(
            !self.paused[ctx.index as usize].swap(true, Ordering::Relaxed),
            "untimed work that was not due"
        );
        std::thread::sleep(std::time::Duration::from_millis(self.untimed_ms));
        Ok(())
    }

    fn counters(&self) -> Vec<(String, i64)> {
        vec![("events".into(), self.ops.load(Ordering::Relaxed) as i64)]
    }

    fn check(&self) -> Result<(), String> {
        for p in &self.paused {
            p.store(false, Ordering::Relaxed);
        }
        Ok(())
    }

    fn lock_classes(&self) -> Vec<&'static ksync::ClassData> {
        use ksync::LockClass;
        match self.lock {
            Some(_) => vec![PremiseTestLock::data()],
            None => Vec::new(),
        }
    }

    fn premises(&self, runs: &[&Run]) -> premise::Premises {
        let figure = match self.lock {
            Some(class) => premise::acquisitions_per_op(runs, class)?,
            None => premise::per_op(runs, self.counter)?,
        };
        let p = PremiseCheck::above_zero(self.premise, figure);
        Ok(vec![if self.across_cpus { p.across_cpus() } else { p }])
    }

    fn teardown(self: Box<Self>) -> Result<(), ScenarioError> {
        let _ = self.variant;
        Ok(())
    }
}

fn run_premised(s: Premised, length: RunLength) -> (Threads, Report) {
    run_premised_with(s, length, false)
}

fn run_premised_with(s: Premised, length: RunLength, lock_stat_all: bool) -> (Threads, Report) {
    let p = Threads::new(2);
    let mut reg = Registry::new();
    reg.add(s);
    let mut req = request(&["seed004-readtwice"], &[1, 2], 2, length);
    req.scenarios[0].1.truncate(1);
    req.lock_stat_all = lock_stat_all;
    let report = run(&p, &reg, &req);
    (p, report)
}

#[test]
fn every_premise_is_judged_per_variant_and_point_and_recorded_in_end() {
    let _g = serial();
    let (p, report) = run_premised(Premised::new(None), COUNTED);
    assert!(report.passed(), "{:?}", report.end);
    let end = &p.of_type("end")[0];
    let premises = end["premises"].as_array().unwrap();
    // Two variants and the A/A control (A') at two CPU counts.
    assert_eq!(premises.len(), 6, "{premises:?}");
    for pr in premises {
        assert_eq!(pr["name"], DECLARED);
        assert_eq!(pr["held"], true);
        // Every operation counted one event: the figure is over the measured runs only.
        assert_eq!(pr["figure"], 1.0);
        assert_eq!(pr["expect"], "> 0");
    }
    assert_eq!(report.end.premises.len(), 6);
}

#[test]
fn a_premise_that_does_not_hold_fails_the_benchmark_like_an_invariant() {
    let _g = serial();
    let (_p, report) = run_premised(Premised::new(Some("B")), COUNTED);
    assert!(!report.passed());
    assert!(!report.end.invariants_ok);
    assert_eq!(report.end.failures.len(), 1, "{:?}", report.end.failures);
    let f = &report.end.failures[0];
    assert!(
        f.contains("B cpus=1") && f.contains("premise activations_per_op did not hold"),
        "{f}"
    );
    // The benchmark stopped at the first point: A and its control held there, B did not.
    let held: Vec<(String, bool)> = report
        .end
        .premises
        .iter()
        .map(|p| (p.variant.clone(), p.held))
        .collect();
    assert_eq!(
        held,
        [
            ("A".to_string(), true),
            ("B".to_string(), false),
            ("A'".to_string(), true)
        ]
    );
}

/// Runs `s`, which must fail the benchmark as a violated invariant does; its first failure.
fn first_failure(s: Premised) -> String {
    let (_p, report) = run_premised(s, COUNTED);
    assert!(!report.passed());
    assert!(!report.end.invariants_ok);
    report.end.failures[0].clone()
}

/// A premise the catalog does not declare for the scenario is refused: what an instance
/// judges is part of the registration, not something it can add quietly.
#[test]
fn a_premise_the_catalog_does_not_declare_fails_the_benchmark() {
    let _g = serial();
    let f = first_failure(Premised {
        premise: "events_per_op",
        ..Premised::new(None)
    });
    assert!(
        f.contains("A cpus=1: premise events_per_op is not declared in the catalog"),
        "{f}"
    );
}

/// A premise about sharing between CPUs is not applicable at one CPU: recorded as such,
/// neither held nor failed, even where its figure would fail; at two CPUs it is judged.
#[test]
fn a_premise_across_cpus_is_not_applicable_at_one_cpu_and_judged_at_two() {
    let _g = serial();
    let (_p, report) = run_premised(
        Premised {
            across_cpus: true,
            ..Premised::new(Some("B"))
        },
        COUNTED,
    );
    assert!(!report.passed());
    let at_one: Vec<(String, bool, bool)> = report
        .end
        .premises
        .iter()
        .filter(|p| p.cpus == 1)
        .map(|p| (p.variant.clone(), p.applicable, p.held))
        .collect();
    assert_eq!(at_one.len(), 3, "{:?}", report.end.premises);
    assert!(
        at_one
            .iter()
            .all(|(_, applicable, held)| !applicable && !held)
    );
    // B failed at two CPUs, and only there.
    assert_eq!(report.end.failures.len(), 1, "{:?}", report.end.failures);
    let f = &report.end.failures[0];
    assert!(
        f.contains("B cpus=2 instance=0: premise activations_per_op did not hold"),
        "{f}"
    );
    let b_at_two = report
        .end
        .premises
        .iter()
        .find(|p| p.cpus == 2 && p.variant == "B");
    assert!(b_at_two.is_some_and(|p| p.applicable && !p.held));
}

/// A counter a premise needs that the runs did not report is an error naming the scenario
/// and the counter, not a 0.
#[test]
fn a_premise_counter_never_reported_fails_the_benchmark_by_name() {
    let _g = serial();
    let f = first_failure(Premised {
        counter: "activations",
        ..Premised::new(None)
    });
    assert!(
        f.starts_with("seed004-readtwice ")
            && f.contains("a premise needs counter `activations`, which the runs did not report"),
        "{f}"
    );
}

#[test]
fn untimed_work_is_left_out_of_the_run_and_counted() {
    let _g = serial();
    let (p, report) = run_premised(
        Premised {
            untimed_ms: 40,
            ..Premised::new(None)
        },
        COUNTED,
    );
    assert!(report.passed(), "{:?}", report.end);
    for r in &report.runs {
        let untimed = r.counters[crate::engine::measure::UNTIMED_NS];
        // Each CPU slept 40 ms once per run, outside its clock.
        assert!(
            untimed >= 40_000_000 * i64::from(r.cpus),
            "{untimed} ns for {} cpus",
            r.cpus
        );
        // Ten batches of ten increments take far less than the sleep they are not charged.
        assert!(
            (r.ns as i64) < untimed,
            "{} ns timed, {untimed} untimed",
            r.ns
        );
    }
    // The platform heard of each CPU's untimed work once per run, on that CPU, in pairs.
    let cpu_runs: u32 = report.runs.iter().map(|r| r.cpus).sum();
    assert_eq!(p.untimed_pairs.load(Ordering::Relaxed), cpu_runs);
    assert_eq!(p.untimed_misuse.load(Ordering::Relaxed), 0);
}

/// Only the classes an instance's premises read record by default, each listed in every
/// run even at zero; `lock_stat=all` records every class taken.
#[test]
fn only_the_premises_lock_classes_record_unless_all_are_asked_for() {
    use ksync::LockClass;
    let _g = serial();
    let premised = || Premised {
        lock: Some(PremiseTestLock::NAME),
        ..Premised::new(None)
    };
    for all in [false, true] {
        let (_p, report) = run_premised_with(premised(), COUNTED, all);
        assert!(report.passed(), "{:?}", report.end);
        for r in &report.runs {
            // Every operation took each lock once.
            let named = &r.locks[PremiseTestLock::NAME];
            assert_eq!(named.acquisitions, r.ops, "{r:?}");
            match r.locks.get(OtherTestLock::NAME) {
                Some(other) => assert!(all && other.acquisitions == r.ops, "{r:?}"),
                None => assert!(!all, "lock_stat=all lists every lock taken: {r:?}"),
            }
        }
        assert!(
            !PremiseTestLock::data().recording(),
            "a run switches its classes off after it"
        );
    }
    // A premise over a class the instance did not name reads no count, and says so.
    let f = first_failure(Premised {
        lock: Some(OtherTestLock::NAME),
        ..Premised::new(None)
    });
    assert!(
        f.contains("lock statistics of `test.other_lock` (not recorded"),
        "{f}"
    );
}
