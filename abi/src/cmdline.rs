//! The kernel command line: `key=value` words separated by spaces, parsed into a [`Config`].
//!
//! The grammar is strict on purpose: an unknown key, a repeated key or a bad value is an error
//! that names what was wrong and what is accepted, and the kernel exits with
//! [`crate::ExitCode::BadCmdline`] instead of running with a silent default.

use crate::bench::BenchConfig;
use core::fmt;

/// Largest CPU count `cpus=` accepts.
pub const MAX_CPUS: u32 = 256;
/// Largest `pcp_batch=` (frames per refill of a per-CPU page list).
pub const MAX_PCP_BATCH: u32 = 65_536;
/// Largest `pcp_high=` (frames a per-CPU page list may hold).
pub const MAX_PCP_HIGH: u32 = 1 << 24;

/// Largest `profile=` rate (Hz).
pub const MAX_PROFILE_HZ: u32 = 10_000;

/// Largest `race_delay=` (spin iterations of one stall in a race window).
pub const MAX_RACE_DELAY: u32 = 1_000_000;

/// Every key the kernel accepts, with the values it takes (printed on a parse error).
pub const ACCEPTED: &[(&str, &str)] = &[
    (
        "run",
        "summary | test | bench | layout | pagealloc | panic | pagefault | overflow | hang",
    ),
    (
        "test",
        "all | NAME[,NAME...]   (with run=test; NAME may be PREFIX*: every test starting so, slow ones excepted)",
    ),
    ("cpus", "1..=256   (bring up at most this many CPUs)"),
    ("exit", "auto | qemu | halt   (how to report the outcome)"),
    (
        "scenarios",
        "all | NAME[,NAME...]   (with run=bench; names from bench::catalog)",
    ),
    (
        "bench_cpus",
        "N[,N...]   (with run=bench; each 1..=256, strictly increasing)",
    ),
    (
        "rounds",
        "1..=100   (with run=bench; measured rounds per variant, a multiple of instances=)",
    ),
    (
        "instances",
        "1..=16   (with run=bench; instances of each variant per point, each built afresh at a new placement)",
    ),
    (
        "seconds",
        "0.01..=3600   (with run=bench; per run, decimal, e.g. 0.5)",
    ),
    (
        "memcgs",
        "N[,N...]   (with run=bench; seed002's memcg counts, each 1..=16384, increasing)",
    ),
    (
        "quick",
        "0 | 1   (with run=bench; short defaults for tests and CI)",
    ),
    (
        "objects",
        "0 | 1   (with run=bench; name each scenario's objects with their physical addresses and fields, for kx bench --coherence)",
    ),
    (
        "lock_stat",
        "premises | all   (with run=bench; lock statistics for the classes the scenarios' premises read, or for every lock class)",
    ),
    (
        "ci_width",
        "0.01..=100   (with run=bench; percent: add instance blocks until every comparison's 95% interval half-width is at most this)",
    ),
    (
        "budget",
        "1..=86400   (with run=bench; seconds the benchmark may take before it stops adding instance blocks)",
    ),
    (
        "qr",
        "auto | on | off   (with run=bench; results as QR codes on the screen at the end: auto = on real hardware only)",
    ),
    (
        "profile",
        "1..=10000   (with run=bench; sample every CPU's RIP at this many Hz on the APIC timer, dumped at the end as KPROF lines)",
    ),
    (
        "pcp_batch",
        "1..=65536   (frames per per-CPU page list refill; default from the zone size)",
    ),
    (
        "pcp_high",
        "0..=16777216   (frames a per-CPU page list holds before it spills; default from the zone size)",
    ),
    (
        "fail_page_alloc",
        "every:N | prob:P[,seed:S]   (with run=test; fail the fault path's frame allocations: every Nth, or P percent)",
    ),
    (
        "fail_charge",
        "every:N | prob:P[,seed:S]   (with run=test; fail the fault path's memcg charges: every Nth, or P percent)",
    ),
    (
        "race_delay",
        "1..=1000000   (with run=test; stall up to this many spin iterations in each race window of the fault core, to widen races)",
    ),
];

