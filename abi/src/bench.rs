//! The benchmark's command-line keys (`run=bench` only), parsed into a [`BenchConfig`].
//!
//! `scenarios=all|NAME[,NAME...]` (names of lowercase letters, digits and `-`, no repeats;
//! whether each names a scenario is the benchmark's to say: see [`crate::catalog`]),
//! `bench_cpus=1,2,4` (each 1..=[`crate::cmdline::MAX_CPUS`], strictly increasing),
//! `rounds=1..=100` (a multiple of `instances=`), `instances=1..=16` (instances of each
//! variant per point, each built afresh),
//! `seconds=0.01..=3600` (per run, decimal with up to six fractional digits), `memcgs=N,...`
//! (seed002's memcg counts, each 1..=16384, strictly increasing), `quick=0|1`,
//! `ci_width=0.01..=100` (percent, two decimals: the interval half-width to add rounds for)
//! and `budget=1..=86400` (seconds the benchmark may take while it adds rounds). The lists
//! are kept as the validated text (so [`BenchConfig`] stays `Copy` and allocation-free, as
//! the rest of [`crate::Config`]) and iterated on demand. Keys that are not given keep their
//! defaults, which `quick=1` shortens; the runner (`kx bench`) and a USB image's baked-in
//! command line go through the same parser, so both sides agree on every default.

use crate::catalog;

/// Measured rounds per variant without `rounds=`: one per instance.
pub const DEFAULT_ROUNDS: u32 = 4;
/// Instances of each variant per point without `instances=` (issue 32: placement is a
/// random effect). Placement noise dominates round noise, so instances narrow the interval
/// more than rounds do: with three variants, four instances of one round give 6 degrees of
/// freedom and a half-width of about 1.7 placement standard deviations, two of two rounds 2
/// and 4.3.
pub const DEFAULT_INSTANCES: u32 = 4;
/// Instances with `quick=1` and without `instances=`: the fewest that measure the
/// placement noise at all.
pub const QUICK_INSTANCES: u32 = 2;
/// Largest `instances=`.
pub const MAX_INSTANCES: u32 = 16;
/// The largest `budget=`, seconds (a day).
pub const MAX_BUDGET: u32 = 86_400;

/// Measured rounds per variant with `quick=1` and without `rounds=`.
pub const QUICK_ROUNDS: u32 = 2;
/// Largest `rounds=`.
pub const MAX_ROUNDS: u32 = 100;
/// Seconds per run without `seconds=`. With every scenario, the default run on two CPUs is
/// 27 (scenario, config, variant) triples x 2 CPU counts x 4 instances x (1 warm-up + 1
/// round) = 432 runs of 0.4 s: 173 s of measurement, leaving most of `kx bench`'s 10
/// minutes to setup.
pub const DEFAULT_SECONDS: Seconds = Seconds { micros: 400_000 };
/// Seconds per run with `quick=1` and without `seconds=`.
pub const QUICK_SECONDS: Seconds = Seconds { micros: 100_000 };
/// Smallest `seconds=`.
pub const MIN_SECONDS: Seconds = Seconds { micros: 10_000 };
/// Largest `seconds=`.
pub const MAX_SECONDS: Seconds = Seconds {
    micros: 3_600_000_000,
};
/// Largest memcg count in `memcgs=`.
pub const MAX_MEMCGS: u32 = 16_384;
/// seed002's memcg counts with `quick=1` and without `memcgs=` (the seed's 1500 included).
pub const QUICK_MEMCGS: &str = "10,1500";
/// The largest CPU count `quick=1` runs without `bench_cpus=`: it runs 1 and 2 (one CPU
/// alone and the smallest contention), whatever the machine.
pub const QUICK_MAX_CPUS: u32 = 2;

/// A run's duration, exact to the microsecond (parsed from decimal text, never a float).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seconds {
    micros: u64,
}

