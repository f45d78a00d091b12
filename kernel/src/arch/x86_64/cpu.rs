//! CPU identification and the few instructions the portable kernel needs by name.
//!
//! CPUID through `raw-cpuid`: vendor, brand, the features the summary prints, and the
//! hypervisor vendor that tells QEMU (whose exit device we may write) from a real machine
//! (the benchmark's `machine` record reports the brand and the vendor string as well).
//!
//! Unsafe code here, and why: QEMU's isa-debug-exit device is an I/O port write.
#![allow(unsafe_code)]

use raw_cpuid::{CpuId, Hypervisor};

/// Who is running us, from CPUID's hypervisor leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// QEMU without an accelerator (TCG; vendor "TCGTCGTCGTCG").
    QemuTcg,
    /// KVM (QEMU with acceleration).
    Kvm,
    /// Some other hypervisor: not known to have QEMU's exit device.
    OtherHypervisor,
    /// No hypervisor bit: a real machine.
    BareMetal,
}

impl Platform {
    /// Whether QEMU's `isa-debug-exit` device can be expected.
    #[must_use]
    pub fn is_qemu(self) -> bool {
        matches!(self, Platform::QemuTcg | Platform::Kvm)
    }

    /// Short human name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Platform::QemuTcg => "QEMU (TCG)",
            Platform::Kvm => "KVM",
            Platform::OtherHypervisor => "other hypervisor",
            Platform::BareMetal => "bare metal",
        }
    }
}

/// Detects the platform.
#[must_use]
pub fn platform() -> Platform {
    let cpuid = CpuId::new();
    let hv = cpuid.get_feature_info().is_some_and(|f| f.has_hypervisor());
    if !hv {
        return Platform::BareMetal;
    }
    match cpuid.get_hypervisor_info().map(|h| h.identify()) {
        Some(Hypervisor::QEMU) => Platform::QemuTcg,
        Some(Hypervisor::KVM) => Platform::Kvm,
        _ => Platform::OtherHypervisor,
    }
}

/// The CPU's brand string (CPUID 0x80000002..4), trimmed; `None` when the CPU has none.
#[must_use]
pub fn brand_string() -> Option<alloc::string::String> {
    let b = CpuId::new().get_processor_brand_string()?;
    Some(b.as_str().trim().into())
}

/// The hypervisor's vendor string (CPUID 0x40000000: `TCGTCGTCGTCG`, `KVMKVMKVM`, ...), or
/// `None` when the hypervisor bit is clear (a real machine).
#[must_use]
pub fn hypervisor_vendor() -> Option<alloc::string::String> {
    let cpuid = CpuId::new();
    if !cpuid.get_feature_info().is_some_and(|f| f.has_hypervisor()) {
        return None;
    }
    let known = |s: &str| Some(alloc::string::String::from(s));
    match cpuid.get_hypervisor_info()?.identify() {
        Hypervisor::QEMU => known("TCGTCGTCGTCG"),
        Hypervisor::KVM => known("KVMKVMKVM"),
        Hypervisor::VMware => known("VMwareVMware"),
        Hypervisor::HyperV => known("Microsoft Hv"),
        Hypervisor::Xen => known("XenVMMXenVMM"),
        Hypervisor::Bhyve => known("bhyve bhyve "),
        Hypervisor::QNX => known("QNXQVMBSQG"),
        Hypervisor::ACRN => known("ACRNACRNACRN"),
        Hypervisor::Unknown(b, c, d) => {
            let bytes: alloc::vec::Vec<u8> = [b, c, d]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .filter(|&x| x.is_ascii_graphic() || x == b' ')
                .collect();
            Some(alloc::string::String::from_utf8_lossy(&bytes).into_owned())
        }
    }
}

/// Writes the CPU vendor, brand and notable features to `w` (for the system summary).
pub fn describe(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
    let cpuid = CpuId::new();
    let vendor = cpuid.get_vendor_info();
    let brand = cpuid.get_processor_brand_string();
    writeln!(
        w,
        "cpu: {} \"{}\"",
        vendor.as_ref().map_or("?", |v| v.as_str()),
        brand.as_ref().map_or("?", |b| b.as_str().trim())
    )?;
    write!(w, "cpu features:")?;
    if let Some(f) = cpuid.get_feature_info() {
        write!(w, " family={:#x} model={:#x}", f.family_id(), f.model_id())?;
        for (on, name) in [
            (f.has_sse2(), "sse2"),
            (f.has_sse42(), "sse4.2"),
            (f.has_avx(), "avx"),
            (f.has_apic(), "apic"),
            (f.has_x2apic(), "x2apic"),
            (f.has_tsc(), "tsc"),
            (f.has_tsc_deadline(), "tsc-deadline"),
            (f.has_hypervisor(), "hypervisor"),
        ] {
            if on {
                write!(w, " {name}")?;
            }
        }
    }
    if let Some(e) = cpuid.get_extended_processor_and_feature_identifiers() {
        for (on, name) in [
            (e.has_execute_disable(), "nx"),
            (e.has_1gib_pages(), "pdpe1gb"),
        ] {
            if on {
                write!(w, " {name}")?;
            }
        }
    }
    if cpuid
        .get_advanced_power_mgmt_info()
        .is_some_and(|p| p.has_invariant_tsc())
    {
        write!(w, " invariant-tsc")?;
    }
    writeln!(w)?;
    writeln!(w, "platform: {}", platform().name())
}

/// Whether the CPU maps 1 GiB pages (used for the direct map).
#[must_use]
pub fn has_1gib_pages() -> bool {
    CpuId::new()
        .get_extended_processor_and_feature_identifiers()
        .is_some_and(|e| e.has_1gib_pages())
}

/// Whether EFER.NXE is on (the boot stub sets it when the CPU has NX).
#[must_use]
pub fn nx_enabled() -> bool {
    use x86_64::registers::model_specific::{Efer, EferFlags};
    Efer::read().contains(EferFlags::NO_EXECUTE_ENABLE)
}

/// Stops this CPU for good: interrupts off, `hlt` forever.
pub fn halt_forever() -> ! {
    loop {
        x86_64::instructions::interrupts::disable();
        x86_64::instructions::hlt();
    }
}

/// Writes `value` to QEMU's `isa-debug-exit` device at port 0xf4. Under QEMU this ends the
/// process with status `(value << 1) | 1`; elsewhere the write goes nowhere.
pub fn qemu_exit(value: u8) {
    let mut port = x86_64::instructions::port::Port::<u32>::new(0xf4);
    // SAFETY: port 0xf4 is QEMU's debug-exit device (configured by the runner); on hardware
    // without it an `out` to an unclaimed ISA port is ignored. Only called on the way out.
    unsafe { port.write(u32::from(value)) };
}
