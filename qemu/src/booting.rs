//! Booting a [`Launch`]: the host packages it needs, a private copy of the OVMF variable
//! store for UEFI modes, QEMU under its timeout with serial echoed or streamed; and how a
//! launch and its medium are made (the default firmware paths, the ELF32 or a GRUB image
//! with the command line in its grub.cfg).
//!
//! The commands ([`crate::commands`]), the benchmark ([`crate::bench`]) and the host
//! integration tests (`tests/`) boot through these functions, so they drive the same code.

use crate::firmware::PrivateVars;
use crate::mode::Firmware;
use crate::process::run_streaming_with;
use crate::{Launch, Medium, Mode, RunError, RunOutput};
use boot::host_deps::{self, OVMF_CODE, OVMF_VARS, Purpose, QEMU};
use boot::{Kernel, Workspace, build_image};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs `launch` under `timeout`, echoing serial when `echo`.
///
/// Checks for QEMU (and OVMF for UEFI modes) first, and gives UEFI runs a private copy of the
/// OVMF variable store that lives as long as the run.
pub fn boot(
    ws: &Workspace,
    launch: &Launch,
    timeout: Duration,
    echo: bool,
) -> Result<RunOutput, RunError> {
    boot_inner(ws, launch, timeout, echo, &mut |_| {}, &mut |_| {})
}

/// [`boot`](fn@boot) without echo, handing every serial line to `on_line` while QEMU runs.
pub fn boot_streaming(
    ws: &Workspace,
    launch: &Launch,
    timeout: Duration,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<RunOutput, RunError> {
    boot_inner(ws, launch, timeout, false, &mut |_| {}, on_line)
}

/// [`boot_streaming`], also calling `on_start` with QEMU's pid once it runs (from a thread
/// of its own, while serial is read): where `kx bench` pins QEMU's threads.
pub fn boot_streaming_with(
    ws: &Workspace,
    launch: &Launch,
    timeout: Duration,
    on_start: &mut (dyn FnMut(u32) + Send),
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<RunOutput, RunError> {
    boot_inner(ws, launch, timeout, false, on_start, on_line)
}

fn boot_inner(
    ws: &Workspace,
    launch: &Launch,
    timeout: Duration,
    echo: bool,
    on_start: &mut (dyn FnMut(u32) + Send),
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<RunOutput, RunError> {
    let uefi = launch.mode.firmware() == Firmware::Uefi;
    host_deps::ensure(if uefi {
        &[Purpose::Qemu, Purpose::Uefi]
    } else {
        &[Purpose::Qemu]
    })?;
    let mut launch = launch.clone();
    let _vars = if uefi && launch.ovmf_vars.is_none() {
        let vars = PrivateVars::copy_from(Path::new(OVMF_VARS), &ws.work_dir())?;
        launch.ovmf_vars = Some(vars.path().to_path_buf());
        Some(vars)
    } else {
        None
    };
    let args = launch.args().map_err(RunError::MediumMismatch)?;
    let qemu = boot::tool::find_on_path(QEMU).unwrap_or_else(|| PathBuf::from(QEMU));
    let finished = run_streaming_with(&qemu, &args, timeout, echo, on_start, on_line)?;
    Ok(RunOutput::from_finished(finished, timeout))
}

/// A launch with the default firmware paths; `nodes` NUMA nodes when given.
#[must_use]
pub fn launch(mode: Mode, smp: u32, mem_mib: u32, nodes: Option<u32>, medium: Medium) -> Launch {
    Launch {
        mode,
        smp,
        mem_mib,
        nodes,
        medium,
        ovmf_code: OVMF_CODE.into(),
        ovmf_vars: None,
        accel: crate::accel::Accel::Tcg,
        qmp: None,
        mirror: None,
        plugin: None,
        tcg_single: false,
        icount: None,
    }
}

/// What `mode` boots for `kernel` with `cmdline`: the ELF32 directly, or a GRUB image (built
/// under `target-kernel/work/images/`, one per profile and command line).
pub fn medium_for(
    ws: &Workspace,
    kernel: &Kernel,
    mode: Mode,
    cmdline: &str,
) -> Result<Medium, RunError> {
    if !mode.uses_image() {
        return Ok(Medium::Kernel {
            elf32: kernel.elf32.clone(),
            cmdline: cmdline.to_owned(),
        });
    }
    let path = ws
        .work_dir()
        .join("images")
        .join(image_name(kernel.profile, cmdline));
    let image = build_image(kernel, cmdline, &path)?;
    Ok(Medium::Image(image.path))
}

/// A file name for the image of `cmdline`: readable, and unique per command line.
#[must_use]
pub fn image_name(profile: boot::Profile, cmdline: &str) -> String {
    let words: Vec<&str> = cmdline.split_ascii_whitespace().collect();
    let joined = words.join(" ");
    let readable: String = joined
        .chars()
        .take(40)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // FNV-1a keeps different command lines with the same readable form apart.
    let hash = crate::hash::fnv1a(joined.as_bytes());
    format!("{}-{readable}-{hash:016x}.img", profile.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use boot::Profile;

    #[test]
    fn image_names_are_distinct_and_safe() {
        let a = image_name(Profile::Release, "run=test test=a_b");
        let b = image_name(Profile::Release, "run=test test=a,b");
        assert_ne!(a, b);
        assert!(a.starts_with("release-run_test_test_a_b-") && a.ends_with(".img"));
        assert_eq!(a, image_name(Profile::Release, " run=test   test=a_b "));
        assert_ne!(a, image_name(Profile::Debug, "run=test test=a_b"));
    }
}
