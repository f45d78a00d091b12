//! CPU discovery from the ACPI MADT (the `acpi` crate, v5, without its allocator features).
//!
//! Models the processor half of Linux's `acpi_parse_madt_lapic_entries`
//! (`arch/x86/kernel/acpi/boot.c`). The RSDP comes from the bootloader when it passed one
//! (multiboot2 copies it into its information structure; that copy is a valid RSDP whose
//! RSDT/XSDT pointers lead to the real tables), otherwise from the BIOS search the ACPI spec
//! defines (first KiB of the EBDA, then 0xE0000..0xFFFFF), which is what `qemu -kernel`
//! (multiboot1) needs. Tables are read through the kernel's direct map, so "mapping" a region
//! is an address computation and unmapping is nothing.
//!
//! Every Processor Local APIC (type 0) and Processor Local x2APIC (type 9) entry is looked at.
//! A processor counts when its flags say *enabled* (bit 0) or *online capable* (bit 1: may be
//! brought up by the OS although firmware left it off); anything else is a slot for hot-plug
//! and is skipped. Firmware may describe one processor twice (an xAPIC entry and an x2APIC
//! entry with the same ID) and broken tables repeat IDs; the first entry wins and later ones
//! are counted as duplicates, so no APIC ID is ever started twice.
//!
//! Unsafe code here, and why: the `acpi` crate's `AcpiHandler` maps physical regions
//! through an unsafe trait method, and parsing starts from an RSDP address only firmware
//! vouches for.
#![allow(unsafe_code)]

use alloc::string::String;
use alloc::vec::Vec;
use core::ptr::NonNull;

use acpi::madt::{Madt, MadtEntry};
use acpi::{AcpiHandler, AcpiTables, PhysicalMapping};
use x86_64::PhysAddr;

/// Reads ACPI tables through the direct map.
#[derive(Clone, Copy, Debug)]
pub struct DirectMap;

impl AcpiHandler for DirectMap {
    unsafe fn map_physical_region<T>(&self, phys: usize, size: usize) -> PhysicalMapping<Self, T> {
        let virt = super::paging::phys_to_virt(PhysAddr::new(phys as u64));
        let ptr = NonNull::new(virt.as_mut_ptr::<T>()).expect("the direct map is not at 0");
        // SAFETY: the direct map covers all physical memory that firmware tables can live in,
        // read-write, for the kernel's whole life; the caller (the acpi crate) vouches that a
        // `T` is there.
        unsafe { PhysicalMapping::new(phys, ptr, size, size, *self) }
    }

    fn unmap_physical_region<T>(_region: &PhysicalMapping<Self, T>) {}
}

/// Where the RSDP was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RsdpSource {
    /// The bootloader's copy (multiboot2 ACPI tag).
    Bootloader(u64),
    /// The BIOS area search.
    BiosSearch,
}

/// One usable processor from the MADT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MadtCpu {
    /// Local APIC ID (8-bit from a type-0 entry, 32-bit from a type-9 entry).
    pub apic_id: u32,
    /// ACPI processor UID (type 0 has an 8-bit processor ID).
    pub acpi_uid: u32,
    /// Firmware left it off but says the OS may start it.
    pub online_capable: bool,
    /// Came from an x2APIC entry.
    pub x2apic_entry: bool,
}

/// The processors the MADT lists.
#[derive(Clone, Debug, Default)]
pub struct MadtCpus {
    /// Usable processors, in MADT order, each APIC ID once.
    pub cpus: Vec<MadtCpu>,
    /// Entries neither enabled nor online capable.
    pub disabled: u32,
    /// Entries whose APIC ID was already listed.
    pub duplicates: u32,
    /// Physical address of the local APIC the MADT states.
    pub local_apic_address: u64,
}

/// Why the MADT could not be read.
#[derive(Clone, Debug)]
pub enum AcpiError {
    /// No RSDP from the loader and none in the BIOS area (e.g. UEFI without the tag).
    NoRsdp,
    /// The tables are there but malformed (bad checksum, ...): the acpi crate's error.
    Tables(String),
    /// No MADT ("APIC" table).
    NoMadt,
}

impl core::fmt::Display for AcpiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AcpiError::NoRsdp => write!(f, "no RSDP from the loader or in the BIOS area"),
            AcpiError::Tables(e) => write!(f, "malformed ACPI tables: {e}"),
            AcpiError::NoMadt => write!(f, "no MADT (APIC) table"),
        }
    }
}

const FLAG_ENABLED: u32 = 1 << 0;
const FLAG_ONLINE_CAPABLE: u32 = 1 << 1;

impl MadtCpus {
    /// Records one processor entry, applying the enabled/online-capable and duplicate rules.
    pub fn add(&mut self, apic_id: u32, acpi_uid: u32, flags: u32, x2apic_entry: bool) {
        let enabled = flags & FLAG_ENABLED != 0;
        let online_capable = !enabled && flags & FLAG_ONLINE_CAPABLE != 0;
        if !enabled && !online_capable {
            self.disabled += 1;
            return;
        }
        if self.cpus.iter().any(|c| c.apic_id == apic_id) {
            self.duplicates += 1;
            return;
        }
        self.cpus.push(MadtCpu {
            apic_id,
            acpi_uid,
            online_capable,
            x2apic_entry,
        });
    }
}

/// Finds the RSDP: the bootloader's copy when there is one, else the BIOS area search.
pub fn tables(
    bootloader_rsdp: Option<u64>,
) -> Result<(RsdpSource, AcpiTables<DirectMap>), AcpiError> {
    let (source, tables) = match bootloader_rsdp {
        Some(addr) => {
            // SAFETY: the address is the RSDP copy inside the bootloader's information, which
            // stays reserved and mapped; the crate validates signature and checksum.
            let t = unsafe { AcpiTables::from_rsdp(DirectMap, addr as usize) };
            (RsdpSource::Bootloader(addr), t)
        }
        None => {
            // SAFETY: only reads the BDA/EBDA and the BIOS ROM area through the direct map;
            // on a machine without them the search finds no valid signature and fails.
            let t = unsafe { AcpiTables::search_for_rsdp_bios(DirectMap) };
            (RsdpSource::BiosSearch, t)
        }
    };
    let tables = tables.map_err(|e| match e {
        acpi::AcpiError::NoValidRsdp => AcpiError::NoRsdp,
        e => AcpiError::Tables(alloc::format!("{e:?}")),
    })?;
    Ok((source, tables))
}

/// Finds the RSDP and lists the processors of the MADT.
pub fn discover(bootloader_rsdp: Option<u64>) -> Result<(RsdpSource, MadtCpus), AcpiError> {
    let (source, tables) = tables(bootloader_rsdp)?;
    let madt = tables.find_table::<Madt>().map_err(|e| match e {
        acpi::AcpiError::TableMissing(_) => AcpiError::NoMadt,
        e => AcpiError::Tables(alloc::format!("{e:?}")),
    })?;
    let mut out = MadtCpus {
        local_apic_address: u64::from(madt.get().local_apic_address),
        ..MadtCpus::default()
    };
    for entry in madt.get().entries() {
        match entry {
            MadtEntry::LocalApic(e) => out.add(
                u32::from(e.apic_id),
                u32::from(e.processor_id),
                e.flags,
                false,
            ),
            MadtEntry::LocalX2Apic(e) => out.add(e.x2apic_id, e.processor_uid, e.flags, true),
            MadtEntry::LocalApicAddressOverride(e) => {
                out.local_apic_address = e.local_apic_address;
            }
            _ => {}
        }
    }
    Ok((source, out))
}