/// What the kernel does once it has booted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// Print the system summary (memory map, CPUs, features, boot path) and exit.
    Summary,
    /// Run in-kernel tests.
    Test(TestSelection<'a>),
    /// Run the benchmark scenarios.
    Bench,
    /// Print the cacheline layout report of the key lru/memcg structures.
    Layout,
    /// Run the page allocator micro-benchmark (order-0 pairs through the per-CPU lists and
    /// through the buddy lists).
    PageAlloc,
    /// Fail on purpose, to prove that failures are reported (used by the host tests).
    Crash(Crash),
}

/// A deliberate failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crash {
    /// `panic!()`.
    Panic,
    /// Write to an unmapped address: a page fault with a known CR2.
    PageFault,
    /// Unbounded recursion into the stack's guard page: a reported double fault.
    StackOverflow,
    /// Spin forever with interrupts off: the runner's timeout must end it.
    Hang,
}

/// Which in-kernel tests to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestSelection<'a> {
    /// Every registered test.
    All,
    /// A comma-separated list of test names and prefixes (`vm_*`: every test, slow ones
    /// excepted, whose name starts with `vm_`), validated by the kernel against its table.
    Named(&'a str),
}

/// One entry of a [`TestSelection::Named`] list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestPattern<'a> {
    /// Exactly this test (a slow one too).
    Name(&'a str),
    /// Every test whose name starts with this, except the slow ones (written `PREFIX*`).
    Prefix(&'a str),
}

impl<'a> TestPattern<'a> {
    /// Reads one list entry: `NAME` or `PREFIX*`.
    #[must_use]
    pub fn parse(entry: &'a str) -> Self {
        match entry.strip_suffix('*') {
            Some(prefix) => TestPattern::Prefix(prefix),
            None => TestPattern::Name(entry),
        }
    }

    /// Whether the test called `name` (`slow`: run only when named) matches.
    #[must_use]
    pub fn matches(&self, name: &str, slow: bool) -> bool {
        match *self {
            TestPattern::Name(n) => n == name,
            TestPattern::Prefix(p) => !slow && name.starts_with(p),
        }
    }
}

/// A [`TestSelection`] entry that selects no test, in words (`no test named `x``).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NothingSelected<'a>(pub TestPattern<'a>);

impl fmt::Display for NothingSelected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            TestPattern::Name(n) => write!(f, "no test named `{n}`"),
            TestPattern::Prefix(p) => write!(f, "no test (slow ones aside) starts with `{p}`"),
        }
    }
}

impl<'a> TestSelection<'a> {
    /// Whether the test called `name` (`slow`: run only when named) is selected.
    #[must_use]
    pub fn includes(&self, name: &str, slow: bool) -> bool {
        match self {
            TestSelection::All => !slow,
            TestSelection::Named(_) => self.patterns().any(|p| p.matches(name, slow)),
        }
    }

    /// The entries of a [`TestSelection::Named`] list (none for `All`).
    pub fn patterns(&self) -> impl Iterator<Item = TestPattern<'a>> {
        self.names().map(TestPattern::parse)
    }

    /// The first entry that selects none of `tests` (each a name and whether it is slow):
    /// a bad command line, never an empty pass. The kernel checks its registrations with
    /// this, and the runner the same list read from the kernel's ELF before booting.
    pub fn unmatched<'t, I>(&self, tests: I) -> Option<NothingSelected<'a>>
    where
        I: IntoIterator<Item = (&'t str, bool)> + Clone,
    {
        self.patterns()
            .find(|p| {
                !tests
                    .clone()
                    .into_iter()
                    .any(|(n, slow)| p.matches(n, slow))
            })
            .map(NothingSelected)
    }

    /// The entries, as written, of a [`TestSelection::Named`] list (empty for `All`).
    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        let list = match self {
            TestSelection::All => "",
            TestSelection::Named(list) => list,
        };
        list.split(',').filter(|n| !n.is_empty())
    }
}

/// How the kernel reports its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitMethod {
    /// QEMU's exit device when running under QEMU (CPUID hypervisor vendor), else halt.
    Auto,
    /// Always write the exit device.
    Qemu,
    /// Always print the outcome and halt (real machines).
    Halt,
}

/// `qr=`: whether the end of `run=bench` shows the results as QR codes on the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QrMode {
    /// On a real machine (no hypervisor) only: the sequence cycles until reset.
    Auto,
    /// Also under a hypervisor: the sequence is shown once, then the kernel exits.
    On,
    /// Never.
    Off,
}

