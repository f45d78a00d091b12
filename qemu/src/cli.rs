//! The `kx` command line: a subcommand and options, parsed by hand into [`Cli`].
//!
//! Every mistake is a [`CliError`] that says what was wrong (the runner prints it with the
//! usage text and exits with [`crate::RunnerExit::Usage`]); files that do not exist are
//! checked when the command runs ([`crate::RunnerExit::NotFound`]). The benchmark's options
//! become kernel command-line keys and are validated by the kernel's own parser
//! (`abi::cmdline`), so the runner accepts exactly what the kernel does; `--cpus` must also
//! fit in `--smp`, whose default for `bench` is every host core (with `--host`: in the cores
//! this process may run on; QEMU's options do not apply there).

use crate::accel::AccelRequest;
use crate::mode::{Mode, UnknownMode};
use boot::Profile;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// `bench`'s guest memory without `--mem`: a heap (a quarter of it) with room for both of
/// seed002's variants at 10,000 memcgs each (about 4.3 KiB a memcg at 2 vCPUs).
pub const BENCH_MEM_MIB: u32 = 1024;

/// seed002's memcg counts of a `kx bench` in QEMU without `--memcgs`: the kernel's default
/// leaves out 10,000 (under TCG its setup takes about a minute per variant and CPU count and
/// a tail-walk request 10-30 s: past the 10-minute budget of the default run);
/// `--memcgs 10,1500,10000` adds it, and host runs and real machines run it by default.
pub const TCG_MEMCGS: &str = "10,1500";

/// The interval half-width (percent) a `kx bench` in QEMU aims for without `--ci-width`,
/// `--budget` or `--quick`: rounds are added to points whose comparisons are wider, within
/// [`TCG_BUDGET`].
pub const TCG_CI_WIDTH: &str = "2";

/// The seconds a default `kx bench` in QEMU may take while it adds rounds (the plan's own
/// rounds always run): on a 2-core machine the planned rounds take about 5.5 minutes, so
/// the run ends within about 7 minutes, inside the quick start's 10 with the build.
pub const TCG_BUDGET: &str = "420";

/// Usage text.
pub const USAGE: &str = "\
usage: kx [COMMAND] [OPTIONS]

commands:
  bench              run the benchmark scenarios (run=bench); table + results directory
                     (default)
  summary            boot and print the system summary
  test [NAME...]     run the in-kernel tests: all, or the named ones
  run                boot with the command line given by --append (default: empty)
  compare DIR DIR... compare benchmark result directories (hmeans, ratios, significance)
  import LOG         turn a serial log from a real machine into a results directory
  import --qr IMG... the same from photos or screenshots of the QR codes the kernel shows
  layout             print the cacheline layout report of the key structs (run=layout)
  image              build the GRUB USB image (BIOS + UEFI); print dd line and SHA-256
  help               this text

options:
  --mode MODE        direct | bios | uefi | usb-bios | usb-uefi   (default: direct)
  --smp N            vCPUs, 1..=256 (default: bench every host core, others 2)
  --mem MIB          guest memory in MiB, 32..=65536 (default: bench 1024, others 256)
  --nodes N          NUMA nodes, 1..=64: memory split evenly (at least 16 MiB each), vCPUs
                     round-robin, distances 10 + 10*|i-j| (default: no NUMA description)
  --nodes host       as many nodes as the host has (with CPUs this process may use), each
                     mirroring one: its vCPUs pinned to that host node's cores (bench), its
                     memory bound there (host-nodes=, policy=bind) where the host has several
  --timeout SECS     kill QEMU after SECS, 1..=86400 (default: 60; UEFI modes 120; bench 1800)
  --accel ACCEL      auto | kvm | tcg (default: auto, KVM where a probe boot shows it works,
                     cached per host; kvm where it does not is an error, status 14)
  --append CMDLINE   kernel command line words (run, image: the whole line; others: added)
  --kernel FILE      direct mode: boot this ELF32 instead of building the kernel
  --image FILE       image modes: boot this GRUB image instead of building one
  --out PATH         image: the image file (default: out/kx-usb.img); bench, import: the
                     results directory (default: results/<UTC timestamp>/); compare: the
                     HTML page (default: next to the first DIR)
  --debug            build the debug kernel (default: release)
  --quiet            do not echo the serial console (results are still printed)

