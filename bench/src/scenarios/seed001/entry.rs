//! `seed001-faultfree`'s catalog entry: its names, configs, variants, comparisons, premises,
//! mechanism and the seed's published figure. Only `abi`'s types: the engine and the
//! runner read it (through [`crate::catalog::SCENARIOS`]) without the scenario's code.

use abi::catalog::{ComparisonDef, Mechanism, Published, PublishedPoint, Rate, Scenario, Variant};

/// seed001's six points for one offset: patch 1 and patch 1+2 against base.
macro_rules! seed001_points {
    ($base:literal, $p1:literal, $p12:literal) => {
        [
            PublishedPoint::from_rates($base, $p1, "shmem", 20, (4.74e6, 5.59e6)),
            PublishedPoint::from_rates($base, $p12, "shmem", 20, (4.74e6, 5.77e6)),
            PublishedPoint::from_rates($base, $p1, "shmem", 80, (7.94e6, 8.66e6)),
            PublishedPoint::from_rates($base, $p12, "shmem", 80, (7.94e6, 8.82e6)),
            PublishedPoint::from_rates($base, $p1, "anon", 20, (3.04e6, 3.08e6)),
            PublishedPoint::from_rates($base, $p12, "anon", 20, (3.04e6, 3.10e6)),
        ]
    };
}

const SEED001_POINTS: [PublishedPoint; 12] = {
    let a = seed001_points!("base@+0", "patch1@+0", "patch1+2@+0");
    let b = seed001_points!("base@+64", "patch1@+64", "patch1+2@+64");
    [
        a[0], a[1], a[2], a[3], a[4], a[5], b[0], b[1], b[2], b[3], b[4], b[5],
    ]
};

/// This experiment's catalog entry: its names, premises, mechanism and the seed's figure
/// ([`crate::catalog`] lists every entry; the README's table is generated from them).
pub const CATALOG: Scenario = Scenario {
    name: "seed001-faultfree",
    summary: "every CPU faults in and frees pages in ONE memcg (anonymous, shmem-like)",
    op: "one page faulted and freed",
    configs: &["anon", "shmem"],
    variants: &[
        Variant::new(
            "base@+0",
            "mem_cgroup_per_node as before, at +0 of a 128-byte pair",
        ),
        Variant::new(
            "base@+64",
            "mem_cgroup_per_node as before, at +64 of a 128-byte pair",
        ),
        Variant::new(
            "patch1@+0",
            "read-mostly line paired with the cold group, at +0",
        ),
        Variant::new(
            "patch1@+64",
            "read-mostly line paired with the cold group, at +64",
        ),
        Variant::new(
            "patch1+2@+0",
            "patch 1, and stats through memcg + node, at +0",
        ),
        Variant::new(
            "patch1+2@+64",
            "patch 1, and stats through memcg + node, at +64",
        ),
    ],
    comparisons: &[
        ComparisonDef::layout("base@+0", "patch1@+0"),
        ComparisonDef::code("base@+0", "patch1+2@+0"),
        ComparisonDef::layout("base@+64", "patch1@+64"),
        ComparisonDef::code("base@+64", "patch1+2@+64"),
    ],
    fault_path: true,
    published: Some(Published {
        text: "shmem 20 thr: base 4.74M, patch1 5.59M (+18%), patch1+2 5.77M; \
               shmem 80 thr: 7.94M, 8.66M (+9%), 8.82M; \
               anon 20 thr: 3.04M, 3.08M (+1%), 3.10M pages/s (2-socket Skylake, 80 CPUs)",
        unit: "pages/s",
        rate: Rate::Total,
        points: &SEED001_POINTS,
    }),
    premises: &["list_head_writes_per_op", "lru_lock_handoffs_per_op"],
    mechanism: Some(Mechanism {
        fields: &["memcg", "lruvec_stats_percpu", "lruvec_stats"],
        line_bytes: 128,
        b_reduces: true,
        what: "the read-mostly fields of mem_cgroup_per_node share a 128-byte pair with the \
               LRU list heads every fault writes",
    }),
};