/// The parsed command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config<'a> {
    /// What to do after boot.
    pub action: Action<'a>,
    /// Bring up at most this many CPUs (`None`: all that firmware lists).
    pub cpus: Option<u32>,
    /// How to report the outcome.
    pub exit: ExitMethod,
    /// The benchmark's choices (all `None`/default unless `run=bench` set them).
    pub bench: BenchConfig<'a>,
    /// Override of the per-CPU page lists' `batch` (`None`: from the zone size).
    pub pcp_batch: Option<u32>,
    /// Override of the per-CPU page lists' `high` (`None`: from the zone size).
    pub pcp_high: Option<u32>,
    /// `fail_page_alloc=`: injected failures of the fault path's frame allocations.
    pub fail_page_alloc: Option<crate::fault_spec::FaultSpec>,
    /// `fail_charge=`: injected failures of the fault path's memcg charges.
    pub fail_charge: Option<crate::fault_spec::FaultSpec>,
    /// `race_delay=`: the longest stall, in spin iterations, in each race window.
    pub race_delay: Option<u32>,
    /// `qr=`: the results as QR codes at the end of `run=bench`.
    pub qr: QrMode,
    /// `profile=`: sample every CPU's RIP at this rate (Hz) during `run=bench`.
    pub profile_hz: Option<u32>,
}

impl Default for Config<'_> {
    fn default() -> Self {
        Config {
            action: Action::Summary,
            cpus: None,
            exit: ExitMethod::Auto,
            bench: BenchConfig::default(),
            pcp_batch: None,
            pcp_high: None,
            fail_page_alloc: None,
            fail_charge: None,
            race_delay: None,
            qr: QrMode::Auto,
            profile_hz: None,
        }
    }
}