impl Seconds {
    /// The duration in nanoseconds.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.micros * 1000
    }

    /// The duration in microseconds.
    #[must_use]
    pub const fn as_micros(self) -> u64 {
        self.micros
    }

    /// From microseconds.
    #[must_use]
    pub const fn from_micros(micros: u64) -> Self {
        Seconds { micros }
    }

    /// The duration in seconds, as a float (for records and tables only).
    #[must_use]
    pub fn as_f64(self) -> f64 {
        self.micros as f64 / 1e6
    }

    /// Parses `2`, `0.5`, `0.25`, `10.125`: digits, optionally a point and 1..=6 digits.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let (int, frac) = match text.split_once('.') {
            Some((i, f)) => (i, f),
            None => (text, ""),
        };
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || int.len() > 7 || !digits(int) || frac.len() > 6 || !digits(frac) {
            return None;
        }
        if text.contains('.') && frac.is_empty() {
            return None;
        }
        let mut micros: u64 = int.parse().ok()?;
        micros = micros.checked_mul(1_000_000)?;
        let mut scale = 100_000;
        for b in frac.bytes() {
            micros += u64::from(b - b'0') * scale;
            scale /= 10;
        }
        Some(Seconds { micros })
    }
}

impl core::fmt::Display for Seconds {
    /// `0.5`, `2`, `0.125`: the shortest decimal that [`Seconds::parse`] reads back.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (int, mut frac) = (self.micros / 1_000_000, self.micros % 1_000_000);
        write!(f, "{int}")?;
        if frac != 0 {
            let mut width = 6;
            while frac % 10 == 0 {
                frac /= 10;
                width -= 1;
            }
            write!(f, ".{frac:0width$}")?;
        }
        Ok(())
    }
}

/// Which scenarios to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScenarioSelection<'a> {
    /// Every scenario of the catalog, in its order.
    #[default]
    All,
    /// A comma-separated list of catalog names (validated, no repeats), in the given order.
    Named(&'a str),
}

impl<'a> ScenarioSelection<'a> {
    /// The scenarios of `catalog` selected, in order: all of them, or the named ones in the
    /// list's order (a name `catalog` lacks is skipped: [`Self::unknown`] finds it).
    pub fn select(
        &self,
        catalog: &'static [catalog::Scenario],
    ) -> impl Iterator<Item = &'static catalog::Scenario> + 'a {
        let named = match *self {
            ScenarioSelection::All => None,
            ScenarioSelection::Named(list) => Some(list),
        };
        catalog.iter().filter(move |_| named.is_none()).chain(
            named
                .into_iter()
                .flat_map(|l| l.split(','))
                .filter_map(move |n| catalog.iter().find(|s| s.name == n)),
        )
    }

    /// The first name that `catalog` has no scenario for.
    #[must_use]
    pub fn unknown(&self, catalog: &[catalog::Scenario]) -> Option<&'a str> {
        match *self {
            ScenarioSelection::All => None,
            ScenarioSelection::Named(list) => list
                .split(',')
                .find(|n| !catalog.iter().any(|s| s.name == *n)),
        }
    }

    /// Whether `name` is selected.
    #[must_use]
    pub fn includes(&self, name: &str) -> bool {
        match *self {
            ScenarioSelection::All => true,
            ScenarioSelection::Named(list) => list.split(',').any(|n| n == name),
        }
    }
}

/// A validated, strictly increasing list of positive numbers (`1,2,4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumberList<'a>(&'a str);

impl<'a> NumberList<'a> {
    /// Parses `text` if every entry is in `1..=max` and the entries strictly increase.
    #[must_use]
    pub fn parse(text: &'a str, max: u32) -> Option<Self> {
        let mut last = 0;
        for word in text.split(',') {
            if word.is_empty() || word.len() > 6 || !word.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let n: u32 = word.parse().ok()?;
            if n == 0 || n > max || n <= last {
                return None;
            }
            last = n;
        }
        Some(NumberList(text))
    }

