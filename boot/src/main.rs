//! `boot`: build the kernel and the GRUB USB image, and say how to write it to a stick.
//!
//! `cargo run -p boot -- [--debug] [--append "CMDLINE"] [--out FILE]`. The runner's
//! `kx image` does the same; this binary exists so the image can be made without the runner.

use boot::{BuildOptions, Profile, Workspace, build_image, build_kernel};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: boot [--debug | --release] [--append \"CMDLINE\"] [--out FILE]\n\
  builds the kernel and a GRUB hybrid image (BIOS + UEFI) for a USB stick\n\
  --debug / --release   kernel profile (default: release)\n\
  --append CMDLINE      kernel command line baked into grub.cfg (default: empty = summary)\n\
  --out FILE            image path (default: out/kx-usb.img)";

struct Args {
    profile: Profile,
    cmdline: String,
    out: Option<PathBuf>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        profile: Profile::Release,
        cmdline: String::new(),
        out: None,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--debug" => parsed.profile = Profile::Debug,
            "--release" => parsed.profile = Profile::Release,
            "--append" => {
                parsed.cmdline = args.next().ok_or("--append needs a value")?;
            }
            "--out" => {
                parsed.out = Some(args.next().ok_or("--out needs a file path")?.into());
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(parsed))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("boot: {msg}\n{USAGE}");
            return ExitCode::from(boot::error::EXIT_USAGE as u8);
        }
    };
    let result = Workspace::locate().and_then(|ws| {
        let kernel = build_kernel(
            &ws,
            BuildOptions {
                profile: args.profile,
                quiet: false,
            },
        )?;
        let out = args.out.unwrap_or_else(|| ws.out_dir().join("kx-usb.img"));
        build_image(&kernel, &args.cmdline, &out)
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

    fn args(a: &[&str]) -> Result<Option<Args>, String> {
        parse(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_options() {
        let a = args(&["--debug", "--append", "run=test", "--out", "x.img"])
            .unwrap()
            .unwrap();
        assert_eq!(a.profile, Profile::Debug);
        assert_eq!(a.cmdline, "run=test");
        assert_eq!(a.out, Some(PathBuf::from("x.img")));
        let d = args(&[]).unwrap().unwrap();
        assert_eq!(
            (d.profile, d.cmdline.as_str(), d.out),
            (Profile::Release, "", None)
        );
        assert!(args(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn rejects_bad_arguments() {
        assert_eq!(
            args(&["--fast"]).err().unwrap(),
            "unknown argument `--fast`"
        );
        assert_eq!(args(&["--out"]).err().unwrap(), "--out needs a file path");
        assert_eq!(args(&["--append"]).err().unwrap(), "--append needs a value");
    }
}
