//! What a benchmark scenario is, as data: its name, configurations, variants, comparisons,
//! premises, mechanism and the seed's published figure ([`Scenario`] and its parts).
//!
//! The types live in `abi` (the leaf both the kernel and the runner use) because they are
//! part of the contract: a scenario, config or variant name in a `KRESULT` line means what
//! its entry says. The entries themselves do not: each experiment's entry is a constant of
//! its scenario module in `bench` (`bench::scenarios::seed001::CATALOG`, ...), beside the
//! code that runs it, and `bench::catalog::SCENARIOS` lists them in table order. The
//! kernel's command line checks only the shape of a `scenarios=` list here; the names are
//! checked against that table by the benchmark's request (`bench::engine::Request`) and by
//! the runner before it boots.
//!
//! A comparison is always "B over A" of the rate (ops/s): above 1.0 means B is faster. The
//! published figures are stored the same way, as ratios B/A at a thread count, with the
//! absolute rates where the seed gave them.

/// One variant of a scenario: what is compiled in and chosen at run time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    /// The name in records and tables (`base@+0`, `A`, ...).
    pub name: &'static str,
    /// What it is, in a few words.
    pub description: &'static str,
}

/// One A/B comparison: the rate of `b` over the rate of `a`, per config and CPU count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComparisonDef {
    /// The baseline variant.
    pub a: &'static str,
    /// The variant compared with it.
    pub b: &'static str,
    /// What the patch changes between them.
    pub change: Change,
}

/// What a comparison's patch changes: where data lies, or the code that runs.
///
/// A layout is a type parameter here (`lru_gen_folio`'s, `mem_cgroup_per_node`'s,
/// `vm_area_struct`'s, `page_counter`'s), so A and B of a [`Change::Layout`] run the same
/// source, compiled once per layout: the same instructions from two copies at two
/// addresses. Only where the linker put each copy can then make their unchained block
/// transitions differ (a jump across a 4 KiB page, which TCG cannot chain), and a timing
/// difference that follows from it is the build's, not the seed's: the runner's table
/// marks such a gap under the comparison (`bench::cost::placement_gaps`) and a test of the
/// kernel's own build refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// B moves data only: the same code runs, from another copy.
    Layout,
    /// B runs other code (another stat path, another lock, another algorithm).
    Code,
}

/// One figure the seed published, as the ratio B/A of one of our comparisons.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PublishedPoint {
    /// The comparison's baseline variant (ours).
    pub a: &'static str,
    /// The comparison's other variant (ours).
    pub b: &'static str,
    /// Our config the figure corresponds to.
    pub config: &'static str,
    /// Threads (jobs, readers) the seed ran.
    pub threads: u32,
    /// The seed's B/A ratio of rates.
    pub ratio: f64,
    /// The seed's absolute A and B rates, where given (in the seed's unit).
    pub absolute: Option<(f64, f64)>,
}

/// What a seed published: a sentence and the figures behind it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    /// The seed's claim in words, with its machine.
    pub text: &'static str,
    /// The unit of [`PublishedPoint::absolute`].
    pub unit: &'static str,
    /// Whether that unit counts all threads together or one thread.
    pub rate: Rate,
    /// The figures, one per (comparison, config, thread count).
    pub points: &'static [PublishedPoint],
}

/// What one of a seed's absolute rates counts: the time one thread takes per operation is
/// `threads / rate` for a [`Rate::Total`], `1 / rate` for a [`Rate::PerThread`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// Operations per second of all threads together (IOPS, pages/s).
    Total,
    /// Operations per second of one thread (faults/cpu/s, ops/process/s).
    PerThread,
}

