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

use crate::record::Run;
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
}

impl PremiseCheck {
    /// `figure` must be above zero.
    #[must_use]
    pub fn above_zero(name: &'static str, figure: f64) -> PremiseCheck {
        PremiseCheck {
            name,
            held: figure > 0.0,
            figure,
            expect: "> 0".into(),
        }
    }

    /// `figure` must be zero.
    #[must_use]
    pub fn zero(name: &'static str, figure: f64) -> PremiseCheck {
        PremiseCheck {
            name,
            held: figure == 0.0,
            figure,
            expect: "== 0".into(),
        }
    }

    /// `figure` must be at least `min`.
    #[must_use]
    pub fn at_least(name: &'static str, figure: f64, min: f64) -> PremiseCheck {
        PremiseCheck {
            name,
            held: figure >= min,
            figure,
            expect: alloc::format!(">= {min}"),
        }
    }
}

/// The sum of counter `name`'s deltas over `runs` (0 where a run lacks it).
#[must_use]
pub fn total(runs: &[&Run], name: &str) -> i64 {
    runs.iter()
        .map(|r| r.counters.get(name).copied().unwrap_or(0))
        .sum()
}

/// Operations over `runs`.
#[must_use]
pub fn ops(runs: &[&Run]) -> u64 {
    runs.iter().map(|r| r.ops).sum()
}

/// Counter `name` per operation over `runs` (0 with no operation).
#[must_use]
pub fn per_op(runs: &[&Run], name: &str) -> f64 {
    let ops = ops(runs);
    if ops == 0 {
        0.0
    } else {
        total(runs, name) as f64 / ops as f64
    }
}

/// Acquisitions of lock class `class` over `runs`.
#[must_use]
pub fn acquisitions(runs: &[&Run], class: &str) -> u64 {
    runs.iter()
        .filter_map(|r| r.locks.get(class))
        .map(|l| l.acquisitions)
        .sum()
}
