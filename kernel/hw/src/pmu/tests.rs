//! The PMU encodings against the SDM's bit layouts, written out bit by bit here rather than
//! through the module's own constants, and leaf 0xA as recorded on real CPUs.

use super::*;

/// Event select per the SDM figure "Layout of IA32_PERFEVTSELx MSRs": event 0..7, umask
/// 8..15, USR 16, OS 17, E 18, PC 19, INT 20, ANY 21, EN 22, INV 23, CMASK 24..31.
#[test]
fn event_select_layout() {
    let v = evtsel_value(LLC_REFERENCE);
    assert_eq!(v & 0xFF, 0x2E, "event select in bits 0..7");
    assert_eq!((v >> 8) & 0xFF, 0x4F, "unit mask in bits 8..15");
    assert_eq!((v >> 16) & 1, 1, "USR is bit 16");
    assert_eq!((v >> 17) & 1, 1, "OS is bit 17");
    assert_eq!((v >> 22) & 1, 1, "EN is bit 22");
    for bit in [18, 19, 20, 21, 23] {
        assert_eq!(
            (v >> bit) & 1,
            0,
            "bit {bit} (edge, PC, INT, ANY, INV) stays clear"
        );
    }
    assert_eq!(v >> 24, 0, "no counter mask, nothing above");
    assert_eq!(v, 0x0043_4F2E);
    assert_eq!(evtsel_value(LLC_MISSES), 0x0043_412E);
    // The same layout as Linux writes for `perf stat -e cache-misses` on Intel (0x412e with
    // ARCH_PERFMON_EVENTSEL_{USR,OS,ENABLE} = 1<<16, 1<<17, 1<<22).
    assert_eq!(
        evtsel_value(INSTRUCTIONS_RETIRED),
        0xC0 | (1 << 16) | (1 << 17) | (1 << 22)
    );
    assert_eq!(evtsel::INT, 1 << 20);
    assert_eq!(evtsel::EDGE, 1 << 18);
    assert_eq!(evtsel::INV, 1 << 23);
}

/// IA32_FIXED_CTR_CTRL: 4 bits per counter at 4*i; OS = bit 0, USR = bit 1 of the field.
#[test]
fn fixed_counter_control_layout() {
    assert_eq!(fixed_ctr_ctrl_field(0, fixed::OS | fixed::USR), 0b11);
    assert_eq!(fixed_ctr_ctrl_field(1, fixed::OS | fixed::USR), 0b11 << 4);
    assert_eq!(fixed_ctr_ctrl_field(2, fixed::OS), 0b01 << 8);
    assert_eq!(fixed_ctr_ctrl_field(1, fixed::PMI), 0b1000 << 4);
    assert_eq!(
        fixed_ctr_ctrl_field(3, 0xFF),
        0xF << 12,
        "a field never spills"
    );
    let s = Setup {
        llc: true,
        general_width: 48,
        fixed_width: 48,
    };
    assert_eq!(
        s.fixed_ctr_ctrl(),
        0x33,
        "counters 0 and 1, rings 0 and 3, no PMI"
    );
}

/// IA32_PERF_GLOBAL_CTRL: general counter i at bit i, fixed counter i at bit 32 + i.
#[test]
fn global_control_layout() {
    assert_eq!(global_ctrl_value(2, 2), 0x3_0000_0003);
    assert_eq!(global_ctrl_value(0, 3), 0x7_0000_0000);
    assert_eq!(global_ctrl_value(8, 0), 0xFF);
    let with = Setup {
        llc: true,
        general_width: 48,
        fixed_width: 48,
    };
    let without = Setup { llc: false, ..with };
    assert_eq!(with.global_ctrl(), (1 << 32) | (1 << 33) | 1 | 2);
    assert_eq!(without.global_ctrl(), (1 << 32) | (1 << 33));
}

