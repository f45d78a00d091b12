//! The benchmark's scenarios as data: names, configurations, variants, comparisons, and each
//! seed's published figure, in one table that every side reads.
//!
//! The kernel's command line validates `scenarios=` against it ([`crate::cmdline`]), the
//! kernel-side engine runs what it names and labels its records with these strings, the
//! runner's table and plots put the seed's figure beside ours, and the README test checks the
//! README lists every scenario. It lives in `abi` (the leaf both the kernel and the runner
//! use) because it is part of the contract: a scenario, config or variant name in a `KRESULT`
//! line means what this table says. `bench::catalog` re-exports it.
//!
//! Each scenario reproduces one seed's experiment:
//!
//! * `seed001-faultfree`: Joanne Koong's `mem_cgroup_per_node` series (patch 1 pairs the
//!   read-mostly line with the cold group instead of the LRU heads; patch 2 updates stats
//!   through memcg + node, not the lruvec), each layout at both 128-byte offsets;
//! * `seed004-readtwice`: Alex Shi's per-memcg `lru_lock` (vm-scalability
//!   `case-lru-file-readtwice`);
//! * `seed002-reclaim`: Max Kellermann's cached FIFO tail in `lru_gen_memcg`;
//! * `seed000-refault`: Ridong Chen's grouping of `lru_gen_folio`'s atomic stats;
//! * `seed003-pft`: Suren Baghdasaryan's `vm_lock_seq` placement (mmtests pft);
//! * `page-counter-802f1d`: not a seed: Linux commit 802f1d522d5f (Feng Tang, v5.12) moved
//!   `struct page_counter`'s `parent` off the line of `usage` (will-it-scale page_fault2),
//!   added by following `docs/experiments.md`;
//! * `limit`: the hardware (or emulator) floor under every fault scenario.
//!
//! A comparison is always "B over A" of the rate (ops/s): above 1.0 means B is faster. The
//! published figures are stored the same way, as ratios B/A at a thread count, with the
//! absolute rates where the seed gave them.

/// One variant of a scenario: what is compiled in and chosen at run time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    /// The name in records and tables (`base@+0`, `A`, ...).
    pub name: &'static str,
    /// What it is, in a few words.
    pub description: &'static str,
}

/// One A/B comparison: the rate of `b` over the rate of `a`, per config and CPU count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComparisonDef {
    /// The baseline variant.
    pub a: &'static str,
    /// The variant compared with it.
    pub b: &'static str,
}

/// One figure the seed published, as the ratio B/A of one of our comparisons.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PublishedPoint {
    /// The comparison's baseline variant (ours).
    pub a: &'static str,
    /// The comparison's other variant (ours).
    pub b: &'static str,
    /// Our config the figure corresponds to.
    pub config: &'static str,
    /// Threads (jobs, readers) the seed ran.
    pub threads: u32,
    /// The seed's B/A ratio of rates.
    pub ratio: f64,
    /// The seed's absolute A and B rates, where given (in the seed's unit).
    pub absolute: Option<(f64, f64)>,
}

/// What a seed published: a sentence and the figures behind it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    /// The seed's claim in words, with its machine.
    pub text: &'static str,
    /// The unit of [`PublishedPoint::absolute`].
    pub unit: &'static str,
    /// Whether that unit counts all threads together or one thread.
    pub rate: Rate,
    /// The figures, one per (comparison, config, thread count).
    pub points: &'static [PublishedPoint],
}

/// What one of a seed's absolute rates counts: the time one thread takes per operation is
/// `threads / rate` for a [`Rate::Total`], `1 / rate` for a [`Rate::PerThread`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// Operations per second of all threads together (IOPS, pages/s).
    Total,
    /// Operations per second of one thread (faults/cpu/s, ops/process/s).
    PerThread,
}

