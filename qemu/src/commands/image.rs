//! `kx image`: the GRUB USB image (BIOS and UEFI) with `--append` as its command line, and
//! the `dd` line and SHA-256 to write it with.

use crate::cli::Options;
use crate::{RunError, RunnerExit};
use boot::{Workspace, build_image, build_kernel};

/// Builds the kernel and the image at `--out` (default: `kx-usb.img` in the output dir).
pub fn run(ws: &Workspace, o: &Options) -> Result<RunnerExit, RunError> {
    let kernel = build_kernel(ws, o.build())?;
    let out = o
        .out
        .clone()
        .unwrap_or_else(|| ws.out_dir().join("kx-usb.img"));
    let image = build_image(&kernel, &o.append, &out)?;
    print!("{}", image.instructions());
    Ok(RunnerExit::Success)
}
