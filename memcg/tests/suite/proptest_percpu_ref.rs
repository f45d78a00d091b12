//! Property test: any sequence of gets, puts and trygets, on CPU slots or the shared count,
//! with the switch to atomic mode and its fold at any point, keeps the count equal to the
//! references a model holds; after the fold it reads zero exactly when none is held, and a
//! tryget then fails exactly at zero.
#![cfg(not(loom))]

use memcg::percpu_ref::PercpuRef;
use proptest::prelude::*;

const CPUS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Get { cpu: Option<usize>, n: usize },
    Put { cpu: Option<usize>, n: usize },
    TryGet { cpu: Option<usize> },
    Kill,
    Fold,
}

fn cpu() -> impl Strategy<Value = Option<usize>> {
    prop::option::weighted(0.8, 0..CPUS)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (cpu(), 1..5usize).prop_map(|(cpu, n)| Op::Get { cpu, n }),
        6 => (cpu(), 1..5usize).prop_map(|(cpu, n)| Op::Put { cpu, n }),
        2 => cpu().prop_map(|cpu| Op::TryGet { cpu }),
        1 => Just(Op::Kill),
        1 => Just(Op::Fold),
    ]
}

proptest! {
    #[test]
    fn the_count_follows_the_references_held(ops in prop::collection::vec(op(), 1..80)) {
        let r = PercpuRef::new(CPUS);
        // The initial reference.
        let mut held: usize = 1;
        let (mut killed, mut folded) = (false, false);
        for op in ops {
            match op {
                Op::Get { cpu, n } => {
                    // A get needs a reference the caller already holds.
                    if held > 0 {
                        r.get_many(cpu, n);
                        held += n;
                    }
                }
                Op::Put { cpu, n } => {
                    let n = n.min(held);
                    r.put_many(cpu, n);
                    held -= n;
                }
                Op::TryGet { cpu } => {
                    let got = r.tryget(cpu);
                    if folded {
                        prop_assert_eq!(got, held > 0, "tryget after the fold fails at zero");
                    } else {
                        prop_assert!(got, "the count cannot be zero before the fold");
                    }
                    held += usize::from(got);
                }
                Op::Kill => {
                    prop_assert_eq!(r.kill(), !killed);
                    if !killed {
                        r.set_confirm_cookie(1);
                    }
                    killed = true;
                }
                Op::Fold => {
                    prop_assert_eq!(r.try_confirm(|c| c == 1), killed);
                    folded |= killed;
                }
            }
            prop_assert_eq!(r.count(), held);
            prop_assert_eq!(r.is_zero(), folded && held == 0);
            prop_assert_eq!(r.is_percpu(), !killed);
        }
    }
}
