//! `seed003-pft`'s catalog entry: its names, configs, variants, comparisons, premises,
//! mechanism and the seed's published figure. Only `abi`'s types: the engine and the
//! runner read it (through [`crate::catalog::SCENARIOS`]) without the scenario's code.

use abi::catalog::{ComparisonDef, Mechanism, Published, PublishedPoint, Rate, Scenario, Variant};

/// This experiment's catalog entry: its names, premises, mechanism and the seed's figure
/// ([`crate::catalog`] lists every entry; the README's table is generated from them).
pub const CATALOG: Scenario = Scenario {
    name: "seed003-pft",
    summary: "every CPU faults its own slice of ONE shared anonymous region, then unmap",
    op: "one fault",
    configs: &["anon"],
    variants: &[
        Variant::new("A", "vm_lock_seq in the first line, with vm_start/vm_end"),
        Variant::new("B", "vm_lock_seq next to vm_refcnt"),
    ],
    comparisons: &[ComparisonDef::layout("A", "B")],
    fault_path: true,
    published: Some(Published {
        text: "B/A -0.02% (1 cpu), +0.18% (4), -1.02% (7), -6.38% (12), -9.80% (21), \
               -6.50% (30), -6.85% (48), -9.89% (56) faults/cpu",
        unit: "faults/cpu/s",
        rate: Rate::PerThread,
        points: &[
            PublishedPoint::from_rates("A", "B", "anon", 1, (508634.6876, 508548.5498)),
            PublishedPoint::from_rates("A", "B", "anon", 4, (474767.2684, 475620.7653)),
            PublishedPoint::from_rates("A", "B", "anon", 7, (451356.6844, 446738.2381)),
            PublishedPoint::from_rates("A", "B", "anon", 12, (360114.9092, 337121.8189)),
            PublishedPoint::from_rates("A", "B", "anon", 21, (227567.8237, 205277.2029)),
            PublishedPoint::from_rates("A", "B", "anon", 30, (163383.6765, 152765.1451)),
            PublishedPoint::from_rates("A", "B", "anon", 48, (118048.2568, 109959.2027)),
            PublishedPoint::from_rates("A", "B", "anon", 56, (103189.6761, 92989.3749)),
        ],
    }),
    premises: &[
        "faults_per_op",
        "mmap_lock_fallbacks_per_op",
        "vm_refcnt_handoffs_per_op",
    ],
    mechanism: Some(Mechanism {
        fields: &["vm_lock_seq"],
        line_bytes: 64,
        b_reduces: false,
        what: "B moves vm_lock_seq onto the line of vm_refcnt, which every fault writes, so \
               each fault's read of vm_lock_seq misses",
    }),
};
