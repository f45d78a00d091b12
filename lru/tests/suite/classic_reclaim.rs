//! Classic (active/inactive) reclaim: deactivation balancing, second chance, classic
//! shadows and refault distance.

use crate::common;

use common::{Counting, folios, lruvec};
use ksync::Ticket;
use lru::{FolioFlags, LruError, LruGenFolioGrouped, LruList, LruMode, SWAPPINESS_ANON_ONLY};

type G = LruGenFolioGrouped;

#[test]
fn evicts_inactive_tail_and_gives_referenced_a_second_chance() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(6, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    // f[0] is the inactive tail; reference it so it survives one pass.
    f[0].set(FolioFlags::REFERENCED);
    let mut out = Vec::new();
    let s = lv
        .evict_folios(2, 0, 0, &(), |x, sh| out.push((x, sh)))
        .unwrap();
    assert_eq!(s.evicted, 2);
    assert_eq!(s.protected, 1);
    assert!(out.iter().all(|(x, _)| !std::ptr::eq(*x, f[0])));
    assert!(std::ptr::eq(out[0].0, f[1]) && std::ptr::eq(out[1].0, f[2]));
    assert!(f[0].test_lru() && !f[0].test(FolioFlags::REFERENCED));
    assert_eq!(lv.lru_size(LruList::InactiveFile), 4);
    assert_eq!(lv.nonresident_age(), 2, "each eviction ages the clock");
    assert!(out.iter().all(|(x, _)| !x.test_lru()));
}

#[test]
fn deactivates_when_inactive_is_low_and_honours_swappiness() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let file = folios(8, 1, false);
    let anon = folios(4, 1, true);
    for &x in file.iter().chain(anon.iter()) {
        x.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(x).unwrap();
    }
    assert_eq!(lv.lru_size(LruList::ActiveFile), 8);
    let mut out = Vec::new();
    let s = lv
        .evict_folios(3, 0, 0, &(), |x, sh| out.push((x, sh)))
        .unwrap();
    assert_eq!(s.evicted, 3);
    assert!(out.iter().all(|(x, _)| x.is_file_lru()));
    assert!(
        out.iter()
            .all(|(x, s)| s.workingset() && x.test(FolioFlags::WORKINGSET)),
        "deactivated folios are marked workingset"
    );
    assert_eq!(
        lv.lru_size(LruList::ActiveAnon),
        4,
        "swappiness 0 leaves anon alone"
    );
    let s = lv
        .evict_folios(100, SWAPPINESS_ANON_ONLY, 0, &(), |x, _| {
            assert!(!x.is_file_lru())
        })
        .unwrap();
    assert_eq!(s.evicted, 4);
    let s = lv.evict_folios(100, 60, 0, &(), |_, _| {}).unwrap();
    assert_eq!(s.evicted, 5);
    assert_eq!(lv.nr_folios(), 0);
}

#[test]
fn refault_distance_decides_activation() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let hot = folios(4, 1, false);
    for &x in &hot {
        x.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(x).unwrap();
    }
    let victim = folios(1, 1, false)[0];
    lv.lock().add_folio(victim).unwrap();
    let mut shadow = None;
    lv.evict_folios(1, 0, 0, &(), |x, s| {
        assert!(std::ptr::eq(x, victim));
        shadow = Some(s);
    })
    .unwrap();
    let shadow = shadow.unwrap();
    victim.reset_lru_state().unwrap();
    victim.set_memcg_id(1).unwrap();
    // Distance 1 (one eviction) <= 4 active folios: recent, activated.
    assert_eq!(lv.workingset_test_recent(shadow, true), Some(true));
    let r = lv.refault(victim, shadow, true).unwrap();
    assert!(r.recent && r.activated);
    assert!(victim.test(FolioFlags::ACTIVE));
    // Far in the past: more evictions/activations than the working set.
    victim.clear(FolioFlags::ACTIVE);
    lv.workingset_age_nonresident(100);
    assert_eq!(lv.workingset_test_recent(shadow, true), Some(false));
    let r = lv.refault(victim, shadow, true).unwrap();
    assert!(!r.recent && !r.activated);
    assert!(!victim.test(FolioFlags::ACTIVE));
    let other = lruvec::<Ticket, G>(2, LruMode::Classic);
    assert_eq!(other.workingset_test_recent(shadow, true), None);
    assert_eq!(
        other.refault(folios(1, 2, false)[0], shadow, true),
        Err(LruError::WrongLruvec)
    );
}

