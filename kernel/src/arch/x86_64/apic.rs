//! The local APIC: xAPIC through MMIO, x2APIC through MSRs; ID, EOI and inter-processor
//! interrupts.
//!
//! Models the parts of Linux's `arch/x86/kernel/apic/apic.c`, `x2apic_phys.c` and
//! `ipi.c` that SMP bring-up and cross-CPU calls need. The mode is chosen once on the boot
//! CPU: x2APIC when CPUID.1:ECX\[21\] says the CPU has it (IA32_APIC_BASE bits 10+11 switch it
//! on and every register becomes MSR `0x800 + offset/16`), otherwise xAPIC, whose registers
//! sit in the 4 KiB page IA32_APIC_BASE points at (0xFEE0_0000 by default), reached through
//! the kernel's direct map. The direct map is write-back in the page tables, but the MTRRs
//! the firmware sets mark the APIC page uncacheable, and UC in the MTRR wins over WB in the
//! PAT, so the accesses go straight to the device. Every other CPU enables the same mode in
//! [`init_this_cpu`].
//!
//! An IPI is one write of the interrupt command register: in xAPIC mode the destination goes
//! into ICR high (bits 56..63: 8-bit APIC IDs only) and the write of ICR low sends it; then we
//! wait for the delivery-status bit to clear. In x2APIC mode a single 64-bit MSR write carries
//! a 32-bit destination and there is no delivery-status bit, and since that write is not
//! serialising it is fenced so that the IPI never overtakes the stores it announces.
//!
//! Unsafe code here, and why: the local APIC is programmed through MSRs (x2APIC) and
//! volatile loads and stores to its MMIO page (xAPIC).
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use raw_cpuid::CpuId;
use x86_64::PhysAddr;
use x86_64::registers::model_specific::Msr;

const IA32_APIC_BASE: u32 = 0x1b;
const BASE_ENABLE: u64 = 1 << 11;
const BASE_X2APIC: u64 = 1 << 10;

/// Register offsets (xAPIC MMIO; x2APIC MSR is `0x800 + offset / 16`).
mod reg {
    pub const ID: u32 = 0x20;
    pub const EOI: u32 = 0xb0;
    pub const SVR: u32 = 0xf0;
    pub const ICR_LOW: u32 = 0x300;
    pub const ICR_HIGH: u32 = 0x310;
}

/// ICR delivery modes and flags.
pub mod icr {
    /// Fixed delivery of the vector in bits 0..7.
    pub const FIXED: u32 = 0 << 8;
    /// INIT.
    pub const INIT: u32 = 5 << 8;
    /// Start-up IPI; the vector is the 4 KiB page number of the real-mode entry.
    pub const STARTUP: u32 = 6 << 8;
    /// Delivery status (xAPIC only): the previous IPI has not been accepted yet.
    pub const PENDING: u32 = 1 << 12;
    /// Level assert (required for everything but INIT de-assert).
    pub const ASSERT: u32 = 1 << 14;
    /// Level-triggered (INIT).
    pub const LEVEL: u32 = 1 << 15;
}

/// Vector the local APIC uses for spurious interrupts (low nibble all ones, as the
/// original xAPIC required).
pub const SPURIOUS_VECTOR: u8 = 0xff;

static X2APIC: AtomicBool = AtomicBool::new(false);
/// Virtual address of the xAPIC register page (0 in x2APIC mode or before init).
static MMIO: AtomicU64 = AtomicU64::new(0);

/// Which interface the local APICs run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApicMode {
    /// Memory-mapped registers, 8-bit APIC IDs.
    XApic,
    /// MSRs, 32-bit APIC IDs.
    X2Apic,
}

/// Why the local APIC cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApicError {
    /// CPUID.1:EDX\[9\] is clear.
    NoApic,
}

/// The current mode.
#[must_use]
pub fn mode() -> ApicMode {
    if X2APIC.load(Relaxed) {
        ApicMode::X2Apic
    } else {
        ApicMode::XApic
    }
}

fn read_base() -> u64 {
    // SAFETY: IA32_APIC_BASE exists on every CPU with an APIC (checked by the callers).
    unsafe { Msr::new(IA32_APIC_BASE).read() }
}