#[test]
fn msr_addresses() {
    assert_eq!(msr::perfevtsel(1), 0x187);
    assert_eq!(msr::pmc(1), 0xC2);
    assert_eq!(msr::fixed_ctr(1), 0x30A);
    assert_eq!(msr::IA32_FIXED_CTR_CTRL, 0x38D);
    assert_eq!(msr::IA32_PERF_GLOBAL_CTRL, 0x38F);
}

#[test]
fn start_sequence_enables_globally_last() {
    let s = Setup {
        llc: true,
        general_width: 48,
        fixed_width: 48,
    };
    let writes = s.start();
    let w = writes.as_slice();
    assert_eq!(
        w.first(),
        Some(&MsrWrite {
            msr: 0x38F,
            value: 0
        })
    );
    assert_eq!(
        w.last(),
        Some(&MsrWrite {
            msr: 0x38F,
            value: 0x3_0000_0003
        })
    );
    assert!(w.contains(&MsrWrite {
        msr: 0x186,
        value: 0x43_4F2E
    }));
    assert!(w.contains(&MsrWrite {
        msr: 0x187,
        value: 0x43_412E
    }));
    for ctr in [0x309, 0x30A, 0xC1, 0xC2] {
        assert!(
            w.contains(&MsrWrite { msr: ctr, value: 0 }),
            "{ctr:#x} zeroed"
        );
    }
    let no_llc = Setup { llc: false, ..s };
    assert!(
        no_llc
            .start()
            .as_slice()
            .iter()
            .all(|x| x.msr != 0x186 && x.msr != 0xC1)
    );
    assert_eq!(no_llc.reads(), [0x309, 0x30A]);
    assert_eq!(s.reads(), [0x309, 0x30A, 0xC1, 0xC2]);
    assert_eq!(
        s.stop(),
        MsrWrite {
            msr: 0x38F,
            value: 0
        }
    );
    // Untimed work: held with global control off, let go with the start's last write,
    // which enables every counter started (fixed 0 and 1, general 0 and 1 with LLC) and
    // zeroes none.
    assert_eq!(s.pause(), s.stop());
    assert_eq!(s.resume(), *w.last().unwrap());
    assert_eq!(
        s.resume(),
        MsrWrite {
            msr: 0x38F,
            value: 0x3_0000_0003
        }
    );
    assert_eq!(no_llc.resume().value, 0x3_0000_0000);
}

#[test]
fn counts_are_masked_to_the_width() {
    let s = Setup {
        llc: true,
        general_width: 48,
        fixed_width: 40,
    };
    let c = s.counts(&[(1 << 40) + 5, 7, (1 << 48) + 9, 11]);
    assert_eq!(
        c,
        Counts {
            instructions: 5,
            cycles: 7,
            llc_refs: Some(9),
            llc_misses: Some(11)
        }
    );
    assert_eq!(counter_delta((1 << 48) - 2, 3, 48), 5, "once around");
    let no_llc = Setup { llc: false, ..s };
    assert_eq!(no_llc.counts(&[1, 2]).llc_refs, None);
}

/// CPUID.0AH of a Core i5-8350U on bare metal (tests/fixtures/cpuid/xps13-9370-i5-8350u.txt,
/// its origin there): version 4, 4 general counters of 48 bits, 7 events all available, 3
/// fixed counters of 48 bits.
#[test]
fn kaby_lake_leaf() {
    let p = PmuInfo::decode(0x16, 0x0730_0404, 0x0000_0000, 0x0000_0603);
    assert_eq!(
        p,
        PmuInfo {
            version: 4,
            general: 4,
            general_width: 48,
            fixed: 3,
            fixed_width: 48,
            ebx_len: 7,
            ebx: 0
        }
    );
    let s = p.setup().unwrap();
    assert!(s.llc);
    assert_eq!(s.fixed_width, 48);
}