#[test]
fn classic_activation_ages_the_clock_but_aging_is_mglru_only() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(1, 1, false);
    lv.lock().add_folio(f[0]).unwrap();
    assert!(lv.lock().activate(f[0]).unwrap());
    assert_eq!(lv.nonresident_age(), 1);
    assert_eq!(lv.age(1), Err(LruError::MglruDisabled));
}

#[test]
fn rotations_and_working_set_refaults_are_noted_as_cost() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(40, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    // Three referenced folios at the inactive tail get a second chance: three rotations.
    for &x in &f[..3] {
        x.set(FolioFlags::REFERENCED);
    }
    let s = lv.evict_folios(2, 0, 0, &(), |_, _| {}).unwrap();
    assert_eq!((s.evicted, s.protected), (2, 3));
    assert_eq!(lv.costs(), (0, 3), "(anon_cost, file_cost)");
    // An anon folio that was in the working set (deactivated, so WORKINGSET) refaults
    // recently: one page of I/O, SWAP_CLUSTER_MAX (32) of anon cost. The sum (35) is above
    // a quarter of the 39 folios on the lists, so both costs halve.
    let a = folios(1, 1, true)[0];
    a.set(FolioFlags::ACTIVE);
    lv.lock().add_folio(a).unwrap();
    let mut shadow = None;
    lv.evict_folios(1, SWAPPINESS_ANON_ONLY, 0, &(), |_, s| shadow = Some(s))
        .unwrap();
    let shadow = shadow.unwrap();
    assert!(shadow.workingset());
    // The page is freed and a new one is read back in from swap.
    a.reset_lru_state().unwrap();
    a.set(FolioFlags::SWAPBACKED);
    a.set_memcg_id(1).unwrap();
    let r = lv.refault(a, shadow, true).unwrap();
    assert!(r.recent && r.workingset);
    assert_eq!(lv.costs(), (32 / 2, 3 / 2));
    // A refault that was not in the working set costs nothing.
    let b = folios(1, 1, true)[0];
    lv.lock().add_folio(b).unwrap();
    let mut shadow = None;
    lv.evict_folios(1, SWAPPINESS_ANON_ONLY, 0, &(), |_, s| shadow = Some(s))
        .unwrap();
    let shadow = shadow.unwrap();
    assert!(!shadow.workingset());
    b.reset_lru_state().unwrap();
    b.set(FolioFlags::SWAPBACKED);
    b.set_memcg_id(1).unwrap();
    lv.refault(b, shadow, true).unwrap();
    assert_eq!(lv.costs(), (16, 1));
}

#[test]
fn reclaim_costs_halve_once_they_pass_a_quarter_of_the_lru() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    for &x in &folios(40, 1, false) {
        lv.lock().add_folio(x).unwrap();
    }
    // A quarter of the 40 folios on the lists is 10: reaching it is fine.
    lv.lru_note_cost(true, 0, 10);
    assert_eq!(lv.costs(), (0, 10));
    // Passing it halves both costs.
    lv.lru_note_cost(true, 0, 1);
    assert_eq!(lv.costs(), (0, 5));
    lv.lru_note_cost(false, 0, 4);
    assert_eq!(lv.costs(), (4, 5));
    lv.lru_note_cost(false, 0, 2);
    assert_eq!(lv.costs(), (3, 2));
    // One page of I/O weighs SWAP_CLUSTER_MAX rotations.
    lv.lru_note_cost(false, 1, 0);
    assert_eq!(lv.costs(), ((3 + 32) / 2, 1));
    // Nothing noted for nothing.
    lv.lru_note_cost(true, 0, 0);
    assert_eq!(lv.costs(), (17, 1));
}

