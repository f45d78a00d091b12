//! The `kx` command line: one clap argument struct per subcommand, resolved into a [`Cli`].
//!
//! Each subcommand takes only the options that mean something to it: the commands that boot
//! flatten in the machine (`Machine`) and the build (`Build`), `bench` adds its own
//! ([`BenchOptions`]), and only the commands that write something take `--out`. An option
//! given to a command that does not use it is therefore one of clap's errors before anything
//! runs, and `kx help COMMAND` (or `kx COMMAND --help`) lists exactly what that command takes.
//! `bench --host` runs on host threads, so clap refuses the QEMU options beside it. With no
//! command, or an option first, the arguments are `bench`'s: `kx --quick` is `kx bench
//! --quick`.
//!
//! Values are checked as they are parsed: numbers against their ranges, the benchmark's
//! options against the kernel's own command-line parser (`abi::cmdline`), so the runner
//! accepts exactly what the kernel does; each of those becomes its kernel key
//! ([`BenchOptions::kernel_keys`]). What depends on several options is checked after, in
//! [`parse`]: `--cpus` must fit in `--smp` (whose default for `bench` is every host core) or,
//! with `--host`, in the cores this process may run on; `--nodes` must fit the vCPUs and the
//! memory; `--kernel` is for direct mode and `--image` for the others.
//!
//! Every mistake is a [`CliError`] of one line (clap's own without its usage:
//! [`boot::usage`]); the runner prints it with one line pointing at the help and exits with
//! [`crate::RunnerExit::Usage`]. Files that do not exist are checked when the command runs
//! ([`crate::RunnerExit::NotFound`]).

use crate::accel::AccelRequest;
use crate::mode::Mode;
use boot::Profile;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::borrow::Cow;
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
pub const TCG_MEMCGS: KernelValue = KernelValue {
    key: "memcgs",
    value: Cow::Borrowed("10,1500"),
};

/// vCPUs of the commands other than `bench` without `--smp`.
pub const DEFAULT_SMP: u32 = 2;
/// Guest memory (MiB) of the commands other than `bench` without `--mem`.
pub const DEFAULT_MEM_MIB: u32 = 256;
/// Least memory per NUMA node, MiB.
pub const MIN_NODE_MIB: u32 = 16;
/// Most NUMA nodes (the kernel's `MAX_NUMNODES`).
pub const MAX_NODES: u32 = 64;

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Boot and print the system summary.
    Summary,
    /// Run in-kernel tests (empty: all).
    Test(Vec<String>),
    /// List the in-kernel tests the kernel ELF registers (`test --list`), without booting.
    TestList,
    /// Boot with the `--append` command line as is.
    Run,
    /// Run the benchmark.
    Bench,
    /// Compare result directories.
    Compare(Vec<PathBuf>),
    /// Import a serial log.
    Import(PathBuf),
    /// Import the QR codes in these images (`import --qr`).
    ImportQr(Vec<PathBuf>),
    /// Print the cacheline layout report.
    Layout,
    /// Build the USB image.
    Image,
    /// Print this help text (`kx help [COMMAND]`, `--help`, `-h`): clap's, for the command
    /// asked about.
    Help(String),
}

impl Command {
    /// The subcommand's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Command::Summary => "summary",
            Command::Test(_) | Command::TestList => "test",
            Command::Run => "run",
            Command::Bench => "bench",
            Command::Compare(_) => "compare",
            Command::Import(_) | Command::ImportQr(_) => "import",
            Command::Layout => "layout",
            Command::Image => "image",
            Command::Help(_) => "help",
        }
    }
}

/// What the command runs with, after [`parse`] filled in the command's defaults; options
/// a command does not take keep their [`Default`].
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