/// What was wrong with a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdlineError<'a> {
    /// A word without `=`.
    NotKeyValue(&'a str),
    /// A key the kernel does not know.
    UnknownKey(&'a str),
    /// A key given twice.
    Repeated(&'a str),
    /// A value the key does not accept.
    BadValue {
        /// The key.
        key: &'a str,
        /// The rejected value.
        value: &'a str,
    },
    /// `test=` given without `run=test`.
    TestWithoutRun,
    /// A benchmark key (`scenarios=`, `rounds=`, ...) given without `run=bench`.
    BenchKeyWithoutRun(&'a str),
    /// A fault-injection key (`fail_page_alloc=`, `fail_charge=`, `race_delay=`) given
    /// without `run=test`.
    FaultKeyWithoutTest(&'a str),
    /// `rounds=` that `instances=` does not divide: each instance runs the same number of
    /// rounds.
    RoundsPerInstance {
        /// Measured rounds per variant.
        rounds: u32,
        /// Instances per variant.
        instances: u32,
    },
}

impl fmt::Display for CmdlineError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmdlineError::NotKeyValue(w) => write!(f, "`{w}` is not of the form key=value"),
            CmdlineError::UnknownKey(k) => write!(f, "unknown key `{k}`"),
            CmdlineError::Repeated(k) => write!(f, "key `{k}` given more than once"),
            CmdlineError::BadValue { key, value } => {
                write!(f, "bad value `{value}` for `{key}`")
            }
            CmdlineError::TestWithoutRun => write!(f, "`test=` needs `run=test`"),
            CmdlineError::BenchKeyWithoutRun(k) => write!(f, "`{k}=` needs `run=bench`"),
            CmdlineError::FaultKeyWithoutTest(k) => write!(f, "`{k}=` needs `run=test`"),
            CmdlineError::RoundsPerInstance { rounds, instances } => write!(
                f,
                "rounds={rounds} is not a multiple of instances={instances}: every instance runs \
                 the same number of rounds"
            ),
        }
    }
}

/// Parses a command line.
///
/// With `skip_image_path`, a first word without `=` is taken as the kernel image's path (QEMU's
/// `-kernel` and GRUB's multiboot1 put it there) and ignored.
pub fn parse(line: &str, skip_image_path: bool) -> Result<Config<'_>, CmdlineError<'_>> {
    let mut cfg = Config::default();
    let mut words = line.split_ascii_whitespace().peekable();
    if skip_image_path && words.peek().is_some_and(|w| !w.contains('=')) {
        words.next();
    }
    let mut seen = [false; ACCEPTED.len()];
    let mut run: Option<&str> = None;
    let mut test: Option<TestSelection<'_>> = None;
    let mut bench_key: Option<&str> = None;
    let mut fault_key: Option<&str> = None;
    for word in words {
        let (key, value) = word
            .split_once('=')
            .ok_or(CmdlineError::NotKeyValue(word))?;
        let idx = ACCEPTED
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or(CmdlineError::UnknownKey(key))?;
        if core::mem::replace(&mut seen[idx], true) {
            return Err(CmdlineError::Repeated(key));
        }
        let bad = CmdlineError::BadValue { key, value };
        match key {
            "run" => run = Some(value),
            "test" => {
                test = Some(match value {
                    "all" => TestSelection::All,
                    list if valid_name_list(list) => TestSelection::Named(list),
                    _ => return Err(bad),
                })
            }
            "cpus" => {
                let n: u32 = value.parse().map_err(|_| bad)?;
                if n == 0 || n > MAX_CPUS {
                    return Err(bad);
                }
                cfg.cpus = Some(n);
            }
            "pcp_batch" => cfg.pcp_batch = Some(number(value, 1, MAX_PCP_BATCH).ok_or(bad)?),
            "profile" => {
                bench_key.get_or_insert(key);
                cfg.profile_hz = Some(number(value, 1, MAX_PROFILE_HZ).ok_or(bad)?);
            }
            "pcp_high" => cfg.pcp_high = Some(number(value, 0, MAX_PCP_HIGH).ok_or(bad)?),
            "fail_page_alloc" => {
                fault_key.get_or_insert(key);
                cfg.fail_page_alloc = Some(crate::fault_spec::parse(value).ok_or(bad)?);
            }
            "fail_charge" => {
                fault_key.get_or_insert(key);
                cfg.fail_charge = Some(crate::fault_spec::parse(value).ok_or(bad)?);
            }
            "race_delay" => {
                fault_key.get_or_insert(key);
                cfg.race_delay = Some(number(value, 1, MAX_RACE_DELAY).ok_or(bad)?);
            }
            "exit" => {
                cfg.exit = match value {
                    "auto" => ExitMethod::Auto,
                    "qemu" => ExitMethod::Qemu,
                    "halt" => ExitMethod::Halt,
                    _ => return Err(bad),
                }
            }
            "qr" => {
                bench_key.get_or_insert(key);
                cfg.qr = match value {
                    "auto" => QrMode::Auto,
                    "on" => QrMode::On,
                    "off" => QrMode::Off,
                    _ => return Err(bad),
                }
            }
            "scenarios" | "bench_cpus" | "rounds" | "instances" | "seconds" | "memcgs"
            | "quick" | "ci_width" | "budget" | "objects" | "lock_stat" => {
                bench_key.get_or_insert(key);
                cfg.bench.set(key, value).map_err(|()| bad)?;
            }
            _ => unreachable!("every ACCEPTED key is handled"),
        }
    }
    cfg.action = match run {
        None | Some("summary") => Action::Summary,
        Some("test") => Action::Test(test.take().unwrap_or(TestSelection::All)),
        Some("bench") => Action::Bench,
        Some("layout") => Action::Layout,
        Some("pagealloc") => Action::PageAlloc,
        Some("panic") => Action::Crash(Crash::Panic),
        Some("pagefault") => Action::Crash(Crash::PageFault),
        Some("overflow") => Action::Crash(Crash::StackOverflow),
        Some("hang") => Action::Crash(Crash::Hang),
        Some(value) => return Err(CmdlineError::BadValue { key: "run", value }),
    };
    if test.is_some() {
        return Err(CmdlineError::TestWithoutRun);
    }
    if let Some(key) = bench_key
        && cfg.action != Action::Bench
    {
        return Err(CmdlineError::BenchKeyWithoutRun(key));
    }
    if let Some(key) = fault_key
        && !matches!(cfg.action, Action::Test(_))
    {
        return Err(CmdlineError::FaultKeyWithoutTest(key));
    }
    let (rounds, instances) = (cfg.bench.rounds(), cfg.bench.instances());
    if cfg.action == Action::Bench && !rounds.is_multiple_of(instances) {
        return Err(CmdlineError::RoundsPerInstance { rounds, instances });
    }
    Ok(cfg)
}

/// A decimal number in `lo..=hi` (no sign, no leading `+`).
fn number(value: &str, lo: u32, hi: u32) -> Option<u32> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<u32>().ok().filter(|n| (lo..=hi).contains(n))
}

