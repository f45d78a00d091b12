//! The `kx` subcommands, one file each: its clap arguments (the options it takes, the
//! shared groups of [`crate::cli`] flattened in), what they resolve to, and what it does.
//!
//! | command | file | boots |
//! |---|---|---|
//! | `bench` (the default) | [`bench`](mod@bench) | yes, or host threads with `--host` |
//! | `summary` | [`summary`](mod@summary) | yes |
//! | `test [NAME...]`, `test --list` | [`test`](mod@test) | yes; `--list` reads the ELF |
//! | `run` | [`run`](mod@run) | yes |
//! | `layout` | [`layout`](mod@layout) | yes |
//! | `compare DIR...` | [`compare`](mod@compare) | no |
//! | `import LOG`, `import --qr IMAGE...` | [`import`](mod@import) | no |
//! | `image` | [`image`](mod@image) | no (builds the GRUB image) |
//!
//! Each subcommand takes only the options that mean something to it, so an option given to
//! a command that does not use it is one of clap's errors before anything runs, and `kx help
//! COMMAND` (or `kx COMMAND --help`) lists exactly what that command takes. With no command,
//! or an option first, the arguments are `bench`'s: `kx --quick` is `kx bench --quick`.
//! [`parse`] resolves the arguments into a [`Command`] (each variant holding that command's
//! options only), [`execute`] runs it: one match arm per subcommand. The commands that boot
//! share [`guest`]'s path (build, boot, report); booting itself is [`crate::booting`]'s.

pub mod bench;
pub mod compare;
pub mod guest;
pub mod image;
pub mod import;
pub mod layout;
pub mod run;
pub mod summary;
pub mod test;

#[cfg(test)]
mod tests;

pub use guest::BENCH_TIMEOUT;

use crate::RunnerExit;
use crate::cli::{BootArgs, CliError, Options};
use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    Bench(Box<bench::BenchArgs>),
    /// Boot and print the system summary
    Summary(BootArgs),
    /// Run the in-kernel tests: all, or the named ones
    Test(test::TestArgs),
    /// Boot with the command line given by --append (default: empty)
    Run(BootArgs),
    /// Compare benchmark result directories (hmeans, ratios, significance)
    Compare(compare::Compare),
    /// Turn a serial log from a real machine into a results directory; with --qr, photos or
    /// screenshots of the QR codes the kernel shows
    Import(import::ImportArgs),
    /// Print the cacheline layout report of the key structs (run=layout)
    Layout(BootArgs),
    /// Build the GRUB USB image (BIOS + UEFI); print the dd line and its SHA-256
    Image(image::Image),
}

/// A parsed command line: the subcommand with its options (and only its).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `bench`: the machine and the benchmark's options.
    Bench(Box<Options>),
    /// `summary`.
    Summary(Options),
    /// `test [NAME...]` or `test --list`.
    Test(test::Test),
    /// `run`.
    Run(Options),
    /// `layout`.
    Layout(Options),
    /// `compare DIR...`.
    Compare(compare::Compare),
    /// `import LOG` or `import --qr IMAGE...`.
    Import(import::Import),
    /// `image`.
    Image(image::Image),
    /// Print this help text (`kx help [COMMAND]`, `--help`, `-h`): clap's, for the command
    /// asked about.
    Help(String),
}

impl Command {
    /// The subcommand's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Command::Bench(_) => "bench",
            Command::Summary(_) => "summary",
            Command::Test(_) => "test",
            Command::Run(_) => "run",
            Command::Layout(_) => "layout",
            Command::Compare(_) => "compare",
            Command::Import(_) => "import",
            Command::Image(_) => "image",
            Command::Help(_) => "help",
        }
    }

    /// The machine and build options of a command that boots (`None` for the others).
    #[must_use]
    pub fn boot_options(&self) -> Option<&Options> {
        match self {
            Command::Bench(o) => Some(o),
            Command::Summary(o) | Command::Run(o) | Command::Layout(o) => Some(o),
            Command::Test(t) => Some(&t.options),
            Command::Compare(_) | Command::Import(_) | Command::Image(_) | Command::Help(_) => None,
        }
    }
}

/// The clap command `kx` parses with: `Kx`'s, with the exit statuses after the top-level
/// help.
#[must_use]
pub fn command() -> clap::Command {
    Kx::command().after_help(crate::exit::exit_code_help())
}

/// Parses the arguments after the program name.
pub fn parse<I, S>(args: I) -> Result<Command, CliError>
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
            Ok(Command::Help(e.render().to_string()))
        }
        Err(e) => Err(CliError::Arguments(boot::usage::one_line(&e))),
    }
}

impl Sub {
    /// The command with its options: each subcommand's defaults and the checks that span
    /// several of its options.
    fn resolve(self) -> Result<Command, CliError> {
        Ok(match self {
            Sub::Bench(a) => Command::Bench(Box::new(a.resolve()?)),
            Sub::Summary(a) => Command::Summary(a.options()?),
            Sub::Test(a) => Command::Test(a.resolve()?),
            Sub::Run(a) => Command::Run(a.options()?),
            Sub::Layout(a) => Command::Layout(a.options()?),
            Sub::Compare(a) => Command::Compare(a),
            Sub::Import(a) => Command::Import(a.resolve()?),
            Sub::Image(a) => Command::Image(a),
        })
    }
}

/// Runs a parsed command line to completion and says how to exit.
pub fn execute(command: &Command) -> RunnerExit {
    let result = match command {
        Command::Help(text) => {
            print!("{text}");
            Ok(RunnerExit::Success)
        }
        Command::Bench(o) => bench::execute(o),
        Command::Summary(o) => summary::execute(o),
        Command::Test(t) => test::execute(t),
        Command::Run(o) => run::execute(o),
        Command::Layout(o) => layout::execute(o),
        Command::Compare(c) => compare::execute(c),
        Command::Import(i) => import::execute(i),
        Command::Image(i) => image::execute(i),
    };
    result.unwrap_or_else(|e| {
        eprintln!("kx: {e}");
        RunnerExit::for_error(&e)
    })
}