    /// The numbers, in order.
    pub fn iter(self) -> impl Iterator<Item = u32> + 'a {
        self.0.split(',').filter_map(|w| w.parse().ok())
    }

    /// The list as written.
    #[must_use]
    pub fn as_str(&self) -> &'a str {
        self.0
    }
}

/// The benchmark's part of the command line; see the module doc for each key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BenchConfig<'a> {
    /// `scenarios=`.
    pub scenarios: ScenarioSelection<'a>,
    /// `bench_cpus=` (`None`: [`default_cpu_counts`] of the online CPUs).
    pub cpus: Option<NumberList<'a>>,
    /// `rounds=`.
    pub rounds: Option<u32>,
    /// `instances=`.
    pub instances: Option<u32>,
    /// `seconds=`.
    pub seconds: Option<Seconds>,
    /// `memcgs=` (`None`: seed002's catalog configs, or [`QUICK_MEMCGS`]).
    pub memcgs: Option<NumberList<'a>>,
    /// `quick=1`.
    pub quick: bool,
    /// `ci_width=`: the 95% interval half-width every comparison should reach, in
    /// hundredths of a percent (`ci_width=2.5` is 250); rounds are added until it does or
    /// the budget is spent.
    pub ci_width: Option<u32>,
    /// `budget=`: seconds the whole benchmark may take before it stops adding rounds.
    pub budget: Option<u32>,
    /// `objects=1`: each scenario instance names the objects it uses, with their physical
    /// addresses and fields (`KOBJECT` lines), for the coherence plugin's hot lines.
    pub objects: bool,
    /// `lock_stat=all`: lock statistics for every lock class in every run; `premises` (the
    /// default): only for the classes the running scenario's premises read, so the other
    /// locks on the measured path cost what they cost without `CONFIG_LOCK_STAT`.
    pub lock_stat_all: bool,
}

impl<'a> BenchConfig<'a> {
    /// Measured rounds per variant.
    #[must_use]
    pub fn rounds(&self) -> u32 {
        self.rounds.unwrap_or(if self.quick {
            QUICK_ROUNDS
        } else {
            DEFAULT_ROUNDS
        })
    }

    /// Instances of each variant per point: the measured rounds are split evenly among them.
    #[must_use]
    pub fn instances(&self) -> u32 {
        self.instances.unwrap_or(if self.quick {
            QUICK_INSTANCES
        } else {
            DEFAULT_INSTANCES
        })
    }

    /// Duration of one run.
    #[must_use]
    pub fn seconds(&self) -> Seconds {
        self.seconds.unwrap_or(if self.quick {
            QUICK_SECONDS
        } else {
            DEFAULT_SECONDS
        })
    }