impl Options {
    /// How the kernel is built for this command: `--release`/`--debug`, echoing the build
    /// unless `--quiet`.
    #[must_use]
    pub fn build(&self) -> boot::BuildOptions {
        boot::BuildOptions {
            profile: self.profile,
            quiet: self.quiet,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Direct,
            smp: DEFAULT_SMP,
            mem_mib: DEFAULT_MEM_MIB,
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

/// `kx bench`'s own options, as validated kernel key values (`None`: the kernel's default).
#[derive(Args, Clone, Debug, Default, PartialEq, Eq)]
#[command(next_help_heading = "Benchmark (kernel keys in parentheses; defaults are the kernel's)")]
pub struct BenchOptions {
    /// Run the scenarios on pinned host threads instead of booting, with Linux's own fault
    /// path as the `linux` reference (no QEMU needed, none of its options apply)
    #[arg(long, conflicts_with_all = QEMU_ONLY)]
    pub host: bool,
    /// Pin vCPUs (or --host threads) to SMT siblings too [default: one per physical core;
    /// vCPUs beyond the cores are left unpinned, with a warning]
    #[arg(long)]
    pub smt: bool,
    /// Refuse to start when other processes keep the host busy (more than 0.1 core over the
    /// 1 s sampled before the run): exit status 15
    #[arg(long)]
    pub strict: bool,
    /// Short run for tests and CI (quick=1: 2 rounds of 0.1 s, CPUs 1 and 2)
    #[arg(long)]
    pub quick: bool,
    /// all | NAME[,NAME...] (scenarios=)
    #[arg(long, value_name = "LIST", value_parser = kernel_value("scenarios"))]
    pub scenarios: Option<KernelValue>,
    /// CPU counts, e.g. 1,2,4, increasing, each <= --smp (bench_cpus=) [default: 1, 2, 4,
    /// ... up to --smp]
    #[arg(long, value_name = "LIST", value_parser = kernel_value("bench_cpus"))]
    pub cpus: Option<KernelValue>,
    /// Measured rounds per variant, 1..=100, a multiple of --instances (rounds=) [default:
    /// 4, quick 2; --coherence 1]
    #[arg(long, value_name = "N", value_parser = kernel_value("rounds"))]
    pub rounds: Option<KernelValue>,
    /// Instances of each variant per point, 1..=16, each built afresh at a new placement
    /// and measured for rounds/instances rounds (instances=) [default: 4, quick 2;
    /// --coherence 1]
    #[arg(long, value_name = "N", value_parser = kernel_value("instances"))]
    pub instances: Option<KernelValue>,
    /// Seconds per run, 0.01..=3600, e.g. 0.5 (seconds=) [default: 0.5, quick 0.1]
    #[arg(long, value_name = "S", value_parser = kernel_value("seconds"))]
    pub seconds: Option<KernelValue>,
    /// seed002's memcg counts, e.g. 10,1500 (memcgs=) [default: 10,1500,10000; kx bench in
    /// QEMU: 10,1500]
    #[arg(long, value_name = "LIST", value_parser = kernel_value("memcgs"))]
    pub memcgs: Option<KernelValue>,
    /// Add instance blocks until every comparison's 95% interval half-width is at most PCT
    /// percent, 0.01..=100 (ci_width=) [default: none, a fixed number of instances]
    #[arg(long, value_name = "PCT", value_parser = kernel_value("ci_width"))]
    pub ci_width: Option<KernelValue>,
    /// Stop adding instance blocks once the benchmark has run this long, pro rata per point,
    /// 1..=86400 (budget=) [default: none]
    #[arg(long, value_name = "SECS", value_parser = kernel_value("budget"))]
    pub budget: Option<KernelValue>,
    /// After the benchmark, boot Debian's Linux (linux-image-cloud-amd64) in the same QEMU
    /// as the `linux` reference rows, fetching it with apt-get into the kx cache if needed (a
    /// default run, not --quick, does this when the kernel is in the cache already)
    #[arg(long)]
    pub linux: bool,
    /// The same with this Linux image (also $KX_LINUX_KERNEL)
    #[arg(long, value_name = "FILE")]
    pub linux_kernel: Option<PathBuf>,
    /// Count the cache lines that move between the vCPUs, per run, under the coherence
    /// plugin (TCG only; no Linux reference): transfers per operation and the hot lines with
    /// the code that moved them, in the terminal, results.json and coherence.csv
    #[arg(long, conflicts_with_all = ["host", "linux", "linux_kernel", "image"])]
    pub coherence: bool,
    /// With --coherence: run every vCPU on one host thread, round-robin (QEMU's
    /// `-accel tcg,thread=single`), so the vCPUs interleave at the emulator's time slices
    /// instead of the host scheduler's: the deterministic interleaving to compare
    /// oversubscribed counts with
    #[arg(long, requires = "coherence")]
    pub tcg_single: bool,
    /// With --coherence: each vCPU's private cache in the plugin's model, in KiB (a line
    /// not touched since that much else was leaves the cache, so old writes stop counting)
    /// [default: 1024]
    #[arg(long, value_name = "KIB", requires = "coherence",
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub cache_kib: Option<u64>,
    /// With --coherence: the ways of that cache [default: 8]
    #[arg(long, value_name = "N", requires = "coherence",
          value_parser = clap::value_parser!(u32).range(1..=32))]
    pub cache_ways: Option<u32>,
    /// With --coherence: how many hot lines the plugin reports per run and unit size (the
    /// mechanism figures count the seed's fields on these lines only) [default: 16]
    #[arg(long, value_name = "N", requires = "coherence",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub hot_lines: Option<u32>,
}

/// The options `bench --host` refuses: QEMU's, the machine's and the Linux reference's
/// (which boots in QEMU). Clap's ids, the fields' names.
const QEMU_ONLY: [&str; 11] = [
    "mode",
    "smp",
    "mem",
    "nodes",
    "timeout",
    "accel",
    "append",
    "kernel",
    "image",
    "linux",
    "linux_kernel",
];

impl BenchOptions {
    /// The kernel command-line words these options stand for.
    #[must_use]
    pub fn kernel_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        if self.coherence && self.scenarios.is_none() {
            keys.push(format!("scenarios={}", coherence_scenarios()));
        }
        for value in [
            &self.scenarios,
            &self.cpus,
            &self.rounds,
            &self.instances,
            &self.seconds,
            &self.memcgs,
            &self.ci_width,
            &self.budget,
        ]
        .into_iter()
        .flatten()
        {
            keys.push(value.to_string());
        }
        if self.quick {
            keys.push("quick=1".into());
        }
        if self.coherence {
            keys.push("objects=1".into());
            // Counts need no timing interval: one instance of one round unless asked.
            if self.instances.is_none() {
                keys.push("instances=1".into());
                if self.rounds.is_none() {
                    keys.push("rounds=1".into());
                }
            }
        }
        keys
    }

