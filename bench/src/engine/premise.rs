//! Premises: the events a seed's mechanism needs, counted in the runs and checked.
//!
//! A ratio B/A means something only if the mechanism the seed changed actually ran: seed
//! 001's pairing matters only while the LRU list heads are written under `lru_lock`, seed
//! 004's lock split only while activations and reclaim take that lock, seed 003's line only
//! while every fault takes the per-VMA lock. Each instance states its premises
//! ([`super::Instance::premises`]) as checks over its variant's measured runs at one point
//! (their counter deltas, lock statistics and operations); the engine judges them after the
//! point's rounds, records every verdict in the `end` record and fails the benchmark, as a
//! violated invariant does, when one did not hold.
//!
//! Two kinds. A premise about the path (refaults happen, the list heads are written, no
//! fault falls back to `mmap_lock`) holds as well at one CPU as at many. A premise about
//! sharing ([`PremiseCheck::across_cpus`]) proves the mechanism acted between CPUs: the
//! seed's word was handed between CPUs (`ksync::handoff`: written by another CPU between
//! two writes of one), or the seed's lock was contended; it needs two CPUs, and at one the
//! engine records it as not applicable instead of judging it. Every scenario with a
//! cache-line mechanism states at least one.
//!
//! A counter a premise needs and a run did not report is an error ([`Missing`]), never a 0:
//! the engine stops the benchmark with a line that names the scenario and the counter.

use crate::record::{LockStat, Run};
use alloc::string::String;

/// One premise's verdict, as an instance reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct PremiseCheck {
    /// What is counted (`list_head_writes_per_op`, ...).
    pub name: &'static str,
    /// Whether the runs showed it.
    pub held: bool,
    /// The figure behind the verdict.
    pub figure: f64,
    /// What the figure had to be, in words.
    pub expect: String,
    /// Whether the premise is about sharing between CPUs (a handoff of the seed's line, a
    /// lock contended across CPUs): such a premise cannot hold at one CPU, and the engine
    /// reports it there as not applicable instead of judging it ([`PremiseCheck::across_cpus`]).
    pub across_cpus: bool,
}

impl PremiseCheck {
    fn new(name: &'static str, held: bool, figure: f64, expect: String) -> PremiseCheck {
        PremiseCheck {
            name,
            held,
            figure,
            expect,
            across_cpus: false,
        }
    }

    /// `figure` must be above zero.
    #[must_use]
    pub fn above_zero(name: &'static str, figure: f64) -> PremiseCheck {
        PremiseCheck::new(name, figure > 0.0, figure, "> 0".into())
    }

    /// `figure` must be zero.
    #[must_use]
    pub fn zero(name: &'static str, figure: f64) -> PremiseCheck {
        PremiseCheck::new(name, figure == 0.0, figure, "== 0".into())
    }

    /// `figure` must be at least `min`.
    #[must_use]
    pub fn at_least(name: &'static str, figure: f64, min: f64) -> PremiseCheck {
        PremiseCheck::new(name, figure >= min, figure, alloc::format!(">= {min}"))
    }

    /// `figure` must be exactly `want`, with `ok` the exact comparison of the integer
    /// totals behind it (a ratio of floats would round).
    #[must_use]
    pub fn exactly(name: &'static str, ok: bool, figure: f64, want: u64) -> PremiseCheck {
        PremiseCheck::new(name, ok, figure, alloc::format!("== {want}"))
    }

    /// The same premise, marked as one about sharing between CPUs: at one CPU it is not
    /// applicable (and not judged).
    #[must_use]
    pub fn across_cpus(self) -> PremiseCheck {
        PremiseCheck {
            across_cpus: true,
            ..self
        }
    }
}

/// A counter a premise needs that the runs did not report: an error, never a 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing(pub String);

/// An instance's premises over its runs, or the counter one of them needed and lacked.
pub type Premises = Result<alloc::vec::Vec<PremiseCheck>, Missing>;

/// The sum of counter `name`'s deltas over `runs`; every run must report it (a counter a
/// run did not report, or no run at all, is [`Missing`]).
pub fn total(runs: &[&Run], name: &str) -> Result<i64, Missing> {
    if runs.is_empty() {
        return Err(Missing(alloc::format!(
            "counter `{name}` (no measured run)"
        )));
    }
    runs.iter()
        .map(|r| {
            r.counters
                .get(name)
                .copied()
                .ok_or_else(|| Missing(alloc::format!("counter `{name}`")))
        })
        .sum()
}

/// Operations over `runs`.
#[must_use]
pub fn ops(runs: &[&Run]) -> u64 {
    runs.iter().map(|r| r.ops).sum()
}

fn per(runs: &[&Run], what: &str, count: f64) -> Result<f64, Missing> {
    match ops(runs) {
        0 => Err(Missing(alloc::format!("operations to count `{what}` per"))),
        n => Ok(count / n as f64),
    }
}

/// Counter `name` per operation over `runs`.
pub fn per_op(runs: &[&Run], name: &str) -> Result<f64, Missing> {
    per(runs, name, total(runs, name)? as f64)
}

/// Field `field` of lock class `class`'s statistics, summed over `runs`. Every run must
/// list the class: the engine lists, even at zero, every class the instance named in
/// [`super::Instance::lock_classes`], and only those are sure to have recorded (a class
/// that was not recording would read as never taken).
fn lock_total(runs: &[&Run], class: &str, field: fn(&LockStat) -> u64) -> Result<u64, Missing> {
    if runs.is_empty() {
        return Err(Missing(alloc::format!(
            "lock statistics of `{class}` (no measured run)"
        )));
    }
    runs.iter()
        .map(|r| {
            r.locks.get(class).map(field).ok_or_else(|| {
                Missing(alloc::format!(
                    "lock statistics of `{class}` (not recorded: the instance's lock_classes \
                     does not name it)"
                ))
            })
        })
        .sum()
}

/// Acquisitions of lock class `class` over `runs`.
pub fn acquisitions(runs: &[&Run], class: &str) -> Result<u64, Missing> {
    lock_total(runs, class, |l| l.acquisitions)
}

/// Acquisitions of lock class `class` per operation over `runs`.
pub fn acquisitions_per_op(runs: &[&Run], class: &str) -> Result<f64, Missing> {
    per(runs, class, acquisitions(runs, class)? as f64)
}

/// Handoffs of class `class` (a lock, or a shared word: `ksync::handoff`) per operation
/// over `runs`: acquisitions or writes that found the word last written by another CPU.
pub fn handoffs_per_op(runs: &[&Run], class: &str) -> Result<f64, Missing> {
    per(runs, class, lock_total(runs, class, |l| l.handoffs)? as f64)
}

/// Contended acquisitions of lock class `class` per operation over `runs`: the lock was
/// held by another CPU when this one came for it.
pub fn contended_per_op(runs: &[&Run], class: &str) -> Result<f64, Missing> {
    per(
        runs,
        class,
        lock_total(runs, class, |l| l.contended)? as f64,
    )
}