    /// The CPU counts to run on, given how many CPUs are online: `bench_cpus=` as given
    /// (the caller checks them against `online`), else [`default_cpu_counts`] of `online`
    /// (with `quick=1`, of at most [`QUICK_MAX_CPUS`]).
    pub fn cpu_counts(&self, online: u32) -> impl Iterator<Item = u32> + 'a {
        let explicit = self.cpus;
        let upto = if self.quick {
            online.min(QUICK_MAX_CPUS)
        } else {
            online
        };
        explicit
            .into_iter()
            .flat_map(|l| l.iter())
            .chain(default_cpu_counts(upto).filter(move |_| explicit.is_none()))
    }

    /// The configs of `scenario` this run uses: its catalog entry's, except seed002's memcg
    /// counts, which `memcgs=` replaces and `quick=1` shortens.
    pub fn configs(&self, scenario: &'static catalog::Scenario) -> impl Iterator<Item = &'a str> {
        let list = match (scenario.name == "seed002-reclaim", self.memcgs, self.quick) {
            (false, _, _) => None,
            (true, Some(l), _) => Some(l.as_str()),
            (true, None, true) => Some(QUICK_MEMCGS),
            (true, None, false) => None,
        };
        list.into_iter().flat_map(|l| l.split(',')).chain(
            scenario
                .configs
                .iter()
                .copied()
                .filter(move |_| list.is_none()),
        )
    }

    /// Applies `key=value`; `Err(())` when the value is not accepted.
    pub(crate) fn set(&mut self, key: &str, value: &'a str) -> Result<(), ()> {
        match key {
            "scenarios" => {
                self.scenarios = match value {
                    "all" => ScenarioSelection::All,
                    list if valid_scenario_list(list) => ScenarioSelection::Named(list),
                    _ => return Err(()),
                }
            }
            "bench_cpus" => {
                self.cpus = Some(NumberList::parse(value, crate::cmdline::MAX_CPUS).ok_or(())?)
            }
            "rounds" => {
                let n: u32 = value.parse().map_err(|_| ())?;
                if !(1..=MAX_ROUNDS).contains(&n) {
                    return Err(());
                }
                self.rounds = Some(n);
            }
            "instances" => {
                let n: u32 = value.parse().map_err(|_| ())?;
                if !(1..=MAX_INSTANCES).contains(&n) {
                    return Err(());
                }
                self.instances = Some(n);
            }
            "seconds" => {
                let s = Seconds::parse(value).ok_or(())?;
                if !(MIN_SECONDS..=MAX_SECONDS).contains(&s) {
                    return Err(());
                }
                self.seconds = Some(s);
            }
            "memcgs" => self.memcgs = Some(NumberList::parse(value, MAX_MEMCGS).ok_or(())?),
            "ci_width" => {
                // 0.01..=100 percent, at most two decimals.
                let s = Seconds::parse(value).ok_or(())?;
                let hundredths = s.as_micros() / 10_000;
                if s.as_micros() % 10_000 != 0 || !(1..=10_000).contains(&hundredths) {
                    return Err(());
                }
                self.ci_width = Some(hundredths as u32);
            }
            "budget" => {
                let n: u32 = value.parse().map_err(|_| ())?;
                if !(1..=MAX_BUDGET).contains(&n) {
                    return Err(());
                }
                self.budget = Some(n);
            }
            "lock_stat" => {
                self.lock_stat_all = match value {
                    "premises" => false,
                    "all" => true,
                    _ => return Err(()),
                }
            }
            "objects" => {
                self.objects = match value {
                    "0" => false,
                    "1" => true,
                    _ => return Err(()),
                }
            }
            "quick" => {
                self.quick = match value {
                    "0" => false,
                    "1" => true,
                    _ => return Err(()),
                }
            }
            _ => return Err(()),
        }
        Ok(())
    }
}

/// 1, 2, 4, ... below `online`, then `online` itself (so 6 CPUs give 1, 2, 4, 6).
pub fn default_cpu_counts(online: u32) -> impl Iterator<Item = u32> {
    let online = online.max(1);
    core::iter::successors(Some(1u32), |&n| n.checked_mul(2))
        .take_while(move |&n| n < online)
        .chain(core::iter::once(online))
}