    /// Checks the kernel keys together (each was checked alone as it was parsed): `rounds`
    /// must be a multiple of `instances`; and the coherence model's cache geometry.
    pub fn check(&self) -> Result<(), CliError> {
        let line = format!("run=bench {}", self.kernel_keys().join(" "));
        if let Err(e) = abi::cmdline::parse(&line, false) {
            return Err(CliError::Arguments(e.to_string()));
        }
        let mut model = coherence::Config::new(0, PathBuf::new());
        self.coherence_model(&mut model);
        for g in model.geometries() {
            g.check()
                .map_err(|why| CliError::Arguments(format!("--cache-kib/--cache-ways: {why}")))?;
        }
        Ok(())
    }

    /// Puts the coherence model's options (cache size and ways, hot lines) into `c`.
    pub fn coherence_model(&self, c: &mut coherence::Config) {
        if let Some(k) = self.cache_kib {
            c.cache_kib = k;
        }
        if let Some(w) = self.cache_ways {
            c.ways = w as usize;
        }
        if let Some(t) = self.hot_lines {
            c.top = t as usize;
        }
    }

    /// Whether `--coherence` runs its default set (no `--scenarios` given).
    #[must_use]
    pub fn coherence_default_set(&self) -> bool {
        self.coherence && self.scenarios.is_none()
    }

    /// The largest `--cpus` entry.
    fn largest_cpus(&self) -> Option<u32> {
        self.cpus.as_ref().and_then(|l| {
            l.value()
                .split(',')
                .filter_map(|n| n.parse::<u32>().ok())
                .max()
        })
    }
}

/// The command line as clap reads it.
#[derive(Parser, Debug)]
#[command(
    name = "kx",
    about = "Build the kernel, boot it in QEMU, report what happened.",
    long_about = "Build the kernel, boot it in QEMU, report what happened.\n\n\
                  Without a command, or with an option first, kx runs `bench`. \
                  `kx help COMMAND` (or `kx COMMAND --help`) lists a command's options.",
    args_override_self = true
)]
struct Kx {
    #[command(subcommand)]
    command: Sub,
}

/// The subcommands, each with its own arguments.
#[derive(Subcommand, Debug)]
enum Sub {
    /// Run the benchmark scenarios (run=bench): table and results directory (the default)
    Bench(Box<BenchArgs>),
    /// Boot and print the system summary
    Summary(BootArgs),
    /// Run the in-kernel tests: all, or the named ones
    Test(TestArgs),
    /// Boot with the command line given by --append (default: empty)
    Run(BootArgs),
    /// Compare benchmark result directories (hmeans, ratios, significance)
    Compare(CompareArgs),
    /// Turn a serial log from a real machine into a results directory; with --qr, photos or
    /// screenshots of the QR codes the kernel shows
    Import(ImportArgs),
    /// Print the cacheline layout report of the key structs (run=layout)
    Layout(BootArgs),
    /// Build the GRUB USB image (BIOS + UEFI); print the dd line and its SHA-256
    Image(ImageArgs),
}

/// The machine QEMU boots, for the commands that boot.
#[derive(Args, Debug)]
#[command(next_help_heading = "Machine")]
struct Machine {
    /// direct | bios | uefi | usb-bios | usb-uefi
    #[arg(long, value_name = "MODE", default_value = "direct", value_parser = parse_mode)]
    mode: Mode,
    /// vCPUs, 1..=256 [default: bench every host core, others 2]
    #[arg(long, value_name = "N", value_parser = number_in(1, abi::cmdline::MAX_CPUS))]
    smp: Option<u32>,
    /// Guest memory in MiB, 32..=65536 [default: bench 1024, others 256]
    #[arg(long, value_name = "MIB", value_parser = number_in(32, 65536))]
    mem: Option<u32>,
    /// N NUMA nodes, 1..=64: memory split evenly (at least 16 MiB each), vCPUs round-robin,
    /// distances 10 + 10*|i-j|; or `host`: as many nodes as the host has (with CPUs this
    /// process may use), each mirroring one [default: no NUMA description]
    #[arg(long, value_name = "N|host", value_parser = parse_nodes)]
    nodes: Option<Nodes>,
    /// Kill QEMU after SECS, 1..=86400 [default: 60; UEFI modes 120; bench 1800]
    #[arg(long, value_name = "SECS", value_parser = number_in(1, 86400))]
    timeout: Option<u32>,
    /// auto (KVM where a probe boot shows it works, cached per host), kvm (where it does not
    /// is an error, status 14) or tcg
    #[arg(long, value_name = "ACCEL", default_value = "auto", value_parser = parse_accel)]
    accel: AccelRequest,
    /// Kernel command-line words (run: the whole line; the others add them)
    #[arg(
        long,
        value_name = "CMDLINE",
        default_value = "",
        hide_default_value = true
    )]
    append: String,
    /// Direct mode: boot this ELF32 instead of building the kernel
    #[arg(long, value_name = "FILE")]
    kernel: Option<PathBuf>,
    /// Image modes: boot this GRUB image instead of building one
    #[arg(long, value_name = "FILE")]
    image: Option<PathBuf>,
}