/// One scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scenario {
    /// The name in `scenarios=`, records and tables.
    pub name: &'static str,
    /// What the workers do, in one line.
    pub summary: &'static str,
    /// What one operation is.
    pub op: &'static str,
    /// The configurations, in table order (seed002's are memcg counts; `memcgs=` replaces
    /// them).
    pub configs: &'static [&'static str],
    /// The variants, in table order.
    pub variants: &'static [Variant],
    /// The comparisons reported per config and CPU count.
    pub comparisons: &'static [ComparisonDef],
    /// Whether an operation is a page fault, so its rate is shown as a fraction of `limit`.
    pub fault_path: bool,
    /// The seed's figures (`None` for `limit`).
    pub published: Option<Published>,
    /// The premises every variant's instance judges (the names in the `end` record's
    /// `premises`, in the order the instance reports them): what must have happened in the
    /// runs for the ratio to mean anything. Empty only for `limit`; the engine refuses a
    /// premise an instance reports that is not listed here.
    pub premises: &'static [&'static str],
    /// The cache lines the seed is about, for the coherence plugin's mechanism verdict
    /// (`kx bench --coherence`); `None` where the seed is not about lines moving between
    /// CPUs (seed002's cost is algorithmic; `limit` has no seed).
    pub mechanism: Option<Mechanism>,
}

/// The fields whose lines a seed's patch changes, and which way.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mechanism {
    /// Field names as the layout tables print them (`kx layout`, the objects' `KOBJECT`
    /// lines): the coherence report counts the transfers on every unit holding one of them.
    pub fields: &'static [&'static str],
    /// The unit the mechanism acts on: 64 (a line) or 128 (a line and its adjacent-line
    /// prefetcher's buddy).
    pub line_bytes: u64,
    /// Whether the patch (B) should reduce those transfers (`false`: the seed reports B
    /// slower because it adds them, seed003).
    pub b_reduces: bool,
    /// The mechanism in one sentence.
    pub what: &'static str,
}

impl Scenario {
    /// The variant called `name`.
    #[must_use]
    pub fn variant(&self, name: &str) -> Option<&'static Variant> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// Whether `config` is one of the default configs.
    #[must_use]
    pub fn has_config(&self, config: &str) -> bool {
        self.configs.contains(&config)
    }
}

/// The floor scenario every fault scenario's rate is compared with.
pub const LIMIT: &str = "limit";

const fn v(name: &'static str, description: &'static str) -> Variant {
    Variant { name, description }
}

const fn c(a: &'static str, b: &'static str) -> ComparisonDef {
    ComparisonDef { a, b }
}

const fn p(
    a: &'static str,
    b: &'static str,
    config: &'static str,
    threads: u32,
    absolute: (f64, f64),
) -> PublishedPoint {
    PublishedPoint {
        a,
        b,
        config,
        threads,
        ratio: absolute.1 / absolute.0,
        absolute: Some(absolute),
    }
}

const fn r(
    a: &'static str,
    b: &'static str,
    config: &'static str,
    threads: u32,
    ratio: f64,
) -> PublishedPoint {
    PublishedPoint {
        a,
        b,
        config,
        threads,
        ratio,
        absolute: None,
    }
}

