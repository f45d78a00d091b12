//! `kx image`: the GRUB USB image (BIOS and UEFI) with `--append` as its command line, and
//! the `dd` line and SHA-256 to write it with. Nothing boots.

use crate::cli::Build;
use crate::{RunError, RunnerExit};
use boot::{BuildOptions, Workspace, build_image, build_kernel};
use clap::Args;
use std::path::PathBuf;

/// `image`'s arguments, which are all it needs.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// The kernel command line baked into grub.cfg [default: empty, the summary]
    #[arg(
        long,
        value_name = "CMDLINE",
        default_value = "",
        hide_default_value = true
    )]
    pub append: String,
    /// The image file [default: out/kx-usb.img]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    build: Build,
}

/// Builds the kernel and the image at `--out` (default: `kx-usb.img` in the output dir).
pub fn execute(i: &Image) -> Result<RunnerExit, RunError> {
    let ws = Workspace::locate()?;
    let opts = BuildOptions {
        profile: i.build.profile(),
        quiet: i.build.quiet(),
    };
    let kernel = build_kernel(&ws, opts)?;
    let out = i
        .out
        .clone()
        .unwrap_or_else(|| ws.out_dir().join("kx-usb.img"));
    let image = build_image(&kernel, &i.append, &out)?;
    print!("{}", image.instructions());
    Ok(RunnerExit::Success)
}
