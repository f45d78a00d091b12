//! Property test: random mixed-order allocations and frees from several simulated CPUs,
//! through the per-CPU lists and straight to the buddy lists, with drains in between,
//! checked against a model after every step.
//!
//! The model owns the set of frames handed out. After every operation: no frame was handed
//! out twice (a new block overlaps nothing the model holds), the invariant checker passes,
//! free + per-CPU + handed-out frames add up to the managed total, and each CPU's
//! per-zone counters agree with its list (`refilled + freed - allocated - spilled -
//! drained = count`). A failed allocation must be legitimate: no zone of the zonelist had
//! a block of that order, nor (order 0) a frame on any per-CPU list. At the end everything
//! is freed and drained, and the free lists are exactly the initial ones, block for block;
//! the allocation, free and failure counters are exactly the model's.

use crate::common;

use common::{GIB4, allocator, snapshot};
use page::Folio;
use page_alloc::{MAX_ORDER, PageAlloc, PcpConfig, PfnRange};
use proptest::prelude::*;
use std::collections::BTreeSet;

const CPUS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        cpu: usize,
        node: page::NodeId,
        order: u32,
        direct: bool,
    },
    Free {
        idx: usize,
        cpu: usize,
        direct: bool,
    },
    Drain {
        cpu: usize,
    },
    DrainAll,
}

fn op() -> impl Strategy<Value = Op> {
    let order = prop_oneof![6 => Just(0u32), 3 => 1u32..4, 1 => 4u32..=MAX_ORDER];
    prop_oneof![
        10 => (0..CPUS, 0u32..2, order, any::<bool>())
            .prop_map(|(cpu, node, order, direct)| Op::Alloc { cpu, node, order, direct }),
        8 => (any::<usize>(), 0..CPUS, any::<bool>())
            .prop_map(|(idx, cpu, direct)| Op::Free { idx, cpu, direct }),
        1 => (0..CPUS).prop_map(|cpu| Op::Drain { cpu }),
        1 => Just(Op::DrainAll),
    ]
}

fn config() -> impl Strategy<Value = PcpConfig> {
    (
        prop_oneof![Just(None), (1u32..8).prop_map(Some)],
        prop_oneof![Just(None), (0u32..24).prop_map(Some)],
    )
        .prop_map(|(batch, high)| PcpConfig { batch, high })
}

/// Node 0 straddles 4 GiB (both zones), node 1 is above: 2048 frames, three zones.
fn machine(cfg: PcpConfig) -> PageAlloc {
    allocator(
        2,
        CPUS,
        &[
            (0, PfnRange::new(GIB4 - 512, GIB4 + 512)),
            (1, PfnRange::new(GIB4 + 2048, GIB4 + 3072)),
        ],
        cfg,
    )
}

