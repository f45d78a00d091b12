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