bench options (kernel keys in parentheses; defaults are the kernel's):
  --host             run the scenarios on pinned host threads instead of booting, with
                     Linux's own fault path as the `linux` reference (no QEMU needed)
  --smt              pin vCPUs (or --host threads) to SMT siblings too (default: one per
                     physical core; vCPUs beyond the cores are left unpinned, with a warning)
  --strict           refuse to start when other processes keep the host busy (more than
                     0.1 core over the 1 s sampled before the run): exit status 15
  --quick            short run for tests and CI (quick=1: 2 rounds of 0.1 s, CPUs 1 and 2)
  --scenarios LIST   all | NAME[,NAME...] (scenarios=)
  --cpus LIST        CPU counts, e.g. 1,2,4, increasing, each <= --smp (bench_cpus=;
                     default 1, 2, 4, ... up to --smp)
  --rounds N         measured rounds per variant, 1..=100 (rounds=; default 5, quick 2)
  --seconds S        seconds per run, 0.01..=3600, e.g. 0.5 (seconds=; default 0.5, quick 0.1)
  --memcgs LIST      seed002's memcg counts, e.g. 10,1500 (memcgs=; default 10,1500,10000;
                     kx bench in QEMU: 10,1500)
  --ci-width PCT     add rounds until every comparison's 95% interval half-width is at most
                     PCT percent, 0.01..=100 (ci_width=; kx bench in QEMU: 2, unless
                     --quick or --budget)
  --budget SECS      stop adding rounds once the benchmark has run this long, pro rata per
                     point, 1..=86400 (budget=; kx bench in QEMU: 420, unless --quick or
                     --ci-width)
  --linux            after the benchmark, boot Debian's Linux (linux-image-cloud-amd64) in
                     the same QEMU as the `linux` reference rows, fetching it with apt-get
                     into the kx cache if needed (a default run, not --quick, does this
                     when the kernel is in the cache already; none there: skipped, a note)
  --linux-kernel FILE  the same with this Linux image (also $KX_LINUX_KERNEL)";

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Boot and print the system summary.
    Summary,
    /// Run in-kernel tests (empty: all).
    Test(Vec<String>),
    /// Boot with the `--append` command line as is.
    Run,
    /// Run the benchmark.
    Bench,
    /// Compare result directories.
    Compare(Vec<PathBuf>),
    /// Import a serial log.
    Import(Option<PathBuf>),
    /// Import the QR codes in these images (`import --qr`).
    ImportQr(Vec<PathBuf>),
    /// Print the cacheline layout report.
    Layout,
    /// Build the USB image.
    Image,
    /// Print usage.
    Help,
}

impl Command {
    /// The subcommand's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Command::Summary => "summary",
            Command::Test(_) => "test",
            Command::Run => "run",
            Command::Bench => "bench",
            Command::Compare(_) => "compare",
            Command::Import(_) | Command::ImportQr(_) => "import",
            Command::Layout => "layout",
            Command::Image => "image",
            Command::Help => "help",
        }
    }
}

/// Options shared by the commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Boot mode.
    pub mode: Mode,
    /// vCPUs.
    pub smp: u32,
    /// Guest memory, MiB.
    pub mem_mib: u32,
    /// NUMA nodes (`None`: no NUMA description).
    pub nodes: Option<u32>,
    /// `--nodes host`: `nodes` is the host's node count, each guest node mirroring one.
    pub nodes_host: bool,
    /// Explicit timeout (`None`: the command's and mode's default).
    pub timeout: Option<Duration>,
    /// `--accel`.
    pub accel: AccelRequest,
    /// Kernel command line words.
    pub append: String,
    /// A prebuilt ELF32 to boot (direct mode).
    pub kernel: Option<PathBuf>,
    /// A prebuilt image to boot (image modes).
    pub image: Option<PathBuf>,
    /// Where `image` writes its image, `bench`/`import` their results directory, `compare`
    /// its HTML page.
    pub out: Option<PathBuf>,
    /// The benchmark's choices.
    pub bench: BenchOptions,
    /// Kernel profile.
    pub profile: Profile,
    /// Do not echo serial.
    pub quiet: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Direct,
            smp: 2,
            mem_mib: 256,
            nodes: None,
            nodes_host: false,
            timeout: None,
            accel: AccelRequest::Auto,
            append: String::new(),
            kernel: None,
            image: None,
            out: None,
            bench: BenchOptions::default(),
            profile: Profile::Release,
            quiet: false,
        }
    }
}

/// `kx bench`'s choices, as validated kernel key values (`None`: the kernel's default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BenchOptions {
    /// `--host`: on host threads instead of in QEMU (no kernel key).
    pub host: bool,
    /// `--smt`: SMT siblings may be used for vCPUs or threads (no kernel key).
    pub smt: bool,
    /// `--strict`: refuse to start on a busy host (no kernel key).
    pub strict: bool,
    /// `--quick` (`quick=1`).
    pub quick: bool,
    /// `--scenarios` (`scenarios=`).
    pub scenarios: Option<String>,
    /// `--cpus` (`bench_cpus=`).
    pub cpus: Option<String>,
    /// `--rounds` (`rounds=`).
    pub rounds: Option<String>,
    /// `--seconds` (`seconds=`).
    pub seconds: Option<String>,
    /// `--memcgs` (`memcgs=`).
    pub memcgs: Option<String>,
    /// `--ci-width` (`ci_width=`).
    pub ci_width: Option<String>,
    /// `--budget` (`budget=`).
    pub budget: Option<String>,
    /// `--linux`: boot Debian's Linux after the benchmark as the `linux` reference,
    /// fetching the package if needed (no kernel key).
    pub linux: bool,
    /// `--linux-kernel FILE`: that Linux image as the reference (no kernel key).
    pub linux_kernel: Option<PathBuf>,
}

impl BenchOptions {
    /// The kernel command-line words these options stand for.
    #[must_use]
    pub fn kernel_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        for (key, value) in [
            ("scenarios", &self.scenarios),
            ("bench_cpus", &self.cpus),
            ("rounds", &self.rounds),
            ("seconds", &self.seconds),
            ("memcgs", &self.memcgs),
            ("ci_width", &self.ci_width),
            ("budget", &self.budget),
        ] {
            if let Some(v) = value {
                keys.push(format!("{key}={v}"));
            }
        }
        if self.quick {
            keys.push("quick=1".into());
        }
        keys
    }
}

/// The bench options with their kernel keys.
const BENCH_FLAGS: &[(&str, &str)] = &[
    ("--scenarios", "scenarios"),
    ("--cpus", "bench_cpus"),
    ("--rounds", "rounds"),
    ("--seconds", "seconds"),
    ("--memcgs", "memcgs"),
    ("--ci-width", "ci_width"),
    ("--budget", "budget"),
];

