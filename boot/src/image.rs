//! The GRUB hybrid image: one file that boots under BIOS and UEFI, from a USB stick or a disk.
//!
//! `grub-mkrescue` (with both the i386-pc and x86_64-efi module dirs installed) writes an
//! ISO 9660 image with a protective MBR, a GPT and an EFI system partition, which firmware of
//! either kind boots when it is written raw to a stick. The staging tree holds the stripped
//! ELF64 at `/boot/kernel.elf` and the generated `/boot/grub/grub.cfg`
//! ([`crate::grub_cfg`]). [`Image::instructions`] is the text `boot` prints: size, SHA-256
//! and the `dd` line.

use crate::host_deps::{self, Purpose};
use crate::kernel_build::{Kernel, strip_debug};
use crate::tool::run_captured;
use crate::{BootError, grub_cfg, sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A built image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// The image file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Lower-case hex SHA-256 of the file.
    pub sha256: String,
    /// The kernel command line baked into grub.cfg.
    pub cmdline: String,
}

/// Builds the image for `kernel` with `cmdline` at `out` (parent directories are created).
pub fn build_image(kernel: &Kernel, cmdline: &str, out: &Path) -> Result<Image, BootError> {
    let cfg = grub_cfg::render(cmdline)?;
    host_deps::ensure(&[Purpose::Image])?;
    if !kernel.elf64.is_file() {
        return Err(BootError::NotFound(kernel.elf64.clone()));
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| BootError::io(parent, e))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "image".into());
    let stage = parent.join(format!(".{name}.stage"));
    if stage.exists() {
        std::fs::remove_dir_all(&stage).map_err(|e| BootError::io(&stage, e))?;
    }
    let grub_dir = stage.join("boot").join("grub");
    std::fs::create_dir_all(&grub_dir).map_err(|e| BootError::io(&grub_dir, e))?;
    let cfg_path = grub_dir.join("grub.cfg");
    std::fs::write(&cfg_path, cfg).map_err(|e| BootError::io(&cfg_path, e))?;
    strip_debug(&kernel.elf64, &stage.join("boot").join("kernel.elf"))?;
    // No locales, themes or fonts: the menu never shows (timeout=0), and they would double
    // the image (19.5 MiB -> 9 MiB without them).
    let result = run_captured(
        Command::new("grub-mkrescue")
            .args(["--locales=", "--themes=", "--fonts="])
            .arg("-o")
            .arg(out)
            .arg(&stage),
    );
    // The staging tree is only input; remove it whether or not grub-mkrescue worked.
    let _ = std::fs::remove_dir_all(&stage);
    result?;
    let size = std::fs::metadata(out)
        .map_err(|e| BootError::io(out, e))?
        .len();
    Ok(Image {
        path: out.to_path_buf(),
        size,
        sha256: sha256::file_hex(out)?,
        cmdline: cmdline
            .split_ascii_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    })
}

impl Image {
    /// What to tell a user who wants to boot it on a real machine.
    #[must_use]
    pub fn instructions(&self) -> String {
        let path = self.path.display();
        format!(
            "image:    {path}\n\
             size:     {:.1} MiB\n\
             sha256:   {}\n\
             cmdline:  {}\n\
             \n\
             Write it to a USB stick (this ERASES the stick; find its device with `lsblk`, \
             and use the whole disk, e.g. /dev/sdb, not a partition):\n\
             \n    sudo dd if={path} of=/dev/sdX bs=4M conv=fsync oflag=direct status=progress\n\
             \n\
             Check the copy:  sudo head -c {} /dev/sdX | sha256sum   (must print {})\n\
             Boot the stick under BIOS (legacy/CSM) or UEFI (Secure Boot off). Results show on \
             the screen and on COM1 (115200 8N1).\n",
            self.size as f64 / (1024.0 * 1024.0),
            self.sha256,
            if self.cmdline.is_empty() {
                "(empty: run=summary)"
            } else {
                &self.cmdline
            },
            self.size,
            self.sha256,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_build::Profile;

    #[test]
    fn instructions_name_the_image_and_digest() {
        let img = Image {
            path: "out/kx-usb.img".into(),
            size: 5 * 1024 * 1024,
            sha256: "ab".repeat(32),
            cmdline: "run=test".into(),
        };
        let text = img.instructions();
        assert!(text.contains("sudo dd if=out/kx-usb.img of=/dev/sdX bs=4M conv=fsync"));
        assert!(text.contains(&"ab".repeat(32)));
        assert!(text.contains("5.0 MiB"));
        assert!(text.contains("head -c 5242880"));
    }

    #[test]
    fn bad_cmdline_or_missing_kernel_is_an_error() {
        let k = Kernel {
            profile: Profile::Release,
            elf64: "/no/such/kernel".into(),
            elf32: "/no/such/kernel32.elf".into(),
        };
        let out = std::env::temp_dir().join("kx-never.img");
        assert!(matches!(
            build_image(&k, "run=test;x", &out),
            Err(BootError::BadCmdlineChar { ch: ';', .. })
        ));
        if host_deps::missing(&[Purpose::Image]).is_empty() {
            assert!(matches!(
                build_image(&k, "run=test", &out),
                Err(BootError::NotFound(_))
            ));
        }
    }
}
