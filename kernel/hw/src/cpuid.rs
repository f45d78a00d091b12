//! The CPUID decisions the kernel makes at boot, over any source of CPUID values: the CPU
//! itself in the kernel, a recorded dump on the host ([`Recorded`]).
//!
//! Models the parts of Linux's `native_calibrate_tsc()` (arch/x86/kernel/tsc.c: leaf 0x15's
//! TSC/crystal ratio times the crystal frequency, else leaf 0x16's base frequency),
//! `x2apic_supported()` / `check_x2apic()` (leaf 1 ECX bit 21), the invariant-TSC flag
//! (leaf 0x8000_0007 EDX bit 8, `X86_FEATURE_CONSTANT_TSC | NONSTOP_TSC`) and the hypervisor
//! leaf. Each reads through `raw-cpuid`, which checks the maximum basic and extended leaf
//! before it reads one (a CPU answers a leaf above its maximum with the highest one's
//! values, Intel, or zeros, AMD: neither may be taken for the leaf).
//!
//! These are the paths that differ between QEMU's models and real CPUs: QEMU's TCG models
//! have no leaf 0x15 crystal and no 0x16 (the kernel counts the TSC against the PIT), real
//! Intel client parts of Skylake and later report 0x15 without the crystal and 0x16 with the
//! base frequency, Xeons from Cascade Lake on report the crystal, AMD reports neither.

use crate::pmu::PmuInfo;
use raw_cpuid::{CpuId, CpuIdReader, CpuIdResult};

/// Where a TSC frequency from CPUID came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscFrom {
    /// Leaf 0x15: crystal frequency x numerator / denominator.
    Leaf15,
    /// Leaf 0x16: the base frequency in MHz (0x15 has no crystal frequency).
    Leaf16,
}

/// The TSC frequency CPUID states, if it states one (else the kernel counts it against the
/// PIT).
#[must_use]
pub fn tsc_hz<R: CpuIdReader>(cpuid: &CpuId<R>) -> Option<(u64, TscFrom)> {
    if let Some(t) = cpuid.get_tsc_info() {
        let (den, num) = (u64::from(t.denominator()), u64::from(t.numerator()));
        let crystal = u64::from(t.nominal_frequency());
        if den != 0 && num != 0 && crystal != 0 {
            return Some((crystal * num / den, TscFrom::Leaf15));
        }
    }
    let mhz = cpuid
        .get_processor_frequency_info()?
        .processor_base_frequency();
    (mhz != 0).then_some((u64::from(mhz) * 1_000_000, TscFrom::Leaf16))
}

/// What the kernel's boot decides from CPUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootCpuid {
    /// A TSC (leaf 1 EDX bit 4).
    pub tsc: bool,
    /// The TSC rate is constant in every power state (leaf 0x8000_0007 EDX bit 8).
    pub invariant_tsc: bool,
    /// The TSC frequency CPUID states.
    pub tsc_hz: Option<(u64, TscFrom)>,
    /// A local APIC (leaf 1 EDX bit 9).
    pub apic: bool,
    /// x2APIC mode (leaf 1 ECX bit 21): the kernel then drives the APIC through MSRs.
    pub x2apic: bool,
    /// Running under a hypervisor (leaf 1 ECX bit 31).
    pub hypervisor: bool,
    /// 1 GiB pages (leaf 0x8000_0001 EDX bit 26).
    pub gib_pages: bool,
    /// The architectural PMU (leaf 0xA).
    pub pmu: PmuInfo,
}

/// Leaf 0xA through `reader`, where the maximum basic leaf (leaf 0's EAX) reaches it.
#[must_use]
pub fn pmu_info<R: CpuIdReader>(reader: &R) -> PmuInfo {
    let max = reader.cpuid1(0).eax;
    let r = reader.cpuid2(0xA, 0);
    PmuInfo::decode(max, r.eax, r.ebx, r.edx)
}

/// Decodes what the boot needs from the CPUID values `reader` gives.
#[must_use]
pub fn boot<R: CpuIdReader>(reader: R) -> BootCpuid {
    let pmu = pmu_info(&reader);
    let cpuid = CpuId::with_cpuid_reader(reader);
    let f = cpuid.get_feature_info();
    BootCpuid {
        tsc: f.as_ref().is_some_and(|f| f.has_tsc()),
        invariant_tsc: cpuid
            .get_advanced_power_mgmt_info()
            .is_some_and(|p| p.has_invariant_tsc()),
        tsc_hz: tsc_hz(&cpuid),
        apic: f.as_ref().is_some_and(|f| f.has_apic()),
        x2apic: f.as_ref().is_some_and(|f| f.has_x2apic()),
        hypervisor: f.as_ref().is_some_and(|f| f.has_hypervisor()),
        gib_pages: cpuid
            .get_extended_processor_and_feature_identifiers()
            .is_some_and(|e| e.has_1gib_pages()),
        pmu,
    }
}

/// CPUID values recorded from a machine, in `cpuid --raw`'s format (`leaf subleaf: eax=..
/// ebx=.. ecx=.. edx=..`, lines starting with `#` are comments), answering as that CPU did:
/// a leaf that was not recorded reads as zeros.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    leaves: alloc::vec::Vec<((u32, u32), [u32; 4])>,
}

impl Recorded {
    /// Parses a dump; the error is the (1-based) number of the first line that is not a
    /// CPUID line.
    pub fn parse(text: &str) -> Result<Recorded, usize> {
        let mut leaves = alloc::vec::Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with("CPU") {
                continue;
            }
            let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok();
            let mut w = line.split_whitespace();
            let leaf = w.next().and_then(hex);
            let sub = w.next().and_then(|s| hex(s.trim_end_matches(':')));
            let mut regs = [0u32; 4];
            let mut ok = leaf.is_some() && sub.is_some();
            for (r, name) in regs.iter_mut().zip(["eax=", "ebx=", "ecx=", "edx="]) {
                match w.next().and_then(|s| s.strip_prefix(name)).and_then(hex) {
                    Some(v) => *r = v,
                    None => ok = false,
                }
            }
            if !ok {
                return Err(n + 1);
            }
            leaves.push(((leaf.unwrap_or(0), sub.unwrap_or(0)), regs));
        }
        Ok(Recorded { leaves })
    }

    /// The values of `leaf`, `subleaf` (a leaf recorded only at subleaf 0 answers every
    /// subleaf with them, as leaves without subleaves do).
    #[must_use]
    pub fn get(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        let exact = self.leaves.iter().find(|(k, _)| *k == (leaf, subleaf));
        let any = || {
            let mut subs = self.leaves.iter().filter(|((l, _), _)| *l == leaf);
            match (subs.next(), subs.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        };
        exact.or_else(any).map_or([0; 4], |(_, r)| *r)
    }

    /// The recording as a CPUID source.
    #[must_use]
    pub fn reader(&self) -> impl CpuIdReader + '_ {
        move |eax: u32, ecx: u32| {
            let [a, b, c, d] = self.get(eax, ecx);
            CpuIdResult {
                eax: a,
                ebx: b,
                ecx: c,
                edx: d,
            }
        }
    }
}

#[cfg(test)]
mod tests;
