//! Reads the multiboot1 (QEMU `-kernel`) or multiboot2 (GRUB) boot information.
//!
//! Runs on the boot stub's identity map, before any allocation, so physical addresses are
//! plain pointers here. Multiboot2 goes through the `multiboot2` crate; multiboot1 is a flat
//! structure read field by field (its layout is fixed by the spec). The result is copied into
//! [`BootInfo`], so nothing later depends on the bootloader's memory staying intact, except
//! the multiboot2 RSDP copy, whose range stays reserved.
//!
//! Unsafe code here, and why: the multiboot information is read from a physical address the
//! boot loader passes, with lengths it vouches for.
#![allow(unsafe_code)]

use crate::boot_info::{BootInfo, BootProtocol, FbFormat, FramebufferInfo, MemKind, MemRegion};

/// EAX value from a multiboot1 loader.
pub const MB1_MAGIC: u32 = 0x2BAD_B002;
/// EAX value from a multiboot2 loader.
pub const MB2_MAGIC: u32 = 0x36D7_6289;

/// Why the boot information could not be read.
#[derive(Clone, Copy, Debug)]
pub enum BootInfoError {
    /// EAX held neither multiboot magic.
    BadMagic(u32),
    /// The multiboot2 structure was malformed.
    Multiboot2,
}

/// Parses the boot information at physical address `info`.
///
/// # Safety
/// `magic` and `info` must be the values the bootloader left in EAX and EBX, and memory
/// below 4 GiB must still be identity mapped (the boot stub's tables).
pub unsafe fn parse(magic: u32, info: u32) -> Result<BootInfo, BootInfoError> {
    match magic {
        // SAFETY: forwarded: a multiboot1 loader put a valid info structure at `info`.
        MB1_MAGIC => Ok(unsafe { parse_mb1(info as usize) }),
        // SAFETY: forwarded: a multiboot2 loader put a valid info structure at `info`.
        MB2_MAGIC => unsafe { parse_mb2(info as usize) },
        other => Err(BootInfoError::BadMagic(other)),
    }
}

fn mb1_kind(t: u32) -> MemKind {
    match t {
        1 => MemKind::Usable,
        3 => MemKind::AcpiReclaimable,
        4 => MemKind::AcpiNvs,
        5 => MemKind::Bad,
        _ => MemKind::Reserved,
    }
}

/// Reads a NUL-terminated string at a physical address (at most `max` bytes).
///
/// # Safety
/// `addr` must point to a readable NUL-terminated string or at least `max` readable bytes.
unsafe fn c_str<'a>(addr: usize, max: usize) -> &'a [u8] {
    let p = addr as *const u8;
    let mut n = 0;
    // SAFETY: the caller guarantees readability up to the NUL or `max`.
    while n < max && unsafe { p.add(n).read() } != 0 {
        n += 1;
    }
    // SAFETY: the n bytes just read are readable and stay untouched during boot.
    unsafe { core::slice::from_raw_parts(p, n) }
}

/// # Safety
/// `info` must be a valid multiboot1 information structure, identity mapped.
unsafe fn parse_mb1(info: usize) -> BootInfo {
    // SAFETY: every offset passed in is within the 120-byte multiboot1 information
    // structure, and a field is read only when its flag bit says it is valid.
    let rd32 = |off: usize| unsafe { ((info + off) as *const u32).read_unaligned() };
    // SAFETY: as for `rd32` (the 64-bit fields are the framebuffer address).
    let rd64 = |off: usize| unsafe { ((info + off) as *const u64).read_unaligned() };
    let flags = rd32(0);
    let mut bi = BootInfo::new(BootProtocol::Multiboot1);
    bi.info_range = (info as u64, info as u64 + 120);
    if flags & (1 << 2) != 0 {
        // SAFETY: flag 2: `cmdline` is the physical address of a NUL-terminated string.
        bi.set_cmdline(unsafe { c_str(rd32(16) as usize, crate::boot_info::MAX_CMDLINE + 1) });
    }
    if flags & (1 << 9) != 0 {
        // SAFETY: flag 9: `boot_loader_name` is a NUL-terminated string.
        bi.set_loader(unsafe { c_str(rd32(64) as usize, 64) });
    }
    if flags & (1 << 6) != 0 {
        let (len, addr) = (rd32(44) as usize, rd32(48) as usize);
        let mut off = 0;
        while off + 24 <= len {
            let e = addr + off;
            // SAFETY: flag 6: `mmap_addr..+mmap_length` holds entries of `size` (u32) followed
            // by base (u64), length (u64), type (u32); `off + 24 <= len` keeps us inside.
            let (size, base, length, typ) = unsafe {
                (
                    (e as *const u32).read_unaligned(),
                    ((e + 4) as *const u64).read_unaligned(),
                    ((e + 12) as *const u64).read_unaligned(),
                    ((e + 20) as *const u32).read_unaligned(),
                )
            };
            bi.push_region(MemRegion {
                start: base,
                len: length,
                kind: mb1_kind(typ),
            });
            off += size as usize + 4;
        }
    } else if flags & 1 != 0 {
        // Only mem_lower/mem_upper (KiB): conventional memory and memory above 1 MiB.
        bi.push_region(MemRegion {
            start: 0,
            len: u64::from(rd32(4)) * 1024,
            kind: MemKind::Usable,
        });
        bi.push_region(MemRegion {
            start: 0x10_0000,
            len: u64::from(rd32(8)) * 1024,
            kind: MemKind::Usable,
        });
    }
    if flags & (1 << 12) != 0 {
        let typ = rd32(108) >> 8 & 0xff;
        let bpp = (rd32(108) & 0xff) as u8;
        let format = match typ {
            1 => {
                // SAFETY: colour info for direct RGB: 6 bytes at offset 110.
                let c = |i: usize| unsafe { ((info + 110 + i) as *const u8).read() };
                Some(FbFormat::Rgb {
                    red: (c(0), c(1)),
                    green: (c(2), c(3)),
                    blue: (c(4), c(5)),
                })
            }
            2 => Some(FbFormat::EgaText),
            _ => None,
        };
        if let Some(format) = format {
            bi.framebuffer = Some(FramebufferInfo {
                phys: rd64(88),
                pitch: rd32(96),
                width: rd32(100),
                height: rd32(104),
                bpp,
                format,
            });
        }
    }
    bi
}

