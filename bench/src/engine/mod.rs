//! The benchmark engine: the catalog's scenarios run on a platform's CPUs with mmtests'
//! method, printing the `KRESULT` records, the progress lines and the results table.
//!
//! - [`platform`]: what the machine must provide ([`BenchPlatform`]: CPU count, running a
//!   closure on CPUs `0..n` together, a ns clock, a per-CPU quiescent point between batches,
//!   output channels, the `machine` record).
//! - [`scenario`]: what a scenario provides ([`BenchScenario`] builds an [`Instance`] per
//!   (config, variant, CPU count); the instance runs batches, reports counters, checks its
//!   invariants and tears down).
//! - [`registry`]: the table of scenarios a platform can run and the plan made from it;
//!   [`request`]: what was asked (from `abi::BenchConfig`).
//! - [`measure`]: one run on the chosen CPUs; [`mod@run`]: the whole benchmark.
//! - [`storage`]: what the engine owns for a point's instances to borrow (their fault-core
//!   contexts), so that no instance borrows itself.
//!
//! The method (issue 11's, after mmtests, with issue 20's balance and control and issue
//! 32's instances): at each (scenario, config, CPU count) every variant is built
//! `instances` times, the baseline twice over (A and the A/A control A'). Each instance
//! block builds all variants afresh, at new placements (the previous block's instances are
//! still alive while it builds), runs one warm-up round and then its share of the measured
//! rounds, interleaved on the same CPUs of the same boot in the rows of a Williams square
//! ([`RunOrder`]), so that drift (caches warming, the emulator's translation cache filling,
//! frequency changes) lands on both sides of every ratio and no variant always runs first,
//! middle or last. Invariants are checked after every run. Per variant and CPU count the
//! table shows the harmonic mean of the rounds' rates; per comparison the ratio B/A with the
//! 95% interval of [`crate::stats`]'s two-level model (rounds within instances, instances
//! within variants), so placement noise is in the interval. Fault scenarios are also shown
//! as a fraction of the `limit` floor at the same CPU count, which is why `limit` runs
//! first.

pub mod measure;
pub mod order;
pub mod platform;
pub mod premise;
pub mod registry;
pub mod request;
pub mod run;
pub mod scenario;
pub mod storage;

#[cfg(test)]
mod tests;

pub use platform::{BenchPlatform, Output, PlatformError};
pub use premise::PremiseCheck;
pub use registry::Registry;
pub use request::{Request, RequestError, RunLength, RunOrder, WARMUP_ROUNDS};
pub use run::{Report, run};
pub use scenario::{BatchCtx, BenchScenario, Instance, ObjectDesc, ScenarioError, Setup};
pub use storage::Storage;