#[test]
fn the_refault_distance_is_weighed_against_the_lists_a_refault_competes_with() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let add = |n: usize, anon: bool, active: bool| {
        for &x in &folios(n, 1, anon) {
            if active {
                x.set(FolioFlags::ACTIVE);
            }
            lv.lock().add_folio(x).unwrap();
        }
    };
    add(2, false, true);
    add(3, true, true);
    add(5, false, false);
    add(7, true, false);
    let sizes = LruList::ALL.map(|l| lv.lru_size(l));
    assert_eq!(sizes, [7, 3, 5, 2, 0]);
    // A file refault competes with the active lists and inactive anon (2 + 3 + 7 = 12),
    // an anon refault with the active lists and inactive file (2 + 3 + 5 = 10).
    lv.workingset_age_nonresident(100);
    let now = lv.nonresident_age();
    let recent = |distance: u64, file: bool| {
        let shadow = lru::Shadow::pack(1, 0, now - distance, false);
        lv.workingset_test_recent(shadow, file).unwrap()
    };
    let file: Vec<bool> = (9..=13).map(|d| recent(d, true)).collect();
    let anon: Vec<bool> = (9..=13).map(|d| recent(d, false)).collect();
    assert_eq!(file, [true, true, true, true, false]);
    assert_eq!(anon, [true, true, false, false, false]);
    // Another memcg's or node's shadow is not this lruvec's.
    assert_eq!(
        lv.workingset_test_recent(lru::Shadow::pack(2, 0, now, false), true),
        None
    );
    assert_eq!(
        lv.workingset_test_recent(lru::Shadow::pack(1, 3, now, false), true),
        None
    );
}

#[test]
fn inactive_is_low_deactivates_half_the_difference_and_every_look_is_counted() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(8, 1, false);
    for &x in &f {
        x.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(x).unwrap();
    }
    // No inactive folio, 8 active: deactivate (8 - 0) / 2 = 4 from the active tail (the
    // oldest: f[0..4]), then take 3 of them from the inactive tail.
    let mut out = Vec::new();
    let s = lv.evict_folios(3, 0, 0, &(), |x, _| out.push(x)).unwrap();
    assert_eq!(
        (s.scanned, s.evicted, s.skipped, s.protected),
        (4 + 3, 3, 0, 0)
    );
    assert_eq!(
        (
            lv.lru_size(LruList::ActiveFile),
            lv.lru_size(LruList::InactiveFile)
        ),
        (4, 1)
    );
    assert!(
        out.iter()
            .all(|x| f[..4].iter().any(|y| std::ptr::eq(*x, *y)))
    );
    assert!(f[4..].iter().all(|x| x.test(FolioFlags::ACTIVE)));
    // 2 inactive, 8 active: (8 - 2) / 2 = 3 deactivated, which evens the lists at 5.
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    for (i, &x) in folios(10, 1, false).iter().enumerate() {
        if i >= 2 {
            x.set(FolioFlags::ACTIVE);
        }
        lv.lock().add_folio(x).unwrap();
    }
    let s = lv.evict_folios(1, 0, 0, &(), |_, _| {}).unwrap();
    assert_eq!((s.scanned, s.evicted), (3 + 1, 1));
    assert_eq!(
        (
            lv.lru_size(LruList::ActiveFile),
            lv.lru_size(LruList::InactiveFile)
        ),
        (5, 5 - 1)
    );
}

