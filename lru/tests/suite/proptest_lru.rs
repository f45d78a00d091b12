//! Random sequences of add / isolate / putback / activate / deactivate / access / age /
//! evict / refault, on MGLRU and classic lruvecs, against a simple model: sizes equal
//! list lengths, no folio is on two lists, generations stay ordered and bounded, and
//! counters stay consistent.

use crate::common;

use common::folios;
use ksync::Ticket;
use lru::folio::MAX_NR_ZONES;
use lru::lru_gen::{MAX_NR_GENS, MIN_NR_GENS, lru_gen_from_seq};
use lru::{
    Folio, LruError, LruGenFolio, LruGenFolioBase, LruGenFolioGrouped, LruList, LruMode, Lruvec,
    MAX_SWAPPINESS, SWAPPINESS_ANON_ONLY, Shadow, Zone,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

const N: usize = 24;

#[derive(Debug, Clone)]
enum Op {
    Add(usize),
    Isolate(usize),
    Putback(usize),
    Activate(usize),
    Deactivate(usize),
    Access(usize),
    Age,
    Evict(usize, u8),
    Refault(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..N).prop_map(Op::Add),
        2 => (0..N).prop_map(Op::Isolate),
        2 => (0..N).prop_map(Op::Putback),
        2 => (0..N).prop_map(Op::Activate),
        1 => (0..N).prop_map(Op::Deactivate),
        2 => (0..N).prop_map(Op::Access),
        1 => Just(Op::Age),
        2 => (1..12usize, prop_oneof![Just(0u8), Just(60), Just(100), Just(MAX_SWAPPINESS), Just(SWAPPINESS_ANON_ONLY)])
            .prop_map(|(n, s)| Op::Evict(n, s)),
        2 => (0..N).prop_map(Op::Refault),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    OnLru,
    Isolated,
}

struct Model {
    state: [State; N],
    shadow: HashMap<usize, Shadow>,
    evictions: u64,
    recent_refaults: u64,
}

fn check<G: LruGenFolio>(lv: &Lruvec<common::Sa<Ticket, G>>, f: &[&'static Folio], m: &Model) {
    let on = |i: usize| m.state[i] == State::OnLru;
    assert_eq!(lv.nr_folios(), (0..N).filter(|&i| on(i)).count());
    let mut seen = [0usize; N];
    if lv.mode() == LruMode::Classic {
        let mut g = lv.lock();
        for lru in LruList::ALL {
            let mut len = 0;
            g.for_each_on_list(lru, |x| {
                let i = f
                    .iter()
                    .position(|y| std::ptr::eq(*y, x))
                    .expect("known folio");
                seen[i] += 1;
                len += 1;
                assert_eq!(LruList::of(x), lru, "folio on the wrong list");
            });
            assert_eq!(len, lv.lru_size(lru));
        }
        drop(g);
        for i in 0..N {
            assert_eq!(
                seen[i],
                usize::from(on(i)),
                "folio {i} on {} lists",
                seen[i]
            );
            assert_eq!(f[i].test_lru(), on(i));
            assert_eq!(f[i].lru_gen(), None);
        }
        return;
    }
    for ty in 0..2 {
        let model = (0..N).filter(|&i| on(i) && f[i].lru_type() == ty).count() as i64;
        let sizes: i64 = (0..MAX_NR_GENS).map(|g| lv.nr_gen_pages(g, ty)).sum();
        assert_eq!(sizes, model, "type {ty} sizes");
    }
    let max_seq = lv.lrugen().max_seq().load(Ordering::Relaxed);
    // The active/inactive view (lru_zone_size, kept "for compatibility" as Linux does): the
    // two youngest generations are active, the others inactive, list by list.
    for (ty, inactive, active) in [
        (0, LruList::InactiveAnon, LruList::ActiveAnon),
        (1, LruList::InactiveFile, LruList::ActiveFile),
    ] {
        let young: i64 = [max_seq, max_seq - 1]
            .iter()
            .map(|&s| lv.nr_gen_pages(lru_gen_from_seq(s), ty))
            .sum();
        let all: i64 = (0..MAX_NR_GENS).map(|g| lv.nr_gen_pages(g, ty)).sum();
        assert_eq!(lv.lru_size(active) as i64, young, "type {ty} active size");
        assert_eq!(
            lv.lru_size(inactive) as i64,
            all - young,
            "type {ty} inactive"
        );
    }
    let mut g = lv.lock();
    for ty in 0..2 {
        let min_seq = lv.lrugen().min_seq()[ty].load(Ordering::Relaxed);
        let nr_gens = max_seq + 1 - min_seq;
        assert!(
            (MIN_NR_GENS..=MAX_NR_GENS as u64).contains(&nr_gens),
            "gens {min_seq}..={max_seq}"
        );
        let live: Vec<usize> = (min_seq..=max_seq).map(lru_gen_from_seq).collect();
        for r#gen in 0..MAX_NR_GENS {
            // ZONE_DEVICE (the fifth zone) holds no folio of this model.
            for z in 0..MAX_NR_ZONES - 1 {
                let zone = [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable][z];
                let mut len = 0i64;
                g.for_each_in_gen(r#gen, ty, zone, |x| {
                    let i = f
                        .iter()
                        .position(|y| std::ptr::eq(*y, x))
                        .expect("known folio");
                    seen[i] += 1;
                    len += 1;
                    assert_eq!(x.lru_gen(), Some(r#gen));
                    assert_eq!(x.lru_type(), ty);
                    assert!(live.contains(&r#gen), "folio in a retired generation");
                });
                assert_eq!(
                    len,
                    lv.lrugen().nr_pages()[r#gen][ty][z].load(Ordering::Relaxed)
                );
            }
        }
    }
    drop(g);
    for i in 0..N {
        assert_eq!(
            seen[i],
            usize::from(on(i)),
            "folio {i} on {} lists",
            seen[i]
        );
        assert_eq!(f[i].test_lru(), on(i));
        assert_eq!(f[i].lru_gen().is_some(), on(i));
    }
    let hist_sum = |c: &lru::lru_gen::TierHist| -> u64 {
        c.iter()
            .flatten()
            .flatten()
            .map(|x| x.load(Ordering::Relaxed))
            .sum()
    };
    assert!(hist_sum(lv.lrugen().evicted()) <= m.evictions);
    assert!(hist_sum(lv.lrugen().refaulted()) <= m.recent_refaults);
}

fn run<G: LruGenFolio>(ops: &[Op], anon_mask: u32, mode: LruMode) {
    let lv = common::lruvec::<Ticket, G>(5, mode);
    let f: Vec<&'static Folio> = (0..N)
        .map(|i| folios(1, 5, anon_mask & (1 << i) != 0)[0])
        .collect();
    let mut m = Model {
        state: [State::Free; N],
        shadow: HashMap::new(),
        evictions: 0,
        recent_refaults: 0,
    };
    let mut now = 0;
    for o in ops {
        now += 1;
        match *o {
            Op::Add(i) | Op::Putback(i) => {
                let r = lv.lock().add_folio(f[i]);
                if m.state[i] == State::OnLru {
                    assert_eq!(r, Err(LruError::AlreadyOnLru));
                } else {
                    r.unwrap();
                    m.state[i] = State::OnLru;
                    m.shadow.remove(&i);
                }
            }
            Op::Isolate(i) => {
                let r = lv.isolate_folio(f[i]);
                if m.state[i] == State::OnLru {
                    r.unwrap();
                    m.state[i] = State::Isolated;
                } else {
                    assert_eq!(r, Err(LruError::NotOnLru));
                }
            }
            Op::Activate(i) => {
                let moved = lv.lock().activate(f[i]).unwrap();
                assert!(!moved || m.state[i] == State::OnLru);
            }
            Op::Deactivate(i) => {
                let moved = lv.lock().deactivate(f[i]).unwrap();
                assert!(!moved || m.state[i] == State::OnLru);
            }
            Op::Access(i) => f[i].mark_accessed(),
            Op::Age => match mode {
                LruMode::Mglru => {
                    lv.age(now).unwrap();
                }
                LruMode::Classic => assert_eq!(lv.age(now), Err(LruError::MglruDisabled)),
            },
            Op::Evict(n, swappiness) => {
                let mut out = Vec::new();
                let stats = lv
                    .evict_folios(n, swappiness, now, &(), |x, s| out.push((x, s)))
                    .unwrap();
                assert_eq!(stats.evicted, out.len());
                assert!(out.len() <= n);
                for (x, s) in out {
                    let i = f.iter().position(|y| std::ptr::eq(*y, x)).unwrap();
                    assert_eq!(m.state[i], State::OnLru, "evicted a folio not on the LRU");
                    match swappiness {
                        0 => assert!(x.is_file_lru()),
                        SWAPPINESS_ANON_ONLY => assert!(!x.is_file_lru()),
                        _ => {}
                    }
                    x.reset_lru_state().unwrap();
                    x.set_memcg_id(5).unwrap();
                    if anon_mask & (1 << i) != 0 {
                        x.set(lru::FolioFlags::SWAPBACKED);
                    }
                    m.state[i] = State::Free;
                    m.shadow.insert(i, s);
                    m.evictions += 1;
                }
            }
            Op::Refault(i) => {
                if let (State::Free, Some(s)) = (m.state[i], m.shadow.get(&i).copied()) {
                    let r = lv.refault(f[i], s, i % 2 == 0).unwrap();
                    if r.recent {
                        m.recent_refaults += 1;
                    }
                    lv.lock().add_folio(f[i]).unwrap();
                    m.state[i] = State::OnLru;
                    m.shadow.remove(&i);
                }
            }
        }
        check(lv, &f, &m);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn lru_matches_model(ops in prop::collection::vec(op(), 1..120), anon_mask in any::<u32>(), grouped in any::<bool>(), classic in prop::bool::weighted(0.3)) {
        let mode = if classic { LruMode::Classic } else { LruMode::Mglru };
        if grouped {
            run::<LruGenFolioGrouped>(&ops, anon_mask, mode);
        } else {
            run::<LruGenFolioBase>(&ops, anon_mask, mode);
        }
    }
}