/// `--nodes`: a count, or the host's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Nodes {
    /// That many nodes.
    Count(u32),
    /// As many as the host has, each mirroring one.
    Host,
}

/// How the kernel is built and how much of its console is shown.
#[derive(Args, Debug)]
#[command(next_help_heading = "Build")]
struct Build {
    /// Build the debug kernel
    #[arg(long, overrides_with = "release")]
    debug: bool,
    /// Build the release kernel (the default)
    #[arg(long, overrides_with = "debug")]
    release: bool,
    /// Do not echo the serial console (results and failures are still printed)
    #[arg(long)]
    quiet: bool,
}

impl Build {
    fn profile(&self) -> Profile {
        if self.debug {
            Profile::Debug
        } else {
            Profile::Release
        }
    }
}

/// `summary`, `run`, `layout`: a machine to boot and a kernel to build.
#[derive(Args, Debug)]
struct BootArgs {
    #[command(flatten)]
    machine: Machine,
    #[command(flatten)]
    build: Build,
}

/// `test [NAME...]`.
#[derive(Args, Debug)]
struct TestArgs {
    /// The in-kernel tests to run, by name or `PREFIX*`, separated by spaces or commas
    /// [default: all]
    #[arg(value_name = "NAME", conflicts_with = "list")]
    names: Vec<String>,
    /// List the tests the kernel registers (`#[ktest]`) instead of running them: the
    /// kernel is built, not booted
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    boot: BootArgs,
}

/// `bench`.
#[derive(Args, Debug)]
struct BenchArgs {
    #[command(flatten)]
    machine: Machine,
    #[command(flatten)]
    bench: BenchOptions,
    /// The results directory [default: results/<UTC timestamp>/]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    build: Build,
}

/// `compare DIR...`.
#[derive(Args, Debug)]
struct CompareArgs {
    /// Results directories, the first the baseline of the ratios
    #[arg(value_name = "DIR", required = true)]
    dirs: Vec<PathBuf>,
    /// The HTML page [default: next to the first DIR]
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `import LOG` and `import --qr IMAGE...`.
#[derive(Args, Debug)]
struct ImportArgs {
    /// The serial log (one); with --qr the images (PNG or JPEG, as many as hold the codes)
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// Read the QR codes in photos or screenshots instead of a serial log
    #[arg(long)]
    qr: bool,
    /// The results directory [default: results/<UTC timestamp>/]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// `image`.
#[derive(Args, Debug)]
struct ImageArgs {
    /// The kernel command line baked into grub.cfg [default: empty, the summary]
    #[arg(
        long,
        value_name = "CMDLINE",
        default_value = "",
        hide_default_value = true
    )]
    append: String,
    /// The image file [default: out/kx-usb.img]
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    build: Build,
}

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
    /// What clap found wrong (an unknown command or option, an option the command does not
    /// take, a value missing or out of range, a kernel key's value the kernel rejects): its
    /// message without the usage.
    Arguments(String),
    /// `import` without `--qr` and more than one file.
    UnexpectedArgument(String),
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

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Arguments(why) => f.write_str(why),
            CliError::UnexpectedArgument(a) => write!(
                f,
                "unexpected argument `{a}`: import reads one serial log (or, with --qr, images)"
            ),
            CliError::CpusAboveHost { cpus, cores } => write!(
                f,
                "--cpus: {cpus} CPUs asked for, but this process may run on {cores} host cores"
            ),
            CliError::CpusAboveSmp { cpus, smp } => write!(
                f,
                "--cpus: {cpus} CPUs asked for, but the machine has --smp {smp}"
            ),
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

/// A whole number in `lo..=hi`.
fn number_in(lo: u32, hi: u32) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync {
    move |s: &str| match s.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("not a number in {lo}..={hi}")),
    }
}

/// One `key=value` of the kernel's command line, the value as written and accepted by the
/// kernel's parser. The key is named once, in the option's `value_parser`
/// (`kernel_value("key")`), and travels with the value to the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelValue {
    key: &'static str,
    value: Cow<'static, str>,
}

impl KernelValue {
    /// `key=value`, if the kernel's parser accepts `value` for `key` on its own.
    pub fn new(key: &'static str, value: &str) -> Result<Self, String> {
        kernel_value(key)(value)
    }

    /// The kernel's key.
    #[must_use]
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The value as written.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for KernelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// A value the kernel's command-line parser accepts for `key` (kept as written: it becomes
/// `key=value` on the kernel's command line).
fn kernel_value(
    key: &'static str,
) -> impl Fn(&str) -> Result<KernelValue, String> + Clone + Send + Sync {
    move |value: &str| {
        // The value alone: how it combines with other keys is checked once all are known
        // (`BenchOptions::check`).
        if matches!(
            abi::cmdline::parse(&format!("run=bench {key}={value}"), false),
            Ok(_) | Err(abi::cmdline::CmdlineError::RoundsPerInstance { .. })
        ) {
            return Ok(KernelValue {
                key,
                value: Cow::Owned(value.to_owned()),
            });
        }
        let accepted = abi::cmdline::ACCEPTED
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v);
        Err(format!("not accepted (expected {accepted})"))
    }
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
        .map_err(|e: crate::mode::UnknownMode| e.to_string())
}