#[test]
fn missing_and_partial_pmus() {
    // QEMU TCG, every -cpu model: the leaf exists (max leaf >= 0xA) and reads all zero.
    assert_eq!(PmuInfo::decode(0xD, 0, 0, 0).setup(), Err(NoPmu::NoLeaf));
    // No leaf 0xA at all (qemu64's max basic leaf is 0xD; an old CPU's is lower): the
    // values a CPU returns for a missing leaf are not read.
    assert_eq!(
        PmuInfo::decode(0x7, 0x0730_3004, 0, 0x603).setup(),
        Err(NoPmu::NoLeaf)
    );
    // Version 1 (Core Solo/Duo): general counters only.
    let v1 = PmuInfo::decode(0xA, 0x0728_0201, 0, 0x603);
    assert_eq!(v1.fixed, 0, "EDX is reserved before version 2");
    assert_eq!(v1.setup(), Err(NoPmu::Version1));
    // One fixed counter.
    assert_eq!(
        PmuInfo::decode(0xA, 0x0730_0402, 0, 0x601).setup(),
        Err(NoPmu::FewFixed(1))
    );
    // LLC miss unavailable (EBX bit 4), or the vector too short to name it: fixed only.
    let no_miss = PmuInfo::decode(0xA, 0x0730_0402, 1 << 4, 0x603);
    assert!(!no_miss.has_event(LLC_MISSES) && no_miss.has_event(LLC_REFERENCE));
    assert_eq!(no_miss.setup().map(|s| s.llc), Ok(false));
    let short = PmuInfo::decode(0xA, 0x0330_0402, 0, 0x603);
    assert!(!short.has_event(LLC_REFERENCE) && short.has_event(INSTRUCTIONS_RETIRED));
    assert_eq!(short.setup().map(|s| s.llc), Ok(false));
    // One general counter: fixed only.
    assert_eq!(
        PmuInfo::decode(0xA, 0x0730_0102, 0, 0x603)
            .setup()
            .map(|s| s.llc),
        Ok(false)
    );
}

/// Detection on the recorded CPUs (tests/fixtures/cpuid): the laptop's leaf 0xA promises
/// counters, so a probe decides between present, faulted and inert, and the last two are a
/// broken promise; the KVM guest's leaf is zero, so the probe never runs and nothing was
/// promised.
#[test]
fn detection_judges_a_promise_by_the_probe() {
    let leaf = |text: &str| {
        let r = crate::cpuid::Recorded::parse(text).unwrap();
        crate::cpuid::pmu_info(&r.reader())
    };
    let laptop = leaf(include_str!(
        "../../tests/fixtures/cpuid/xps13-9370-i5-8350u.txt"
    ));
    let guest = leaf(include_str!(
        "../../tests/fixtures/cpuid/kvm-guest-xeon-build-host.txt"
    ));

    let present = detect::<&str>(laptop, |s| {
        assert!(s.llc, "the probe runs with the setup leaf 0xA gives");
        Ok(true)
    });
    assert_eq!(present.setup(), laptop.setup().ok());
    assert!(!present.broken_promise() && present.why_none().is_none());
    assert!(
        present
            .to_string()
            .starts_with("architectural PMU v4: 4 general counters (48 bits), 3 fixed (48 bits)"),
        "{present}"
    );

    let inert = detect::<&str>(laptop, |_| Ok(false));
    assert_eq!(inert, Detected::Inert { info: laptop });
    assert!(inert.broken_promise() && inert.setup().is_none());
    assert_eq!(
        inert.to_string(),
        "none: CPUID leaf 0xA reports version 4 with 4 general and 3 fixed counters, but they \
         counted nothing over a test loop"
    );

    let faulted = detect(laptop, |_| Err("wrmsr 0x38f raised #GP"));
    assert!(faulted.broken_promise());
    assert!(
        faulted
            .to_string()
            .ends_with("fixed counters, but wrmsr 0x38f raised #GP"),
        "{faulted}"
    );

    let none = detect::<&str>(guest, |_| panic!("nothing promised, nothing probed"));
    assert_eq!(none, Detected::NotReported(NoPmu::NoLeaf));
    assert!(!none.broken_promise());
    assert_eq!(
        none.why_none().as_deref(),
        Some("CPUID leaf 0xA reports no architectural PMU")
    );
}
