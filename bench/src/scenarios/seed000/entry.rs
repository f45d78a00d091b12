//! `seed000-refault`'s catalog entry: its names, configs, variants, comparisons, premises,
//! mechanism and the seed's published figure. Only `abi`'s types: the engine and the
//! runner read it (through [`crate::catalog::SCENARIOS`]) without the scenario's code.

use abi::catalog::{ComparisonDef, Mechanism, Published, PublishedPoint, Rate, Scenario, Variant};

/// seed000's four points for one placement (the seed's kernel's placement is not known, so
/// its figures stand beside both).
macro_rules! seed000_points {
    ($a:literal, $b:literal) => {
        [
            PublishedPoint::from_rates($a, $b, "file", 1, (270_537.0, 274_303.0)),
            PublishedPoint::from_rates($a, $b, "file", 8, (1_461_025.0, 1_466_293.0)),
            PublishedPoint::from_rates($a, $b, "file", 16, (2_455_629.0, 2_508_001.0)),
            PublishedPoint::from_rates($a, $b, "file", 24, (2_707_720.0, 2_823_776.0)),
        ]
    };
}

const SEED000_POINTS: [PublishedPoint; 8] = {
    let a = seed000_points!("A@+0", "B@+0");
    let b = seed000_points!("A@+64", "B@+64");
    [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
};

/// This experiment's catalog entry: its names, premises, mechanism and the seed's figure
/// ([`crate::catalog`] lists every entry; the README's table is generated from them).
pub const CATALOG: Scenario = Scenario {
    name: "seed000-refault",
    summary: "all CPUs read file-like objects randomly in one memcg; nearly every read refaults",
    op: "one page read",
    configs: &["file"],
    variants: &[
        Variant::new(
            "A@+0",
            "lru_gen_folio base layout, per-node struct at +0 of a pair",
        ),
        Variant::new(
            "B@+0",
            "evicted/refaulted atomics grouped in their own lines, at +0",
        ),
        Variant::new(
            "A@+64",
            "lru_gen_folio base layout, per-node struct at +64 of a pair",
        ),
        Variant::new(
            "B@+64",
            "evicted/refaulted atomics grouped in their own lines, at +64",
        ),
    ],
    comparisons: &[
        ComparisonDef::layout("A@+0", "B@+0"),
        ComparisonDef::layout("A@+64", "B@+64"),
    ],
    fault_path: true,
    published: Some(Published {
        text: "IOPS +1.4% (1 job), +0.4% (8), +2.1% (16), +4.3% (24) on i7-13700HX; B/A",
        unit: "IOPS",
        rate: Rate::Total,
        points: &SEED000_POINTS,
    }),
    premises: &[
        "refaults_per_op",
        "refaulted_on_node_line_share",
        "refaulted_handoffs_per_op",
        "tree_lock_acquisitions_per_op",
    ],
    mechanism: Some(Mechanism {
        fields: &["enabled", "gen", "seg", "bin", "fifo_id", "list"],
        line_bytes: 64,
        b_reduces: true,
        what: "the evicted/refaulted atomics every refault writes share a line with the \
               memcg FIFO fields (A); B gives them lines of their own",
    }),
};
