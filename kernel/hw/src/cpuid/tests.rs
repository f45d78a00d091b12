//! The boot's CPUID decisions on recorded CPUs (tests/fixtures/cpuid, each file says where it
//! was recorded).

use super::*;
use crate::pmu::NoPmu;

const XPS: &str = include_str!("../../tests/fixtures/cpuid/xps13-9370-i5-8350u.txt");
const KVM: &str = include_str!("../../tests/fixtures/cpuid/kvm-guest-xeon-build-host.txt");

fn decode(text: &str) -> BootCpuid {
    let r = Recorded::parse(text).unwrap();
    boot(r.reader())
}

/// A Kaby Lake R laptop on bare metal: leaf 0x15 states the TSC/crystal ratio (158/2) but
/// not the crystal, so the frequency is leaf 0x16's base, 1900 MHz (Linux derives the
/// crystal from the same two leaves and lands on the same 1.9 GHz); x2APIC, an invariant
/// TSC, no hypervisor, and a version-4 PMU with the LLC events.
#[test]
fn bare_metal_kaby_lake() {
    let b = decode(XPS);
    assert_eq!(b.tsc_hz, Some((1_900_000_000, TscFrom::Leaf16)));
    assert!(b.tsc && b.invariant_tsc && b.apic && b.x2apic && b.gib_pages);
    assert!(!b.hypervisor);
    assert_eq!(b.pmu.version, 4);
    assert!(b.pmu.setup().unwrap().llc);
}

/// This project's build host, a KVM guest: x2APIC and an invariant TSC exposed, the
/// hypervisor bit set, no frequency leaves (the kernel counts the TSC against the PIT) and
/// leaf 0xA all zero (no PMU).
#[test]
fn kvm_guest_build_host() {
    let b = decode(KVM);
    assert_eq!(b.tsc_hz, None);
    assert!(b.tsc && b.invariant_tsc && b.apic && b.x2apic && b.hypervisor);
    assert_eq!(b.pmu.setup(), Err(NoPmu::NoLeaf));
}

/// Leaf 0x15 with a crystal is used before 0x16; a leaf above the maximum basic leaf is not
/// read even where the recording has values for it.
#[test]
fn leaf_15_with_crystal_and_leaf_limits() {
    let with_crystal = XPS.replace(
        "0x00000015 0x00: eax=0x00000002 ebx=0x0000009e ecx=0x00000000",
        "0x00000015 0x00: eax=0x00000002 ebx=0x0000009e ecx=0x016e3600",
    );
    // 24 MHz x 158 / 2.
    assert_eq!(
        decode(&with_crystal).tsc_hz,
        Some((1_896_000_000, TscFrom::Leaf15))
    );
    // Maximum basic leaf 9: neither 0x15, 0x16 nor 0xA exist.
    let old = XPS.replace(
        "0x00000000 0x00: eax=0x00000016",
        "0x00000000 0x00: eax=0x00000009",
    );
    let b = decode(&old);
    assert_eq!(b.tsc_hz, None);
    assert_eq!(b.pmu.setup(), Err(NoPmu::NoLeaf));
    assert!(b.x2apic, "leaf 1 is still there");
}

#[test]
fn recordings_parse_and_bad_lines_are_named() {
    let r = Recorded::parse(XPS).unwrap();
    assert_eq!(r.get(0x4, 3), [0x1c03_c163, 0x02c0_003f, 0x0000_1fff, 0x6]);
    assert_eq!(r.get(0x6, 5), [0x27f7, 2, 9, 0], "a leaf without subleaves");
    assert_eq!(r.get(0x4, 9), [0; 4], "a subleaf not recorded");
    assert_eq!(r.get(0x4000_0000, 0), [0; 4], "a leaf not recorded");
    assert_eq!(
        Recorded::parse("# c\n  0x1 0x00: eax=0x1 ebx=0x2 ecx=0x3\n").err(),
        Some(2)
    );
}
