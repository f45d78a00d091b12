//! SRAT and SLIT decoding on tables QEMU generates (tests/fixtures/acpi: its own ACPI test
//! suite's expected tables, each file says which) and on broken ones.

use super::*;

fn bytes(hex: &str) -> Vec<u8> {
    hex.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .flat_map(|(_, b)| {
            b.split_whitespace()
                .map(|x| u8::from_str_radix(x, 16).unwrap())
        })
        .collect()
}

const MEMORYLESS: &str =
    include_str!("../../tests/fixtures/acpi/qemu-q35-srat-memoryless-node.hex");
const DIMM: &str = include_str!("../../tests/fixtures/acpi/qemu-q35-srat-4-nodes-dimm.hex");
const SLIT: &str = include_str!("../../tests/fixtures/acpi/qemu-q35-slit-2-nodes.hex");

/// Node 0 has the CPU and no memory; node 1 all the memory; the two placeholders QEMU
/// writes for hot-pluggable memory are disabled and skipped.
#[test]
fn memoryless_node() {
    let b = bytes(MEMORYLESS);
    assert_eq!(b.len(), 0xE0);
    assert_eq!(&b[..4], b"SRAT");
    let s = parse_srat(&b).unwrap();
    assert_eq!(
        s.cpus,
        [SratCpu {
            pxm: 0,
            apic_id: 0,
            x2apic: false
        }]
    );
    assert_eq!(
        s.memory,
        [
            SratMemory {
                pxm: 1,
                base: 0,
                len: 0xA_0000,
                hotplug: false
            },
            SratMemory {
                pxm: 1,
                base: 0x10_0000,
                len: 0x7F0_0000,
                hotplug: false
            },
        ]
    );
    assert_eq!((s.disabled, s.other), (2, 0));
}

/// Four nodes of one CPU each; a non-volatile range (an NVDIMM) and a hot-pluggable one.
#[test]
fn four_nodes_with_dimms() {
    let s = parse_srat(&bytes(DIMM)).unwrap();
    let cpus: Vec<(u32, u32)> = s.cpus.iter().map(|c| (c.pxm, c.apic_id)).collect();
    assert_eq!(cpus, [(0, 0), (1, 1), (2, 2), (3, 3)]);
    assert_eq!(s.memory.len(), 7);
    let hot: Vec<&SratMemory> = s.memory.iter().filter(|m| m.hotplug).collect();
    assert_eq!(
        hot,
        [&SratMemory {
            pxm: 3,
            base: 0x1_0000_0000,
            len: 0xF800_0000,
            hotplug: true
        }]
    );
    assert_eq!(s.memory[5].base, 0x1_0800_0000, "the NVDIMM range, node 2");
    assert_eq!(s.disabled, 0);
}

#[test]
fn two_locality_slit() {
    let t = parse_slit(&bytes(SLIT)).unwrap();
    assert_eq!(t.n, 2);
    assert_eq!(t.distances, [10, 21, 21, 10]);
    assert_eq!(t.distance(0, 1), Some(21));
    assert_eq!(t.distance(2, 0), None);
}

#[test]
fn broken_tables_are_errors() {
    let b = bytes(MEMORYLESS);
    assert_eq!(parse_srat(&b[..40]), Err(TableError::Truncated(40)));
    // The first memory entry cut in the middle.
    assert_eq!(parse_srat(&b[..0x50]), Err(TableError::BadEntry(0x40)));
    let mut zero = b.clone();
    zero[0x41] = 0;
    assert_eq!(parse_srat(&zero), Err(TableError::BadEntry(0x40)));
    let slit = bytes(SLIT);
    let mut big = slit.clone();
    big[36] = 3;
    assert_eq!(parse_slit(&big), Err(TableError::BadMatrix(3)));
    assert_eq!(parse_slit(&slit[..43]), Err(TableError::Truncated(43)));
}

/// An SRAT with Processor Local x2APIC Affinity entries (type 2), as QEMU writes for APIC IDs
/// above 254 (which QEMU 7.2's TCG cannot boot: it has no x2APIC), built byte by byte from
/// ACPI 6.5, 5.2.16.3: type, length 24, 2 reserved, proximity domain (32 bits), x2APIC ID
/// (32 bits), flags (bit 0 enabled), clock domain, 4 reserved.
fn x2apic_srat() -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[..4].copy_from_slice(b"SRAT");
    b[8] = 3; // revision
    b[36] = 1; // reserved, must read 1
    let lapic = |pxm: u8, apic: u8| {
        let mut e = vec![0u8; 16];
        (e[0], e[1], e[2], e[3], e[4]) = (0, 16, pxm, apic, 1);
        e
    };
    let x2apic = |pxm: u32, id: u32, enabled: bool| {
        let mut e = vec![0u8; 24];
        (e[0], e[1]) = (2, 24);
        e[4..8].copy_from_slice(&pxm.to_le_bytes());
        e[8..12].copy_from_slice(&id.to_le_bytes());
        e[12] = u8::from(enabled);
        e
    };
    let memory = |pxm: u32, base: u64, len: u64| {
        let mut e = vec![0u8; 40];
        (e[0], e[1]) = (1, 40);
        e[2..6].copy_from_slice(&pxm.to_le_bytes());
        e[8..16].copy_from_slice(&base.to_le_bytes());
        e[16..24].copy_from_slice(&len.to_le_bytes());
        e[28] = 1;
        e
    };
    for e in [
        lapic(0, 0),
        x2apic(1, 0x100, true),
        x2apic(1, 0x1_0001, true),
        x2apic(1, 0x102, false),
        memory(0, 0, 0x400_0000),
        memory(1, 0x400_0000, 0x400_0000),
    ] {
        b.extend_from_slice(&e);
    }
    let len = b.len() as u32;
    b[4..8].copy_from_slice(&len.to_le_bytes());
    b
}

#[test]
fn x2apic_affinity_entries() {
    let b = x2apic_srat();
    let s = parse_srat(&b).unwrap();
    assert_eq!(
        s.cpus,
        [
            SratCpu {
                pxm: 0,
                apic_id: 0,
                x2apic: false
            },
            SratCpu {
                pxm: 1,
                apic_id: 0x100,
                x2apic: true
            },
            SratCpu {
                pxm: 1,
                apic_id: 0x1_0001,
                x2apic: true
            },
        ],
        "32-bit x2APIC IDs, the disabled one skipped"
    );
    assert_eq!((s.memory.len(), s.disabled, s.other), (2, 1, 0));
    // A type-2 entry shorter than 24 bytes is malformed.
    let mut short = b.clone();
    short[48 + 16 + 1] = 16;
    assert_eq!(parse_srat(&short), Err(TableError::BadEntry(48 + 16)));
}
