//! What can be wrong with `kx`'s arguments: one line each, printed by the runner with a
//! pointer to the help before it exits with [`crate::RunnerExit::Usage`].

use super::MIN_NODE_MIB;
use crate::mode::Mode;
use std::fmt;

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
