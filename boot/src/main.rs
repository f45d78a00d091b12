//! `boot`: build the kernel and the GRUB USB image, and say how to write it to a stick.
//!
//! `cargo run -p boot -- [--debug] [--append "CMDLINE"] [--out FILE]`. The runner's
//! `kx image` does the same; this binary exists so the image can be made without the runner.
//! Its arguments are one clap struct ([`Args`]); a usage error is clap's message on one line
//! ([`boot::usage`]) and a pointer at `--help`, with status 2 like `kx`'s.
#![deny(unsafe_code)]

use boot::{BuildOptions, Profile, Workspace, build_image, build_kernel};
use clap::Parser;
use clap::error::ErrorKind;
use std::path::PathBuf;
use std::process::ExitCode;

/// Builds the kernel and a GRUB hybrid image (BIOS + UEFI) for a USB stick.
#[derive(Parser, Debug)]
#[command(name = "boot", args_override_self = true)]
struct Args {
    /// Build the debug kernel
    #[arg(long, overrides_with = "release")]
    debug: bool,
    /// Build the release kernel (the default)
    #[arg(long, overrides_with = "debug")]
    release: bool,
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
}

impl Args {
    fn profile(&self) -> Profile {
        if self.debug {
            Profile::Debug
        } else {
            Profile::Release
        }
    }
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            print!("{}", e.render());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "boot: {}\nboot: `boot --help` lists the options",
                boot::usage::one_line(&e)
            );
            return ExitCode::from(boot::error::EXIT_USAGE as u8);
        }
    };
    let result = Workspace::locate().and_then(|ws| {
        let kernel = build_kernel(
            &ws,
            BuildOptions {
                profile: args.profile(),
                quiet: false,
            },
        )?;
        let out = args.out.unwrap_or_else(|| ws.out_dir().join("kx-usb.img"));
        build_image(&kernel, &args.append, &out)
    });
    match result {
        Ok(image) => {
            print!("{}", image.instructions());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("boot: {e}");
            ExitCode::from(e.exit_status() as u8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn args(a: &[&str]) -> Result<Args, String> {
        Args::try_parse_from(std::iter::once("boot").chain(a.iter().copied()))
            .map_err(|e| boot::usage::one_line(&e))
    }

    #[test]
    fn the_clap_definition_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn parses_options() {
        let a = args(&["--debug", "--append", "run=test", "--out", "x.img"]).unwrap();
        assert_eq!(a.profile(), Profile::Debug);
        assert_eq!(a.append, "run=test");
        assert_eq!(a.out, Some(PathBuf::from("x.img")));
        let d = args(&[]).unwrap();
        assert_eq!(
            (d.profile(), d.append.as_str(), d.out),
            (Profile::Release, "", None)
        );
        // The last of --debug and --release wins.
        assert_eq!(
            args(&["--debug", "--release"]).unwrap().profile(),
            Profile::Release
        );
        let help = Args::try_parse_from(["boot", "--help"]).unwrap_err();
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        assert!(help.render().to_string().contains("--append <CMDLINE>"));
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(
            args(&["--fast"])
                .unwrap_err()
                .starts_with("unexpected argument '--fast' found")
        );
        assert!(
            args(&["--out"])
                .unwrap_err()
                .starts_with("a value is required for '--out <FILE>'")
        );
        assert!(
            args(&["--append"])
                .unwrap_err()
                .starts_with("a value is required for '--append <CMDLINE>'")
        );
        assert!(
            args(&["stick"])
                .unwrap_err()
                .starts_with("unexpected argument 'stick' found")
        );
    }
}