/// A parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cli {
    /// The subcommand.
    pub command: Command,
    /// Its options.
    pub options: Options,
}

/// What was wrong with the runner's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CliError {
    /// Not a known subcommand.
    UnknownCommand(String),
    /// Not a known option.
    UnknownFlag(String),
    /// An option that needs a value came last.
    MissingValue(&'static str),
    /// A value that is not a number in range.
    BadNumber {
        /// The option.
        flag: &'static str,
        /// What was given.
        value: String,
        /// The accepted range.
        range: (u64, u64),
    },
    /// `--mode` with an unknown name.
    BadMode(UnknownMode),
    /// `--accel` with a value that is not auto, kvm or tcg.
    BadAccel(String),
    /// A positional argument the command does not take.
    UnexpectedArgument(String),
    /// An option the command does not use.
    NotForCommand {
        /// The option.
        flag: &'static str,
        /// The command.
        command: &'static str,
    },
    /// `--nodes` that the machine cannot have.
    Nodes {
        /// The node count asked for.
        nodes: u32,
        /// Why it does not fit.
        why: NodesProblem,
    },
    /// An option that does not fit the chosen mode.
    NotForMode {
        /// The option.
        flag: &'static str,
        /// The mode.
        mode: Mode,
    },
    /// A benchmark option the kernel's command-line parser rejects.
    BadBenchValue {
        /// The option.
        flag: &'static str,
        /// What was given.
        value: String,
        /// What the kernel accepts.
        accepted: &'static str,
    },
    /// A `--cpus` entry larger than the cores `kx bench --host` may use.
    CpusAboveHost {
        /// The largest entry.
        cpus: u32,
        /// The cores.
        cores: u32,
    },
    /// A `--cpus` entry larger than `--smp`.
    CpusAboveSmp {
        /// The largest entry.
        cpus: u32,
        /// The vCPUs.
        smp: u32,
    },
    /// A command that needs positional arguments got too few.
    MissingArgument(&'static str),
    /// `--nodes host`, and the host's topology cannot be read.
    HostTopology(String),
}

/// Why a `--nodes` value does not fit the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodesProblem {
    /// More nodes than vCPUs (`--smp`): every node gets at least one CPU.
    MoreThanCpus(u32),
    /// Memory (`--mem`) too small: every node needs [`MIN_NODE_MIB`].
    TooLittleMemory(u32),
}

/// Least memory per NUMA node, MiB.
pub const MIN_NODE_MIB: u32 = 16;
/// Most NUMA nodes (the kernel's `MAX_NUMNODES`).
pub const MAX_NODES: u32 = 64;

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::UnknownCommand(c) => write!(f, "unknown command `{c}`"),
            CliError::UnknownFlag(x) => write!(f, "unknown option `{x}`"),
            CliError::MissingValue(x) => write!(f, "{x} needs a value"),
            CliError::BadNumber { flag, value, range } => write!(
                f,
                "{flag}: `{value}` is not a number in {}..={}",
                range.0, range.1
            ),
            CliError::BadMode(m) => write!(f, "--mode: {m}"),
            CliError::BadAccel(why) => f.write_str(why),
            CliError::UnexpectedArgument(a) => write!(f, "unexpected argument `{a}`"),
            CliError::NotForCommand { flag, command } => {
                write!(f, "{flag} is not used by `kx {command}`")
            }
            CliError::BadBenchValue {
                flag,
                value,
                accepted,
            } => write!(f, "{flag}: `{value}` is not accepted (expected {accepted})"),
            CliError::CpusAboveHost { cpus, cores } => write!(
                f,
                "--cpus: {cpus} CPUs asked for, but this process may run on {cores} host cores"
            ),
            CliError::CpusAboveSmp { cpus, smp } => write!(
                f,
                "--cpus: {cpus} CPUs asked for, but the machine has --smp {smp}"
            ),
            CliError::MissingArgument(what) => f.write_str(what),
            CliError::HostTopology(why) => {
                write!(f, "--nodes host: cannot read the host's topology: {why}")
            }
            CliError::Nodes { nodes, why } => match why {
                NodesProblem::MoreThanCpus(smp) => write!(
                    f,
                    "--nodes {nodes}: more nodes than vCPUs (--smp {smp}); every node needs a CPU"
                ),
                NodesProblem::TooLittleMemory(mem) => write!(
                    f,
                    "--nodes {nodes}: {mem} MiB of memory (--mem) gives each node {} MiB, less \
                     than the {MIN_NODE_MIB} MiB a node needs",
                    mem / nodes
                ),
            },
            CliError::NotForMode { flag, mode } => write!(
                f,
                "{flag} does not apply to --mode {mode} ({})",
                if *flag == "--kernel" {
                    "--kernel is for direct mode"
                } else {
                    "--image is for bios, uefi, usb-bios and usb-uefi"
                }
            ),
        }
    }
}

const FLAGS_WITH_VALUE: &[&str] = &[
    "--mode",
    "--accel",
    "--smp",
    "--mem",
    "--nodes",
    "--timeout",
    "--append",
    "--kernel",
    "--image",
    "--out",
    "--scenarios",
    "--cpus",
    "--rounds",
    "--seconds",
    "--memcgs",
    "--ci-width",
    "--budget",
    "--linux-kernel",
];

