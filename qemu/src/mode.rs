//! The four ways the runner boots the kernel (five names: USB under either firmware).
//!
//! * `direct`: `qemu -kernel kernel32.elf -append ...` (multiboot1; first serial line
//!   ~0.15 s, the fast path for tests);
//! * `bios`, `uefi`: the GRUB hybrid image as a disk under SeaBIOS / OVMF;
//! * `usb-bios`, `usb-uefi`: the same image as a USB stick on an xHCI controller, which is how
//!   a real machine boots it (first serial line ~0.7 s under BIOS, ~6 s under UEFI).

use core::fmt;
use core::str::FromStr;
use std::time::Duration;

/// How the kernel is booted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `-kernel` with the ELF32 (QEMU's multiboot1 loader).
    Direct,
    /// GRUB image as a disk, BIOS firmware.
    Bios,
    /// GRUB image as a disk, UEFI firmware (OVMF).
    Uefi,
    /// GRUB image as a USB stick, BIOS firmware.
    UsbBios,
    /// GRUB image as a USB stick, UEFI firmware.
    UsbUefi,
}

/// The firmware a mode boots through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firmware {
    /// SeaBIOS (QEMU's default), or no firmware step at all for `-kernel`.
    Bios,
    /// OVMF.
    Uefi,
}

impl Mode {
    /// Every mode, in the order the help text lists them.
    pub const ALL: [Mode; 5] = [
        Mode::Direct,
        Mode::Bios,
        Mode::Uefi,
        Mode::UsbBios,
        Mode::UsbUefi,
    ];

    /// The name used on the command line.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Bios => "bios",
            Mode::Uefi => "uefi",
            Mode::UsbBios => "usb-bios",
            Mode::UsbUefi => "usb-uefi",
        }
    }

    /// Which firmware runs first.
    #[must_use]
    pub const fn firmware(self) -> Firmware {
        match self {
            Mode::Uefi | Mode::UsbUefi => Firmware::Uefi,
            Mode::Direct | Mode::Bios | Mode::UsbBios => Firmware::Bios,
        }
    }

    /// Whether the mode boots the GRUB image (all but `direct`).
    #[must_use]
    pub const fn uses_image(self) -> bool {
        !matches!(self, Mode::Direct)
    }

    /// A default timeout that leaves room for the firmware under TCG on a loaded machine.
    #[must_use]
    pub const fn default_timeout(self) -> Duration {
        match self.firmware() {
            Firmware::Bios => Duration::from_secs(60),
            Firmware::Uefi => Duration::from_secs(120),
        }
    }

    /// [`Self::default_timeout`] for `smp` vCPUs on `host_cores` cores: times the vCPUs
    /// each core runs (rounded up). Under TCG every vCPU is a host thread, so 12 vCPUs on 2
    /// cores take about six times as long for the same work; the 60 s meant for one vCPU per
    /// core would kill a boot that is only slow.
    #[must_use]
    pub fn default_timeout_for(self, smp: u32, host_cores: u32) -> Duration {
        self.default_timeout() * smp.div_ceil(host_cores.max(1)).max(1)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mode name that is not one of [`Mode::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMode(pub String);

impl fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown mode `{}` (expected one of:", self.0)?;
        for m in Mode::ALL {
            write!(f, " {m}")?;
        }
        f.write_str(")")
    }
}

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mode::ALL {
            assert_eq!(m.name().parse::<Mode>(), Ok(m));
        }
        let err = "floppy".parse::<Mode>().unwrap_err();
        assert!(err.to_string().contains("usb-uefi"));
    }

    #[test]
    fn firmware_and_image() {
        assert_eq!(Mode::UsbUefi.firmware(), Firmware::Uefi);
        assert_eq!(Mode::UsbBios.firmware(), Firmware::Bios);
        assert!(!Mode::Direct.uses_image() && Mode::Bios.uses_image());
        assert!(Mode::Uefi.default_timeout() > Mode::Direct.default_timeout());
    }

    #[test]
    fn default_timeout_scales_with_vcpus_per_core() {
        let base = Mode::Direct.default_timeout();
        assert_eq!(Mode::Direct.default_timeout_for(1, 2), base);
        assert_eq!(Mode::Direct.default_timeout_for(2, 2), base);
        assert_eq!(Mode::Direct.default_timeout_for(3, 2), base * 2);
        assert_eq!(Mode::Direct.default_timeout_for(12, 2), base * 6);
        assert_eq!(Mode::Direct.default_timeout_for(12, 16), base);
        assert_eq!(Mode::Direct.default_timeout_for(4, 0), base * 4);
        assert_eq!(
            Mode::Uefi.default_timeout_for(8, 2),
            Mode::Uefi.default_timeout() * 4
        );
    }
}
