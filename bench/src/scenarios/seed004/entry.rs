//! `seed004-readtwice`'s catalog entry: its names, configs, variants, comparisons, premises,
//! mechanism and the seed's published figure. Only `abi`'s types: the engine and the
//! runner read it (through [`crate::catalog::SCENARIOS`]) without the scenario's code.

use abi::catalog::{ComparisonDef, Mechanism, Published, PublishedPoint, Rate, Scenario, Variant};

/// This experiment's catalog entry: its names, premises, mechanism and the seed's figure
/// ([`crate::catalog`] lists every entry; the README's table is generated from them).
pub const CATALOG: Scenario = Scenario {
    name: "seed004-readtwice",
    summary: "per memcg one file, two readers streaming it together; memory.max below it",
    op: "one page read",
    configs: &["2-per-memcg"],
    variants: &[
        Variant::new("A", "one lru_lock per node (pgdat->lru_lock)"),
        Variant::new("B", "one lru_lock per memcg per node (lruvec->lru_lock)"),
    ],
    comparisons: &[ComparisonDef::code("A", "B")],
    fault_path: true,
    published: Some(Published {
        text: "readtwice +80% (208 readers in 104 memcgs, 2s x 26 cores x HT)",
        unit: "",
        rate: Rate::Total,
        points: &[PublishedPoint::from_ratio(
            "A",
            "B",
            "2-per-memcg",
            208,
            1.80,
        )],
    }),
    premises: &[
        "activations_per_op",
        "evicted_per_op",
        "variant_lock_acquisitions_per_op",
        "other_lock_acquisitions_per_op",
        "variant_lock_handoffs_per_op",
        "tree_lock_acquisitions_per_op",
        "node_lock_contended_per_op",
    ],
    mechanism: Some(Mechanism {
        fields: &["lru_lock"],
        line_bytes: 64,
        b_reduces: true,
        what: "every memcg's readers take one lru_lock per node (A) instead of one per \
               memcg (B)",
    }),
};