/// # Safety
/// `info` must be a valid multiboot2 information structure, identity mapped.
unsafe fn parse_mb2(info: usize) -> Result<BootInfo, BootInfoError> {
    use multiboot2::{BootInformation, BootInformationHeader, FramebufferType, MemoryAreaType};
    // SAFETY: forwarded: a multiboot2 loader placed the structure at `info`.
    let mbi = unsafe { BootInformation::load(info as *const BootInformationHeader) }
        .map_err(|_| BootInfoError::Multiboot2)?;
    let uefi = mbi.efi_sdt64_tag().is_some() || mbi.efi_sdt32_tag().is_some();
    let mut bi = BootInfo::new(BootProtocol::Multiboot2 { uefi });
    bi.info_range = (mbi.start_address() as u64, mbi.end_address() as u64);
    if let Some(Ok(cmd)) = mbi.command_line_tag().map(|t| t.cmdline()) {
        bi.set_cmdline(cmd.as_bytes());
    }
    if let Some(Ok(name)) = mbi.boot_loader_name_tag().map(|t| t.name()) {
        bi.set_loader(name.as_bytes());
    }
    if let Some(mmap) = mbi.memory_map_tag() {
        for a in mmap.memory_areas() {
            let kind = match a.typ() {
                MemoryAreaType::Available => MemKind::Usable,
                MemoryAreaType::AcpiAvailable => MemKind::AcpiReclaimable,
                MemoryAreaType::ReservedHibernate => MemKind::AcpiNvs,
                MemoryAreaType::Defective => MemKind::Bad,
                _ => MemKind::Reserved,
            };
            bi.push_region(MemRegion {
                start: a.start_address(),
                len: a.size(),
                kind,
            });
        }
    }
    if let Some(Ok(fb)) = mbi.framebuffer_tag() {
        let format = match fb.buffer_type() {
            Ok(FramebufferType::RGB { red, green, blue }) => Some(FbFormat::Rgb {
                red: (red.position, red.size),
                green: (green.position, green.size),
                blue: (blue.position, blue.size),
            }),
            Ok(FramebufferType::Text) => Some(FbFormat::EgaText),
            _ => None,
        };
        if let Some(format) = format {
            bi.framebuffer = Some(FramebufferInfo {
                phys: fb.address(),
                pitch: fb.pitch(),
                width: fb.width(),
                height: fb.height(),
                bpp: fb.bpp(),
                format,
            });
        }
    }
    // The tags hold a copy of the RSDP right after their 8-byte tag header; the copy stays in
    // place because `info_range` is never handed to the frame allocator.
    let header = 8u64;
    if let Some(t) = mbi.rsdp_v2_tag() {
        bi.rsdp = Some(core::ptr::from_ref(t) as *const u8 as u64 + header);
    } else if let Some(t) = mbi.rsdp_v1_tag() {
        bi.rsdp = Some(core::ptr::from_ref(t) as *const u8 as u64 + header);
    }
    Ok(bi)
}
