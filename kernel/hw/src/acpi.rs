//! The ACPI SRAT (System Resource Affinity Table) and SLIT (System Locality Information
//! Table), parsed from their raw bytes.
//!
//! Models `acpi_numa_init()` (drivers/acpi/numa/srat.c) and its x86 callbacks
//! (`acpi_numa_processor_affinity_init()`, `acpi_numa_x2apic_affinity_init()`,
//! `acpi_numa_memory_affinity_init()`, `acpi_numa_slit_init()`). The kernel finds and
//! checksums the tables (`arch::x86_64::srat`, through the `acpi` crate, which does not
//! decode these two); the bytes are decoded here, so the host tests the decoding against
//! tables QEMU generates (tests/fixtures/acpi, each with its origin).
//!
//! SRAT entries after the 48-byte header (36-byte SDT header, 4 reserved bytes that must
//! read 1, 8 reserved): type 0, Processor Local APIC/SAPIC Affinity (16 bytes: proximity
//! domain bits 0..7 at 2, APIC ID at 3, flags at 4, proximity domain bits 8..31 at 9 from
//! SRAT revision 2 on); type 1, Memory Affinity (40 bytes: domain at 2, base at 8, length
//! at 16, flags at 28: enabled, hot-pluggable, non-volatile); type 2, Processor Local
//! x2APIC Affinity (24 bytes: domain at 4, x2APIC ID at 8, flags at 12). Entries without
//! the enabled flag are skipped, as Linux does; other types (GICC, ITS, generic
//! initiators) do not concern x86 CPUs or RAM. The SLIT is a count of localities `n` at
//! byte 36 and an `n` x `n` byte matrix from byte 44, indexed by proximity domain.

use alloc::vec::Vec;
use core::fmt;

/// An enabled memory range of the SRAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SratMemory {
    /// Proximity domain.
    pub pxm: u32,
    /// First byte.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// Hot-pluggable (may be absent now).
    pub hotplug: bool,
}

/// An enabled processor of the SRAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SratCpu {
    /// Proximity domain.
    pub pxm: u32,
    /// Local APIC ID (8 bits from a type-0 entry, 32 from a type-2 entry).
    pub apic_id: u32,
    /// Came from an x2APIC affinity entry.
    pub x2apic: bool,
}

/// The decoded SRAT.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Srat {
    /// Enabled memory ranges, in table order.
    pub memory: Vec<SratMemory>,
    /// Enabled processors, in table order.
    pub cpus: Vec<SratCpu>,
    /// Entries skipped because they were not enabled.
    pub disabled: u32,
    /// Entries of types that name neither x86 processors nor memory.
    pub other: u32,
}

/// The decoded SLIT: `n` localities and their distance matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slit {
    /// Number of localities.
    pub n: usize,
    /// Row-major `n * n` distances.
    pub distances: Vec<u8>,
}

impl Slit {
    /// Distance from locality `a` to `b`, if both exist.
    #[must_use]
    pub fn distance(&self, a: u32, b: u32) -> Option<u8> {
        let (a, b) = (a as usize, b as usize);
        (a < self.n && b < self.n).then(|| self.distances[a * self.n + b])
    }
}

/// Why a table was not usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableError {
    /// Shorter than its fixed part.
    Truncated(usize),
    /// An entry whose length is zero or runs past the table.
    BadEntry(usize),
    /// The SLIT's matrix does not fit the table.
    BadMatrix(u64),
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::Truncated(n) => write!(f, "only {n} bytes"),
            TableError::BadEntry(at) => write!(f, "malformed entry at byte {at}"),
            TableError::BadMatrix(n) => write!(f, "{n} localities do not fit the table"),
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

const SRAT_HEADER: usize = 48;
const FLAG_ENABLED: u32 = 1 << 0;
const MEM_HOTPLUGGABLE: u32 = 1 << 1;

/// Decodes an SRAT from its bytes (SDT header included).
pub fn parse_srat(b: &[u8]) -> Result<Srat, TableError> {
    if b.len() < SRAT_HEADER {
        return Err(TableError::Truncated(b.len()));
    }
    let revision = b[8];
    let mut srat = Srat::default();
    let mut at = SRAT_HEADER;
    while at + 2 <= b.len() {
        let (kind, len) = (b[at], usize::from(b[at + 1]));
        if len < 2 || at + len > b.len() {
            return Err(TableError::BadEntry(at));
        }
        let e = &b[at..at + len];
        match (kind, len) {
            (0, 16..) => {
                let flags = u32_at(e, 4);
                let mut pxm = u32::from(e[2]);
                if revision >= 2 {
                    pxm |= u32::from(e[9]) << 8 | u32::from(u16_at(e, 10)) << 16;
                }
                if flags & FLAG_ENABLED == 0 {
                    srat.disabled += 1;
                } else {
                    srat.cpus.push(SratCpu {
                        pxm,
                        apic_id: u32::from(e[3]),
                        x2apic: false,
                    });
                }
            }
            (1, 40..) => {
                let flags = u32_at(e, 28);
                if flags & FLAG_ENABLED == 0 {
                    srat.disabled += 1;
                } else {
                    srat.memory.push(SratMemory {
                        pxm: u32_at(e, 2),
                        base: u64_at(e, 8),
                        len: u64_at(e, 16),
                        hotplug: flags & MEM_HOTPLUGGABLE != 0,
                    });
                }
            }
            (2, 24..) => {
                if u32_at(e, 12) & FLAG_ENABLED == 0 {
                    srat.disabled += 1;
                } else {
                    srat.cpus.push(SratCpu {
                        pxm: u32_at(e, 4),
                        apic_id: u32_at(e, 8),
                        x2apic: true,
                    });
                }
            }
            (0..=2, _) => return Err(TableError::BadEntry(at)),
            _ => srat.other += 1,
        }
        at += len;
    }
    Ok(srat)
}

/// Decodes a SLIT from its bytes (SDT header included).
pub fn parse_slit(b: &[u8]) -> Result<Slit, TableError> {
    if b.len() < 44 {
        return Err(TableError::Truncated(b.len()));
    }
    let n = u64_at(b, 36);
    let cells = n.checked_mul(n).filter(|&c| c <= (b.len() - 44) as u64);
    let Some(cells) = cells else {
        return Err(TableError::BadMatrix(n));
    };
    Ok(Slit {
        n: n as usize,
        distances: b[44..44 + cells as usize].to_vec(),
    })
}

#[cfg(test)]
mod tests;