#[test]
fn folios_someone_else_holds_are_skipped_and_counted() {
    // An active folio being isolated elsewhere (LRU clear): deactivation passes it over,
    // rotating it to the active head, and takes the next.
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(4, 1, false);
    for &x in &f {
        x.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(x).unwrap();
    }
    assert!(f[0].test_clear_lru());
    let mut out = Vec::new();
    let s = lv.evict_folios(1, 0, 0, &(), |x, _| out.push(x)).unwrap();
    // Deactivation of (4 - 0) / 2 = 2 looks: f[0] skipped, f[1] deactivated and evicted.
    assert_eq!((s.scanned, s.skipped, s.evicted), (2 + 1, 1, 1));
    assert!(std::ptr::eq(out[0], f[1]));
    assert!(f[0].test(FolioFlags::ACTIVE) && !f[0].test_lru());
    assert_eq!(lv.lru_size(LruList::ActiveFile), 3);
    f[0].set(FolioFlags::LRU);

    // Inactive folios: one whose last reference is being dropped (try_get fails) and one
    // isolated elsewhere are passed over; the third is evicted.
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(3, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    assert_eq!(f[0].put(), Ok(true), "the last reference");
    assert!(f[1].test_clear_lru());
    let mut out = Vec::new();
    let s = lv.evict_folios(1, 0, 0, &(), |x, _| out.push(x)).unwrap();
    assert_eq!((s.scanned, s.skipped, s.evicted), (3, 2, 1));
    assert!(std::ptr::eq(out[0], f[2]));
    assert_eq!(
        f[1].refcount(),
        1,
        "the pin taken to look at it was dropped"
    );
    assert_eq!(lv.lru_size(LruList::InactiveFile), 2);
}

#[test]
fn a_run_of_referenced_folios_does_not_keep_a_small_reclaim_from_evicting() {
    use lru::vmscan::SWAP_CLUSTER_MAX;
    let n = 2 * SWAP_CLUSTER_MAX;
    let lv = lruvec::<Counting, G>(1, LruMode::Classic);
    let f = folios(n, 1, false);
    for &x in &f {
        x.set(FolioFlags::REFERENCED);
        lv.lock().add_folio(x).unwrap();
    }
    let holds = lv.raw_lock().acquisitions();
    // Every folio gets its second chance (to the inactive head, REFERENCED cleared), then
    // the first of them, back at the tail, is evicted.
    let mut out = Vec::new();
    let s = lv.evict_folios(1, 0, 0, &(), |x, _| out.push(x)).unwrap();
    assert_eq!((s.scanned, s.protected, s.evicted), (n + 1, n, 1));
    assert!(std::ptr::eq(out[0], f[0]));
    // lru_lock is dropped after each batch of looks, a batch beyond the one folio wanted
    // (1 + SWAP_CLUSTER_MAX looks per hold).
    assert_eq!(
        lv.raw_lock().acquisitions() - holds,
        (n + 1).div_ceil(1 + SWAP_CLUSTER_MAX)
    );
}

#[test]
fn file_then_anon_takes_only_what_is_still_wanted() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let file = folios(2, 1, false);
    let anon = folios(10, 1, true);
    for &x in file.iter().chain(anon.iter()) {
        lv.lock().add_folio(x).unwrap();
    }
    // Swappiness between 0 and max: file first (both of its folios), then anon for the one
    // still wanted.
    let mut out = Vec::new();
    let s = lv.evict_folios(3, 60, 0, &(), |x, _| out.push(x)).unwrap();
    assert_eq!(s.evicted, 3);
    assert_eq!(out.iter().filter(|x| x.is_file_lru()).count(), 2);
    assert_eq!(lv.lru_size(LruList::InactiveAnon), 9);
}

/// A lruvec whose memcg has a parent: costs noted on it go up to the parent's lruvec.
#[repr(C)]
struct Nested {
    lruvec: lru::Lruvec<Nested>,
    zone: lru::lruvec::LruZoneSize,
    parent: Option<&'static lru::Lruvec<Nested>>,
}

// SAFETY: `lruvec` is built in place by `nested` below (the struct is boxed with the lruvec
// in it before any lruvec method runs), at the offset `offset_of!` gives.
unsafe impl lru::LruvecHost for Nested {
    type Family = Ticket;
    type Gen = G;
    type Node = lru::PgData<Self>;
    const LRUVEC_OFFSET: usize = std::mem::offset_of!(Nested, lruvec);

    fn lru_zone_size(&self) -> &lru::lruvec::LruZoneSize {
        &self.zone
    }

    fn parent_lruvec(&self) -> Option<&lru::Lruvec<Self>> {
        self.parent
    }
}

fn nested(
    pgdat: &'static lru::PgData<Nested>,
    memcg: u16,
    parent: Option<&'static lru::Lruvec<Nested>>,
) -> &'static lru::Lruvec<Nested> {
    let host: &'static Nested = Box::leak(Box::new(Nested {
        // SAFETY: moved into the boxed `Nested` before it is used (see the impl above).
        lruvec: unsafe {
            lru::Lruvec::new(memcg, pgdat, LruMode::Classic, lru::LruvecLock::Own, 0)
        },
        zone: lru::lruvec::new_lru_zone_size(),
        parent,
    }));
    &host.lruvec
}

#[test]
fn rotation_costs_go_to_every_ancestor_by_type() {
    let pgdat = common::pgdat::<Nested>();
    let root = nested(pgdat, 1, None);
    let parent = nested(pgdat, 2, Some(root));
    let child = nested(pgdat, 3, Some(parent));
    // Enough folios on the ancestors that the costs noted stay below a quarter of their
    // lists (no halving).
    for (lv, id) in [(root, 1), (parent, 2)] {
        for &x in &folios(100, id, false) {
            lv.lock().add_folio(x).unwrap();
        }
    }
    let file = folios(40, 3, false);
    let anon = folios(40, 3, true);
    for &x in file.iter().chain(anon.iter()) {
        child.lock().add_folio(x).unwrap();
    }
    // Three referenced file folios and two anon ones at the inactive tails: second chances,
    // noted as file and anon rotations on the child and each ancestor.
    for &x in file[..3].iter().chain(anon[..2].iter()) {
        x.set(FolioFlags::REFERENCED);
    }
    let s = child.evict_folios(2, 0, 0, &(), |_, _| {}).unwrap();
    assert_eq!((s.evicted, s.protected), (2, 3));
    let s = child
        .evict_folios(2, SWAPPINESS_ANON_ONLY, 0, &(), |_, _| {})
        .unwrap();
    assert_eq!((s.evicted, s.protected), (2, 2));
    for lv in [child, parent, root] {
        assert_eq!(lv.costs(), (2, 3), "lruvec of memcg {}", lv.memcg_id());
    }
}