fn parse_accel(s: &str) -> Result<AccelRequest, String> {
    s.parse()
        .map_err(|_| "not one of auto, kvm, tcg".to_owned())
}

fn parse_nodes(s: &str) -> Result<Nodes, String> {
    if s == "host" {
        return Ok(Nodes::Host);
    }
    number_in(1, MAX_NODES)(s)
        .map(Nodes::Count)
        .map_err(|e| format!("{e}, or `host`"))
}

/// The clap command `kx` parses with: `Kx`'s, with the exit statuses after the top-level
/// help.
#[must_use]
pub fn command() -> clap::Command {
    Kx::command().after_help(crate::exit::exit_code_help())
}

/// Parses the arguments after the program name.
pub fn parse<I, S>(args: I) -> Result<Cli, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut args: Vec<String> = args.into_iter().map(Into::into).collect();
    // No command, or an option first: the benchmark's (`-h` and `--help` stay kx's own).
    if args
        .first()
        .is_none_or(|a| a.starts_with('-') && a != "-h" && a != "--help")
    {
        args.insert(0, "bench".into());
    }
    let parsed = command()
        .try_get_matches_from(std::iter::once("kx".to_owned()).chain(args))
        .and_then(|m| Kx::from_arg_matches(&m));
    match parsed {
        Ok(kx) => kx.command.resolve(),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            Ok(Cli {
                command: Command::Help(e.render().to_string()),
                options: Options::default(),
            })
        }
        Err(e) => Err(CliError::Arguments(boot::usage::one_line(&e))),
    }
}

impl Sub {
    /// The command and its options, with the command's defaults and the checks that span
    /// several options.
    fn resolve(self) -> Result<Cli, CliError> {
        let (command, options) = match self {
            Sub::Bench(a) => (Command::Bench, a.options()?),
            Sub::Summary(a) => (Command::Summary, a.options()?),
            Sub::Test(a) if a.list => (Command::TestList, a.boot.options()?),
            Sub::Test(a) => (Command::Test(a.names), a.boot.options()?),
            Sub::Run(a) => (Command::Run, a.options()?),
            Sub::Layout(a) => (Command::Layout, a.options()?),
            Sub::Compare(a) => (
                Command::Compare(a.dirs),
                Options {
                    out: a.out,
                    ..Options::default()
                },
            ),
            Sub::Import(a) => {
                let mut files = a.files;
                let command = if a.qr {
                    Command::ImportQr(files)
                } else if files.len() > 1 {
                    return Err(CliError::UnexpectedArgument(files[1].display().to_string()));
                } else {
                    Command::Import(files.remove(0))
                };
                let options = Options {
                    out: a.out,
                    ..Options::default()
                };
                (command, options)
            }
            Sub::Image(a) => (
                Command::Image,
                Options {
                    append: a.append,
                    out: a.out,
                    profile: a.build.profile(),
                    quiet: a.build.quiet,
                    ..Options::default()
                },
            ),
        };
        Ok(Cli { command, options })
    }
}

impl BootArgs {
    fn options(self) -> Result<Options, CliError> {
        self.machine
            .options(&self.build, DEFAULT_SMP, DEFAULT_MEM_MIB)
    }
}

impl BenchArgs {
    fn options(self) -> Result<Options, CliError> {
        let b = self.bench;
        b.check()?;
        if b.host {
            // Clap has refused the machine's options: only the benchmark's remain.
            let cores = host_cores();
            if let Some(cpus) = b.largest_cpus().filter(|c| *c > cores) {
                return Err(CliError::CpusAboveHost { cpus, cores });
            }
            return Ok(Options {
                out: self.out,
                bench: b,
                profile: self.build.profile(),
                quiet: self.build.quiet,
                ..Options::default()
            });
        }
        let mut o = self
            .machine
            .options(&self.build, host_cores(), BENCH_MEM_MIB)?;
        let smp = o.smp;
        if let Some(cpus) = b.largest_cpus().filter(|c| *c > smp) {
            return Err(CliError::CpusAboveSmp { cpus, smp });
        }
        o.out = self.out;
        o.bench = b;
        let b = &mut o.bench;
        if b.memcgs.is_none() && !b.quick {
            b.memcgs = Some(TCG_MEMCGS);
        }
        Ok(o)
    }
}

