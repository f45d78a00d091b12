//! What the bootloader told us, copied out of its structures into a fixed-size record.
//!
//! Filled once by `arch::multiboot` before anything touches low memory; everything
//! later (frame allocator, console, ACPI, summary) reads it from here. Fixed capacity, no heap:
//! it exists before the heap does.

use spin::Once;

/// How the kernel was loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootProtocol {
    /// Multiboot 1 (QEMU `-kernel`; the fast path for tests).
    Multiboot1,
    /// Multiboot 2 (GRUB), with whether the firmware was UEFI.
    Multiboot2 {
        /// GRUB passed an EFI system table: the machine booted through UEFI.
        uefi: bool,
    },
}

/// Kind of a physical memory range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// Free RAM.
    Usable,
    /// ACPI tables, reclaimable after parsing.
    AcpiReclaimable,
    /// ACPI non-volatile storage.
    AcpiNvs,
    /// Defective RAM.
    Bad,
    /// Anything else.
    Reserved,
}

/// One memory-map entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemRegion {
    /// First byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// What it is.
    pub kind: MemKind,
}

impl MemRegion {
    /// One past the last byte.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.len)
    }
}

/// Pixel layout of a framebuffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FbFormat {
    /// Direct colour: (bit position, bit size) of each channel.
    Rgb {
        /// Red channel.
        red: (u8, u8),
        /// Green channel.
        green: (u8, u8),
        /// Blue channel.
        blue: (u8, u8),
    },
    /// EGA text mode: `width` x `height` cells of (char, attribute).
    EgaText,
}

/// A framebuffer handed over by the bootloader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramebufferInfo {
    /// Physical address.
    pub phys: u64,
    /// Bytes per line.
    pub pitch: u32,
    /// Pixels (or text columns).
    pub width: u32,
    /// Pixels (or text rows).
    pub height: u32,
    /// Bits per pixel (16 for EGA text).
    pub bpp: u8,
    /// Layout.
    pub format: FbFormat,
}

/// Capacity of the copied memory map.
pub const MAX_REGIONS: usize = 128;
/// Capacity of the copied command line.
pub const MAX_CMDLINE: usize = 1024;

/// Everything the kernel keeps from the bootloader.
#[derive(Clone, Debug)]
pub struct BootInfo {
    /// Boot protocol.
    pub protocol: BootProtocol,
    regions: [MemRegion; MAX_REGIONS],
    nregions: usize,
    /// The memory map had more entries than [`MAX_REGIONS`] (the rest were dropped).
    pub regions_truncated: bool,
    cmdline: [u8; MAX_CMDLINE],
    cmdline_len: usize,
    /// The command line was longer than [`MAX_CMDLINE`] (rejected as a bad command line).
    pub cmdline_truncated: bool,
    loader: [u8; 64],
    loader_len: usize,
    /// Framebuffer, when one was set up.
    pub framebuffer: Option<FramebufferInfo>,
    /// Physical address of an ACPI RSDP (the copy inside the multiboot2 information).
    pub rsdp: Option<u64>,
    /// Physical range of the bootloader's information structure (kept reserved).
    pub info_range: (u64, u64),
}

impl BootInfo {
    /// An empty record for `protocol`.
    #[must_use]
    pub const fn new(protocol: BootProtocol) -> BootInfo {
        BootInfo {
            protocol,
            regions: [MemRegion {
                start: 0,
                len: 0,
                kind: MemKind::Reserved,
            }; MAX_REGIONS],
            nregions: 0,
            regions_truncated: false,
            cmdline: [0; MAX_CMDLINE],
            cmdline_len: 0,
            cmdline_truncated: false,
            loader: [0; 64],
            loader_len: 0,
            framebuffer: None,
            rsdp: None,
            info_range: (0, 0),
        }
    }

    /// Appends a memory region (dropped, and flagged, past capacity).
    pub fn push_region(&mut self, r: MemRegion) {
        if self.nregions == MAX_REGIONS {
            self.regions_truncated = true;
            return;
        }
        self.regions[self.nregions] = r;
        self.nregions += 1;
    }

    /// The memory map.
    #[must_use]
    pub fn regions(&self) -> &[MemRegion] {
        &self.regions[..self.nregions]
    }

    /// Stores the command line (non-UTF-8 bytes become `?`).
    pub fn set_cmdline(&mut self, bytes: &[u8]) {
        self.cmdline_truncated = bytes.len() > MAX_CMDLINE;
        let n = bytes.len().min(MAX_CMDLINE);
        for (d, &s) in self.cmdline.iter_mut().zip(&bytes[..n]) {
            *d = if s.is_ascii() { s } else { b'?' };
        }
        self.cmdline_len = n;
    }

    /// The command line.
    #[must_use]
    pub fn cmdline(&self) -> &str {
        core::str::from_utf8(&self.cmdline[..self.cmdline_len]).unwrap_or("")
    }

    /// Stores the bootloader's name.
    pub fn set_loader(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.loader.len());
        for (d, &s) in self.loader.iter_mut().zip(&bytes[..n]) {
            *d = if s.is_ascii() { s } else { b'?' };
        }
        self.loader_len = n;
    }

    /// The bootloader's name, if it gave one.
    #[must_use]
    pub fn loader(&self) -> &str {
        core::str::from_utf8(&self.loader[..self.loader_len]).unwrap_or("")
    }

    /// Total usable RAM in bytes.
    #[must_use]
    pub fn usable_bytes(&self) -> u64 {
        self.regions()
            .iter()
            .filter(|r| r.kind == MemKind::Usable)
            .map(|r| r.len)
            .sum()
    }
}

static BOOT_INFO: Once<BootInfo> = Once::new();

/// Publishes the boot information (once, at boot).
pub fn set(info: BootInfo) -> &'static BootInfo {
    BOOT_INFO.call_once(|| info)
}

/// The boot information. Panics if called before [`set`].
#[must_use]
pub fn get() -> &'static BootInfo {
    BOOT_INFO
        .get()
        .expect("boot information read before it was parsed")
}
