//! Property test: random charge / uncharge / fault / free / limit / reclaim sequences on a
//! three-level hierarchy keep `usage == own + children's usage` at every level and never
//! let usage exceed `max`.
//!
//! "Own" pages of a memcg are the raw charges the test made, the folios it faulted that are
//! still live (not freed by the test or reclaimed), and what the CPUs' charge stocks hold
//! for it. Reclaim sometimes finds every folio busy (the free hook declines): those stay
//! charged and on their LRU.
#![cfg(not(loom))]

use crate::common;

use common::*;
use lru::Folio;
use memcg::{FolioFree, MemcgConfig, MemcgError, ReclaimRequest, TreeLru};
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// root(0) -> a(1), b(2); a -> a1(3), a2(4); b -> b1(5)
const PARENT: [Option<usize>; 6] = [None, Some(0), Some(0), Some(1), Some(1), Some(2)];
const CPUS: usize = 2;

#[derive(Debug, Clone)]
enum Op {
    Charge {
        m: usize,
        cpu: usize,
        n: u64,
    },
    Uncharge {
        m: usize,
        n: u64,
    },
    Fault {
        m: usize,
        cpu: usize,
        node: lru::NodeId,
        anon: bool,
    },
    Free {
        m: usize,
        pick: usize,
        cpu: usize,
    },
    SetMax {
        m: usize,
        max: u64,
    },
    Reclaim {
        m: usize,
        cpu: usize,
        n: u64,
        swappiness: Option<u8>,
        busy: bool,
    },
    Drain {
        cpu: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let m = 0..6usize;
    let cpu = 0..CPUS;
    prop_oneof![
        (m.clone(), cpu.clone(), 1..80u64).prop_map(|(m, cpu, n)| Op::Charge { m, cpu, n }),
        (m.clone(), 1..40u64).prop_map(|(m, n)| Op::Uncharge { m, n }),
        (m.clone(), cpu.clone(), 0..2u32, any::<bool>())
            .prop_map(|(m, cpu, node, anon)| Op::Fault { m, cpu, node, anon }),
        (m.clone(), any::<usize>(), cpu.clone()).prop_map(|(m, pick, cpu)| Op::Free {
            m,
            pick,
            cpu
        }),
        (m.clone(), 0..400u64).prop_map(|(m, max)| Op::SetMax { m, max }),
        (
            m.clone(),
            cpu.clone(),
            1..100u64,
            prop::option::of(prop_oneof![Just(0u8), Just(60), Just(200)]),
            prop::bool::weighted(0.2),
        )
            .prop_map(|(m, cpu, n, swappiness, busy)| Op::Reclaim {
                m,
                cpu,
                n,
                swappiness,
                busy
            }),
        cpu.prop_map(|cpu| Op::Drain { cpu }),
    ]
}

struct Model {
    raw: [u64; 6],
    live: Vec<Vec<&'static Folio>>,
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let freed: Arc<Mutex<Vec<&'static Folio>>> = Arc::default();
    let sink = freed.clone();
    let busy = Arc::new(AtomicBool::new(false));
    let hook_busy = busy.clone();
    let lru = TreeLru::new(
        true,
        Box::new(move |_, f, _| {
            if hook_busy.load(Ordering::Relaxed) {
                FolioFree::Busy
            } else {
                sink.lock().unwrap().push(f);
                FolioFree::Freed
            }
        }),
    );
    let tree = tree_with(MemcgConfig::new(CPUS, 2), lru);
    let mut memcgs: Vec<Ref<'_>> = vec![tree.root()];
    for p in PARENT.iter().skip(1) {
        let child = memcgs[p.unwrap()].create_child().unwrap();
        memcgs.push(child);
    }
    let idx_of = |id: u16| memcgs.iter().position(|m| m.id() == id).unwrap();
    let mut model = Model {
        raw: [0; 6],
        live: vec![Vec::new(); 6],
    };
    for op in ops {
        match op {
            Op::Charge { m, cpu, n } => match memcgs[m].try_charge(cpu, n) {
                Ok(()) => model.raw[m] += n,
                Err(MemcgError::OutOfMemory { .. }) => {}
                Err(e) => return Err(TestCaseError::fail(format!("charge: {e}"))),
            },
            Op::Uncharge { m, n } => {
                let n = n.min(model.raw[m]);
                memcgs[m].uncharge(n).unwrap();
                model.raw[m] -= n;
            }
            Op::Fault { m, cpu, node, anon } => match try_fault(&tree, &memcgs[m], cpu, node, anon)
            {
                Ok(f) => model.live[m].push(f),
                Err(MemcgError::OutOfMemory { .. }) => {}
                Err(e) => return Err(TestCaseError::fail(format!("fault: {e}"))),
            },
            Op::Free { m, pick, cpu } => {
                if !model.live[m].is_empty() {
                    let at = pick % model.live[m].len();
                    let f = model.live[m].swap_remove(at);
                    free(&tree, &memcgs[m], cpu, f);
                }
            }
            Op::SetMax { m, max } => match memcgs[m].set_max(0, max) {
                Ok(()) => prop_assert_eq!(memcgs[m].memory().max(), max),
                Err(MemcgError::LimitBelowUsage { .. }) => {}
                Err(e) => return Err(TestCaseError::fail(format!("set_max: {e}"))),
            },
            Op::Reclaim {
                m,
                cpu,
                n,
                swappiness,
                busy: all_busy,
            } => {
                busy.store(all_busy, Ordering::Relaxed);
                let req = ReclaimRequest {
                    nr_pages: n,
                    swappiness,
                };
                let r = memcgs[m].memory_reclaim(cpu, req);
                busy.store(false, Ordering::Relaxed);
                match r {
                    Ok(got) => prop_assert!(got >= n && !all_busy),
                    Err(MemcgError::Again {
                        reclaimed,
                        requested,
                    }) => {
                        prop_assert!(reclaimed < requested)
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("reclaim: {e}"))),
                }
            }
            Op::Drain { cpu } => tree.stocks().drain(cpu).unwrap(),
        }
        // Folios reclaimed during the op are gone from their memcg.
        for f in freed.lock().unwrap().drain(..) {
            let i = idx_of(f.memcg_id());
            let pos = model.live[i].iter().position(|g| std::ptr::eq(*g, f));
            prop_assert!(pos.is_some(), "reclaimed a folio the model does not know");
            model.live[i].swap_remove(pos.unwrap());
        }
        for i in 0..6 {
            let m = &memcgs[i];
            let stocked: u64 = (0..CPUS)
                .map(|c| tree.stocks().stocked(c, m).unwrap())
                .sum();
            let own = model.raw[i] + model.live[i].len() as u64 + stocked;
            let children: u64 = (0..6)
                .filter(|&j| PARENT[j] == Some(i))
                .map(|j| memcgs[j].usage())
                .sum();
            prop_assert_eq!(m.usage(), own + children, "memcg {} usage", i);
            prop_assert!(m.usage() <= m.memory().max(), "memcg {} above max", i);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn usage_is_own_plus_children_and_never_above_max(ops in prop::collection::vec(op(), 1..60)) {
        run(ops)?;
    }
}
