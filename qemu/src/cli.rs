//! The `kx` command line: a subcommand and options, parsed by hand into [`Cli`].
//!
//! Every mistake is a [`CliError`] that says what was wrong (the runner prints it with the
//! usage text and exits with [`crate::RunnerExit::Usage`]); files that do not exist are
//! checked when the command runs ([`crate::RunnerExit::NotFound`]).

use crate::mode::{Mode, UnknownMode};
use boot::Profile;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Usage text.
pub const USAGE: &str = "\
usage: kx [COMMAND] [OPTIONS]

commands:
  summary            boot and print the system summary (default)
  test [NAME...]     run the in-kernel tests: all, or the named ones
  run                boot with the command line given by --append (default: empty)
  bench              run the benchmark scenarios (run=bench)
  layout             print the cacheline layout report of the key structs (run=layout)
  image              build the GRUB USB image (BIOS + UEFI); print dd line and SHA-256
  help               this text

options:
  --mode MODE        direct | bios | uefi | usb-bios | usb-uefi   (default: direct)
  --smp N            vCPUs, 1..=256 (default: 2)
  --mem MIB          guest memory in MiB, 32..=65536 (default: 256)
  --nodes N          NUMA nodes, 1..=64: memory split evenly (at least 16 MiB each), vCPUs
                     round-robin, distances 10 + 10*|i-j| (default: no NUMA description)
  --timeout SECS     kill QEMU after SECS, 1..=86400 (default: 60; UEFI modes 120; bench 600)
  --append CMDLINE   kernel command line words (run, image: the whole line; others: added)
  --kernel FILE      direct mode: boot this ELF32 instead of building the kernel
  --image FILE       image modes: boot this GRUB image instead of building one
  --out FILE         image: where to write it (default: out/kx-usb.img)
  --debug            build the debug kernel (default: release)
  --quiet            do not echo the serial console (results are still printed)";

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
    /// Explicit timeout (`None`: the command's and mode's default).
    pub timeout: Option<Duration>,
    /// Kernel command line words.
    pub append: String,
    /// A prebuilt ELF32 to boot (direct mode).
    pub kernel: Option<PathBuf>,
    /// A prebuilt image to boot (image modes).
    pub image: Option<PathBuf>,
    /// Where `image` writes.
    pub out: Option<PathBuf>,
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
            timeout: None,
            append: String::new(),
            kernel: None,
            image: None,
            out: None,
            profile: Profile::Release,
            quiet: false,
        }
    }
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
            CliError::UnexpectedArgument(a) => write!(f, "unexpected argument `{a}`"),
            CliError::NotForCommand { flag, command } => {
                write!(f, "{flag} is not used by `kx {command}`")
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
    "--smp",
    "--mem",
    "--nodes",
    "--timeout",
    "--append",
    "--kernel",
    "--image",
    "--out",
];

/// Parses the arguments after the program name.
pub fn parse<I, S>(args: I) -> Result<Cli, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut args = args.into_iter().map(Into::into).peekable();
    let command = match args.peek().map(String::as_str) {
        None => Command::Summary,
        Some(a) if a.starts_with('-') && a != "-h" && a != "--help" => Command::Summary,
        Some(_) => {
            let word = args.next().unwrap_or_default();
            match word.as_str() {
                "summary" => Command::Summary,
                "test" => Command::Test(Vec::new()),
                "run" => Command::Run,
                "bench" => Command::Bench,
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
                _ => return Err(CliError::UnknownFlag(arg)),
            }
        }
    }
    check_combination(&cli, &seen)?;
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
        "--smp" => o.smp = number(flag, &value, (1, u64::from(abi::cmdline::MAX_CPUS)))? as u32,
        "--mem" => o.mem_mib = number(flag, &value, (32, 65536))? as u32,
        "--nodes" => o.nodes = Some(number(flag, &value, (1, u64::from(MAX_NODES)))? as u32),
        "--timeout" => o.timeout = Some(Duration::from_secs(number(flag, &value, (1, 86400))?)),
        "--append" => o.append = value,
        "--kernel" => o.kernel = Some(value.into()),
        "--image" => o.image = Some(value.into()),
        "--out" => o.out = Some(value.into()),
        _ => unreachable!("every FLAGS_WITH_VALUE entry is handled"),
    }
    Ok(())
}

fn check_combination(cli: &Cli, seen: &[&'static str]) -> Result<(), CliError> {
    let command = cli.command.name();
    if cli.command == Command::Image {
        for flag in [
            "--mode",
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
    if seen.contains(&"--out") && cli.command != Command::Help {
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
    fn default_is_summary() {
        assert_eq!(
            parse(Vec::<String>::new()).unwrap().command,
            Command::Summary
        );
        let c = parse(["--smp", "4"]).unwrap();
        assert_eq!((c.command, c.options.smp), (Command::Summary, 4));
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
    fn help_anywhere() {
        assert_eq!(parse(["--help"]).unwrap().command, Command::Help);
        assert_eq!(parse(["run", "-h"]).unwrap().command, Command::Help);
        assert_eq!(parse(["help"]).unwrap().command, Command::Help);
    }
}
