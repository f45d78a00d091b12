//! Loom: the two page-cache protocols of the fault core (mm's `page_cache.rs`,
//! `vm/fault.rs` and `vm/truncate.rs`) against truncation, on the real [`Folio`]'s
//! reference count and mapcount. The page-cache slot is one loom atomic holding the folio
//! or nothing, loaded and stored with the orderings `PageCache` uses (the crate that holds
//! it does not build under loom).
//!
//! - **Lookup against truncation** (`filemap_get_entry`): a lookup loads the slot, pins
//!   the folio (`try_get`) and re-checks the slot; truncation empties the slot and drops
//!   the cache's reference. Whichever put is the last must release the folio, exactly
//!   once. The model of the lookup that let its last put go unreleased fails: that was the
//!   12-vCPU soak's unreferenced folio left on its LRU list.
//! - **A fault mapping against truncation**: the fault takes the folio's mapcount and then
//!   checks that the slot still holds it; truncation empties the slot and then reads the
//!   mapcount; a full fence stands between the two steps on each side. Either the fault
//!   backs off or truncation sees the mapping (and unmaps it): never a page mapped after
//!   truncation without truncation knowing. Without the fences (store buffering) loom
//!   finds the miss.
use super::loom_support;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
use loom::thread;
use loom_support::model;
use lru::{Folio, FolioRelease, Zone};

/// The slot holding the folio (`PageCache` stores the folio's address; any non-zero value
/// will do here).
const CACHED: u64 = 1;

/// Counts `__folio_put` calls.
#[derive(Default)]
struct Releases(AtomicUsize);

impl FolioRelease for Releases {
    fn release_folio(&self, _cpu: usize, folio: &'static Folio) {
        assert_eq!(folio.refcount(), 0, "released with references left");
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn cached_folio() -> &'static Folio {
    let f: &'static Folio = Box::leak(Box::new(Folio::new(1, 0, Zone::Normal).unwrap()));
    f.get(); // the cache's reference
    f
}

/// `PageCache::lookup`'s folio path, once: load, pin, re-check; a pin that outlived the
/// folio's place is dropped, released when it was the last (`releases_last`) or, as the
/// lookup did before the fix, just let go. Returns whether the lookup kept the folio.
fn lookup(slot: &AtomicU64, f: &'static Folio, rel: &Releases, releases_last: bool) -> bool {
    let raw = slot.load(Ordering::Acquire);
    if raw != CACHED || !f.try_get() {
        return false;
    }
    if slot.load(Ordering::Acquire) == raw {
        return true;
    }
    if releases_last {
        lru::folio_put(rel, 0, f).unwrap();
    } else {
        let _ = f.put();
    }
    false
}

fn lookup_against_truncation(releases_last: bool) {
    model(3, move || {
        let slot = Arc::new(AtomicU64::new(CACHED));
        let rel = Arc::new(Releases::default());
        let f = cached_folio();
        let reader = {
            let (slot, rel) = (slot.clone(), rel.clone());
            thread::spawn(move || {
                if lookup(&slot, f, &rel, releases_last) {
                    // The caller's own put, when done with the folio.
                    lru::folio_put(&*rel, 0, f).unwrap();
                }
            })
        };
        // `PageCache::truncate` (a load and a store under the cache's lock), then the
        // cache's reference.
        assert_eq!(slot.load(Ordering::Relaxed), CACHED);
        slot.store(0, Ordering::Release);
        lru::folio_put(&*rel, 1, f).unwrap();
        reader.join().unwrap();
        assert_eq!(f.refcount(), 0);
        assert_eq!(
            rel.0.load(Ordering::Relaxed),
            1,
            "the folio's last reference went without (or with more than one) release"
        );
    });
}

#[test]
fn a_lookup_racing_truncation_releases_a_last_reference() {
    lookup_against_truncation(true);
}

/// The lookup before the fix: loom finds the interleaving in which its put is the last
/// and nobody releases the folio.
#[test]
#[should_panic(expected = "without (or with more than one) release")]
fn a_lookup_that_lets_its_last_put_go_loses_the_folio() {
    lookup_against_truncation(false);
}

fn fault_against_truncation(fenced: bool) {
    model(3, move || {
        let slot = Arc::new(AtomicU64::new(CACHED));
        let f = cached_folio();
        let fault = {
            let slot = slot.clone();
            thread::spawn(move || {
                // `do_object_fault`: the mapcount first, then the check under the PTE lock
                // (a lock truncation does not take here).
                f.inc_mapcount();
                if fenced {
                    fence(Ordering::SeqCst);
                }
                if slot.load(Ordering::Acquire) == CACHED {
                    true // the PTE is set
                } else {
                    f.dec_mapcount().unwrap();
                    false // backed off
                }
            })
        };
        // `truncate_inode_pages`: empty the slot, then read the removed folio's mapcount.
        slot.store(0, Ordering::Release);
        if fenced {
            fence(Ordering::SeqCst);
        }
        let seen_mapped = f.mapcount() > 0;
        let mapped = fault.join().unwrap();
        assert!(
            !mapped || seen_mapped,
            "a fault mapped a folio truncation removed, and truncation did not see it"
        );
    });
}

#[test]
fn truncation_sees_every_mapping_a_racing_fault_makes() {
    fault_against_truncation(true);
}

/// Without the fences each side may read the other's old value (store buffering): loom
/// finds a fault that maps the folio while truncation reads it unmapped.
#[test]
#[should_panic(expected = "truncation did not see it")]
fn without_the_fences_truncation_misses_a_mapping() {
    fault_against_truncation(false);
}