/// Parses the arguments after the program name.
pub fn parse<I, S>(args: I) -> Result<Cli, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut args = args.into_iter().map(Into::into).peekable();
    let command = match args.peek().map(String::as_str) {
        None => Command::Bench,
        Some(a) if a.starts_with('-') && a != "-h" && a != "--help" => Command::Bench,
        Some(_) => {
            let word = args.next().unwrap_or_default();
            match word.as_str() {
                "summary" => Command::Summary,
                "test" => Command::Test(Vec::new()),
                "run" => Command::Run,
                "bench" => Command::Bench,
                "compare" => Command::Compare(Vec::new()),
                "import" => Command::Import(None),
                "layout" => Command::Layout,
                "image" => Command::Image,
                "help" | "-h" | "--help" => Command::Help,
                _ => return Err(CliError::UnknownCommand(word)),
            }
        }
    };
    let mut cli = Cli {
        command,
        options: Options::default(),
    };
    let mut seen: Vec<&'static str> = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            cli.command = Command::Help;
            continue;
        }
        if !arg.starts_with("--") {
            match &mut cli.command {
                Command::Test(names) => names.push(arg),
                Command::Compare(dirs) => dirs.push(arg.into()),
                Command::Import(log @ None) => *log = Some(arg.into()),
                Command::ImportQr(images) => images.push(arg.into()),
                _ => return Err(CliError::UnexpectedArgument(arg)),
            }
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        if let Some(&flag) = FLAGS_WITH_VALUE.iter().find(|f| **f == name) {
            let value = match inline {
                Some(v) => v,
                None => args.next().ok_or(CliError::MissingValue(flag))?,
            };
            seen.push(flag);
            apply_value(&mut cli.options, flag, value)?;
        } else {
            match (name.as_str(), inline) {
                ("--debug", None) => cli.options.profile = Profile::Debug,
                ("--release", None) => cli.options.profile = Profile::Release,
                ("--quiet", None) => cli.options.quiet = true,
                ("--qr", None) => match &mut cli.command {
                    Command::Import(log) => {
                        cli.command = Command::ImportQr(log.take().into_iter().collect())
                    }
                    c => {
                        return Err(CliError::NotForCommand {
                            flag: "--qr",
                            command: c.name(),
                        });
                    }
                },
                ("--quick", None) => {
                    seen.push("--quick");
                    cli.options.bench.quick = true;
                }
                ("--host", None) => {
                    seen.push("--host");
                    cli.options.bench.host = true;
                }
                ("--smt", None) => {
                    seen.push("--smt");
                    cli.options.bench.smt = true;
                }
                ("--strict", None) => {
                    seen.push("--strict");
                    cli.options.bench.strict = true;
                }
                ("--linux", None) => {
                    seen.push("--linux");
                    cli.options.bench.linux = true;
                }
                _ => return Err(CliError::UnknownFlag(arg)),
            }
        }
    }
    check_combination(&mut cli, &seen)?;
    Ok(cli)
}

fn number(flag: &'static str, value: &str, range: (u64, u64)) -> Result<u64, CliError> {
    match value.parse::<u64>() {
        Ok(n) if (range.0..=range.1).contains(&n) => Ok(n),
        _ => Err(CliError::BadNumber {
            flag,
            value: value.to_owned(),
            range,
        }),
    }
}

fn apply_value(o: &mut Options, flag: &'static str, value: String) -> Result<(), CliError> {
    match flag {
        "--mode" => o.mode = value.parse().map_err(CliError::BadMode)?,
        "--accel" => o.accel = value.parse().map_err(CliError::BadAccel)?,
        "--smp" => o.smp = number(flag, &value, (1, u64::from(abi::cmdline::MAX_CPUS)))? as u32,
        "--mem" => o.mem_mib = number(flag, &value, (32, 65536))? as u32,
        "--nodes" if value == "host" => o.nodes_host = true,
        "--nodes" => {
            o.nodes_host = false;
            o.nodes = Some(number(flag, &value, (1, u64::from(MAX_NODES)))? as u32);
        }
        "--timeout" => o.timeout = Some(Duration::from_secs(number(flag, &value, (1, 86400))?)),
        "--append" => o.append = value,
        "--kernel" => o.kernel = Some(value.into()),
        "--image" => o.image = Some(value.into()),
        "--out" => o.out = Some(value.into()),
        "--linux-kernel" => o.bench.linux_kernel = Some(value.into()),
        "--scenarios" | "--cpus" | "--rounds" | "--seconds" | "--memcgs" | "--ci-width"
        | "--budget" => {
            let key = BENCH_FLAGS
                .iter()
                .find(|(f, _)| *f == flag)
                .map(|(_, k)| *k)
                .expect("every bench flag has a key");
            let line = format!("run=bench {key}={value}");
            if abi::cmdline::parse(&line, false).is_err() {
                let accepted = abi::cmdline::ACCEPTED
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or("", |(_, v)| v);
                return Err(CliError::BadBenchValue {
                    flag,
                    value,
                    accepted,
                });
            }
            let b = &mut o.bench;
            let slot = match flag {
                "--scenarios" => &mut b.scenarios,
                "--cpus" => &mut b.cpus,
                "--rounds" => &mut b.rounds,
                "--seconds" => &mut b.seconds,
                "--ci-width" => &mut b.ci_width,
                "--budget" => &mut b.budget,
                _ => &mut b.memcgs,
            };
            *slot = Some(value);
        }
        _ => unreachable!("every FLAGS_WITH_VALUE entry is handled"),
    }
    Ok(())
}

