//! `page-counter-802f1d`'s catalog entry: its names, configs, variants, comparisons, premises,
//! mechanism and the seed's published figure. Only `abi`'s types: the engine and the
//! runner read it (through [`crate::catalog::SCENARIOS`]) without the scenario's code.

use abi::catalog::{ComparisonDef, Mechanism, Published, PublishedPoint, Rate, Scenario, Variant};

/// This experiment's catalog entry: its names, premises, mechanism and the seed's figure
/// ([`crate::catalog`] lists every entry; the README's table is generated from them).
pub const CATALOG: Scenario = Scenario {
    name: "page-counter-802f1d",
    summary: "every CPU charges and uncharges pages in a 3-level memcg hierarchy \
              (v5.11's stock and stat batching): one shared leaf, or a leaf per CPU \
              under one parent",
    op: "one page charged and uncharged",
    configs: &["one-memcg", "siblings"],
    variants: &[
        Variant::new("A", "v5.11 page_counter: parent on usage's line"),
        Variant::new(
            "B",
            "802f1d522d5f: parent moved to the end, off usage's line",
        ),
    ],
    comparisons: &[ComparisonDef::layout("A", "B")],
    fault_path: false,
    published: Some(Published {
        text: "Linux 802f1d522d5f (v5.12), will-it-scale page_fault2 per-process ops B/A: \
               +3.0% (96 tasks), +4.4% (48) on 2 sockets 48C/96T; +9.9% (144), +9.8% (72) \
               on 4 sockets 72C/144T",
        unit: "ops/process/s",
        rate: Rate::PerThread,
        points: &[
            PublishedPoint::from_rates("A", "B", "one-memcg", 48, (183_960.0, 192_078.0)),
            PublishedPoint::from_rates("A", "B", "one-memcg", 72, (198_195.0, 217_526.0)),
            PublishedPoint::from_rates("A", "B", "one-memcg", 96, (79_028.0, 81_411.0)),
            PublishedPoint::from_rates("A", "B", "one-memcg", 144, (85_966.0, 94_467.0)),
        ],
    }),
    premises: &[
        "parent_usage_writes_per_op",
        "parent_reads_per_op",
        "usage_parent_same_line",
        "usage_handoffs_per_op",
    ],
    mechanism: Some(Mechanism {
        fields: &["parent"],
        line_bytes: 64,
        b_reduces: true,
        what: "the charge walk reads parent from the line every charge writes usage on \
               (A); B moves parent off it",
    }),
};