#[derive(Default)]
struct Model {
    live: Vec<(&'static Folio, u32)>,
    owned: BTreeSet<u64>,
    pcp_alloc: [u64; CPUS],
    pcp_free: [u64; CPUS],
    buddy_alloc: [u64; CPUS],
    buddy_free: [u64; CPUS],
    fails: [u64; CPUS],
}

/// Could an allocation have been given a block of `order` from `node`'s zonelist? Called right
/// after a failed allocation (single-threaded, so nothing changed since).
fn could_allocate(pa: &PageAlloc, node: page::NodeId, order: u32, direct: bool) -> bool {
    pa.zonelist(node).unwrap().zones().iter().any(|z| {
        let zone = pa.zone(z.node, z.kind).unwrap();
        let buddy = pa.free_blocks(zone).iter().any(|&(_, o)| o >= order);
        let listed = order == 0 && !direct && (0..CPUS).any(|c| zone.pcp_count(c) != Some(0));
        buddy || listed
    })
}

fn step(pa: &PageAlloc, m: &mut Model, op: &Op, total: u64) -> Result<(), TestCaseError> {
    match *op {
        Op::Alloc {
            cpu,
            node,
            order,
            direct,
        } => {
            let got = if direct {
                pa.alloc_pages_buddy(cpu, node, order)
            } else {
                pa.alloc_pages(cpu, node, order)
            };
            match got {
                Some(f) => {
                    prop_assert_eq!(f.pfn() % (1 << order), 0, "misaligned block");
                    prop_assert_eq!(f.refcount(), 1);
                    for p in f.pfn()..f.pfn() + (1 << order) {
                        prop_assert!(m.owned.insert(p), "pfn {:#x} handed out twice", p);
                    }
                    m.live.push((f, order));
                    if order == 0 && !direct {
                        m.pcp_alloc[cpu] += 1;
                    } else {
                        m.buddy_alloc[cpu] += 1;
                    }
                }
                None => {
                    prop_assert!(
                        !could_allocate(pa, node, order, direct),
                        "order {} failed on cpu {} with memory left",
                        order,
                        cpu
                    );
                    m.fails[cpu] += 1;
                }
            }
        }
        Op::Free { idx, cpu, direct } => {
            if !m.live.is_empty() {
                let (f, order) = m.live.swap_remove(idx % m.live.len());
                let r = if direct {
                    pa.free_pages_buddy(cpu, f, order)
                } else {
                    pa.free_pages(cpu, f, order)
                };
                prop_assert_eq!(r, Ok(true));
                for p in f.pfn()..f.pfn() + (1 << order) {
                    m.owned.remove(&p);
                }
                if order == 0 && !direct {
                    m.pcp_free[cpu] += 1;
                } else {
                    m.buddy_free[cpu] += 1;
                }
            }
        }
        Op::Drain { cpu } => {
            pa.drain_cpu(cpu);
        }
        Op::DrainAll => {
            pa.drain_all();
        }
    }
    let census = pa.check().map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(census.free_pages, pa.nr_free_pages());
    prop_assert_eq!(
        census.free_pages + census.pcp_pages + m.owned.len() as u64,
        total,
        "frames lost or invented"
    );
    for zone in pa.zones() {
        for cpu in 0..CPUS {
            let s = zone.pcp_stats(cpu).unwrap();
            prop_assert_eq!(s.pcp_pages(), i64::from(zone.pcp_count(cpu).unwrap()));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_match_the_model(
        cfg in config(),
        ops in prop::collection::vec(op(), 1..240),
    ) {
        let pa = machine(cfg);
        let initial = snapshot(&pa);
        let total = pa.nr_free_pages();
        prop_assert_eq!(total, 2048);
        let mut m = Model::default();
        for op in &ops {
            step(&pa, &mut m, op, total)?;
        }
        // Free everything (from rotating CPUs), drain, and the lists are as at the start.
        let live = std::mem::take(&mut m.live);
        for (i, (f, order)) in live.into_iter().enumerate() {
            let cpu = i % CPUS;
            prop_assert_eq!(pa.free_pages(cpu, f, order), Ok(true));
            if order == 0 {
                m.pcp_free[cpu] += 1;
            } else {
                m.buddy_free[cpu] += 1;
            }
        }
        pa.drain_all();
        prop_assert_eq!(snapshot(&pa), initial, "free lists did not merge back");
        prop_assert_eq!(pa.nr_free_pages(), total);
        let census = pa.check().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!((census.free_pages, census.pcp_pages), (total, 0));
        for cpu in 0..CPUS {
            let s = pa.cpu_stats(cpu);
            prop_assert_eq!(s.alloc, m.pcp_alloc[cpu]);
            prop_assert_eq!(s.free, m.pcp_free[cpu]);
            prop_assert_eq!(s.buddy_alloc, m.buddy_alloc[cpu]);
            prop_assert_eq!(s.buddy_free, m.buddy_free[cpu]);
            prop_assert_eq!(s.alloc_fail, m.fails[cpu]);
            prop_assert_eq!(s.pcp_pages(), 0);
        }
        let t = pa.total_stats();
        prop_assert_eq!(t.alloc + t.buddy_alloc, t.free + t.buddy_free);
    }
}
