//! The host programs and files the build and the runner need, and the Debian packages that
//! provide them.
//!
//! [`ensure`] checks the requirements of the steps about to run. When something is missing
//! and we are root with `apt-get` (CI, a fresh container), it runs `apt-get update` and a
//! non-interactive `apt-get install` of the missing packages; otherwise it stops with one
//! message that names every missing package. `KX_NO_INSTALL=1` turns installing off.

use crate::BootError;
use crate::tool::{find_on_path, run_inherit};
use std::path::Path;
use std::process::Command;

/// UEFI firmware code, mapped read-only as the first pflash.
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
/// UEFI variable store template; every run gets a private writable copy.
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
/// The emulator.
pub const QEMU: &str = "qemu-system-x86_64";

/// What a step is about to do, which decides what it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Turn the linked kernel into the ELF32 / stripped ELF64 (binutils).
    Kernel,
    /// Build the GRUB hybrid image.
    Image,
    /// Run QEMU with BIOS firmware or `-kernel`.
    Qemu,
    /// Run QEMU with UEFI firmware.
    Uefi,
}

/// Something on the host: a program on `PATH` or a file/directory.
#[derive(Clone, Copy, Debug)]
pub struct Requirement {
    /// A program name (looked up on `PATH`) or an absolute path.
    pub what: &'static str,
    /// The Debian package that provides it.
    pub package: &'static str,
    /// The steps that need it.
    pub purposes: &'static [Purpose],
}

impl Requirement {
    /// Whether it is present.
    #[must_use]
    pub fn present(&self) -> bool {
        if self.what.starts_with('/') {
            Path::new(self.what).exists()
        } else {
            find_on_path(self.what).is_some()
        }
    }
}

/// Everything the tools use.
pub const REQUIREMENTS: &[Requirement] = &[
    Requirement {
        what: "objcopy",
        package: "binutils",
        purposes: &[Purpose::Kernel, Purpose::Image],
    },
    Requirement {
        what: "grub-mkrescue",
        package: "grub-common",
        purposes: &[Purpose::Image],
    },
    Requirement {
        what: "xorriso",
        package: "xorriso",
        purposes: &[Purpose::Image],
    },
    Requirement {
        what: "mformat",
        package: "mtools",
        purposes: &[Purpose::Image],
    },
    Requirement {
        what: "/usr/lib/grub/i386-pc",
        package: "grub-pc-bin",
        purposes: &[Purpose::Image],
    },
    Requirement {
        what: "/usr/lib/grub/x86_64-efi",
        package: "grub-efi-amd64-bin",
        purposes: &[Purpose::Image],
    },
    Requirement {
        what: QEMU,
        package: "qemu-system-x86",
        purposes: &[Purpose::Qemu, Purpose::Uefi],
    },
    Requirement {
        what: OVMF_CODE,
        package: "ovmf",
        purposes: &[Purpose::Uefi],
    },
    Requirement {
        what: OVMF_VARS,
        package: "ovmf",
        purposes: &[Purpose::Uefi],
    },
];

/// The requirements for `purposes` that are not present.
#[must_use]
pub fn missing(purposes: &[Purpose]) -> Vec<Requirement> {
    REQUIREMENTS
        .iter()
        .filter(|r| r.purposes.iter().any(|p| purposes.contains(p)))
        .filter(|r| !r.present())
        .copied()
        .collect()
}

/// The distinct packages providing `reqs`, in table order.
#[must_use]
pub fn packages_for(reqs: &[Requirement]) -> Vec<&'static str> {
    let mut pkgs: Vec<&'static str> = Vec::new();
    for r in reqs {
        if !pkgs.contains(&r.package) {
            pkgs.push(r.package);
        }
    }
    pkgs
}

/// Makes sure everything `purposes` need is present, installing it when root with apt.
pub fn ensure(purposes: &[Purpose]) -> Result<(), BootError> {
    let absent = missing(purposes);
    if absent.is_empty() {
        return Ok(());
    }
    let packages = packages_for(&absent);
    let refuse = |why: String| BootError::MissingPackages {
        missing: absent.iter().map(|r| r.what.to_owned()).collect(),
        packages: packages.clone(),
        why_not_installed: why,
    };
    if std::env::var_os("KX_NO_INSTALL").is_some_and(|v| v != "0") {
        return Err(refuse("KX_NO_INSTALL is set".into()));
    }
    if effective_uid() != Some(0) {
        return Err(refuse("not root, so not installing them".into()));
    }
    if find_on_path("apt-get").is_none() {
        return Err(refuse("no apt-get on this system".into()));
    }
    eprintln!(
        "kx: installing missing host packages: {}",
        packages.join(" ")
    );
    let apt = |args: &[&str]| {
        let mut cmd = Command::new("apt-get");
        cmd.env("DEBIAN_FRONTEND", "noninteractive").args(args);
        run_inherit(&mut cmd)
    };
    apt(&["update"]).map_err(|e| refuse(format!("apt-get update failed: {e}")))?;
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(&packages);
    apt(&install).map_err(|e| refuse(format!("apt-get install failed: {e}")))?;
    let still = missing(purposes);
    if still.is_empty() {
        Ok(())
    } else {
        Err(BootError::MissingPackages {
            missing: still.iter().map(|r| r.what.to_owned()).collect(),
            packages: packages_for(&still),
            why_not_installed: "still missing after apt-get install".into(),
        })
    }
}

/// The effective user id, from `/proc/self/status` (no libc needed).
#[must_use]
pub fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_effective_uid(&status)
}

fn parse_effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_from_proc_status() {
        let status = "Name:\tx\nUid:\t1000\t0\t1000\t1000\nGid:\t5\n";
        assert_eq!(parse_effective_uid(status), Some(0));
        assert_eq!(parse_effective_uid("Name: x\n"), None);
        assert!(effective_uid().is_some());
    }

    #[test]
    fn packages_are_deduplicated_and_every_purpose_has_requirements() {
        let ovmf: Vec<_> = REQUIREMENTS
            .iter()
            .filter(|r| r.package == "ovmf")
            .copied()
            .collect();
        assert_eq!(ovmf.len(), 2);
        assert_eq!(packages_for(&ovmf), ["ovmf"]);
        for p in [
            Purpose::Kernel,
            Purpose::Image,
            Purpose::Qemu,
            Purpose::Uefi,
        ] {
            assert!(REQUIREMENTS.iter().any(|r| r.purposes.contains(&p)));
        }
    }

    #[test]
    fn missing_tool_is_detected() {
        let r = Requirement {
            what: "no-such-tool-kx-0x5f",
            package: "nothing",
            purposes: &[],
        };
        assert!(!r.present());
        let f = Requirement {
            what: "/no/such/file/kx",
            ..r
        };
        assert!(!f.present());
        let sh = Requirement { what: "sh", ..r };
        assert!(sh.present());
    }

    #[test]
    fn message_names_packages() {
        let e = BootError::MissingPackages {
            missing: vec!["xorriso".into(), "mformat".into()],
            packages: vec!["xorriso", "mtools"],
            why_not_installed: "not root, so not installing them".into(),
        };
        let msg = e.to_string();
        assert!(msg.contains("apt-get install -y xorriso mtools"), "{msg}");
        assert!(msg.contains("not root"));
    }
}
