//! Eviction, shadow entries, refault detection and tier protection (MGLRU).

use crate::common;

use common::{folios, lruvec};
use ksync::Ticket;
use lru::lru_gen::{MAX_NR_GENS, MIN_NR_GENS};
use lru::{
    Folio, FolioFlags, LruError, LruGenFolio, LruGenFolioBase, LruGenFolioGrouped, LruMode,
    SWAPPINESS_ANON_ONLY, Shadow,
};
use std::sync::atomic::Ordering;

fn evict_all<G: LruGenFolio>(
    lv: &lru::Lruvec<common::Sa<Ticket, G>>,
    n: usize,
    swappiness: u8,
) -> Vec<(&'static Folio, Shadow)> {
    let mut out = Vec::new();
    lv.evict_folios(n, swappiness, 100, &(), |f, s| out.push((f, s)))
        .unwrap();
    out
}

fn evicts_oldest_first<G: LruGenFolio>() {
    let lv = lruvec::<Ticket, G>(3, LruMode::Mglru);
    let old = folios(10, 3, false);
    let young = folios(10, 3, false);
    for &f in &old {
        lv.lock().add_folio(f).unwrap();
    }
    lv.age(1).unwrap();
    for &f in &young {
        f.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(f).unwrap();
    }
    let out = evict_all(lv, 10, 0);
    assert_eq!(out.len(), 10);
    for (f, s) in &out {
        assert!(
            old.iter().any(|o| std::ptr::eq(*o, *f)),
            "evicted a young folio"
        );
        assert!(!f.test_lru() && f.lru_gen().is_none());
        assert_eq!((s.memcg_id(), s.node()), (3, 0));
    }
    assert_eq!(lv.nr_folios(), 10);
    let evicted: u64 = lv.lrugen().evicted()[0][1]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    assert_eq!(evicted, 10, "lockless evicted counters");
    // Generations stay ordered and within bounds.
    let max_seq = lv.lrugen().max_seq().load(Ordering::Relaxed);
    for ty in 0..2 {
        let min_seq = lv.lrugen().min_seq()[ty].load(Ordering::Relaxed);
        assert!(min_seq + MIN_NR_GENS - 1 <= max_seq);
        assert!(max_seq - min_seq < MAX_NR_GENS as u64);
    }
}

#[test]
fn eviction_takes_the_oldest_generation() {
    evicts_oldest_first::<LruGenFolioBase>();
    evicts_oldest_first::<LruGenFolioGrouped>();
}

#[test]
fn swappiness_selects_the_type() {
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    let file = folios(5, 1, false);
    let anon = folios(5, 1, true);
    for &f in file.iter().chain(anon.iter()) {
        lv.lock().add_folio(f).unwrap();
    }
    let out = evict_all(lv, 100, 0);
    assert_eq!(out.len(), 5);
    assert!(out.iter().all(|(f, _)| f.is_file_lru()));
    let out = evict_all(lv, 100, SWAPPINESS_ANON_ONLY);
    assert_eq!(out.len(), 5);
    assert!(out.iter().all(|(f, _)| !f.is_file_lru()));
    assert_eq!(lv.nr_folios(), 0);
    let stats = lv
        .evict_folios(10, 100, 0, &(), |_, _| panic!("nothing left"))
        .unwrap();
    assert_eq!(stats.evicted, 0);
}

#[test]
fn eviction_ages_when_needed_and_empties_everything() {
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    let f = folios(300, 1, false);
    for &x in &f {
        x.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(x).unwrap();
    }
    let mut out = Vec::new();
    let stats = lv
        .evict_folios(1000, 0, 5, &(), |f, s| out.push((f, s)))
        .unwrap();
    assert_eq!(stats.evicted, 300);
    assert!(stats.aged > 0, "youngest-only folios need aging first");
    assert_eq!(lv.nr_folios(), 0);
    let mut pfns: Vec<u64> = out.iter().map(|(f, _)| f.pfn()).collect();
    pfns.sort_unstable();
    pfns.dedup();
    assert_eq!(pfns.len(), 300, "each folio evicted once");
}