/// One scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scenario {
    /// The name in `scenarios=`, records and tables.
    pub name: &'static str,
    /// What the workers do, in one line.
    pub summary: &'static str,
    /// What one operation is.
    pub op: &'static str,
    /// The configurations, in table order (seed002's are memcg counts; `memcgs=` replaces
    /// them).
    pub configs: &'static [&'static str],
    /// The variants, in table order.
    pub variants: &'static [Variant],
    /// The comparisons reported per config and CPU count.
    pub comparisons: &'static [ComparisonDef],
    /// Whether an operation is a page fault, so its rate is shown as a fraction of `limit`.
    pub fault_path: bool,
    /// The seed's figures (`None` for `limit`).
    pub published: Option<Published>,
    /// The premises every variant's instance judges (the names in the `end` record's
    /// `premises`, in the order the instance reports them): what must have happened in the
    /// runs for the ratio to mean anything. Empty only for `limit`; the engine refuses a
    /// premise an instance reports that is not listed here.
    pub premises: &'static [&'static str],
    /// The cache lines the seed is about, for the coherence plugin's mechanism verdict
    /// (`kx bench --coherence`); `None` where the seed is not about lines moving between
    /// CPUs (seed002's cost is algorithmic; `limit` has no seed).
    pub mechanism: Option<Mechanism>,
}

/// The fields whose lines a seed's patch changes, and which way.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mechanism {
    /// Field names as the layout tables print them (`kx layout`, the objects' `KOBJECT`
    /// lines): the coherence report counts the transfers on every unit holding one of them.
    pub fields: &'static [&'static str],
    /// The unit the mechanism acts on: 64 (a line) or 128 (a line and its adjacent-line
    /// prefetcher's buddy).
    pub line_bytes: u64,
    /// Whether the patch (B) should reduce those transfers (`false`: the seed reports B
    /// slower because it adds them, seed003).
    pub b_reduces: bool,
    /// The mechanism in one sentence.
    pub what: &'static str,
}

impl Scenario {
    /// The variant called `name`.
    #[must_use]
    pub fn variant(&self, name: &str) -> Option<&'static Variant> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// Whether `config` is one of the default configs.
    #[must_use]
    pub fn has_config(&self, config: &str) -> bool {
        self.configs.contains(&config)
    }
}

/// The floor scenario every fault scenario's rate is compared with.
pub const LIMIT: &str = "limit";

impl Variant {
    /// A variant called `name`, described in a few words.
    #[must_use]
    pub const fn new(name: &'static str, description: &'static str) -> Variant {
        Variant { name, description }
    }
}

impl ComparisonDef {
    /// The comparison of `b` over `a`, where B only moves data ([`Change::Layout`]).
    #[must_use]
    pub const fn layout(a: &'static str, b: &'static str) -> ComparisonDef {
        ComparisonDef {
            a,
            b,
            change: Change::Layout,
        }
    }

    /// The comparison of `b` over `a`, where B runs other code ([`Change::Code`]).
    #[must_use]
    pub const fn code(a: &'static str, b: &'static str) -> ComparisonDef {
        ComparisonDef {
            a,
            b,
            change: Change::Code,
        }
    }
}

impl PublishedPoint {
    /// A figure the seed gave as its absolute A and B rates, `(a, b)` (the ratio is theirs).
    #[must_use]
    pub const fn from_rates(
        a: &'static str,
        b: &'static str,
        config: &'static str,
        threads: u32,
        rates: (f64, f64),
    ) -> PublishedPoint {
        PublishedPoint {
            a,
            b,
            config,
            threads,
            ratio: rates.1 / rates.0,
            absolute: Some(rates),
        }
    }

    /// A figure the seed gave only as a ratio B/A.
    #[must_use]
    pub const fn from_ratio(
        a: &'static str,
        b: &'static str,
        config: &'static str,
        threads: u32,
        ratio: f64,
    ) -> PublishedPoint {
        PublishedPoint {
            a,
            b,
            config,
            threads,
            ratio,
            absolute: None,
        }
    }
}

/// The seed's figure for comparison `a`/`b` of `scenario` under `config` closest to `cpus`
/// threads (the same count when the seed has it), if the seed published any for it.
#[must_use]
pub fn published_near(
    scenario: &Scenario,
    a: &str,
    b: &str,
    config: &str,
    cpus: u32,
) -> Option<&'static PublishedPoint> {
    let published = scenario.published?;
    published
        .points
        .iter()
        .filter(|p| p.a == a && p.b == b && p.config == config)
        .min_by_key(|p| p.threads.abs_diff(cpus))
}