#[test]
fn reclaim_that_finds_only_folios_being_freed_stops_at_its_round_bound() {
    // Every inactive folio is being freed (its last reference dropped while still on the
    // LRU), so each round looks at all of them, takes none and makes "progress" only in
    // `scanned`: the loop ends at its bound, 8 + 4 * (total / SWAP_CLUSTER_MAX + 1) +
    // nr_to_reclaim rounds, each looking want + SWAP_CLUSTER_MAX times (a folio passed over
    // goes to the list head, so a short list is looked at again, as in Linux's
    // isolate_lru_folios).
    for (n, nr_to_reclaim) in [(10usize, 5usize), (40, 3), (70, 1)] {
        let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
        let f = folios(n, 1, false);
        for &x in &f {
            lv.lock().add_folio(x).unwrap();
        }
        for &x in &f {
            assert_eq!(x.put(), Ok(true), "the last reference");
        }
        let s = lv
            .evict_folios(nr_to_reclaim, 0, 0, &(), |_, _| {})
            .unwrap();
        let rounds = 8 + 4 * (n / lru::vmscan::SWAP_CLUSTER_MAX + 1) + nr_to_reclaim;
        let per_round = nr_to_reclaim + lru::vmscan::SWAP_CLUSTER_MAX;
        assert_eq!(s.evicted, 0);
        assert_eq!(
            (s.scanned, s.skipped),
            (rounds * per_round, rounds * per_round),
            "n {n}, nr_to_reclaim {nr_to_reclaim}"
        );
        assert_eq!(lv.lru_size(LruList::InactiveFile), n);
    }
}

#[test]
fn a_request_above_a_batch_takes_what_is_left_in_the_next_round() {
    // 100 inactive file folios, 40 wanted: the first round takes a batch of
    // SWAP_CLUSTER_MAX (32), the second only the 8 still wanted.
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(100, 1, false);
    for &x in &f {
        lv.lock().add_folio(x).unwrap();
    }
    let mut out = Vec::new();
    let s = lv.evict_folios(40, 0, 0, &(), |x, _| out.push(x)).unwrap();
    assert_eq!(s.evicted, 40);
    assert_eq!(out.len(), 40);
    assert_eq!(s.scanned, 40, "every folio looked at was taken");
    assert_eq!(lv.lru_size(LruList::InactiveFile), 60);
    assert!(
        out.iter().zip(&f).all(|(a, b)| std::ptr::eq(*a, *b)),
        "tail first"
    );
}

/// A folio whose last reference is being dropped (count zero, its releaser not yet past
/// TestClearLRU) is its releaser's: deactivation pins each folio before it clears the LRU
/// flag (`isolate_lru_folios()`), so it passes this one over and leaves it on the active
/// list with its flag. Clearing the flag without a pin made the releaser skip the unlink
/// and free a frame that deactivation then put back on a list.
#[test]
fn deactivation_leaves_a_folio_being_released_to_its_releaser() {
    let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
    let f = folios(4, 1, false);
    for &x in &f {
        x.set(FolioFlags::ACTIVE);
        lv.lock().add_folio(x).unwrap();
    }
    // f[0] is the active tail; its last reference goes: the release has begun.
    assert_eq!(f[0].put(), Ok(true));
    let mut evicted = Vec::new();
    let s = lv
        .evict_folios(1, 0, 0, &(), |x, _| evicted.push(x))
        .unwrap();
    assert_eq!(s.evicted, 1);
    assert!(f[0].test_lru() && f[0].test(FolioFlags::ACTIVE));
    // The releaser goes on: TestClearLRU, unlink.
    assert!(f[0].test_clear_lru());
    lv.lock().del_folio(f[0]).unwrap();
    for &x in &f[1..] {
        let pinned = evicted.iter().any(|e| std::ptr::eq(*e, x));
        assert_eq!(
            x.refcount(),
            1 + u32::from(pinned),
            "deactivation dropped the pins it took"
        );
    }
}
