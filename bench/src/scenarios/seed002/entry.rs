//! `seed002-reclaim`'s catalog entry: its names, configs, variants, comparisons, premises,
//! mechanism and the seed's published figure. Only `abi`'s types: the engine and the
//! runner read it (through [`crate::catalog::SCENARIOS`]) without the scenario's code.

use abi::catalog::{ComparisonDef, Published, PublishedPoint, Rate, Scenario, Variant};

/// This experiment's catalog entry: its names, premises, mechanism and the seed's figure
/// ([`crate::catalog`] lists every entry; the README's table is generated from them).
pub const CATALOG: Scenario = Scenario {
    name: "seed002-reclaim",
    summary: "every CPU writes memory.reclaim requests that cannot be met (EAGAIN)",
    op: "one whole memory.reclaim request (EAGAIN)",
    configs: &["10", "1500", "10000"],
    variants: &[
        Variant::new("A", "FIFO tail insertion walks the bin"),
        Variant::new("B", "cached tail, O(1) insertion"),
    ],
    comparisons: &[ComparisonDef::code("A", "B")],
    fault_path: false,
    published: Some(Published {
        text: "9.5x request rate at 1500 memcgs, 8 threads; duration -89%",
        unit: "",
        rate: Rate::Total,
        points: &[PublishedPoint::from_ratio("A", "B", "1500", 8, 9.5)],
    }),
    premises: &[
        "eagain_per_request",
        "tries_per_request",
        "priority_passes_per_request",
        "shrink_many_per_request",
        "tail_walk_steps_per_request",
    ],
    mechanism: None,
};