/// vCPUs `kx bench` gets without `--smp`: every host core.
#[must_use]
pub fn host_cores() -> u32 {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get() as u32)
        .min(abi::cmdline::MAX_CPUS)
}

/// `--nodes host`: the host's NUMA nodes with CPUs this process may run on.
fn host_nodes_with_cpus() -> Result<u32, String> {
    let topo = crate::topology::Topology::host()?;
    let allowed = crate::bench::threads::sys::allowed_cpus().map_err(|e| e.to_string())?;
    let n = topo
        .nodes
        .iter()
        .filter(|n| n.cpus.iter().any(|c| allowed.contains(c)))
        .count() as u32;
    Ok(n.clamp(1, MAX_NODES))
}

fn largest_cpus(b: &BenchOptions) -> Option<u32> {
    b.cpus
        .as_deref()
        .and_then(|l| l.split(',').filter_map(|n| n.parse::<u32>().ok()).max())
}

fn check_combination(cli: &mut Cli, seen: &[&'static str]) -> Result<(), CliError> {
    let command = cli.command.name();
    if cli.command != Command::Bench && cli.command != Command::Help {
        for flag in [
            "--host",
            "--smt",
            "--strict",
            "--quick",
            "--scenarios",
            "--cpus",
            "--rounds",
            "--seconds",
            "--memcgs",
            "--ci-width",
            "--budget",
            "--linux",
            "--linux-kernel",
        ] {
            if seen.contains(&flag) {
                return Err(CliError::NotForCommand { flag, command });
            }
        }
    }
    match &cli.command {
        Command::Compare(dirs) if dirs.is_empty() => {
            return Err(CliError::MissingArgument(
                "compare needs at least one results directory",
            ));
        }
        Command::Import(None) => {
            return Err(CliError::MissingArgument(
                "import needs the serial log to read",
            ));
        }
        Command::ImportQr(images) if images.is_empty() => {
            return Err(CliError::MissingArgument(
                "import --qr needs at least one image",
            ));
        }
        Command::Compare(_) | Command::Import(_) | Command::ImportQr(_) => {
            for flag in [
                "--mode",
                "--accel",
                "--smp",
                "--mem",
                "--timeout",
                "--append",
                "--kernel",
                "--image",
            ] {
                if seen.contains(&flag) {
                    return Err(CliError::NotForCommand { flag, command });
                }
            }
            return Ok(());
        }
        Command::Bench if cli.options.bench.host => {
            for flag in [
                "--linux",
                "--linux-kernel",
                "--mode",
                "--accel",
                "--smp",
                "--mem",
                "--nodes",
                "--timeout",
                "--append",
                "--kernel",
                "--image",
            ] {
                if seen.contains(&flag) {
                    return Err(CliError::NotForCommand {
                        flag,
                        command: "bench --host",
                    });
                }
            }
            let cores = host_cores();
            if let Some(cpus) = largest_cpus(&cli.options.bench).filter(|c| *c > cores) {
                return Err(CliError::CpusAboveHost { cpus, cores });
            }
            return Ok(());
        }
        Command::Bench => {
            if !seen.contains(&"--smp") {
                cli.options.smp = host_cores();
            }
            if !seen.contains(&"--mem") {
                cli.options.mem_mib = BENCH_MEM_MIB;
            }
            let b = &mut cli.options.bench;
            if b.memcgs.is_none() && !b.quick {
                b.memcgs = Some(TCG_MEMCGS.to_owned());
            }
            if b.ci_width.is_none() && b.budget.is_none() && !b.quick {
                b.ci_width = Some(TCG_CI_WIDTH.to_owned());
                b.budget = Some(TCG_BUDGET.to_owned());
            }
            let smp = cli.options.smp;
            if let Some(cpus) = largest_cpus(&cli.options.bench).filter(|c| *c > smp) {
                return Err(CliError::CpusAboveSmp { cpus, smp });
            }
        }
        _ => {}
    }
    if cli.command == Command::Image {
        for flag in [
            "--mode",
            "--accel",
            "--smp",
            "--mem",
            "--nodes",
            "--timeout",
            "--kernel",
            "--image",
        ] {
            if seen.contains(&flag) {
                return Err(CliError::NotForCommand { flag, command });
            }
        }
        return Ok(());
    }
    if cli.options.nodes_host {
        let nodes = host_nodes_with_cpus().map_err(CliError::HostTopology)?;
        cli.options.nodes = Some(nodes);
    }
    if seen.contains(&"--out") && cli.command != Command::Help && cli.command != Command::Bench {
        return Err(CliError::NotForCommand {
            flag: "--out",
            command,
        });
    }
    if let Some(nodes) = cli.options.nodes {
        let (smp, mem) = (cli.options.smp, cli.options.mem_mib);
        if nodes > smp {
            return Err(CliError::Nodes {
                nodes,
                why: NodesProblem::MoreThanCpus(smp),
            });
        }
        if mem / nodes < MIN_NODE_MIB {
            return Err(CliError::Nodes {
                nodes,
                why: NodesProblem::TooLittleMemory(mem),
            });
        }
    }
    let mode = cli.options.mode;
    if cli.options.kernel.is_some() && mode.uses_image() {
        return Err(CliError::NotForMode {
            flag: "--kernel",
            mode,
        });
    }
    if cli.options.image.is_some() && !mode.uses_image() {
        return Err(CliError::NotForMode {
            flag: "--image",
            mode,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_benchmark() {
        assert_eq!(parse(Vec::<String>::new()).unwrap().command, Command::Bench);
        let c = parse(["--smp", "4"]).unwrap();
        assert_eq!((c.command, c.options.smp), (Command::Bench, 4));
        let c = parse(["--host", "--quick"]).unwrap();
        assert_eq!(c.command, Command::Bench);
    }

    #[test]
    fn run_with_everything() {
        let c = parse([
            "run",
            "--mode=usb-uefi",
            "--smp",
            "8",
            "--mem",
            "1024",
            "--timeout",
            "90",
            "--append",
            "run=test cpus=2",
            "--image",
            "x.img",
            "--debug",
            "--quiet",
        ])
        .unwrap();
        let o = c.options;
        assert_eq!(c.command, Command::Run);
        assert_eq!(o.mode, Mode::UsbUefi);
        assert_eq!((o.smp, o.mem_mib), (8, 1024));
        assert_eq!(o.timeout, Some(Duration::from_secs(90)));
        assert_eq!(o.append, "run=test cpus=2");
        assert_eq!(o.image, Some(PathBuf::from("x.img")));
        assert_eq!(o.profile, Profile::Debug);
        assert!(o.quiet);
    }

    #[test]
    fn test_names_are_positional() {
        let c = parse(["test", "heap", "paging", "--smp", "1"]).unwrap();
        assert_eq!(
            c.command,
            Command::Test(vec!["heap".into(), "paging".into()])
        );
        assert_eq!(
            parse(["run", "heap"]),
            Err(CliError::UnexpectedArgument("heap".into()))
        );
    }

    #[test]
    fn bad_arguments_are_typed() {
        assert_eq!(parse(["fly"]), Err(CliError::UnknownCommand("fly".into())));
        assert_eq!(
            parse(["run", "--fast"]),
            Err(CliError::UnknownFlag("--fast".into()))
        );
        assert_eq!(
            parse(["run", "--smp"]),
            Err(CliError::MissingValue("--smp"))
        );
        assert!(matches!(
            parse(["run", "--smp", "0"]),
            Err(CliError::BadNumber { flag: "--smp", .. })
        ));
        assert!(matches!(
            parse(["run", "--mem", "lots"]),
            Err(CliError::BadNumber { flag: "--mem", .. })
        ));
        assert!(matches!(
            parse(["run", "--timeout=-1"]),
            Err(CliError::BadNumber { .. })
        ));
        assert!(matches!(
            parse(["run", "--mode", "floppy"]),
            Err(CliError::BadMode(_))
        ));
        assert!(matches!(
            parse(["run", "--accel", "hvf"]),
            Err(CliError::BadAccel(_))
        ));
        assert_eq!(
            parse(["summary", "--accel=kvm"]).unwrap().options.accel,
            AccelRequest::Kvm
        );
        assert_eq!(parse(["test"]).unwrap().options.accel, AccelRequest::Auto);
        for args in [
            &["image", "--accel", "tcg"][..],
            &["bench", "--host", "--accel", "kvm"],
            &["compare", "a", "--accel", "tcg"],
        ] {
            assert!(
                matches!(
                    parse(args.iter().copied()),
                    Err(CliError::NotForCommand {
                        flag: "--accel",
                        ..
                    })
                ),
                "{args:?}"
            );
        }
        assert!(matches!(
            parse(["run", "--image", "x.img"]),
            Err(CliError::NotForMode {
                flag: "--image",
                ..
            })
        ));
        assert!(matches!(
            parse(["run", "--mode", "bios", "--kernel", "k.elf"]),
            Err(CliError::NotForMode {
                flag: "--kernel",
                ..
            })
        ));
        assert!(matches!(
            parse(["image", "--smp", "2"]),
            Err(CliError::NotForCommand { flag: "--smp", .. })
        ));
        assert!(matches!(
            parse(["run", "--out", "x.img"]),
            Err(CliError::NotForCommand { flag: "--out", .. })
        ));
        assert!(matches!(
            parse(["run", "--debug=yes"]),
            Err(CliError::UnknownFlag(_))
        ));
        let msg = parse(["run", "--smp", "x"]).unwrap_err().to_string();
        assert_eq!(msg, "--smp: `x` is not a number in 1..=256");
    }

    #[test]
    fn bench_options_become_kernel_keys() {
        let c = parse([
            "bench",
            "--quick",
            "--scenarios",
            "seed004-readtwice,limit",
            "--cpus=1,2",
            "--rounds",
            "3",
            "--seconds",
            "0.5",
            "--memcgs",
            "10,1500",
            "--smp",
            "2",
            "--out",
            "/tmp/r",
        ])
        .unwrap();
        assert_eq!(c.options.smp, 2);
        assert_eq!(c.options.out, Some(PathBuf::from("/tmp/r")));
        assert_eq!(
            c.options.bench.kernel_keys(),
            [
                "scenarios=seed004-readtwice,limit",
                "bench_cpus=1,2",
                "rounds=3",
                "seconds=0.5",
                "memcgs=10,1500",
                "quick=1"
            ]
        );
        // Without --smp, bench gets every host core.
        assert_eq!(parse(["bench"]).unwrap().options.smp, host_cores());
        assert_eq!(parse(["run"]).unwrap().options.smp, 2);
        // ... and room for seed002's memcgs; an explicit --mem wins.
        assert_eq!(parse(["bench"]).unwrap().options.mem_mib, BENCH_MEM_MIB);
        assert_eq!(
            parse(["bench", "--mem", "512"]).unwrap().options.mem_mib,
            512
        );
        assert_eq!(parse(["summary"]).unwrap().options.mem_mib, 256);
        // In QEMU seed002 leaves out 10,000 memcgs unless asked; quick and host runs keep
        // their own defaults.
        let memcgs = |a: &[&str]| parse(a.iter().copied()).unwrap().options.bench.memcgs;
        assert_eq!(memcgs(&["bench"]).as_deref(), Some(TCG_MEMCGS));
        assert_eq!(memcgs(&[]).as_deref(), Some(TCG_MEMCGS));
        assert_eq!(
            memcgs(&["bench", "--memcgs", "10,1500,10000"]).as_deref(),
            Some("10,1500,10000")
        );
        assert_eq!(memcgs(&["bench", "--quick"]), None);
        assert_eq!(memcgs(&["bench", "--host"]), None);
        // The default run in QEMU adds rounds toward 2% within 420 s; --quick, --host or
        // either flag given leave the rest to the kernel's defaults (no added rounds).
        let keys = |a: &[&str]| {
            parse(a.iter().copied())
                .unwrap()
                .options
                .bench
                .kernel_keys()
        };
        assert_eq!(
            keys(&["bench"]),
            ["memcgs=10,1500", "ci_width=2", "budget=420"]
        );
        assert_eq!(keys(&["bench", "--quick"]), ["quick=1"]);
        assert_eq!(keys(&["bench", "--host"]), Vec::<String>::new());
        assert_eq!(
            keys(&["bench", "--ci-width", "1.5"]),
            ["memcgs=10,1500", "ci_width=1.5"]
        );
        assert_eq!(
            keys(&["bench", "--budget", "60"]),
            ["memcgs=10,1500", "budget=60"]
        );
        for bad in ["0", "100.01", "1.234", "x"] {
            assert!(parse(["bench", "--ci-width", bad]).is_err(), "{bad}");
        }
        assert!(parse(["bench", "--budget", "0"]).is_err());
    }

    #[test]
    fn the_linux_reference_flags() {
        let c = parse(["bench", "--quick", "--linux"]).unwrap();
        assert!(c.options.bench.linux && c.options.bench.linux_kernel.is_none());
        assert_eq!(c.options.bench.kernel_keys(), ["quick=1"]);
        let c = parse(["bench", "--linux-kernel", "/boot/vmlinuz"]).unwrap();
        assert_eq!(
            c.options.bench.linux_kernel,
            Some(PathBuf::from("/boot/vmlinuz"))
        );
        assert_eq!(
            parse(["bench", "--linux-kernel"]),
            Err(CliError::MissingValue("--linux-kernel"))
        );
        for (args, flag, command) in [
            (&["test", "--linux"][..], "--linux", "test"),
            (
                &["summary", "--linux-kernel", "k"][..],
                "--linux-kernel",
                "summary",
            ),
            (
                &["bench", "--host", "--linux"][..],
                "--linux",
                "bench --host",
            ),
        ] {
            assert_eq!(
                parse(args.iter().copied()),
                Err(CliError::NotForCommand { flag, command }),
                "{args:?}"
            );
        }
    }

    #[test]
    fn host_mode_takes_the_bench_options_but_not_qemus() {
        let c = parse(["bench", "--host", "--quick", "--rounds", "3", "--out", "x"]).unwrap();
        assert!(c.options.bench.host && c.options.bench.quick);
        assert_eq!(c.options.bench.kernel_keys(), ["rounds=3", "quick=1"]);
        for flag in ["--smp", "--mem", "--timeout"] {
            assert_eq!(
                parse(["bench", "--host", flag, "64"]),
                Err(CliError::NotForCommand {
                    flag,
                    command: "bench --host"
                })
            );
        }
        assert!(matches!(
            parse(["bench", "--host", "--cpus", "1,100000"]),
            Err(CliError::BadBenchValue { .. })
        ));
        let too_many = (host_cores() + 1).to_string();
        assert_eq!(
            parse(["bench", "--host", "--cpus", &too_many]),
            Err(CliError::CpusAboveHost {
                cpus: host_cores() + 1,
                cores: host_cores()
            })
        );
        assert_eq!(
            parse(["run", "--host"]),
            Err(CliError::NotForCommand {
                flag: "--host",
                command: "run"
            })
        );
    }

    #[test]
    fn bad_bench_options() {
        for (args, flag) in [
            (&["bench", "--cpus", "2,1"][..], "--cpus"),
            (&["bench", "--cpus", "0"][..], "--cpus"),
            (&["bench", "--rounds", "0"][..], "--rounds"),
            (&["bench", "--rounds", "101"][..], "--rounds"),
            (&["bench", "--seconds", "fast"][..], "--seconds"),
            (&["bench", "--seconds", "0.001"][..], "--seconds"),
            (&["bench", "--memcgs", "99999"][..], "--memcgs"),
            (&["bench", "--scenarios", "seed999"][..], "--scenarios"),
        ] {
            match parse(args.iter().copied()) {
                Err(CliError::BadBenchValue { flag: f, .. }) => assert_eq!(f, flag, "{args:?}"),
                other => panic!("{args:?}: {other:?}"),
            }
        }
        assert_eq!(
            parse(["bench", "--smp", "2", "--cpus", "1,4"]),
            Err(CliError::CpusAboveSmp { cpus: 4, smp: 2 })
        );
        assert!(matches!(
            parse(["run", "--quick"]),
            Err(CliError::NotForCommand {
                flag: "--quick",
                ..
            })
        ));
        assert!(matches!(
            parse(["test", "--rounds", "2"]),
            Err(CliError::NotForCommand {
                flag: "--rounds",
                ..
            })
        ));
        let msg = parse(["bench", "--rounds", "0"]).unwrap_err().to_string();
        assert!(
            msg.starts_with("--rounds: `0` is not accepted (expected 1..=100"),
            "{msg}"
        );
    }

    #[test]
    fn import_qr_takes_images() {
        let c = parse(["import", "--qr", "a.jpg", "b.png", "--out", "r"]).unwrap();
        assert_eq!(
            c.command,
            Command::ImportQr(vec!["a.jpg".into(), "b.png".into()])
        );
        assert_eq!(c.command.name(), "import");
        let c = parse(["import", "a.jpg", "--qr", "b.png"]).unwrap();
        assert_eq!(
            c.command,
            Command::ImportQr(vec!["a.jpg".into(), "b.png".into()])
        );
        assert_eq!(
            parse(["import", "--qr"]),
            Err(CliError::MissingArgument(
                "import --qr needs at least one image"
            ))
        );
        assert!(matches!(
            parse(["bench", "--qr"]),
            Err(CliError::NotForCommand { flag: "--qr", .. })
        ));
        assert!(matches!(
            parse(["import", "--qr", "a.png", "--smp", "2"]),
            Err(CliError::NotForCommand { flag: "--smp", .. })
        ));
    }

    #[test]
    fn compare_and_import_take_paths() {
        let c = parse(["compare", "a", "b", "--out", "x.html"]).unwrap();
        assert_eq!(c.command, Command::Compare(vec!["a".into(), "b".into()]));
        assert_eq!(c.options.out, Some(PathBuf::from("x.html")));
        let c = parse(["import", "serial.log"]).unwrap();
        assert_eq!(c.command, Command::Import(Some("serial.log".into())));
        assert!(matches!(
            parse(["compare"]),
            Err(CliError::MissingArgument(_))
        ));
        assert!(matches!(
            parse(["import"]),
            Err(CliError::MissingArgument(_))
        ));
        assert_eq!(
            parse(["import", "a.log", "b.log"]),
            Err(CliError::UnexpectedArgument("b.log".into()))
        );
        assert!(matches!(
            parse(["compare", "a", "--smp", "2"]),
            Err(CliError::NotForCommand { flag: "--smp", .. })
        ));
    }

    #[test]
    fn nodes_must_fit_the_machine() {
        let c = parse(["test", "--smp", "4", "--nodes", "2"]).unwrap();
        assert_eq!(c.options.nodes, Some(2));
        assert_eq!(parse(["summary"]).unwrap().options.nodes, None);
        assert!(matches!(
            parse(["run", "--nodes", "0"]),
            Err(CliError::BadNumber {
                flag: "--nodes",
                ..
            })
        ));
        assert!(matches!(
            parse(["run", "--nodes", "65"]),
            Err(CliError::BadNumber {
                flag: "--nodes",
                ..
            })
        ));
        let e = parse(["run", "--smp", "2", "--nodes", "3"]).unwrap_err();
        assert_eq!(
            e,
            CliError::Nodes {
                nodes: 3,
                why: NodesProblem::MoreThanCpus(2)
            }
        );
        assert_eq!(
            e.to_string(),
            "--nodes 3: more nodes than vCPUs (--smp 2); every node needs a CPU"
        );
        let e = parse(["run", "--smp", "8", "--mem", "64", "--nodes", "8"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--nodes 8: 64 MiB of memory (--mem) gives each node 8 MiB, less than the 16 MiB a \
             node needs"
        );
        // The order of the options does not matter.
        assert!(parse(["run", "--nodes", "4", "--smp", "4"]).is_ok());
        assert!(matches!(
            parse(["image", "--nodes", "2"]),
            Err(CliError::NotForCommand {
                flag: "--nodes",
                ..
            })
        ));
    }

    #[test]
    fn placement_and_noise_options() {
        let c = parse(["bench", "--smt", "--strict", "--nodes", "host"]).unwrap();
        assert!(c.options.bench.smt && c.options.bench.strict && c.options.nodes_host);
        // `host` becomes the host's node count (at least 1: this machine has one).
        assert!(c.options.nodes.is_some_and(|n| n >= 1));
        let c = parse(["bench", "--host", "--smt", "--strict"]).unwrap();
        assert!(c.options.bench.smt && c.options.bench.strict);
        // No kernel keys for these.
        assert_eq!(c.options.bench.kernel_keys(), Vec::<String>::new());
        // A number after `host` wins, and the other way round.
        let c = parse(["summary", "--nodes", "host", "--nodes", "1"]).unwrap();
        assert!(!c.options.nodes_host && c.options.nodes == Some(1));
        for flag in ["--smt", "--strict"] {
            assert_eq!(
                parse(["run", flag]),
                Err(CliError::NotForCommand {
                    flag,
                    command: "run"
                })
            );
        }
        assert!(matches!(
            parse(["bench", "--host", "--nodes", "host"]),
            Err(CliError::NotForCommand {
                flag: "--nodes",
                ..
            })
        ));
        assert!(matches!(
            parse(["run", "--nodes", "hosts"]),
            Err(CliError::BadNumber {
                flag: "--nodes",
                ..
            })
        ));
    }

    #[test]
    fn help_anywhere() {
        assert_eq!(parse(["--help"]).unwrap().command, Command::Help);
        assert_eq!(parse(["run", "-h"]).unwrap().command, Command::Help);
        assert_eq!(parse(["help"]).unwrap().command, Command::Help);
    }
}
