//! `bench`: the seeds' experiments as A/B scenarios, platform neutral.
//!
//! This crate holds what the kernel's benchmark engine and the host runner share about a
//! benchmark run, starting with the scenarios themselves ([`catalog`]: each experiment's
//! entry lives in its scenario module):
//!
//! - [`stats`]: harmonic means, coefficient of variation, the ratio B/A paired by round with
//!   its 95% interval (Student's t on the per-round log ratios; Welch's t where nothing
//!   pairs), p-values and Holm's correction;
//! - [`two_level`]: the ratio B/A over instance blocks, with the instances' placement
//!   variance in its interval (rounds within instances, instances within variants);
//! - [`record`]: the `KRESULT {json}` records (`machine`, `plan`, `run`, `comparison`, `note`,
//!   `end`), written as one-line JSON by serde ([`json`]) in the kernel and read back by the
//!   same types in the runner;
//! - [`progress`]: the human-readable `KPROGRESS` line;
//! - [`summary`]: runs grouped per scenario, config and CPU count, with comparisons
//!   (recomputed where a log lost them), Holm's correction and the marks (the A/A control);
//! - [`primary`]: each experiment's one primary comparison and the fixed family of Holm's
//!   correction;
//! - [`verdict`]: one line per seed: reproduced, not shown or contradicted;
//! - [`table`]: the results table in 100 or 80 columns with each seed's figure beside ours;
//! - [`engine`]: the benchmark engine (platform and scenario traits, plan, interleaved
//!   rounds, measurement, invariant checks, records), run by the kernel on its CPUs and by
//!   `kx bench --host` on pinned host threads;
//! - [`scenarios`]: the scenarios and the one table they are registered in;
//! - [`vm`]: what the seeds' scenarios need from a platform's fault core ([`vm::VmHost`]),
//!   and its host-thread implementation ([`vm::soft::SoftHost`]).
//!
//! Data flows `kernel -> bench -> mm -> memcg -> lru -> ksync`; `abi` is the leaf everything
//! may use.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate alloc;

pub mod catalog;
pub mod cost;
pub mod engine;
pub mod json;
pub mod primary;
pub mod progress;
pub mod record;
pub mod scenarios;
#[cfg(test)]
mod statistics_tests;
pub mod stats;
pub mod summary;
pub mod table;
pub mod two_level;
pub mod verdict;
pub mod vm;

pub use cost::Cost;
pub use progress::Progress;
pub use record::{
    Comparison, CpuShare, End, KResult, LockStat, Machine, Note, Plan, PlanScenario, Platform,
    PmuCpu, Premise, Record, Run, RunPmu,
};
pub use summary::Summary;
pub use table::{Style, Table};
pub use verdict::{Outcome, Verdict};
