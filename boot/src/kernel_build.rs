//! Builds the kernel with its recipe (README, "Workspace layout") and makes the ELF32 for
//! `qemu -kernel`.
//!
//! `RUSTFLAGS="-C relocation-model=static -C no-redzone=yes --cfg ksync_gs_cpu_id"
//! cargo build -p kernel --target x86_64-unknown-linux-gnu
//! --target-dir <workspace>/target-kernel [--profile kernel]`,
//! run from the workspace root with a clean environment ([`crate::cargo_env`]). The explicit
//! `--target` keeps the flags away from build scripts and proc-macros. QEMU's multiboot1
//! loader only takes a 32-bit ELF, so the ELF64 is then copied with
//! `objcopy -O elf32-i386` (the code inside is unchanged; the 32-bit entry switches to long
//! mode itself).

use crate::host_deps::{self, Purpose};
use crate::tool::{run_captured, run_inherit};
use crate::{BootError, Workspace};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The host triple the kernel is built for (freestanding: no rust-src or extra target needed).
pub const KERNEL_TARGET: &str = "x86_64-unknown-linux-gnu";
/// The code-generation flags the kernel needs.
pub const KERNEL_RUSTFLAGS: &str =
    "-C relocation-model=static -C no-redzone=yes --cfg ksync_gs_cpu_id";

/// The Cargo profile of the release kernel (`[profile.kernel]` in the workspace manifest).
pub const RELEASE_PROFILE: &str = "kernel";

/// Cargo profile of the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Profile {
    /// `dev`: debug assertions and overflow checks, slow under TCG.
    Debug,
    /// `kernel` (the workspace's release profile with fat LTO and one codegen unit):
    /// what the benchmark and the USB image use.
    #[default]
    Release,
}

impl Profile {
    /// Its name for people and file names: `debug` or `release`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }

    /// The directory name cargo uses for it.
    #[must_use]
    pub const fn dir(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => RELEASE_PROFILE,
        }
    }
}

/// How to build.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// Debug or release.
    pub profile: Profile,
    /// Pass `--quiet` to cargo (errors still show).
    pub quiet: bool,
}

impl BuildOptions {
    /// A debug build with cargo's normal output.
    #[must_use]
    pub const fn default_debug() -> Self {
        BuildOptions {
            profile: Profile::Debug,
            quiet: false,
        }
    }
}

/// A built kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The profile it was built with.
    pub profile: Profile,
    /// The ELF64 cargo linked (GRUB's multiboot2 loader takes it directly).
    pub elf64: PathBuf,
    /// The ELF32 copy for `qemu -kernel` (multiboot1).
    pub elf32: PathBuf,
}

/// The cargo command that builds the kernel (clean environment, kernel flags).
#[must_use]
pub fn cargo_command(ws: &Workspace, opts: BuildOptions) -> Command {
    let mut cmd = crate::cargo_env::clean_cargo();
    cmd.current_dir(ws.root())
        .env("RUSTFLAGS", KERNEL_RUSTFLAGS)
        .args(["build", "-p", "kernel", "--target", KERNEL_TARGET])
        .arg("--target-dir")
        .arg(ws.kernel_target_dir());
    if opts.profile == Profile::Release {
        cmd.args(["--profile", RELEASE_PROFILE]);
    }
    if opts.quiet {
        cmd.arg("--quiet");
    }
    cmd
}

/// Where cargo puts the kernel ELF64 for `profile`.
#[must_use]
pub fn elf64_path(ws: &Workspace, profile: Profile) -> PathBuf {
    ws.kernel_target_dir()
        .join(KERNEL_TARGET)
        .join(profile.dir())
        .join("kernel")
}

/// Builds the kernel and its ELF32 copy.
pub fn build_kernel(ws: &Workspace, opts: BuildOptions) -> Result<Kernel, BootError> {
    host_deps::ensure(&[Purpose::Kernel])?;
    run_inherit(&mut cargo_command(ws, opts))?;
    let elf64 = elf64_path(ws, opts.profile);
    if !elf64.is_file() {
        return Err(BootError::NotFound(elf64));
    }
    let elf32 = elf64.with_file_name("kernel32.elf");
    to_elf32(&elf64, &elf32)?;
    Ok(Kernel {
        profile: opts.profile,
        elf64,
        elf32,
    })
}

/// `objcopy -O elf32-i386 src dst`: the multiboot1 ELF that `qemu -kernel` accepts.
pub fn to_elf32(src: &Path, dst: &Path) -> Result<(), BootError> {
    run_captured(
        Command::new("objcopy")
            .args(["-O", "elf32-i386"])
            .arg(src)
            .arg(dst),
    )
}

/// `objcopy --strip-debug src dst`: the ELF64 without debug info, for the GRUB image (a debug
/// kernel with its DWARF made a 24 MiB image).
pub fn strip_debug(src: &Path, dst: &Path) -> Result<(), BootError> {
    run_captured(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg(src)
            .arg(dst),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_command_has_the_recipe() {
        let ws = Workspace::locate().unwrap();
        let cmd = cargo_command(
            &ws,
            BuildOptions {
                profile: Profile::Release,
                quiet: false,
            },
        );
        let line = crate::tool::describe(&cmd);
        assert!(line.ends_with(&format!(
            "build -p kernel --target x86_64-unknown-linux-gnu --target-dir {} --profile kernel",
            ws.kernel_target_dir().display()
        )));
        assert!(
            elf64_path(&ws, Profile::Release).ends_with("x86_64-unknown-linux-gnu/kernel/kernel")
        );
        let flags = cmd
            .get_envs()
            .find(|(k, _)| *k == "RUSTFLAGS")
            .and_then(|(_, v)| v);
        assert_eq!(flags, Some(KERNEL_RUSTFLAGS.as_ref()));
        assert_eq!(cmd.get_current_dir(), Some(ws.root()));
        // Running inside `cargo test`, the package variables must not reach the nested build.
        assert!(
            cmd.get_envs()
                .any(|(k, v)| k == "CARGO_MANIFEST_DIR" && v.is_none())
        );
    }

    #[test]
    fn every_copy_of_the_kernel_flags_is_the_recipe() {
        // CI's clippy of the kernel, the instruction-count script and the README's manual
        // build cannot call this crate: each keeps its own copy, which must not drift.
        let ws = Workspace::locate().unwrap();
        for file in [".ci/run", "scripts/guest-insn-count.py", "README.md"] {
            let path = ws.root().join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                text.contains(&format!("\"{KERNEL_RUSTFLAGS}\"")),
                "{file} does not build the kernel with \"{KERNEL_RUSTFLAGS}\""
            );
        }
    }

    #[test]
    fn debug_build_has_no_release_flag() {
        let ws = Workspace::locate().unwrap();
        let cmd = cargo_command(&ws, BuildOptions::default_debug());
        assert!(!cmd.get_args().any(|a| a == "--release" || a == "--profile"));
        assert!(elf64_path(&ws, Profile::Debug).ends_with("x86_64-unknown-linux-gnu/debug/kernel"));
    }

    #[test]
    fn objcopy_of_a_missing_file_is_an_error() {
        let err = to_elf32(Path::new("/no/such/kernel"), Path::new("/tmp/kx-never")).unwrap_err();
        assert!(matches!(err, BootError::CommandFailed { .. }), "{err}");
    }
}