/// Reads register `r` (xAPIC offset) of this CPU's local APIC.
pub(super) fn read(r: u32) -> u32 {
    if X2APIC.load(Relaxed) {
        // SAFETY: in x2APIC mode the registers are MSRs 0x800 + r/16; only readable ones are
        // read here.
        unsafe { Msr::new(0x800 + r / 16).read() as u32 }
    } else {
        let base = MMIO.load(Relaxed);
        // SAFETY: `base` is the direct-map address of this CPU's APIC page (set by `init_bsp`
        // before any register access), and `r` a register offset inside it.
        unsafe { core::ptr::read_volatile((base + u64::from(r)) as *const u32) }
    }
}

/// Writes `v` to register `r` (xAPIC offset) of this CPU's local APIC.
pub(super) fn write(r: u32, v: u32) {
    if X2APIC.load(Relaxed) {
        // SAFETY: as in `read`; the values written are architectural register contents.
        unsafe { Msr::new(0x800 + r / 16).write(u64::from(v)) }
    } else {
        let base = MMIO.load(Relaxed);
        // SAFETY: as in `read`.
        unsafe { core::ptr::write_volatile((base + u64::from(r)) as *mut u32, v) }
    }
}

/// Sets up the boot CPU's local APIC and picks the mode every CPU will use.
pub fn init_bsp() -> Result<ApicMode, ApicError> {
    let features = CpuId::new().get_feature_info();
    if !features.as_ref().is_some_and(|f| f.has_apic()) {
        return Err(ApicError::NoApic);
    }
    let x2 = features.is_some_and(|f| f.has_x2apic());
    let phys = read_base() & 0x000f_ffff_ffff_f000;
    MMIO.store(
        super::paging::phys_to_virt(PhysAddr::new(phys)).as_u64(),
        Relaxed,
    );
    X2APIC.store(x2, Relaxed);
    // A spurious interrupt (one withdrawn before the CPU took it) needs no EOI and no work.
    super::trap::register(SPURIOUS_VECTOR, |_| {});
    init_this_cpu();
    Ok(mode())
}

/// Enables this CPU's local APIC in the chosen mode with the spurious vector set.
pub fn init_this_cpu() {
    let mut base = read_base() | BASE_ENABLE;
    if X2APIC.load(Relaxed) {
        base |= BASE_X2APIC;
    }
    // SAFETY: setting the global enable bit (and the x2APIC bit when CPUID lists x2APIC) is
    // the architectural way to switch the APIC on; the base address is left unchanged.
    unsafe { Msr::new(IA32_APIC_BASE).write(base) };
    // Software enable (bit 8) with the spurious vector.
    write(reg::SVR, (1 << 8) | u32::from(SPURIOUS_VECTOR));
}

/// This CPU's APIC ID.
#[must_use]
pub fn id() -> u32 {
    let v = read(reg::ID);
    if X2APIC.load(Relaxed) { v } else { v >> 24 }
}

/// Signals end of interrupt for the interrupt being handled.
pub fn eoi() {
    write(reg::EOI, 0);
}

/// Why an IPI was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpiError {
    /// xAPIC mode cannot address APIC IDs above 255.
    DestinationTooLarge(u32),
}

/// Sends an IPI with ICR low bits `low` to the CPU with APIC ID `dest`, and (xAPIC) waits until
/// the local APIC has accepted it.
pub fn send_ipi(dest: u32, low: u32) -> Result<(), IpiError> {
    if X2APIC.load(Relaxed) {
        let v = (u64::from(dest) << 32) | u64::from(low);
        // The x2APIC ICR write is not serialising: without a fence the IPI can reach the
        // target before this CPU's earlier stores (the request it announces) are visible
        // (Linux's `weak_wrmsr_fence`: mfence, then lfence so the wrmsr waits for it).
        // SAFETY: fences only; no memory is accessed.
        unsafe { core::arch::asm!("mfence", "lfence", options(nostack, preserves_flags)) };
        // SAFETY: the x2APIC ICR MSR (0x830) takes destination and command in one write.
        unsafe { Msr::new(0x830).write(v) };
        return Ok(());
    }
    if dest > 0xff {
        return Err(IpiError::DestinationTooLarge(dest));
    }
    x86_64::instructions::interrupts::without_interrupts(|| {
        write(reg::ICR_HIGH, dest << 24);
        write(reg::ICR_LOW, low);
        while read(reg::ICR_LOW) & icr::PENDING != 0 {
            core::hint::spin_loop();
        }
    });
    Ok(())
}