fn valid_name_list(list: &str) -> bool {
    !list.is_empty()
        && list.split(',').all(|entry| {
            // `NAME` or `PREFIX*`: the star only last, and something before it.
            let n = entry.strip_suffix('*').unwrap_or(entry);
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_line_is_summary() {
        assert_eq!(parse("", false), Ok(Config::default()));
        assert_eq!(parse("/boot/kernel.elf", true), Ok(Config::default()));
    }

    #[test]
    fn image_path_skipped_only_when_asked() {
        assert_eq!(
            parse("kernel32.elf", false),
            Err(CmdlineError::NotKeyValue("kernel32.elf"))
        );
        let c = parse("/tmp/k.elf run=test test=a,b cpus=4", true).unwrap();
        assert_eq!(c.action, Action::Test(TestSelection::Named("a,b")));
        assert_eq!(c.cpus, Some(4));
    }

    #[test]
    fn selection() {
        let s = TestSelection::Named("alpha,beta");
        assert!(s.includes("beta", false) && !s.includes("gamma", false));
        assert!(!s.includes("alph", false));
        assert!(s.includes("alpha", true), "a slow test runs when named");
        assert_eq!(s.names().collect::<Vec<_>>(), ["alpha", "beta"]);
        assert!(TestSelection::All.includes("x", false));
        assert!(
            !TestSelection::All.includes("x", true),
            "`all` leaves slow tests out"
        );
    }

    #[test]
    fn prefix_selection() {
        let s = TestSelection::Named("vm_*,smp_cpus_online");
        assert_eq!(
            s.patterns().collect::<Vec<_>>(),
            [
                TestPattern::Prefix("vm_"),
                TestPattern::Name("smp_cpus_online")
            ]
        );
        assert!(s.includes("vm_pft_layout_a", false));
        assert!(
            !s.includes("vm_soak_long", true),
            "a prefix leaves slow tests out"
        );
        assert!(s.includes("smp_cpus_online", false) && !s.includes("smp_tsc_clock", false));
        assert!(!s.includes("xvm_a", false));
        let ok = |v: &str| parse(&format!("run=test test={v}"), false).is_ok();
        assert!(ok("vm_*") && ok("a,b*,c"));
        assert!(!ok("*") && !ok("a*b") && !ok("vm_**") && !ok("a,,b*"));
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse("bogus=1", false),
            Err(CmdlineError::UnknownKey("bogus"))
        );
        assert_eq!(
            parse("cpus=0", false),
            Err(CmdlineError::BadValue {
                key: "cpus",
                value: "0"
            })
        );
        assert_eq!(
            parse("cpus=257", false),
            Err(CmdlineError::BadValue {
                key: "cpus",
                value: "257"
            })
        );
        assert_eq!(
            parse("cpus=x", false),
            Err(CmdlineError::BadValue {
                key: "cpus",
                value: "x"
            })
        );
        assert_eq!(
            parse("cpus=1 cpus=2", false),
            Err(CmdlineError::Repeated("cpus"))
        );
        assert_eq!(
            parse("run=fly", false),
            Err(CmdlineError::BadValue {
                key: "run",
                value: "fly"
            })
        );
        assert_eq!(parse("test=all", false), Err(CmdlineError::TestWithoutRun));
        assert_eq!(
            parse("run=test test=a,,b", false),
            Err(CmdlineError::BadValue {
                key: "test",
                value: "a,,b"
            })
        );
        assert_eq!(
            parse("run=test exit=never", false).unwrap_err().to_string(),
            "bad value `never` for `exit`"
        );
    }

    #[test]
    fn every_run_value_in_accepted_parses() {
        let values = ACCEPTED.iter().find(|(k, _)| *k == "run").unwrap().1;
        for v in values.split('|').map(str::trim) {
            let line = std::format!("run={v}");
            assert!(parse(&line, false).is_ok(), "{line} is listed but rejected");
        }
    }

    #[test]
    fn profile_rate() {
        assert_eq!(
            parse("run=bench profile=1000", false).unwrap().profile_hz,
            Some(1000)
        );
        assert_eq!(parse("run=bench", false).unwrap().profile_hz, None);
        assert_eq!(
            parse("run=bench profile=10000", false).unwrap().profile_hz,
            Some(MAX_PROFILE_HZ)
        );
        for bad in ["0", "10001", "1k", "", "+5", "-1"] {
            let line = std::format!("run=bench profile={bad}");
            assert_eq!(
                parse(&line, false),
                Err(CmdlineError::BadValue {
                    key: "profile",
                    value: bad
                }),
                "{line}"
            );
        }
        assert_eq!(
            parse("run=test profile=100", false),
            Err(CmdlineError::BenchKeyWithoutRun("profile"))
        );
    }

    #[test]
    fn pcp_overrides() {
        let c = parse("run=pagealloc pcp_batch=7 pcp_high=0", false).unwrap();
        assert_eq!(c.action, Action::PageAlloc);
        assert_eq!((c.pcp_batch, c.pcp_high), (Some(7), Some(0)));
        assert_eq!(Config::default().pcp_batch, None);
        for bad in [
            "pcp_batch=0",
            "pcp_batch=65537",
            "pcp_batch=+3",
            "pcp_batch=",
            "pcp_high=16777217",
            "pcp_high=-1",
            "pcp_high=x",
        ] {
            let (key, value) = bad.split_once('=').unwrap();
            assert_eq!(
                parse(bad, false),
                Err(CmdlineError::BadValue { key, value }),
                "{bad}"
            );
        }
        assert_eq!(
            parse("pcp_high=1 pcp_high=2", false),
            Err(CmdlineError::Repeated("pcp_high"))
        );
        assert!(parse("pcp_batch=65536 pcp_high=16777216", false).is_ok());
    }

    #[test]
    fn crash_actions() {
        for (w, c) in [
            ("panic", Crash::Panic),
            ("pagefault", Crash::PageFault),
            ("overflow", Crash::StackOverflow),
            ("hang", Crash::Hang),
        ] {
            let line = std::format!("run={w}");
            assert_eq!(parse(&line, false).unwrap().action, Action::Crash(c));
        }
    }

    #[test]
    fn fault_injection_keys_need_run_test() {
        use crate::fault_spec::FaultSpec;
        let cfg = parse(
            "run=test fail_page_alloc=every:7 fail_charge=prob:2.5,seed:9",
            false,
        )
        .unwrap();
        assert_eq!(cfg.fail_page_alloc, Some(FaultSpec::Every(7)));
        assert_eq!(
            cfg.fail_charge,
            Some(FaultSpec::Probability {
                ppm: 25_000,
                seed: 9
            })
        );
        assert_eq!(
            parse("fail_charge=every:3", false),
            Err(CmdlineError::FaultKeyWithoutTest("fail_charge"))
        );
        assert_eq!(
            parse("run=bench fail_page_alloc=every:3", false),
            Err(CmdlineError::FaultKeyWithoutTest("fail_page_alloc"))
        );
        assert_eq!(
            parse("run=test race_delay=5000", false).unwrap().race_delay,
            Some(5000)
        );
        assert_eq!(
            parse("run=bench race_delay=5000", false),
            Err(CmdlineError::FaultKeyWithoutTest("race_delay"))
        );
        for bad in ["0", "1000001", "x", ""] {
            let line = std::format!("run=test race_delay={bad}");
            assert_eq!(
                parse(&line, false),
                Err(CmdlineError::BadValue {
                    key: "race_delay",
                    value: bad
                })
            );
        }
        for bad in [
            "every:0",
            "every:",
            "prob:0",
            "prob:101",
            "prob:x",
            "prob:5,seed:-1",
            "sometimes",
        ] {
            let line = std::format!("run=test fail_charge={bad}");
            assert_eq!(
                parse(&line, false),
                Err(CmdlineError::BadValue {
                    key: "fail_charge",
                    value: bad
                }),
                "{bad}"
            );
        }
    }

    #[test]
    fn qr_key() {
        assert_eq!(parse("run=bench", false).unwrap().qr, QrMode::Auto);
        assert_eq!(parse("run=bench qr=on", false).unwrap().qr, QrMode::On);
        assert_eq!(parse("run=bench qr=off", false).unwrap().qr, QrMode::Off);
        assert_eq!(parse("run=bench qr=auto", false).unwrap().qr, QrMode::Auto);
        assert_eq!(
            parse("run=bench qr=1", false),
            Err(CmdlineError::BadValue {
                key: "qr",
                value: "1"
            })
        );
        assert_eq!(
            parse("run=test qr=on", false),
            Err(CmdlineError::BenchKeyWithoutRun("qr"))
        );
    }
}