#[test]
fn recent_refault_activates_and_old_does_not() {
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    let f = folios(2, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    let out = evict_all(lv, 2, 0);
    assert_eq!(out.len(), 2);
    let (f0, s0) = out[0];
    let (f1, s1) = out[1];
    f0.reset_lru_state().unwrap();
    f0.set_memcg_id(1).unwrap();
    let r = lv.lru_gen_refault(f0, s0, true).unwrap();
    assert!(r.recent && r.activated);
    assert!(f0.test(FolioFlags::ACTIVE));
    let refaulted: u64 = lv.lrugen().refaulted()[0][1]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    assert_eq!(refaulted, 1);
    lv.lock().add_folio(f0).unwrap();
    let youngest = lru::lru_gen::lru_gen_from_seq(lv.lrugen().max_seq().load(Ordering::Relaxed));
    assert_eq!(
        f0.lru_gen(),
        Some(youngest),
        "an activated refault joins the youngest gen"
    );
    for t in 0..(MAX_NR_GENS as u64 + 1) {
        lv.age(10 + t).unwrap();
    }
    assert_eq!(lv.lru_gen_test_recent(s1), Some(false));
    let r = lv.lru_gen_refault(f1, s1, true).unwrap();
    assert!(!r.recent && !r.activated);
    assert!(!f1.test(FolioFlags::ACTIVE));
    // Validation.
    assert_eq!(
        lv.lru_gen_refault(f0, s0, true),
        Err(LruError::AlreadyOnLru)
    );
    let other = lruvec::<Ticket, LruGenFolioGrouped>(2, LruMode::Mglru);
    let g = folios(1, 2, false);
    assert_eq!(other.lru_gen_test_recent(s1), None);
    assert_eq!(
        other.lru_gen_refault(g[0], s1, true),
        Err(LruError::WrongLruvec)
    );
}

#[test]
fn workingset_shadow_restores_workingset() {
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    let f = folios(1, 1, false);
    lv.lock().add_folio(f[0]).unwrap();
    for _ in 0..6 {
        f[0].mark_accessed();
    }
    assert!(f[0].test(FolioFlags::WORKINGSET));
    let out = evict_all(lv, 1, 0);
    assert_eq!(out.len(), 1);
    let (folio, shadow) = out[0];
    assert!(shadow.workingset());
    folio.reset_lru_state().unwrap();
    folio.set_memcg_id(1).unwrap();
    let r = lv.lru_gen_refault(folio, shadow, true).unwrap();
    assert!(r.recent && r.workingset);
    assert!(folio.test(FolioFlags::WORKINGSET | FolioFlags::ACTIVE));
}

#[test]
fn refaulting_tier_gets_protected() {
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    // Round 1: hot (3 accesses, tier 2) folios refault, cold ones (tier 0) do not.
    let hot = folios(200, 1, false);
    let cold = folios(200, 1, false);
    for (&h, &c) in hot.iter().zip(cold.iter()) {
        lv.lock().add_folio(h).unwrap();
        lv.lock().add_folio(c).unwrap();
        for _ in 0..3 {
            h.mark_accessed();
        }
    }
    let out = evict_all(lv, 400, 0);
    assert_eq!(out.len(), 400);
    for (f, s) in out {
        if hot.iter().any(|h| std::ptr::eq(*h, f)) {
            f.reset_lru_state().unwrap();
            f.set_memcg_id(1).unwrap();
            assert!(lv.lru_gen_refault(f, s, false).unwrap().recent);
            f.clear(FolioFlags::ACTIVE);
            f.reset_lru_state().unwrap();
            f.set_memcg_id(1).unwrap();
        }
    }
    // Round 2: the same mix again; the controller should now protect the hot tier.
    let hot2 = folios(100, 1, false);
    let cold2 = folios(100, 1, false);
    for (&h, &c) in hot2.iter().zip(cold2.iter()) {
        lv.lock().add_folio(h).unwrap();
        lv.lock().add_folio(c).unwrap();
        for _ in 0..3 {
            h.mark_accessed();
        }
    }
    let mut evicted_hot = 0;
    let stats = lv
        .evict_folios(50, 0, 1000, &(), |f, _| {
            if hot2.iter().any(|h| std::ptr::eq(*h, f)) {
                evicted_hot += 1;
            }
        })
        .unwrap();
    assert_eq!(stats.evicted, 50);
    assert!(stats.protected > 0, "hot tier protected: {stats:?}");
    assert_eq!(evicted_hot, 0, "cold folios go first: {stats:?}");
}

/// Evicts one file folio accessed `accesses` times (REFERENCED included; `accesses == 5`
/// also sets WORKINGSET) and refaults it; returns the eviction's and the refault's tier
/// (read from the counters) and the outcome.
fn evict_and_refault(accesses: u32, in_fault: bool) -> (usize, usize, lru::RefaultOutcome) {
    use lru::lru_gen::MAX_NR_TIERS;
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    let f = folios(1, 1, false);
    lv.lock().add_folio(f[0]).unwrap();
    for _ in 0..accesses {
        f[0].mark_accessed();
    }
    let tier_of = |h: &lru::lru_gen::TierHist| {
        let v: Vec<u64> = (0..MAX_NR_TIERS)
            .map(|t| h[0][1][t].load(Ordering::Relaxed))
            .collect();
        assert_eq!(v.iter().sum::<u64>(), 1, "exactly one count: {v:?}");
        v.iter().position(|&c| c == 1).unwrap()
    };
    // Eviction bypasses tier protection here: one folio, nothing refaulted yet.
    let out = evict_all(lv, 1, 0);
    assert_eq!(out.len(), 1);
    let (folio, shadow) = out[0];
    let evicted = tier_of(lv.lrugen().evicted());
    folio.reset_lru_state().unwrap();
    folio.set_memcg_id(1).unwrap();
    let r = lv.lru_gen_refault(folio, shadow, in_fault).unwrap();
    assert!(r.recent);
    let refaulted = tier_of(lv.lrugen().refaulted());
    assert_eq!(refaulted, r.tier);
    (evicted, refaulted, r)
}

#[test]
fn refaults_are_counted_in_the_tier_of_their_eviction() {
    // refs = 0 (never accessed), 1 (REFERENCED only): tier 0, both ways.
    assert_eq!(evict_and_refault(0, true).0, 0);
    assert_eq!(evict_and_refault(0, true).1, 0);
    assert_eq!(evict_and_refault(1, true).0, 0);
    assert_eq!(evict_and_refault(1, true).1, 0);
    // refs = 2 and 3: tiers 1 and 2.
    assert_eq!(evict_and_refault(2, false).0, 1);
    assert_eq!(evict_and_refault(2, false).1, 1);
    assert_eq!(evict_and_refault(3, false).1, 2);
    // refs = max (REFERENCED + every refs bit = 4): tier 2 both ways.
    let (e, r, out) = evict_and_refault(4, false);
    assert_eq!((e, r), (2, 2));
    assert!(!out.workingset);
    // One access more sets WORKINGSET: the top tier, both ways, and restored on refault.
    let (e, r, out) = evict_and_refault(5, false);
    assert_eq!(
        (e, r),
        (
            lru::lru_gen::MAX_NR_TIERS - 1,
            lru::lru_gen::MAX_NR_TIERS - 1
        )
    );
    assert!(out.workingset);
}

#[test]
fn only_fault_path_refaults_are_activated() {
    for accesses in [0, 1, 4] {
        let (_, _, in_fault) = evict_and_refault(accesses, true);
        assert!(
            in_fault.activated,
            "refs {accesses}: a fault-path refault activates"
        );
        let (_, _, buffered) = evict_and_refault(accesses, false);
        assert!(
            !buffered.activated,
            "refs {accesses}: a buffered read does not"
        );
    }
    // The activated folio joins the youngest generation; the other does not.
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    let f = folios(2, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    let out = evict_all(lv, 2, 0);
    let youngest = lru::lru_gen::lru_gen_from_seq(lv.lrugen().max_seq().load(Ordering::Relaxed));
    for (i, (folio, shadow)) in out.into_iter().enumerate() {
        folio.reset_lru_state().unwrap();
        folio.set_memcg_id(1).unwrap();
        let r = lv.lru_gen_refault(folio, shadow, i == 0).unwrap();
        lv.lock().add_folio(folio).unwrap();
        assert_eq!(folio.lru_gen() == Some(youngest), r.activated);
    }
}

/// A lruvec with a refault history: `n` anon and `n` file folios were evicted, and the
/// first `anon_refaults` anon and `file_refaults` file ones refaulted (buffered, not
/// re-added). Then 16 fresh folios of each type are added, the empty oldest generations
/// retired, and 8 folios evicted at `swappiness`; returns how many of them were file.
fn file_share_at(n: usize, anon_refaults: usize, file_refaults: usize, swappiness: u8) -> usize {
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru);
    for (anon, refaults, sw) in [
        (true, anon_refaults, SWAPPINESS_ANON_ONLY),
        (false, file_refaults, 0),
    ] {
        let f = folios(n, 1, anon);
        for &x in &f {
            lv.lock().add_folio(x).unwrap();
        }
        let out = evict_all(lv, n, sw);
        assert_eq!(out.len(), n);
        for &(folio, shadow) in &out[..refaults] {
            folio.reset_lru_state().unwrap();
            folio.set_memcg_id(1).unwrap();
            if anon {
                folio.set(FolioFlags::SWAPBACKED);
            }
            assert!(lv.lru_gen_refault(folio, shadow, false).unwrap().recent);
        }
    }
    for anon in [true, false] {
        for &x in &folios(16, 1, anon) {
            lv.lock().add_folio(x).unwrap();
        }
    }
    let _ = lv.lock().try_to_inc_min_seq();
    let out = evict_all(lv, 8, swappiness);
    assert_eq!(out.len(), 8);
    out.iter().filter(|(f, _)| f.is_file_lru()).count()
}

#[test]
fn swappiness_weighs_anon_against_file_refaults() {
    // No refaults anywhere: file is scanned first at every swappiness below 200, anon at 200.
    for s in [1, 2, 100, 199] {
        assert_eq!(file_share_at(400, 0, 0, s), 8, "no history, swappiness {s}");
    }
    assert_eq!(
        file_share_at(400, 0, 0, 200),
        0,
        "swappiness 200 scans anon"
    );
    // File refaults, anon does not: anon is scanned at any swappiness above 1.
    assert_eq!(
        file_share_at(400, 0, 400, 1),
        8,
        "swappiness 1 is file only"
    );
    for s in [2, 100, 199] {
        assert_eq!(
            file_share_at(400, 0, 400, s),
            0,
            "file refaults, swappiness {s}"
        );
    }
    // Anon refaults, file does not: file is scanned.
    for s in [100, 199] {
        assert_eq!(
            file_share_at(400, 400, 0, s),
            8,
            "anon refaults, swappiness {s}"
        );
    }
    // Both refault alike: swappiness decides.
    assert_eq!(file_share_at(400, 400, 400, 10), 8);
    assert_eq!(file_share_at(400, 400, 400, 190), 0);
    // At one swappiness the type refaulting less is the one scanned.
    assert_eq!(
        file_share_at(400, 100, 400, 60),
        0,
        "file refaults more: anon"
    );
    assert_eq!(
        file_share_at(400, 400, 100, 60),
        8,
        "anon refaults more: file"
    );
}
