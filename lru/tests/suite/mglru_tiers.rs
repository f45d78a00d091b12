//! MGLRU's tiers and the refault controller as reclaim shows them: which folios a scan of
//! the oldest generation protects (`sort_folio`), what the controller remembers across a
//! generation change (`reset_ctrl_pos`), what a refault restores, where the "recent"
//! window ends, and how generations map onto the active/inactive view.

use crate::common;

use common::{Counting, folios, lruvec};
use ksync::Ticket;
use lru::lru_gen::{MAX_NR_GENS, MAX_NR_TIERS, lru_gen_from_seq};
use lru::{Folio, FolioFlags, LruGenFolio, LruGenFolioGrouped, LruList, LruMode, Shadow, Zone};
use std::sync::atomic::Ordering;

type Lv = lru::Lruvec<common::Sa<Ticket, LruGenFolioGrouped>>;

const FILE: usize = 1;

fn new_lv() -> &'static Lv {
    lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Mglru)
}

fn evict(lv: &Lv, n: usize) -> (Vec<(&'static Folio, Shadow)>, lru::EvictStats) {
    let mut out = Vec::new();
    let stats = lv
        .evict_folios(n, 0, 7, &(), |f, s| out.push((f, s)))
        .unwrap();
    (out, stats)
}

/// `[tier]` of one of the lrugen's `[hist][type][tier]` counters, file type.
fn file_tiers(h: &lru::lru_gen::TierHist) -> [u64; MAX_NR_TIERS] {
    core::array::from_fn(|t| h[0][FILE][t].load(Ordering::Relaxed))
}

fn max_seq(lv: &Lv) -> u64 {
    lv.lrugen().max_seq().load(Ordering::Relaxed)
}

fn min_seq(lv: &Lv, ty: usize) -> u64 {
    lv.lrugen().min_seq()[ty].load(Ordering::Relaxed)
}

/// Makes an evicted folio ready to refault into `lv` (memcg 1).
fn ready(f: &Folio) {
    f.reset_lru_state().unwrap();
    f.set_memcg_id(1).unwrap();
}

#[test]
fn without_refaults_every_tier_is_evicted_even_the_top_one() {
    // No refault history: the controller protects no tier, so a folio in the top tier
    // (WORKINGSET, not yet accessed again) is evicted like any other.
    let lv = new_lv();
    let f = folios(3, 1, false);
    f[0].set(FolioFlags::WORKINGSET);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    // Accesses count once the folio is on its list (lru_gen_inc_refs skips others).
    for _ in 0..3 {
        f[1].mark_accessed(); // refs 3: tier 2
    }
    let (out, stats) = evict(lv, 3);
    assert_eq!(out.len(), 3);
    assert_eq!(stats.protected, 0, "{stats:?}");
    assert_eq!(file_tiers(lv.lrugen().protected()), [0; MAX_NR_TIERS]);
    assert_eq!(file_tiers(lv.lrugen().evicted()), [1, 0, 1, 1]);
}

#[test]
fn the_lazily_promoted_working_set_moves_up_uncounted() {
    // Every refs bit and WORKINGSET: moved one generation up without counting it as
    // protected; it loses its refs, so the next scan finds it in the top tier only and
    // evicts it.
    let lv = new_lv();
    let f = folios(1, 1, false);
    lv.lock().add_folio(f[0]).unwrap();
    for _ in 0..5 {
        f[0].mark_accessed();
    }
    assert_eq!(f[0].lru_refs_total(), 4);
    assert!(f[0].test(FolioFlags::WORKINGSET));
    let (out, stats) = evict(lv, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(stats.protected, 1, "{stats:?}");
    assert_eq!(file_tiers(lv.lrugen().protected()), [0; MAX_NR_TIERS]);
    assert_eq!(file_tiers(lv.lrugen().evicted()), [0, 0, 0, 1]);
    // One access short of it (refs 4, no WORKINGSET): tier 2, evicted at once.
    let lv = new_lv();
    let g = folios(1, 1, false);
    lv.lock().add_folio(g[0]).unwrap();
    for _ in 0..4 {
        g[0].mark_accessed();
    }
    let (out, stats) = evict(lv, 1);
    assert_eq!((out.len(), stats.protected), (1, 0));
    assert_eq!(file_tiers(lv.lrugen().evicted()), [0, 0, 1, 0]);
}

#[test]
fn an_unevictable_folio_found_on_a_generation_goes_to_its_list() {
    let lv = new_lv();
    let f = folios(2, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    // mlocked after it was added: the scan finds it on its generation list.
    f[0].set(FolioFlags::UNEVICTABLE);
    let (out, stats) = evict(lv, 2);
    assert_eq!(out.len(), 1);
    assert!(std::ptr::eq(out[0].0, f[1]));
    assert_eq!(stats.protected, 1, "{stats:?}");
    assert_eq!(f[0].lru_gen(), None);
    assert!(f[0].test_lru());
    assert_eq!(lv.lru_size(LruList::Unevictable), 1);
    let mut on = Vec::new();
    lv.lock()
        .for_each_on_list(LruList::Unevictable, |x| on.push(x.pfn()));
    assert_eq!(on, [f[0].pfn()]);
    assert_eq!(file_tiers(lv.lrugen().protected()), [0; MAX_NR_TIERS]);
}

#[test]
fn a_protected_tier_is_moved_up_and_counted_in_its_tier() {
    // Tier 1 (two accesses) refaults heavily, tier 0 not at all: tier 1 and above are
    // protected, tier 0 goes.
    let lv = new_lv();
    let hot = folios(128, 1, false);
    for &h in &hot {
        lv.lock().add_folio(h).unwrap();
        h.mark_accessed();
        h.mark_accessed();
    }
    let cold = folios(128, 1, false);
    for &c in &cold {
        lv.lock().add_folio(c).unwrap();
    }
    let (out, _) = evict(lv, 256);
    assert_eq!(out.len(), 256);
    for (f, s) in out {
        if hot.iter().any(|h| std::ptr::eq(*h, f)) {
            ready(f);
            let r = lv.lru_gen_refault(f, s, false).unwrap();
            assert!(r.recent);
            assert_eq!(r.tier, 1);
        }
    }
    assert_eq!(file_tiers(lv.lrugen().refaulted())[1], 128);
    let (hot2, cold2) = (folios(64, 1, false), folios(64, 1, false));
    for (&h, &c) in hot2.iter().zip(&cold2) {
        lv.lock().add_folio(h).unwrap();
        lv.lock().add_folio(c).unwrap();
        h.mark_accessed();
        h.mark_accessed();
    }
    let before = file_tiers(lv.lrugen().protected());
    let mut evicted_hot = 0;
    let stats = lv
        .evict_folios(32, 0, 9, &(), |f, _| {
            evicted_hot += usize::from(hot2.iter().any(|h| std::ptr::eq(*h, f)));
        })
        .unwrap();
    assert_eq!(stats.evicted, 32);
    assert_eq!(evicted_hot, 0, "{stats:?}");
    let after = file_tiers(lv.lrugen().protected());
    assert!(stats.protected > 0, "{stats:?}");
    assert_eq!(
        after[1] - before[1],
        stats.protected as u64,
        "counted in tier 1"
    );
    assert_eq!(
        (after[0], after[2], after[3]),
        (before[0], before[2], before[3])
    );
    // The protected folios lost their access count on the way up.
    let reset = hot2.iter().filter(|h| h.lru_refs_total() == 0).count();
    assert!(reset >= stats.protected, "{reset} of {stats:?}");
    assert!(reset < hot2.len(), "only the scanned ones");
}

#[test]
fn a_generation_change_folds_the_history_into_the_averages() {
    let lv = new_lv();
    let f = folios(100, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    let (out, _) = evict(lv, 100);
    for &(x, s) in &out[..40] {
        ready(x);
        assert!(lv.lru_gen_refault(x, s, false).unwrap().recent);
    }
    let g = lv.lrugen();
    let snap = |_: ()| {
        (
            g.avg_refaulted()[FILE][0].load(Ordering::Relaxed),
            g.avg_total()[FILE][0].load(Ordering::Relaxed),
            file_tiers(g.refaulted())[0],
            file_tiers(g.evicted())[0] + file_tiers(g.protected())[0],
        )
    };
    let (avg_r, avg_t, refaulted, total) = snap(());
    assert_eq!(refaulted, 40);
    // Part of the evictions may already be folded: eviction retires empty generations.
    assert!(avg_t > 0 && total > 0, "{avg_t} + {total}");
    // Aging alone (no generation retired) keeps the history.
    let min = min_seq(lv, FILE);
    let mut ages = 0;
    while min_seq(lv, FILE) == min {
        assert_eq!(
            snap(()),
            (avg_r, avg_t, refaulted, total),
            "after {ages} ages"
        );
        lv.age(20 + ages).unwrap();
        ages += 1;
        assert!(
            ages <= MAX_NR_GENS as u64,
            "the oldest generation never retired"
        );
    }
    // The oldest generation retired: the averages take half of old plus new, and the
    // history slot starts over.
    assert_eq!(
        snap(()),
        ((avg_r + refaulted) / 2, (avg_t + total) / 2, 0, 0)
    );
    // And once more: the averages halve again.
    let min = min_seq(lv, FILE);
    while min_seq(lv, FILE) == min {
        lv.age(40 + ages).unwrap();
        ages += 1;
    }
    assert_eq!(
        snap(()),
        ((avg_r + refaulted) / 4, (avg_t + total) / 4, 0, 0)
    );
}

#[test]
fn a_refault_restores_the_tier_once_and_the_next_access_starts_over() {
    for (accesses, tier) in [(0, 0), (1, 0), (2, 1), (3, 2), (4, 2)] {
        let lv = new_lv();
        let f = folios(1, 1, false);
        lv.lock().add_folio(f[0]).unwrap();
        for _ in 0..accesses {
            f[0].mark_accessed();
        }
        let (out, _) = evict(lv, 1);
        let (x, s) = out[0];
        ready(x);
        let r = lv.lru_gen_refault(x, s, false).unwrap();
        assert_eq!((r.tier, r.workingset), (tier, false), "{accesses} accesses");
        // `refs - 1` in the refs bits, no REFERENCED (as lru_gen_refault leaves them).
        assert_eq!(x.lru_refs(), s.refs() - 1, "{accesses} accesses");
        assert!(
            !x.flags()
                .intersects(FolioFlags::REFERENCED | FolioFlags::WORKINGSET)
        );
        lv.lock().add_folio(x).unwrap();
        // Without REFERENCED the restored count is not an access count (folio_lru_refs
        // is 0), and the first access clears it: lru_gen_inc_refs starts over at one.
        assert_eq!(x.lru_refs_total(), 0);
        x.mark_accessed();
        assert_eq!(x.lru_refs_total(), 1, "{accesses} accesses");
        let (again, _) = evict(lv, 1);
        assert_eq!(again.len(), 1);
        // So the next eviction is in the first tier, whatever the last one was.
        let s2 = again[0].1;
        assert_eq!(s2.refs(), 1, "{accesses} accesses");
        assert_eq!(lru::lru_gen::lru_tier_from_refs(s2.refs(), false), 0);
    }
}

#[test]
fn a_refault_is_recent_for_exactly_max_nr_gens_generations() {
    let lv = new_lv();
    let f = folios(1, 1, false);
    lv.lock().add_folio(f[0]).unwrap();
    let (out, _) = evict(lv, 1);
    let (x, s) = out[0];
    let mut recent = Vec::new();
    for t in 0..6 {
        recent.push((max_seq(lv) - s.seq(), lv.lru_gen_test_recent(s).unwrap()));
        lv.age(100 + t).unwrap();
    }
    let distance0 = recent[0].0;
    let expect: Vec<(u64, bool)> = (0..6)
        .map(|i| (distance0 + i, distance0 + i < MAX_NR_GENS as u64))
        .collect();
    assert_eq!(recent, expect);
    assert!(recent.iter().any(|r| r.1) && recent.iter().any(|r| !r.1));
    // The first distance that is not recent any more: the refault counts nothing.
    ready(x);
    let r = lv.lru_gen_refault(x, s, true).unwrap();
    assert!(!r.recent && !r.activated);
    assert_eq!(file_tiers(lv.lrugen().refaulted()), [0; MAX_NR_TIERS]);
    assert_eq!(x.lru_refs(), 0);
    // A shadow from the future (a sequence past max_seq) within the window counts too:
    // the distance is absolute.
    let ahead = Shadow::pack(1, 0, (max_seq(lv) + 3) << lru::folio::LRU_REFS_WIDTH, false);
    assert_eq!(lv.lru_gen_test_recent(ahead), Some(true));
    let ahead = Shadow::pack(1, 0, (max_seq(lv) + 4) << lru::folio::LRU_REFS_WIDTH, false);
    assert_eq!(lv.lru_gen_test_recent(ahead), Some(false));
    // Another node of the same memcg is another lruvec.
    let other_node = Shadow::pack(1, 1, s.token(), false);
    assert_eq!(lv.lru_gen_test_recent(other_node), None);
}

#[test]
fn generations_map_onto_the_active_and_inactive_view() {
    let lv = new_lv();
    let max = max_seq(lv);
    {
        let g = lv.lock();
        let active: Vec<bool> = (0..MAX_NR_GENS).map(|r| g.lru_gen_is_active(r)).collect();
        let expect: Vec<bool> = (0..MAX_NR_GENS)
            .map(|r| r == lru_gen_from_seq(max) || r == lru_gen_from_seq(max - 1))
            .collect();
        assert_eq!(active, expect);
        assert_eq!(active.iter().filter(|a| **a).count(), 2);
    }
    let file = folios(3, 1, false);
    let anon = folios(2, 1, true);
    file[0].set(FolioFlags::ACTIVE);
    for &x in file.iter().chain(&anon) {
        lv.lock().add_folio(x).unwrap();
    }
    // Active file joins the youngest generation; anon the second youngest (both active);
    // inactive file an older one.
    let sizes = |lv: &Lv| LruList::ALL.map(|l| lv.lru_size(l));
    assert_eq!(sizes(lv), [0, 2, 2, 1, 0]);
    assert_eq!(file[0].lru_gen(), Some(lru_gen_from_seq(max)));
    assert_eq!(anon[0].lru_gen(), Some(lru_gen_from_seq(max - 1)));
    // Deactivating a folio of an active generation moves it to an inactive one; a folio
    // already in an inactive generation stays.
    assert!(lv.lock().deactivate(file[0]).unwrap());
    assert!(!lv.lock().deactivate(file[1]).unwrap());
    assert_eq!(sizes(lv), [0, 2, 3, 0, 0]);
    // Activating one moves it to the youngest (active) generation.
    assert!(lv.lock().activate(file[1]).unwrap());
    assert_eq!(file[1].lru_gen(), Some(lru_gen_from_seq(max)));
    assert_eq!(sizes(lv), [0, 2, 2, 1, 0]);
    // Aging turns the generation behind the new max_seq inactive: the anon folios there
    // count as inactive now.
    assert_eq!(lv.age(3), Ok(max + 1), "the new max_seq");
    assert_eq!(sizes(lv), [2, 0, 2, 1, 0]);
    // Taking a folio off a young generation keeps ACTIVE for its next add; off an old
    // one it does not.
    assert!(file[1].test_clear_lru());
    lv.lock().del_folio(file[1]).unwrap();
    assert!(file[1].test(FolioFlags::ACTIVE));
    assert!(file[2].test_clear_lru());
    lv.lock().del_folio(file[2]).unwrap();
    assert!(!file[2].test(FolioFlags::ACTIVE));
    assert_eq!(sizes(lv), [2, 0, 1, 0, 0]);
    assert_eq!(lv.nr_gen_pages(lru_gen_from_seq(max), FILE), 0);
    assert_eq!(
        lv.zone_lru_size(LruList::InactiveAnon, Zone::Normal),
        2,
        "per zone too"
    );
}

#[test]
fn classic_shadows_keep_the_age_modulo_the_token_width() {
    let lv = lruvec::<Ticket, LruGenFolioGrouped>(1, LruMode::Classic);
    let f = folios(2, 1, false);
    lv.lock().add_folio(f[1]).unwrap();
    // Far beyond what a shadow token holds (64 - 24 bits).
    let width = 64 - 24;
    lv.workingset_age_nonresident((1 << width) + 5);
    let s = lv.workingset_eviction(f[0]);
    assert_eq!(s.token(), 5, "the age wraps at the token width");
    assert_eq!(
        lv.nonresident_age(),
        (1 << width) + 6,
        "an eviction ages the clock"
    );
    assert_eq!((s.memcg_id(), s.node(), s.workingset()), (1, 0, false));
    // The distance is taken modulo the width too: one eviction ago, within the one
    // inactive file folio an anon refault could have displaced.
    assert_eq!(lv.workingset_test_recent(s, false), Some(true));
    assert_eq!(lv.workingset_test_recent(s, true), Some(false));
    let old = Shadow::pack(1, 0, 4, true);
    assert_eq!(lv.workingset_test_recent(old, false), Some(false));
}

#[test]
fn folios_someone_else_holds_are_skipped_and_keep_their_references() {
    let lv = new_lv();
    let f = folios(4, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    // f[0]: isolated by someone else (LRU already clear); f[1]: its last reference is
    // being dropped (refcount 0): both stay on their list, skipped.
    assert!(f[0].test_clear_lru());
    assert_eq!(f[1].put(), Ok(true));
    let refs = f.iter().map(|x| x.refcount()).collect::<Vec<_>>();
    assert_eq!(refs, [1, 0, 1, 1]);
    let mut out = Vec::new();
    let stats = lv
        .evict_folios(4, 0, 3, &(), |x, s| out.push((x.pfn(), s)))
        .unwrap();
    assert_eq!(stats.evicted, 2, "{stats:?}");
    assert!(stats.skipped >= 2, "{stats:?}");
    let mut pfns: Vec<u64> = out.iter().map(|o| o.0).collect();
    pfns.sort_unstable();
    assert_eq!(pfns, [f[2].pfn(), f[3].pfn()]);
    // The pin taken to look at f[0] was dropped again; f[1] was never pinned; the evicted
    // ones carry reclaim's reference to the caller.
    let refs = f.iter().map(|x| x.refcount()).collect::<Vec<_>>();
    assert_eq!(refs, [1, 0, 2, 2]);
    assert_eq!(lv.nr_folios(), 2);
    assert!(f[0].lru_gen().is_some() && f[1].lru_gen().is_some());
}

#[test]
fn an_evicted_folio_leaves_with_its_lru_state_cleared() {
    let lv = new_lv();
    let f = folios(3, 1, false);
    for &x in &f {
        x.set(FolioFlags::ACTIVE | FolioFlags::RECLAIM);
        lv.lock().add_folio(x).unwrap();
    }
    // Refs bits without REFERENCED (what a refault restores): reset on isolation.
    f[0].set_lru_refs(3);
    f[1].mark_accessed();
    f[1].mark_accessed();
    let (out, _) = evict(lv, 3);
    assert_eq!(out.len(), 3);
    for (x, _) in &out {
        assert!(!x.test_lru());
        assert_eq!(x.lru_gen(), None);
        assert!(
            !x.flags()
                .intersects(FolioFlags::ACTIVE | FolioFlags::REFERENCED | FolioFlags::RECLAIM),
            "{:?}",
            x.flags()
        );
    }
    assert_eq!(f[0].lru_refs(), 0, "refs without REFERENCED are dropped");
    assert_eq!(f[1].lru_refs(), 1, "REFERENCED keeps them");
    assert_eq!(lv.nr_folios(), 0);
    assert_eq!(LruList::ALL.map(|l| lv.lru_size(l)), [0; 5]);
}

#[test]
fn nothing_to_evict_does_nothing() {
    let lv = new_lv();
    let max = max_seq(lv);
    let stats = lv
        .evict_folios(10, 100, 1, &(), |_, _| panic!("nothing"))
        .unwrap();
    assert_eq!(stats, lru::EvictStats::default());
    assert_eq!(max_seq(lv), max, "no aging without pages");
    // Only pages of a type the swappiness excludes: nothing either.
    let a = folios(5, 1, true);
    for &x in &a {
        lv.lock().add_folio(x).unwrap();
    }
    let stats = lv
        .evict_folios(10, 0, 1, &(), |_, _| panic!("anon at 0"))
        .unwrap();
    assert_eq!(stats, lru::EvictStats::default());
    assert_eq!(max_seq(lv), max);
    assert_eq!(lv.nr_folios(), 5);
}

#[test]
fn the_other_type_is_scanned_when_the_first_has_nothing() {
    // No history: file is the type to scan at swappiness 100; with only anon present the
    // scan falls back to anon, and with only file at swappiness 200 back to file.
    for (anon, swappiness) in [(true, 100), (false, 200)] {
        let lv = new_lv();
        let f = folios(40, 1, anon);
        for &x in &f {
            lv.lock().add_folio(x).unwrap();
        }
        let mut n = 0;
        let stats = lv
            .evict_folios(40, swappiness, 1, &(), |x, _| {
                assert_eq!(x.is_file_lru(), !anon);
                n += 1;
            })
            .unwrap();
        assert_eq!((n, stats.evicted), (40, 40), "anon {anon}: {stats:?}");
        assert_eq!(lv.nr_folios(), 0);
    }
}

#[test]
fn eviction_stops_at_the_request_and_scans_in_batches() {
    let lv = new_lv();
    let f = folios(200, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    let (out, stats) = evict(lv, 70);
    assert_eq!((out.len(), stats.evicted), (70, 70));
    assert_eq!(stats.scanned, 70, "{stats:?}");
    assert_eq!(lv.nr_folios(), 130);
    // Oldest first: the folios added first went first (tail of the oldest generation).
    let mut pfns: Vec<u64> = out.iter().map(|o| o.0.pfn()).collect();
    pfns.sort_unstable();
    assert_eq!(pfns, (0..70).collect::<Vec<u64>>());
}

#[test]
fn folding_the_oldest_generation_protects_its_accessed_folios() {
    // Aging with MAX_NR_GENS generations folds the oldest into the next (inc_min_seq):
    // its folios are counted protected in their tier, as Linux counts them (which the
    // retiring generation's history then carries into the averages, halved) and lose
    // their access count; the working set being promoted lazily is not counted.
    let lv = new_lv();
    let f = folios(12, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    let old_gen = f[0].lru_gen().unwrap();
    for x in &f[..8] {
        x.mark_accessed();
        x.mark_accessed(); // refs 2: tier 1
    }
    for x in &f[8..10] {
        for _ in 0..5 {
            x.mark_accessed(); // every bit + WORKINGSET
        }
    }
    let mut t = 0;
    while lru_gen_from_seq(min_seq(lv, FILE)) != old_gen
        || lv.lock().nr_gens(FILE) < MAX_NR_GENS as u64
    {
        t += 1;
        lv.age(t).unwrap();
        assert!(t < 10);
    }
    assert!(f.iter().all(|x| x.lru_gen() == Some(old_gen)));
    let avg_total = |lv: &Lv| -> [u64; MAX_NR_TIERS] {
        core::array::from_fn(|t| lv.lrugen().avg_total()[FILE][t].load(Ordering::Relaxed))
    };
    assert_eq!(avg_total(lv), [0; MAX_NR_TIERS]);
    let min = min_seq(lv, FILE);
    lv.age(t + 1).unwrap();
    assert_eq!(min_seq(lv, FILE), min + 1);
    let next = lru_gen_from_seq(min + 1);
    assert!(f.iter().all(|x| x.lru_gen() == Some(next)));
    // 2 untouched folios in tier 0, 8 in tier 1, the 2 lazily promoted nowhere.
    assert_eq!(avg_total(lv), [1, 4, 0, 0]);
    assert_eq!(file_tiers(lv.lrugen().protected()), [0; MAX_NR_TIERS]);
    assert!(
        f.iter()
            .all(|x| x.lru_refs_total() == 0 && x.lru_refs() == 0)
    );
    assert!(f[8].test(FolioFlags::WORKINGSET));
    assert_eq!(lv.nr_gen_pages(old_gen, FILE), 0);
    assert_eq!(lv.nr_gen_pages(next, FILE), 12);
    assert_eq!(lv.lru_size(LruList::InactiveFile), 12);
}

#[test]
fn aging_is_due_when_the_oldest_eligible_type_is_down_to_min_nr_gens() {
    let lv = new_lv();
    const ANON: usize = 0;
    let state = |lv: &Lv| {
        let g = lv.lock();
        (
            (min_seq(lv, ANON), min_seq(lv, FILE), max_seq(lv)),
            [0, 100, lru::SWAPPINESS_ANON_ONLY].map(|sw| g.should_run_aging(sw)),
        )
    };
    assert_eq!(state(lv), ((0, 0, 3), [false; 3]));
    // An anon folio in generation 2 (the second youngest) keeps anon's oldest there.
    lv.lock().add_folio(folios(1, 1, true)[0]).unwrap();
    let retire = |lv: &Lv| {
        let _ = lv.lock().try_to_inc_min_seq();
    };
    retire(lv);
    assert_eq!(state(lv), ((2, 2, 3), [true; 3]));
    lv.age(1).unwrap();
    assert_eq!(state(lv), ((2, 2, 4), [false; 3]));
    // File retires to 3 (two generations left), anon stays at 2 (three left): due for
    // file-only reclaim, not for reclaim that may take anon.
    retire(lv);
    assert_eq!(state(lv), ((2, 3, 4), [true, false, false]));
    lv.age(2).unwrap();
    assert_eq!(state(lv), ((2, 3, 5), [false; 3]));
    retire(lv);
    assert_eq!(state(lv), ((2, 4, 5), [true, false, false]));
}

#[test]
fn a_scan_looks_at_each_folio_once_and_at_most_two_batches_per_lock_hold() {
    // Only folios someone else isolated: the scan skips each once and gives up (nothing to
    // evict), instead of going round the list.
    let lv = new_lv();
    let f = folios(10, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
        assert!(x.test_clear_lru());
    }
    let (out, stats) = evict(lv, 5);
    assert!(out.is_empty());
    assert_eq!((stats.scanned, stats.skipped), (10, 10), "{stats:?}");
    // 130 skipped ahead of 2 evictable: one lock hold scans 2 * 64 of them, the next
    // goes on from there and reaches the evictable ones.
    let lv = new_lv();
    let busy = folios(130, 1, false);
    for &x in &busy {
        lv.lock().add_folio(x).unwrap();
        assert!(x.test_clear_lru());
    }
    let ok = folios(2, 1, false);
    for &x in &ok {
        lv.lock().add_folio(x).unwrap();
    }
    let (out, stats) = evict(lv, 2);
    assert_eq!(out.len(), 2, "{stats:?}");
    assert_eq!((stats.scanned, stats.skipped), (132, 130), "{stats:?}");
    assert!(busy.iter().all(|x| x.refcount() == 1), "pins dropped");
}

#[test]
fn with_three_generations_protection_promotes_into_an_active_one() {
    let lv = new_lv();
    let f = folios(4, 1, false);
    for &x in &f[..3] {
        lv.lock().add_folio(x).unwrap();
    }
    assert!(f[..3].iter().all(|x| x.lru_gen() == Some(1)));
    let _ = lv.lock().try_to_inc_min_seq();
    assert_eq!((min_seq(lv, FILE), max_seq(lv)), (1, 3));
    // Generations 1..=3: the oldest (1) inactive, 2 and 3 active. A new inactive file folio
    // joins the oldest when only MIN_NR_GENS + 1 are left.
    lv.lock().add_folio(f[3]).unwrap();
    assert_eq!(f[3].lru_gen(), Some(1));
    assert_eq!(lv.lru_size(LruList::InactiveFile), 4);
    // The tail folio is the working set being promoted lazily: moved to generation 2,
    // which is active, so it moves to the active list of the active/inactive view.
    for _ in 0..5 {
        f[0].mark_accessed();
    }
    let (out, stats) = evict(lv, 1);
    assert_eq!((out.len(), stats.protected), (1, 1), "{stats:?}");
    assert_eq!(f[0].lru_gen(), Some(2));
    assert_eq!(
        LruList::ALL.map(|l| lv.lru_size(l)),
        [0, 0, 2, 1, 0],
        "(inactive anon, active anon, inactive file, active file, unevictable)"
    );
}

#[test]
fn every_zone_has_its_own_generation_lists() {
    let lv = new_lv();
    // Generation 0 becomes the youngest: the folios below go to its lists, the first of
    // which (anon, DMA) is the first MGLRU list slot.
    lv.age(1).unwrap();
    assert_eq!(lru_gen_from_seq(max_seq(lv)), 0);
    let zones = [Zone::Dma, Zone::Dma32, Zone::Normal, Zone::Movable];
    let f: Vec<&'static Folio> = zones
        .iter()
        .flat_map(|&z| {
            [true, false].map(|anon| {
                let x: &'static Folio = Box::leak(Box::new(Folio::new(1, 0, z).unwrap()));
                x.get();
                x.set_memcg_id(1).unwrap();
                if anon {
                    x.set(FolioFlags::SWAPBACKED);
                }
                x
            })
        })
        .collect();
    for &x in &f {
        x.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(x).unwrap();
    }
    let youngest = lru_gen_from_seq(max_seq(lv));
    for (i, &z) in zones.iter().enumerate() {
        for ty in 0..2 {
            let mut on = Vec::new();
            lv.lock()
                .for_each_in_gen(youngest, ty, z, |x| on.push(x as *const Folio));
            let expect = f[2 * i + ty] as *const Folio;
            assert_eq!(on, [expect], "zone {z:?} type {ty}");
        }
        assert_eq!(lv.zone_lru_size(LruList::ActiveAnon, z), 1);
        assert_eq!(lv.zone_lru_size(LruList::ActiveFile, z), 1);
    }
    // Everything, the DMA zone's anon folio included, comes off its own list.
    let (out, _) = lru_evict_all(lv);
    assert_eq!(out, f.len());
    assert_eq!(lv.nr_folios(), 0);
}

fn lru_evict_all(lv: &Lv) -> (usize, lru::EvictStats) {
    let mut n = 0;
    let stats = lv.evict_folios(100, 100, 5, &(), |_, _| n += 1).unwrap();
    (n, stats)
}

#[test]
fn the_preferred_type_keeps_being_scanned_while_it_has_folios() {
    // File is preferred (no refault history, swappiness 100). Its oldest generation runs
    // out after 5 folios: the next round goes on with file's next generation rather than
    // filling up with anon.
    let lv = new_lv();
    let oldest = folios(5, 1, false);
    for &x in &oldest {
        lv.lock().add_folio(x).unwrap();
    }
    // Anon's oldest generation has folios too.
    for &x in &folios(50, 1, true) {
        lv.lock().add_folio(x).unwrap();
    }
    let _ = lv.lock().try_to_inc_min_seq();
    lv.age(1).unwrap();
    let newer = folios(50, 1, false);
    for &x in &newer {
        lv.lock().add_folio(x).unwrap();
    }
    assert_ne!(oldest[0].lru_gen(), newer[0].lru_gen());
    let mut file = 0;
    let stats = lv
        .evict_folios(20, 100, 2, &(), |x, _| file += usize::from(x.is_file_lru()))
        .unwrap();
    assert_eq!((stats.evicted, file), (20, 20), "{stats:?}");
    assert!(oldest.iter().all(|x| !x.test_lru()));
}

/// Tier 1's refault history as the controller reads it: `(avg_refaulted, refaulted,
/// avg_total, protected, evicted)`, against tier 0's 100 refaults of 1000 evictions.
/// Returns whether a scan protects a folio of tier 1 (two accesses) and evicts a cold one.
fn tier1_protected(h: (u64, u64, u64, u64, u64)) -> bool {
    let lv = new_lv();
    let f = folios(2, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    f[0].mark_accessed();
    f[0].mark_accessed();
    // The folios' generation is the oldest: nothing retires (and folds the history) first.
    let _ = lv.lock().try_to_inc_min_seq();
    assert_eq!(f[0].lru_gen(), Some(lru_gen_from_seq(min_seq(lv, FILE))));
    let g = lv.lrugen();
    g.evicted()[0][FILE][0].store(1000, Ordering::Relaxed);
    g.refaulted()[0][FILE][0].store(100, Ordering::Relaxed);
    g.avg_refaulted()[FILE][1].store(h.0, Ordering::Relaxed);
    g.refaulted()[0][FILE][1].store(h.1, Ordering::Relaxed);
    g.avg_total()[FILE][1].store(h.2, Ordering::Relaxed);
    g.protected()[0][FILE][1].store(h.3, Ordering::Relaxed);
    g.evicted()[0][FILE][1].store(h.4, Ordering::Relaxed);
    let (out, stats) = evict(lv, 1);
    assert_eq!(out.len(), 1);
    let protected = stats.protected == 1;
    assert_eq!(std::ptr::eq(out[0].0, f[1]), protected, "{stats:?}");
    protected
}

#[test]
fn the_controller_weighs_refaults_against_evictions_and_protections() {
    // 70 refaults of 100 evictions, against tier 0's 10%: protected.
    assert!(tier1_protected((0, 70, 0, 0, 100)));
    // The same refaults over 1100 folios, counted as protected or in the average: not.
    assert!(!tier1_protected((0, 70, 0, 1000, 100)));
    assert!(!tier1_protected((0, 70, 1000, 0, 100)));
    assert!(!tier1_protected((0, 70, 0, 1100, 0)));
    // Refaults in the average count as much as recent ones.
    assert!(tier1_protected((35, 35, 0, 0, 100)));
    // Fewer than MIN_LRU_BATCH refaults in all: never protected.
    assert!(!tier1_protected((10, 10, 0, 0, 100)));
}

#[test]
fn a_lock_hold_scans_at_most_two_batches() {
    // 200 busy folios ahead of 2 evictable ones: 128 of them in the first lock hold, the
    // other 72 and the 2 evictable in the second.
    let lv = lruvec::<Counting, LruGenFolioGrouped>(1, LruMode::Mglru);
    let busy = folios(200, 1, false);
    for &x in &busy {
        lv.lock().add_folio(x).unwrap();
        assert!(x.test_clear_lru());
    }
    for &x in &folios(2, 1, false) {
        lv.lock().add_folio(x).unwrap();
    }
    // Their generation is the oldest: no round is spent retiring empty ones.
    let _ = lv.lock().try_to_inc_min_seq();
    assert_eq!(
        busy[0].lru_gen(),
        Some(lru_gen_from_seq(
            lv.lrugen().min_seq()[FILE].load(Ordering::Relaxed)
        ))
    );
    let before = lv.raw_lock().acquisitions();
    let mut n = 0;
    let stats = lv.evict_folios(2, 0, 1, &(), |_, _| n += 1).unwrap();
    assert_eq!(
        (n, stats.scanned, stats.skipped),
        (2, 202, 200),
        "{stats:?}"
    );
    assert_eq!(lv.raw_lock().acquisitions() - before, 2, "lock holds");
}
