//! The `boot/grub/grub.cfg` inside the image: boot the kernel at once with a given command line.
//!
//! `set timeout=0` skips the menu, `insmod all_video` lets GRUB set the framebuffer mode the
//! kernel's multiboot2 framebuffer tag asks for (UEFI has no VGA text mode), and
//! `multiboot2 /boot/kernel.elf <cmdline>` loads the ELF64 directly. The command line is
//! written into GRUB's script language verbatim, so it is restricted to characters that
//! language does not interpret; anything else is rejected with a typed error.

use crate::BootError;

/// Where the kernel sits inside the image.
pub const KERNEL_PATH: &str = "/boot/kernel.elf";

/// Whether `c` may appear in a command line written into grub.cfg.
#[must_use]
pub fn allowed_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, ' ' | '=' | ',' | '.' | '_' | '-' | '/' | ':' | '+')
}

/// Checks that `cmdline` can be written into grub.cfg as is.
pub fn check_cmdline(cmdline: &str) -> Result<(), BootError> {
    match cmdline.chars().find(|c| !allowed_char(*c)) {
        Some(ch) => Err(BootError::BadCmdlineChar {
            cmdline: cmdline.to_owned(),
            ch,
        }),
        None => Ok(()),
    }
}

/// The grub.cfg text that boots [`KERNEL_PATH`] with `cmdline`.
pub fn render(cmdline: &str) -> Result<String, BootError> {
    check_cmdline(cmdline)?;
    let words: Vec<&str> = cmdline.split_ascii_whitespace().collect();
    let mut line = format!("multiboot2 {KERNEL_PATH}");
    for w in words {
        line.push(' ');
        line.push_str(w);
    }
    Ok(format!("set timeout=0\ninsmod all_video\n{line}\nboot\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_four_lines() {
        assert_eq!(
            render("run=test  test=a,b ").unwrap(),
            "set timeout=0\ninsmod all_video\nmultiboot2 /boot/kernel.elf run=test test=a,b\nboot\n"
        );
        assert_eq!(
            render("").unwrap().lines().nth(2),
            Some("multiboot2 /boot/kernel.elf")
        );
    }

    #[test]
    fn rejects_script_syntax() {
        for bad in [
            "run=test; reboot",
            "a=$x",
            "a=\"b\"",
            "a=b\nboot",
            "x=#",
            "a={b}",
        ] {
            assert!(
                matches!(render(bad), Err(BootError::BadCmdlineChar { .. })),
                "{bad:?} accepted"
            );
        }
    }
}