/// A list of scenario names: each made of lowercase letters, digits and `-` (a catalog
/// name's shape), none repeated. Whether each names a scenario is checked against the
/// catalog by the benchmark ([`ScenarioSelection::unknown`]).
fn valid_scenario_list(list: &str) -> bool {
    let names = || list.split(',');
    names().enumerate().all(|(i, n)| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !names().take(i).any(|o| o == n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Scenario, Variant};
    use crate::cmdline::{CmdlineError, parse};
    use std::vec::Vec;

    /// A catalog of a few entries' names and configs (the benchmark's own is in `bench`).
    const CATALOG: &[Scenario] = &[
        entry("seed001-faultfree", &["anon", "shmem"]),
        entry("seed004-readtwice", &["2-per-memcg"]),
        entry("seed002-reclaim", &["10", "1500", "10000"]),
        entry("limit", &["anon"]),
    ];

    const ONE_VARIANT: &[Variant] = &[Variant::new("A", "")];

    const fn entry(name: &'static str, configs: &'static [&'static str]) -> Scenario {
        Scenario {
            name,
            summary: "",
            op: "",
            configs,
            variants: ONE_VARIANT,
            comparisons: &[],
            fault_path: false,
            published: None,
            premises: &[],
            mechanism: None,
        }
    }

    fn named(name: &str) -> &'static Scenario {
        CATALOG.iter().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn seconds_parse_and_print_exactly() {
        for (text, micros) in [
            ("0.5", 500_000),
            ("2", 2_000_000),
            ("0.01", 10_000),
            ("10.125", 10_125_000),
            ("0.000001", 1),
        ] {
            let s = Seconds::parse(text).unwrap();
            assert_eq!(s.as_micros(), micros, "{text}");
            assert_eq!(std::format!("{s}"), text);
        }
        for bad in [
            "",
            ".5",
            "1.",
            "1e3",
            "-1",
            "0.0000001",
            "1,5",
            "12345678",
            " 1",
        ] {
            assert_eq!(Seconds::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn defaults_and_quick() {
        let c = parse("run=bench", false).unwrap().bench;
        assert_eq!(c, BenchConfig::default());
        assert_eq!((c.rounds(), c.seconds()), (DEFAULT_ROUNDS, DEFAULT_SECONDS));
        assert_eq!(c.cpu_counts(6).collect::<Vec<_>>(), [1, 2, 4, 6]);
        assert_eq!(c.cpu_counts(8).collect::<Vec<_>>(), [1, 2, 4, 8]);
        assert_eq!(c.cpu_counts(1).collect::<Vec<_>>(), [1]);
        assert_eq!(
            c.configs(named("seed002-reclaim")).collect::<Vec<_>>(),
            ["10", "1500", "10000"]
        );
        assert_eq!(c.scenarios.select(CATALOG).count(), CATALOG.len());
        let q = parse("run=bench quick=1", false).unwrap().bench;
        assert_eq!((q.rounds(), q.seconds()), (QUICK_ROUNDS, QUICK_SECONDS));
        assert_eq!(q.cpu_counts(16).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(q.cpu_counts(1).collect::<Vec<_>>(), [1]);
        let s = named("seed002-reclaim");
        assert_eq!(q.configs(s).collect::<Vec<_>>(), ["10", "1500"]);
        let s = named("seed001-faultfree");
        assert_eq!(q.configs(s).collect::<Vec<_>>(), ["anon", "shmem"]);
    }

    #[test]
    fn instances_divide_the_rounds() {
        use crate::cmdline::CmdlineError;
        let c = parse("run=bench", false).unwrap().bench;
        assert_eq!(c.instances(), DEFAULT_INSTANCES);
        assert!(c.rounds().is_multiple_of(c.instances()));
        let q = parse("run=bench quick=1", false).unwrap().bench;
        assert_eq!(q.instances(), QUICK_INSTANCES);
        assert!(q.rounds().is_multiple_of(q.instances()));
        let c = parse("run=bench rounds=6 instances=3", false)
            .unwrap()
            .bench;
        assert_eq!((c.rounds(), c.instances()), (6, 3));
        assert_eq!(
            parse("run=bench rounds=5", false),
            Err(CmdlineError::RoundsPerInstance {
                rounds: 5,
                instances: DEFAULT_INSTANCES
            })
        );
        assert_eq!(
            parse("run=bench rounds=4 instances=3", false),
            Err(CmdlineError::RoundsPerInstance {
                rounds: 4,
                instances: 3
            })
        );
        for bad in ["0", "17", "x", "-1"] {
            assert!(
                matches!(
                    parse(&format!("run=bench instances={bad}"), false),
                    Err(CmdlineError::BadValue {
                        key: "instances",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        assert_eq!(
            parse("run=test instances=2", false),
            Err(CmdlineError::BenchKeyWithoutRun("instances"))
        );
    }

    #[test]
    fn every_key_parses() {
        let c = parse(
            "run=bench scenarios=seed004-readtwice,limit bench_cpus=1,2,4 rounds=3 \
             instances=3 seconds=0.25 memcgs=10,100 quick=1 objects=1 lock_stat=all",
            false,
        )
        .unwrap()
        .bench;
        let names: Vec<_> = c.scenarios.select(CATALOG).map(|s| s.name).collect();
        assert_eq!(names, ["seed004-readtwice", "limit"]);
        assert!(c.scenarios.includes("limit") && !c.scenarios.includes("seed003-pft"));
        assert_eq!(c.scenarios.unknown(CATALOG), None);
        assert_eq!(c.cpu_counts(2).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!((c.rounds(), c.instances()), (3, 3));
        assert_eq!(c.seconds().as_nanos(), 250_000_000);
        assert_eq!(
            c.configs(named("seed002-reclaim")).collect::<Vec<_>>(),
            ["10", "100"]
        );
        assert_eq!(
            c.configs(named("seed001-faultfree")).collect::<Vec<_>>(),
            ["anon", "shmem"]
        );
        assert!(c.quick);
        assert!(c.objects);
        assert!(c.lock_stat_all);
        let default = parse("run=bench lock_stat=premises", false).unwrap().bench;
        assert!(!default.lock_stat_all);
        assert!(!parse("run=bench", false).unwrap().bench.lock_stat_all);
    }

    #[test]
    fn bad_values_name_the_key() {
        for (line, key, value) in [
            ("run=bench scenarios=Seed001", "scenarios", "Seed001"),
            (
                "run=bench scenarios=limit,,limit",
                "scenarios",
                "limit,,limit",
            ),
            (
                "run=bench scenarios=limit,limit",
                "scenarios",
                "limit,limit",
            ),
            ("run=bench scenarios=", "scenarios", ""),
            ("run=bench bench_cpus=2,1", "bench_cpus", "2,1"),
            ("run=bench bench_cpus=1,1", "bench_cpus", "1,1"),
            ("run=bench bench_cpus=0", "bench_cpus", "0"),
            ("run=bench bench_cpus=257", "bench_cpus", "257"),
            ("run=bench bench_cpus=1,,2", "bench_cpus", "1,,2"),
            ("run=bench rounds=0", "rounds", "0"),
            ("run=bench rounds=101", "rounds", "101"),
            ("run=bench seconds=0.001", "seconds", "0.001"),
            ("run=bench seconds=3601", "seconds", "3601"),
            ("run=bench seconds=fast", "seconds", "fast"),
            ("run=bench memcgs=16385", "memcgs", "16385"),
            ("run=bench memcgs=1500,10", "memcgs", "1500,10"),
            ("run=bench quick=yes", "quick", "yes"),
            ("run=bench objects=2", "objects", "2"),
            ("run=bench lock_stat=1", "lock_stat", "1"),
            ("run=bench lock_stat=", "lock_stat", ""),
        ] {
            assert_eq!(
                parse(line, false),
                Err(CmdlineError::BadValue { key, value }),
                "{line}"
            );
        }
    }

    /// The parser checks a list's shape; a well-formed name the catalog lacks is found by
    /// [`ScenarioSelection::unknown`] (the benchmark's request refuses it).
    #[test]
    fn a_well_formed_unknown_name_is_for_the_catalog_to_refuse() {
        let c = parse("run=bench scenarios=limit,seed999", false)
            .unwrap()
            .bench;
        assert_eq!(c.scenarios.unknown(CATALOG), Some("seed999"));
        let names: Vec<_> = c.scenarios.select(CATALOG).map(|s| s.name).collect();
        assert_eq!(names, ["limit"]);
        assert_eq!(ScenarioSelection::All.unknown(&[]), None);
    }

    #[test]
    fn bench_keys_need_run_bench() {
        assert_eq!(
            parse("rounds=3", false),
            Err(CmdlineError::BenchKeyWithoutRun("rounds"))
        );
        assert_eq!(
            parse("run=test quick=1", false).unwrap_err().to_string(),
            "`quick=` needs `run=bench`"
        );
        assert_eq!(
            parse("run=bench rounds=2 rounds=3", false),
            Err(CmdlineError::Repeated("rounds"))
        );
    }
}
