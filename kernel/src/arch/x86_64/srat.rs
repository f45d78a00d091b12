//! The ACPI SRAT (System Resource Affinity Table) and SLIT (System Locality Information
//! Table): found through the `acpi` crate and decoded by [`hw::acpi`] (pure, host-tested).
//!
//! Models `acpi_numa_init()` (drivers/acpi/numa/srat.c) and its x86 callbacks
//! (`acpi_numa_processor_affinity_init()`, `acpi_numa_x2apic_affinity_init()`,
//! `acpi_numa_memory_affinity_init()`, `acpi_numa_slit_init()`): the `acpi` crate v5 finds
//! and checksums the tables but does not decode these two; [`hw::acpi`] decodes the bytes.
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
//!
//! Unsafe code here, and why: the `acpi` crate declares each table type through an unsafe
//! trait (its layout must match the firmware's), and the SRAT's and SLIT's variable parts
//! are read as slices of firmware memory.
#![allow(unsafe_code)]

pub use hw::acpi::{Slit, Srat, SratCpu, SratMemory, TableError, parse_slit, parse_srat};

use super::acpi::{AcpiError, DirectMap};
use acpi::sdt::{SdtHeader, Signature};
use acpi::{AcpiTable, AcpiTables};

/// The SRAT read as nothing but its header; the entries follow it in memory.
#[repr(transparent)]
struct SratTable(SdtHeader);

/// The SLIT read as nothing but its header.
#[repr(transparent)]
struct SlitTable(SdtHeader);

// SAFETY: the type is exactly an SDT header; the crate maps and checksums the whole table
// (the length its header states), which is what `bytes` then reads.
unsafe impl AcpiTable for SratTable {
    const SIGNATURE: Signature = Signature::SRAT;
    fn header(&self) -> &SdtHeader {
        &self.0
    }
}

// SAFETY: as above, for the SLIT.
unsafe impl AcpiTable for SlitTable {
    const SIGNATURE: Signature = Signature::SLIT;
    fn header(&self) -> &SdtHeader {
        &self.0
    }
}

/// The whole table `T` as bytes, or `None` when the firmware has none.
fn bytes<T: AcpiTable>(tables: &AcpiTables<DirectMap>) -> Option<&'static [u8]> {
    let m = tables.find_table::<T>().ok()?;
    let len = m.get().header().length as usize;
    let ptr = m.virtual_start().as_ptr().cast::<u8>();
    // SAFETY: the crate validated the header and checksummed `len` bytes from `ptr`; they
    // are firmware tables in memory the kernel never hands out (ACPI regions stay
    // reserved), reached through the direct map, which lives forever.
    Some(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// The firmware's SRAT and SLIT, each `None` when absent.
pub struct Affinity {
    /// The SRAT, or why it could not be decoded.
    pub srat: Option<Result<Srat, TableError>>,
    /// The SLIT, or why it could not be decoded.
    pub slit: Option<Result<Slit, TableError>>,
}

/// Reads both tables through the RSDP the loader gave (or the BIOS search).
pub fn read(bootloader_rsdp: Option<u64>) -> Result<Affinity, AcpiError> {
    let (_, tables) = super::acpi::tables(bootloader_rsdp)?;
    Ok(Affinity {
        srat: bytes::<SratTable>(&tables).map(parse_srat),
        slit: bytes::<SlitTable>(&tables).map(parse_slit),
    })
}