impl Machine {
    /// The options of a command that boots, `smp` vCPUs and `mem` MiB unless given; checks
    /// that the nodes fit the machine and the prebuilt kernel or image the mode.
    fn options(self, build: &Build, smp: u32, mem: u32) -> Result<Options, CliError> {
        let (nodes, nodes_host) = match self.nodes {
            None => (None, false),
            Some(Nodes::Count(n)) => (Some(n), false),
            Some(Nodes::Host) => (
                Some(host_nodes_with_cpus().map_err(CliError::HostTopology)?),
                true,
            ),
        };
        let o = Options {
            mode: self.mode,
            smp: self.smp.unwrap_or(smp),
            mem_mib: self.mem.unwrap_or(mem),
            nodes,
            nodes_host,
            timeout: self.timeout.map(|s| Duration::from_secs(s.into())),
            accel: self.accel,
            append: self.append,
            kernel: self.kernel,
            image: self.image,
            profile: build.profile(),
            quiet: build.quiet,
            ..Options::default()
        };
        if let Some(nodes) = o.nodes {
            if nodes > o.smp {
                return Err(CliError::Nodes {
                    nodes,
                    why: NodesProblem::MoreThanCpus(o.smp),
                });
            }
            if o.mem_mib / nodes < MIN_NODE_MIB {
                return Err(CliError::Nodes {
                    nodes,
                    why: NodesProblem::TooLittleMemory(o.mem_mib),
                });
            }
        }
        let mode = o.mode;
        if o.kernel.is_some() && mode.uses_image() {
            return Err(CliError::NotForMode {
                flag: "--kernel",
                mode,
            });
        }
        if o.image.is_some() && !mode.uses_image() {
            return Err(CliError::NotForMode {
                flag: "--image",
                mode,
            });
        }
        Ok(o)
    }
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

/// `--coherence`'s scenarios when none are named: the floor and every experiment whose
/// catalog entry names a mechanism (seed002's cost is algorithmic, and its thousands of
/// memcgs cost minutes under the plugin).
#[must_use]
pub fn coherence_scenarios() -> String {
    abi::catalog::SCENARIOS
        .iter()
        .filter(|s| s.name == abi::catalog::LIMIT || s.mechanism.is_some())
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clap's one-line message for arguments it refuses.
    fn refused<const N: usize>(args: [&str; N]) -> String {
        match parse(args) {
            Err(CliError::Arguments(msg)) => msg,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn help<const N: usize>(args: [&str; N]) -> String {
        match parse(args).map(|c| c.command) {
            Ok(Command::Help(text)) => text,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn the_coherence_model_is_set_from_the_command_line_and_checked_there() {
        let c = parse([
            "bench",
            "--coherence",
            "--cache-kib",
            "256",
            "--cache-ways",
            "4",
            "--hot-lines",
            "64",
        ])
        .unwrap();
        let mut model = coherence::Config::new(0x1000, PathBuf::from("/x"));
        c.options.bench.coherence_model(&mut model);
        assert_eq!((model.cache_kib, model.ways, model.top), (256, 4, 64));
        let args = model.to_args();
        let back = coherence::Config::parse(args.iter().map(String::as_str)).unwrap();
        assert_eq!(back, model, "the plugin reads back what the runner passes");
        let mut default = coherence::Config::new(0x1000, PathBuf::from("/x"));
        parse(["bench", "--coherence"])
            .unwrap()
            .options
            .bench
            .coherence_model(&mut default);
        assert_eq!(default, coherence::Config::new(0x1000, PathBuf::from("/x")));
        assert!(
            refused(["bench", "--coherence", "--cache-kib", "1000"]).contains("power-of-two"),
            "a geometry the model cannot have is refused before anything is built"
        );
        assert!(refused(["bench", "--coherence", "--cache-ways", "33"]).contains("33"));
        assert!(refused(["bench", "--cache-kib", "256"]).contains("--coherence"));
        assert!(refused(["bench", "--coherence", "--hot-lines", "0"]).contains("0"));
    }

    #[test]
    fn coherence_runs_the_mechanism_scenarios_unless_told_otherwise() {
        let c = parse(["bench", "--coherence", "--quick"]).unwrap();
        let keys = c.options.bench.kernel_keys();
        let want = format!("scenarios={}", coherence_scenarios());
        assert_eq!(
            keys,
            [
                want.as_str(),
                "quick=1",
                "objects=1",
                "instances=1",
                "rounds=1"
            ]
        );
        assert!(want.contains("limit") && want.contains("seed001-faultfree"));
        assert!(!want.contains("seed002"), "{want}");
        let c = parse(["bench", "--coherence", "--scenarios", "seed002-reclaim"]).unwrap();
        assert_eq!(
            c.options.bench.kernel_keys(),
            [
                "scenarios=seed002-reclaim",
                "memcgs=10,1500",
                "objects=1",
                "instances=1",
                "rounds=1"
            ],
            "one instance of one round: counts need no timing interval"
        );
        assert!(refused(["bench", "--coherence", "--host"]).contains("--host"));
        assert!(refused(["bench", "--coherence", "--linux"]).contains("--linux"));
    }

    #[test]
    fn the_clap_definition_is_consistent() {
        // Every id named in a conflict or override exists, no two options share a name.
        command().debug_assert();
    }

    #[test]
    fn default_is_the_benchmark() {
        assert_eq!(parse(Vec::<String>::new()).unwrap().command, Command::Bench);
        let c = parse(["--smp", "4"]).unwrap();
        assert_eq!((c.command, c.options.smp), (Command::Bench, 4));
        let c = parse(["--host", "--quick"]).unwrap();
        assert_eq!(c.command, Command::Bench);
        let c = parse(["--quiet"]).unwrap();
        assert!(c.command == Command::Bench && c.options.quiet);
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
        // The last of --debug and --release wins, as does the last of a repeated option.
        let o = parse(["run", "--debug", "--release", "--smp", "1", "--smp", "3"])
            .unwrap()
            .options;
        assert_eq!((o.profile, o.smp), (Profile::Release, 3));
    }

    #[test]
    fn test_names_are_positional() {
        let c = parse(["test", "heap", "paging", "--smp", "1"]).unwrap();
        assert_eq!(
            c.command,
            Command::Test(vec!["heap".into(), "paging".into()])
        );
        assert!(refused(["run", "heap"]).contains("unexpected argument 'heap'"));
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        assert!(refused(["fly"]).contains("unrecognized subcommand 'fly'"));
        assert!(refused(["run", "--fast"]).contains("unexpected argument '--fast'"));
        assert!(refused(["run", "--smp"]).contains("a value is required for '--smp <N>'"));
        assert!(refused(["run", "--smp", "0"]).contains("not a number in 1..=256"));
        assert!(refused(["run", "--mem", "lots"]).contains("not a number in 32..=65536"));
        assert!(refused(["run", "--timeout=-1"]).contains("not a number in 1..=86400"));
        assert!(refused(["run", "--mode", "floppy"]).contains("unknown mode `floppy`"));
        assert!(refused(["run", "--accel", "hvf"]).contains("not one of auto, kvm, tcg"));
        assert!(refused(["run", "--debug=yes"]).contains("unexpected value 'yes'"));
        assert_eq!(
            refused(["run", "--smp", "x"]),
            "invalid value 'x' for '--smp <N>': not a number in 1..=256"
        );
        assert_eq!(
            parse(["summary", "--accel=kvm"]).unwrap().options.accel,
            AccelRequest::Kvm
        );
        assert_eq!(parse(["test"]).unwrap().options.accel, AccelRequest::Auto);
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
    }

    #[test]
    fn a_command_takes_only_its_own_options() {
        for (args, flag) in [
            (&["image", "--accel", "tcg"][..], "--accel"),
            (&["compare", "a", "--accel", "tcg"], "--accel"),
            (&["image", "--smp", "2"], "--smp"),
            (&["image", "--nodes", "2"], "--nodes"),
            (&["run", "--out", "x.img"], "--out"),
            (&["run", "--host"], "--host"),
            (&["run", "--quick"], "--quick"),
            (&["run", "--smt"], "--smt"),
            (&["run", "--strict"], "--strict"),
            (&["test", "--rounds", "2"], "--rounds"),
            (&["test", "--linux"], "--linux"),
            (&["summary", "--linux-kernel", "k"], "--linux-kernel"),
            (&["bench", "--qr"], "--qr"),
            (&["import", "--qr", "a.png", "--smp", "2"], "--smp"),
            (&["compare", "a", "--smp", "2"], "--smp"),
        ] {
            let msg = match parse(args.iter().copied()) {
                Err(CliError::Arguments(msg)) => msg,
                other => panic!("{args:?}: {other:?}"),
            };
            assert!(
                msg.contains(&format!("unexpected argument '{flag}'")),
                "{args:?}: {msg}"
            );
        }
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
            "4",
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
                "rounds=4",
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
        let memcgs = |a: &[&str]| {
            let o = parse(a.iter().copied()).unwrap().options;
            o.bench.memcgs.map(|v| v.to_string())
        };
        assert_eq!(memcgs(&["bench"]).as_deref(), Some("memcgs=10,1500"));
        assert_eq!(memcgs(&[]).as_deref(), Some("memcgs=10,1500"));
        assert_eq!(
            memcgs(&["bench", "--memcgs", "10,1500,10000"]).as_deref(),
            Some("memcgs=10,1500,10000")
        );
        assert_eq!(memcgs(&["bench", "--quick"]), None);
        assert_eq!(memcgs(&["bench", "--host"]), None);
        // The default run in QEMU runs a fixed number of instances (the kernel's defaults);
        // instance blocks are added only when --ci-width or --budget asks.
        let keys = |a: &[&str]| {
            parse(a.iter().copied())
                .unwrap()
                .options
                .bench
                .kernel_keys()
        };
        assert_eq!(keys(&["bench"]), ["memcgs=10,1500"]);
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
        // Rounds and instances together: the rounds must split evenly.
        assert_eq!(
            keys(&["bench", "--rounds", "6", "--instances", "3"]),
            ["rounds=6", "instances=3", "memcgs=10,1500"]
        );
        let e = parse(["bench", "--rounds", "6"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("rounds=6 is not a multiple of instances=4"),
            "{e}"
        );
        assert!(parse(["bench", "--instances", "0"]).is_err());
        assert!(parse(["bench", "--host", "--rounds", "3", "--instances", "2"]).is_err());
        // --coherence counts with one instance of one round unless asked.
        assert_eq!(
            keys(&["bench", "--coherence", "--scenarios", "limit"]),
            [
                "scenarios=limit",
                "memcgs=10,1500",
                "objects=1",
                "instances=1",
                "rounds=1"
            ]
        );
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
        assert!(
            refused(["bench", "--linux-kernel"])
                .contains("a value is required for '--linux-kernel <FILE>'")
        );
        let msg = refused(["bench", "--host", "--linux"]);
        assert!(
            msg.contains("'--host' cannot be used with '--linux'"),
            "{msg}"
        );
    }

    #[test]
    fn host_mode_takes_the_bench_options_but_not_qemus() {
        let c = parse(["bench", "--host", "--quick", "--rounds", "4", "--out", "x"]).unwrap();
        assert!(c.options.bench.host && c.options.bench.quick);
        assert_eq!(c.options.bench.kernel_keys(), ["rounds=4", "quick=1"]);
        assert_eq!(c.options.out, Some(PathBuf::from("x")));
        for flag in [
            "--mode",
            "--smp",
            "--mem",
            "--nodes",
            "--timeout",
            "--accel",
            "--append",
            "--kernel",
            "--image",
            "--linux-kernel",
        ] {
            let value = match flag {
                "--mode" => "direct",
                "--accel" => "tcg",
                _ => "64",
            };
            // In either order.
            for args in [
                ["bench", "--host", flag, value],
                ["bench", flag, value, "--host"],
            ] {
                let msg = refused(args);
                assert!(
                    msg.contains("cannot be used with") && msg.contains(flag),
                    "{args:?}: {msg}"
                );
            }
        }
        assert!(refused(["bench", "--host", "--cpus", "1,100000"]).contains("not accepted"));
        let too_many = (host_cores() + 1).to_string();
        assert_eq!(
            parse(["bench", "--host", "--cpus", &too_many]),
            Err(CliError::CpusAboveHost {
                cpus: host_cores() + 1,
                cores: host_cores()
            })
        );
    }

    #[test]
    fn bad_bench_options() {
        for (args, flag) in [
            (&["bench", "--cpus", "2,1"][..], "--cpus <LIST>"),
            (&["bench", "--cpus", "0"][..], "--cpus <LIST>"),
            (&["bench", "--rounds", "0"][..], "--rounds <N>"),
            (&["bench", "--rounds", "101"][..], "--rounds <N>"),
            (&["bench", "--seconds", "fast"][..], "--seconds <S>"),
            (&["bench", "--seconds", "0.001"][..], "--seconds <S>"),
            (&["bench", "--memcgs", "99999"][..], "--memcgs <LIST>"),
            (
                &["bench", "--scenarios", "seed999"][..],
                "--scenarios <LIST>",
            ),
        ] {
            match parse(args.iter().copied()) {
                Err(CliError::Arguments(msg)) => assert!(
                    msg.contains(&format!("for '{flag}': not accepted (expected ")),
                    "{args:?}: {msg}"
                ),
                other => panic!("{args:?}: {other:?}"),
            }
        }
        assert_eq!(
            parse(["bench", "--smp", "2", "--cpus", "1,4"]),
            Err(CliError::CpusAboveSmp { cpus: 4, smp: 2 })
        );
        let msg = refused(["bench", "--rounds", "0"]);
        assert!(
            msg.starts_with("invalid value '0' for '--rounds <N>': not accepted (expected 1..=100"),
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
        assert!(refused(["import", "--qr"]).contains("required arguments were not provided"));
    }

    #[test]
    fn compare_and_import_take_paths() {
        let c = parse(["compare", "a", "b", "--out", "x.html"]).unwrap();
        assert_eq!(c.command, Command::Compare(vec!["a".into(), "b".into()]));
        assert_eq!(c.options.out, Some(PathBuf::from("x.html")));
        let c = parse(["import", "serial.log"]).unwrap();
        assert_eq!(c.command, Command::Import("serial.log".into()));
        let msg = refused(["compare"]);
        assert!(
            msg.contains("required arguments were not provided: <DIR>..."),
            "{msg}"
        );
        let msg = refused(["import"]);
        assert!(
            msg.contains("required arguments were not provided: <FILE>..."),
            "{msg}"
        );
        assert_eq!(
            parse(["import", "a.log", "b.log"]),
            Err(CliError::UnexpectedArgument("b.log".into()))
        );
    }

    #[test]
    fn nodes_must_fit_the_machine() {
        let c = parse(["test", "--smp", "4", "--nodes", "2"]).unwrap();
        assert_eq!(c.options.nodes, Some(2));
        assert_eq!(parse(["summary"]).unwrap().options.nodes, None);
        for bad in ["0", "65", "hosts"] {
            let msg = refused(["run", "--nodes", bad]);
            assert!(
                msg.contains("not a number in 1..=64, or `host`"),
                "{bad}: {msg}"
            );
        }
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
        let c = parse(["summary", "--nodes", "1", "--nodes", "host"]).unwrap();
        assert!(c.options.nodes_host);
    }

    #[test]
    fn help_for_kx_and_for_each_command() {
        for args in [&["--help"][..], &["-h"], &["help"]] {
            let text = match parse(args.iter().copied()).map(|c| c.command) {
                Ok(Command::Help(text)) => text,
                other => panic!("{args:?}: {other:?}"),
            };
            assert!(text.contains("exit status:"), "{args:?}: {text}");
            for command in [
                "bench", "summary", "test", "run", "compare", "import", "layout",
            ] {
                assert!(text.contains(command), "{args:?}: {command}");
            }
        }
        // A command's help lists its own options and no other's.
        let bench = help(["help", "bench"]);
        assert_eq!(bench, help(["bench", "--help"]));
        assert!(bench.contains("--scenarios <LIST>") && bench.contains("(bench_cpus=)"));
        let run = help(["help", "run"]);
        assert_eq!(run, help(["run", "--help"]));
        assert!(
            run.contains("--smp <N>") && !run.contains("--scenarios") && !run.contains("--out")
        );
        assert!(help(["run", "-h"]).contains("--append <CMDLINE>"));
        let import = help(["import", "--help"]);
        assert!(import.contains("--qr") && !import.contains("--smp"));
    }
}
