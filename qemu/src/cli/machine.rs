//! The option groups of the commands that boot: the machine QEMU boots ([`Machine`]), how
//! the kernel is built ([`Build`]), both together ([`BootArgs`], all that `summary`, `run`,
//! `layout` and `test` take), and what they resolve to ([`Options`]: the machine with the
//! command's defaults filled in and the checks that span several options done).

use super::bench_options::BenchOptions;
use super::error::{CliError, NodesProblem};
use super::values::{number_in, parse_accel, parse_mode};
use super::{DEFAULT_MEM_MIB, DEFAULT_SMP, MAX_NODES, MIN_NODE_MIB};
use crate::accel::AccelRequest;
use crate::mode::Mode;
use boot::Profile;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// What the command runs with, after [`crate::commands::parse`] filled in the command's defaults; options
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

/// The machine QEMU boots, for the commands that boot.
#[derive(Args, Debug)]
#[command(next_help_heading = "Machine")]
pub struct Machine {
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
    /// Kill QEMU after SECS, 1..=86400 [default: 60, UEFI modes 120, times the vCPUs per host
    /// core when --smp is larger than the cores; bench 1800]
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
#[derive(Args, Clone, Debug, PartialEq, Eq)]
#[command(next_help_heading = "Build")]
pub struct Build {
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
    /// `--debug` or `--release` (the default; the last given wins).
    #[must_use]
    pub fn profile(&self) -> Profile {
        if self.debug {
            Profile::Debug
        } else {
            Profile::Release
        }
    }

    /// `--quiet`.
    #[must_use]
    pub fn quiet(&self) -> bool {
        self.quiet
    }
}

/// `summary`, `run`, `layout` (and `test` beside its names): a machine to boot and a kernel
/// to build.
#[derive(Args, Debug)]
pub struct BootArgs {
    #[command(flatten)]
    machine: Machine,
    #[command(flatten)]
    build: Build,
}

fn parse_nodes(s: &str) -> Result<Nodes, String> {
    if s == "host" {
        return Ok(Nodes::Host);
    }
    number_in(1, MAX_NODES)(s)
        .map(Nodes::Count)
        .map_err(|e| format!("{e}, or `host`"))
}

impl BootArgs {
    /// The options of a command that boots with the other commands' defaults
    /// ([`DEFAULT_SMP`] vCPUs, [`DEFAULT_MEM_MIB`] MiB).
    pub fn options(self) -> Result<Options, CliError> {
        self.machine
            .options(&self.build, DEFAULT_SMP, DEFAULT_MEM_MIB)
    }
}

impl Machine {
    /// The options of a command that boots, `smp` vCPUs and `mem` MiB unless given; checks
    /// that the nodes fit the machine and the prebuilt kernel or image the mode.
    pub fn options(self, build: &Build, smp: u32, mem: u32) -> Result<Options, CliError> {
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