/// seed001's six points for one offset: patch 1 and patch 1+2 against base.
macro_rules! seed001_points {
    ($base:literal, $p1:literal, $p12:literal) => {
        [
            p($base, $p1, "shmem", 20, (4.74e6, 5.59e6)),
            p($base, $p12, "shmem", 20, (4.74e6, 5.77e6)),
            p($base, $p1, "shmem", 80, (7.94e6, 8.66e6)),
            p($base, $p12, "shmem", 80, (7.94e6, 8.82e6)),
            p($base, $p1, "anon", 20, (3.04e6, 3.08e6)),
            p($base, $p12, "anon", 20, (3.04e6, 3.10e6)),
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

/// seed000's four points for one placement (the seed's kernel's placement is not known, so
/// its figures stand beside both).
macro_rules! seed000_points {
    ($a:literal, $b:literal) => {
        [
            p($a, $b, "file", 1, (270_537.0, 274_303.0)),
            p($a, $b, "file", 8, (1_461_025.0, 1_466_293.0)),
            p($a, $b, "file", 16, (2_455_629.0, 2_508_001.0)),
            p($a, $b, "file", 24, (2_707_720.0, 2_823_776.0)),
        ]
    };
}

const SEED000_POINTS: [PublishedPoint; 8] = {
    let a = seed000_points!("A@+0", "B@+0");
    let b = seed000_points!("A@+64", "B@+64");
    [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
};

/// Every scenario, in table order.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "seed001-faultfree",
        summary: "every CPU faults in and frees pages in ONE memcg (anonymous, shmem-like)",
        op: "one page faulted and freed",
        configs: &["anon", "shmem"],
        variants: &[
            v(
                "base@+0",
                "mem_cgroup_per_node as before, at +0 of a 128-byte pair",
            ),
            v(
                "base@+64",
                "mem_cgroup_per_node as before, at +64 of a 128-byte pair",
            ),
            v(
                "patch1@+0",
                "read-mostly line paired with the cold group, at +0",
            ),
            v(
                "patch1@+64",
                "read-mostly line paired with the cold group, at +64",
            ),
            v(
                "patch1+2@+0",
                "patch 1, and stats through memcg + node, at +0",
            ),
            v(
                "patch1+2@+64",
                "patch 1, and stats through memcg + node, at +64",
            ),
        ],
        comparisons: &[
            c("base@+0", "patch1@+0"),
            c("base@+0", "patch1+2@+0"),
            c("base@+64", "patch1@+64"),
            c("base@+64", "patch1+2@+64"),
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
    },
    Scenario {
        name: "seed004-readtwice",
        summary: "per memcg one file, two readers streaming it together; memory.max below it",
        op: "one page read",
        configs: &["2-per-memcg"],
        variants: &[
            v("A", "one lru_lock per node (pgdat->lru_lock)"),
            v("B", "one lru_lock per memcg per node (lruvec->lru_lock)"),
        ],
        comparisons: &[c("A", "B")],
        fault_path: true,
        published: Some(Published {
            text: "readtwice +80% (208 readers in 104 memcgs, 2s x 26 cores x HT)",
            unit: "",
            rate: Rate::Total,
            points: &[r("A", "B", "2-per-memcg", 208, 1.80)],
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
    },
    Scenario {
        name: "seed002-reclaim",
        summary: "every CPU writes memory.reclaim requests that cannot be met (EAGAIN)",
        op: "one whole memory.reclaim request (EAGAIN)",
        configs: &["10", "1500", "10000"],
        variants: &[
            v("A", "FIFO tail insertion walks the bin"),
            v("B", "cached tail, O(1) insertion"),
        ],
        comparisons: &[c("A", "B")],
        fault_path: false,
        published: Some(Published {
            text: "9.5x request rate at 1500 memcgs, 8 threads; duration -89%",
            unit: "",
            rate: Rate::Total,
            points: &[r("A", "B", "1500", 8, 9.5)],
        }),
        premises: &[
            "eagain_per_request",
            "tries_per_request",
            "priority_passes_per_request",
            "shrink_many_per_request",
            "tail_walk_steps_per_request",
        ],
        mechanism: None,
    },
    Scenario {
        name: "seed000-refault",
        summary: "all CPUs read file-like objects randomly in one memcg; nearly every read refaults",
        op: "one page read",
        configs: &["file"],
        variants: &[
            v(
                "A@+0",
                "lru_gen_folio base layout, per-node struct at +0 of a pair",
            ),
            v(
                "B@+0",
                "evicted/refaulted atomics grouped in their own lines, at +0",
            ),
            v(
                "A@+64",
                "lru_gen_folio base layout, per-node struct at +64 of a pair",
            ),
            v(
                "B@+64",
                "evicted/refaulted atomics grouped in their own lines, at +64",
            ),
        ],
        comparisons: &[c("A@+0", "B@+0"), c("A@+64", "B@+64")],
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
    },
    Scenario {
        name: "seed003-pft",
        summary: "every CPU faults its own slice of ONE shared anonymous region, then unmap",
        op: "one fault",
        configs: &["anon"],
        variants: &[
            v("A", "vm_lock_seq in the first line, with vm_start/vm_end"),
            v("B", "vm_lock_seq next to vm_refcnt"),
        ],
        comparisons: &[c("A", "B")],
        fault_path: true,
        published: Some(Published {
            text: "B/A -0.02% (1 cpu), +0.18% (4), -1.02% (7), -6.38% (12), -9.80% (21), \
                   -6.50% (30), -6.85% (48), -9.89% (56) faults/cpu",
            unit: "faults/cpu/s",
            rate: Rate::PerThread,
            points: &[
                p("A", "B", "anon", 1, (508634.6876, 508548.5498)),
                p("A", "B", "anon", 4, (474767.2684, 475620.7653)),
                p("A", "B", "anon", 7, (451356.6844, 446738.2381)),
                p("A", "B", "anon", 12, (360114.9092, 337121.8189)),
                p("A", "B", "anon", 21, (227567.8237, 205277.2029)),
                p("A", "B", "anon", 30, (163383.6765, 152765.1451)),
                p("A", "B", "anon", 48, (118048.2568, 109959.2027)),
                p("A", "B", "anon", 56, (103189.6761, 92989.3749)),
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
    },
    Scenario {
        name: "page-counter-802f1d",
        summary: "every CPU charges and uncharges pages in a 3-level memcg hierarchy \
                  (v5.11's stock and stat batching): one shared leaf, or a leaf per CPU \
                  under one parent",
        op: "one page charged and uncharged",
        configs: &["one-memcg", "siblings"],
        variants: &[
            v("A", "v5.11 page_counter: parent on usage's line"),
            v(
                "B",
                "802f1d522d5f: parent moved to the end, off usage's line",
            ),
        ],
        comparisons: &[c("A", "B")],
        fault_path: false,
        published: Some(Published {
            text: "Linux 802f1d522d5f (v5.12), will-it-scale page_fault2 per-process ops B/A: \
                   +3.0% (96 tasks), +4.4% (48) on 2 sockets 48C/96T; +9.9% (144), +9.8% (72) \
                   on 4 sockets 72C/144T",
            unit: "ops/process/s",
            rate: Rate::PerThread,
            points: &[
                p("A", "B", "one-memcg", 48, (183_960.0, 192_078.0)),
                p("A", "B", "one-memcg", 72, (198_195.0, 217_526.0)),
                p("A", "B", "one-memcg", 96, (79_028.0, 81_411.0)),
                p("A", "B", "one-memcg", 144, (85_966.0, 94_467.0)),
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
    },
    Scenario {
        name: LIMIT,
        summary: "the floor: #PF on a not-present page, PTE install, 4 KiB zero, PTE clear + invlpg",
        op: "one #PF + PTE install + 4 KiB zero + PTE clear/invlpg",
        configs: &["anon"],
        variants: &[v("floor", "no allocator, no memcg, no LRU")],
        comparisons: &[],
        fault_path: false,
        published: None,
        premises: &[],
        mechanism: None,
    },
];

/// The scenario called `name`.
#[must_use]
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// The seed's figure for comparison `a`/`b` of `scenario` under `config` closest to `cpus`
/// threads (the same count when the seed has it), if the seed published any for it.
#[must_use]
pub fn published_near(
    scenario: &Scenario,
    a: &str,
    b: &str,
    config: &str,
    cpus: u32,
) -> Option<&'static PublishedPoint> {
    let published = scenario.published?;
    published
        .points
        .iter()
        .filter(|p| p.a == a && p.b == b && p.config == config)
        .min_by_key(|p| p.threads.abs_diff(cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_cmdline_safe() {
        for (i, s) in SCENARIOS.iter().enumerate() {
            assert!(SCENARIOS[..i].iter().all(|o| o.name != s.name));
            assert!(
                s.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
            assert!(!s.configs.is_empty() && !s.variants.is_empty());
            for (j, v) in s.variants.iter().enumerate() {
                assert!(s.variants[..j].iter().all(|o| o.name != v.name));
                assert!(!v.name.contains([' ', ',', '"']), "{}", v.name);
            }
            for c in s.configs {
                assert!(!c.contains([' ', ',', '"']), "{c}");
            }
        }
    }

    #[test]
    fn comparisons_and_points_name_real_variants_and_configs() {
        for s in SCENARIOS {
            for c in s.comparisons {
                assert!(
                    s.variant(c.a).is_some() && s.variant(c.b).is_some(),
                    "{c:?}"
                );
            }
            for p in s.published.iter().flat_map(|p| p.points) {
                assert!(
                    s.comparisons.iter().any(|c| c.a == p.a && c.b == p.b),
                    "{} {p:?}",
                    s.name
                );
                assert!(s.has_config(p.config), "{p:?}");
                assert!(p.ratio.is_finite() && p.ratio > 0.0);
            }
        }
    }

    /// An experiment is registered with what makes its ratio mean something: the premises
    /// its runs are judged by and the published figure it is checked against (with where
    /// that figure comes from, in its text). Only the `limit` floor has neither.
    #[test]
    fn every_experiment_has_premises_and_a_published_figure() {
        for s in SCENARIOS {
            if s.name == LIMIT {
                assert!(s.published.is_none() && s.premises.is_empty());
                continue;
            }
            assert!(
                !s.premises.is_empty(),
                "{}: registered without a premise",
                s.name
            );
            for (i, p) in s.premises.iter().enumerate() {
                assert!(
                    s.premises[..i].iter().all(|o| o != p),
                    "{}: {p} twice",
                    s.name
                );
                assert!(
                    !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{}: premise name {p:?}",
                    s.name
                );
            }
            let published = s
                .published
                .unwrap_or_else(|| panic!("{}: registered without a published figure", s.name));
            assert!(
                !published.points.is_empty() && !published.text.is_empty(),
                "{}: a published figure needs its text and at least one point",
                s.name
            );
            assert!(!s.comparisons.is_empty(), "{}: no comparison", s.name);
        }
    }

    #[test]
    fn published_ratios_match_the_seeds_text() {
        let s = scenario("seed001-faultfree").unwrap();
        let p = published_near(s, "base@+64", "patch1@+64", "shmem", 16).unwrap();
        assert_eq!(p.threads, 20);
        assert!((p.ratio - 1.18).abs() < 0.005, "{}", p.ratio);
        let p = published_near(s, "base@+0", "patch1@+0", "shmem", 64).unwrap();
        assert!((p.ratio - 1.09).abs() < 0.005, "{}", p.ratio);
        let pft = scenario("seed003-pft").unwrap();
        let p = published_near(pft, "A", "B", "anon", 12).unwrap();
        assert!((p.ratio - (1.0 - 0.0638)).abs() < 0.0001, "{}", p.ratio);
        let refault = scenario("seed000-refault").unwrap();
        let p = published_near(refault, "A@+0", "B@+0", "file", 2).unwrap();
        assert_eq!(p.threads, 1);
        assert!((p.ratio - 1.014).abs() < 0.001);
        let p = published_near(refault, "A@+64", "B@+64", "file", 22).unwrap();
        assert_eq!(p.threads, 24);
        assert!(published_near(refault, "A@+0", "B@+0", "anon", 2).is_none());
        assert!(published_near(scenario(LIMIT).unwrap(), "a", "b", "anon", 1).is_none());
        let pc = scenario("page-counter-802f1d").unwrap();
        let p = published_near(pc, "A", "B", "one-memcg", 2).unwrap();
        assert_eq!(p.threads, 48);
        assert!((p.ratio - 1.044).abs() < 0.001, "{}", p.ratio);
        let p = published_near(pc, "A", "B", "one-memcg", 144).unwrap();
        assert!((p.ratio - 1.099).abs() < 0.001, "{}", p.ratio);
        assert!(published_near(pc, "A", "B", "siblings", 2).is_none());
    }
}
