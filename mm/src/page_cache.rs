//! A page-cache object's index -> folio / shadow table (`mapping->i_pages`).
//!
//! Linux keeps the page cache in an xarray: lookups walk it under RCU without the tree's
//! `xa_lock`, take a reference with `folio_try_get()` and re-check that the slot still holds
//! the same folio (`filemap_get_entry`); insertion, eviction (a folio replaced by its shadow
//! entry, `__filemap_remove_folio` + `workingset_eviction`) and truncation take `xa_lock`.
//! Objects here have a fixed size, so the table is a flat array of slots (one `AtomicU64`
//! per page) instead of a radix tree; the protocol is Linux's:
//!
//! - a slot holds 0 (empty), a folio's address (64-byte aligned, so its low bit is clear),
//!   or a shadow entry (an xarray value entry: low bit set, see [`lru::Shadow`]);
//! - the cache holds one reference on every folio it contains;
//! - readers never lock: [`PageCache::lookup`] pins a folio with `try_get` (which fails on a
//!   folio whose count reached 0 or was frozen by reclaim) and re-checks the slot;
//! - writers hold the object's `i_pages` lock ([`crate::lock_classes::PageCacheLock`]).
//!
//! Folios are `'static` (they live in the memmap), so a reader that loaded a stale address
//! can always look at it; `try_get` plus the re-check make sure it only *uses* a folio that
//! is still this slot's.
//!
//! Unsafe code here, and why: the page cache's slots hold folio addresses as integers (as
//! Linux's xarray holds `struct folio *`), turned back into `&'static Folio` by `unsafe fn
//! folio_at`.
#![allow(unsafe_code)]

use crate::lock_classes::PageCacheLock;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::SpinMutex;
use lru::{Folio, FolioRelease, Shadow};

/// What a slot holds, as a lookup saw it.
#[derive(Debug, Clone, Copy)]
pub enum Entry {
    /// Nothing was ever cached here, or it was truncated.
    Empty,
    /// A cached folio, pinned: the lookup took a reference the caller must drop.
    Folio(&'static Folio),
    /// The folio was evicted; the shadow remembers when.
    Shadow(Shadow),
}

/// Why an insertion failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// The index is past the end of the object.
    OutOfRange,
    /// Another folio got there first (the caller frees its own and retries the lookup).
    Exists,
}

/// The slot table of one object.
pub struct PageCache {
    slots: Box<[AtomicU64]>,
    /// `xa_lock`: serialises every change of a slot.
    lock: SpinMutex<PageCacheLock, ()>,
    /// Folios cached (`mapping->nrpages`), changed under the lock (a load and a store:
    /// see [`add_under_lock`]) and read without it.
    nr_folios: AtomicU64,
    /// Shadow entries held (the workingset's shadow count), as `nr_folios`.
    nr_shadows: AtomicU64,
}

/// `counter += delta` by the holder of the `i_pages` lock, the only writer: a load and a
/// store (Linux's plain `mapping->nrpages++` under `xa_lock`), no locked read-modify-write.
/// Lockless readers see the old or the new value.
fn add_under_lock(counter: &AtomicU64, delta: i64) {
    let v = counter.load(Ordering::Relaxed);
    counter.store(v.wrapping_add_signed(delta), Ordering::Relaxed);
}

impl core::fmt::Debug for PageCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageCache")
            .field("slots", &self.slots.len())
            .field("nr_folios", &self.nr_folios())
            .field("nr_shadows", &self.nr_shadows())
            .finish()
    }
}

fn encode_folio(folio: &'static Folio) -> u64 {
    core::ptr::from_ref(folio) as u64
}

fn decode(raw: u64) -> RawEntry {
    if raw == 0 {
        RawEntry::Empty
    } else if raw & 1 == 1 {
        RawEntry::Shadow(raw)
    } else {
        RawEntry::Folio(raw)
    }
}

enum RawEntry {
    Empty,
    Shadow(u64),
    Folio(u64),
}

/// # Safety
///
/// `raw` is a value a slot held as a folio address: the address of a `'static` folio.
unsafe fn folio_at(raw: u64) -> &'static Folio {
    // SAFETY: per the contract, a live `'static` `Folio`; folios are never freed.
    unsafe { &*(raw as *const Folio) }
}

impl PartialEq for Entry {
    /// Folios compare by identity.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Entry::Empty, Entry::Empty) => true,
            (Entry::Folio(a), Entry::Folio(b)) => core::ptr::eq(*a, *b),
            (Entry::Shadow(a), Entry::Shadow(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Entry {}

impl PageCache {
    /// An empty table for an object of `nr_pages` pages.
    #[must_use]
    pub fn new(nr_pages: usize) -> Self {
        PageCache {
            slots: (0..nr_pages).map(|_| AtomicU64::new(0)).collect(),
            lock: SpinMutex::new(()),
            nr_folios: AtomicU64::new(0),
            nr_shadows: AtomicU64::new(0),
        }
    }

    /// Pages the object has.
    #[must_use]
    pub fn nr_pages(&self) -> usize {
        self.slots.len()
    }

    /// Folios cached now.
    #[must_use]
    pub fn nr_folios(&self) -> u64 {
        self.nr_folios.load(Ordering::Relaxed)
    }

    /// Shadow entries held now.
    #[must_use]
    pub fn nr_shadows(&self) -> u64 {
        self.nr_shadows.load(Ordering::Relaxed)
    }

    /// `filemap_get_entry`: what slot `index` holds, without the lock. A folio comes back
    /// pinned (one reference the caller drops with `folio.put()`); `None` past the end.
    ///
    /// A folio that left the slot between the pin and the re-check is put again; if a
    /// truncation or eviction dropped the cache's reference meanwhile, that put is the last
    /// one, and `release` gets the folio on `cpu` (`folio_put()` → `__folio_put()`, as
    /// Linux's `filemap_get_entry` does).
    #[must_use]
    pub fn lookup<R: FolioRelease + ?Sized>(
        &self,
        index: u64,
        cpu: usize,
        release: &R,
    ) -> Option<Entry> {
        let slot = self.slots.get(usize::try_from(index).ok()?)?;
        loop {
            let raw = slot.load(Ordering::Acquire);
            match decode(raw) {
                RawEntry::Empty => return Some(Entry::Empty),
                RawEntry::Shadow(s) => {
                    return Some(Entry::Shadow(Shadow::from_raw(s).ok()?));
                }
                RawEntry::Folio(a) => {
                    // SAFETY: the slot held this folio address.
                    let folio = unsafe { folio_at(a) };
                    if !folio.try_get() {
                        // Being evicted or freed: the slot is about to change.
                        core::hint::spin_loop();
                        continue;
                    }
                    // Between the pin and the re-check: a truncation or an eviction may
                    // empty the slot and drop the cache's reference here.
                    ksync::race::window();
                    if slot.load(Ordering::Acquire) == raw {
                        return Some(Entry::Folio(folio));
                    }
                    // Removed (or evicted and reused) between our load and the pin: drop
                    // the pin and retry.
                    ksync::warn_on_once!(
                        lru::folio_put(release, cpu, folio).is_err(),
                        "filemap_get_entry: dropping its own pin underflowed the count"
                    );
                }
            }
        }
    }

    /// Whether slot `index` holds `folio` right now (a lockless snapshot). The fault path
    /// asks this under the PTE lock, after taking the folio's mapcount, before it maps a
    /// folio it found: truncation empties the slot first and reads the mapcount after (a
    /// full fence on both sides; see `vm/truncate.rs`), so a folio still in its slot here
    /// is one truncation will find mapped, and one no longer there must not be mapped
    /// (Linux checks `folio->mapping` under the folio lock for the same reason).
    #[must_use]
    pub fn holds(&self, index: u64, folio: &'static Folio) -> bool {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.slots.get(i))
            .is_some_and(|s| s.load(Ordering::Acquire) == encode_folio(folio))
    }

    /// `filemap_add_folio`: put `folio` at `index`, taking over one reference the caller
    /// took for the cache. Returns the shadow the slot held, if any (the refault check needs
    /// it); fails if another folio is already there.
    pub fn add(&self, index: u64, folio: &'static Folio) -> Result<Option<Shadow>, AddError> {
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| self.slots.get(i))
            .ok_or(AddError::OutOfRange)?;
        let _g = self.lock.lock();
        let old = slot.load(Ordering::Relaxed);
        let shadow = match decode(old) {
            RawEntry::Folio(_) => return Err(AddError::Exists),
            RawEntry::Empty => None,
            RawEntry::Shadow(s) => {
                add_under_lock(&self.nr_shadows, -1);
                Shadow::from_raw(s).ok()
            }
        };
        slot.store(encode_folio(folio), Ordering::Release);
        add_under_lock(&self.nr_folios, 1);
        Ok(shadow)
    }

    /// Eviction (`__filemap_remove_folio` + `workingset_eviction`): if slot `index` still
    /// holds `folio`, replace it with `shadow` (or empty it when `None`). The cache's
    /// reference passes to the caller. The caller froze the folio's count first, so no
    /// lookup can pin it meanwhile.
    #[must_use]
    pub fn replace_with_shadow(
        &self,
        index: u64,
        folio: &'static Folio,
        shadow: Option<Shadow>,
    ) -> bool {
        let Some(slot) = usize::try_from(index).ok().and_then(|i| self.slots.get(i)) else {
            return false;
        };
        let _g = self.lock.lock();
        if slot.load(Ordering::Relaxed) != encode_folio(folio) {
            return false;
        }
        match shadow {
            Some(s) => {
                slot.store(s.raw(), Ordering::Release);
                add_under_lock(&self.nr_shadows, 1);
            }
            None => slot.store(0, Ordering::Release),
        }
        add_under_lock(&self.nr_folios, -1);
        true
    }

    /// `truncate_inode_pages_range` from `start`: empties every slot at or after it and
    /// returns the folios removed, each with the cache's reference now the caller's.
    pub fn truncate(&self, start: u64) -> Vec<(u64, &'static Folio)> {
        let _g = self.lock.lock();
        // Sized once from the folio count, so the loop does not reallocate as it goes.
        let nr = usize::try_from(self.nr_folios.load(Ordering::Relaxed)).unwrap_or(0);
        let mut out = Vec::with_capacity(nr.min(self.slots.len()));
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        let mut shadows = 0;
        for (i, slot) in self.slots.iter().enumerate().skip(start) {
            // Slots change only under the lock we hold: a load and a store (lockless
            // readers re-check the slot after pinning, so they see the folio or 0).
            let raw = slot.load(Ordering::Relaxed);
            match decode(raw) {
                RawEntry::Empty => continue,
                RawEntry::Shadow(_) => shadows += 1,
                RawEntry::Folio(a) => {
                    // SAFETY: the slot held this folio address.
                    out.push((i as u64, unsafe { folio_at(a) }));
                }
            }
            slot.store(0, Ordering::Release);
        }
        add_under_lock(&self.nr_shadows, -shadows);
        add_under_lock(&self.nr_folios, -(out.len() as i64));
        out
    }

    /// Every slot that holds a folio or a shadow, under the lock (for the invariant
    /// checker): `(index, Some(folio) | None for a shadow)`.
    pub fn for_each(&self, mut f: impl FnMut(u64, Option<&'static Folio>)) {
        let _g = self.lock.lock();
        for (i, slot) in self.slots.iter().enumerate() {
            match decode(slot.load(Ordering::Acquire)) {
                RawEntry::Empty => {}
                RawEntry::Shadow(_) => f(i as u64, None),
                // SAFETY: the slot held this folio address.
                RawEntry::Folio(a) => f(i as u64, Some(unsafe { folio_at(a) })),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lru::Zone;

    fn folio(pfn: u64) -> &'static Folio {
        Box::leak(Box::new(Folio::new(pfn, 0, Zone::Normal).unwrap()))
    }

    /// `f` on a thread of its own, which must finish within `secs` seconds: a lookup's
    /// retry loop that never ends fails the test binary instead of hanging it (it exits
    /// the process: other tests reaching the same loop would never let it finish).
    fn bounded<T: Send + 'static>(
        what: &str,
        secs: u64,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(secs))
            .unwrap_or_else(|e| {
                if e == std::sync::mpsc::RecvTimeoutError::Disconnected {
                    // `f` panicked: its message is above.
                    panic!("{what} panicked");
                }
                // Straight to stderr: the harness's capture of `eprintln!` dies with the
                // exit.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "{what} did not finish within {secs} s: a loop that never ends"
                );
                std::process::exit(101)
            })
    }

    /// A lookup of a cached folio returns it, pinned once, without going round its retry
    /// loop forever; `holds` names exactly the folio in the slot.
    #[test]
    fn a_lookup_returns_at_once_with_one_pin() {
        let pc: &'static PageCache = Box::leak(Box::new(PageCache::new(2)));
        let f = folio(30);
        f.get();
        assert_eq!(pc.add(0, f), Ok(None));
        let got = bounded("lookup", 10, move || pc.lookup(0, 0, &()));
        assert_eq!(got, Some(Entry::Folio(f)));
        assert_eq!(f.refcount(), 2, "the cache's and the lookup's");
        f.put().unwrap();
        assert!(pc.holds(0, f));
        assert!(!pc.holds(0, folio(31)), "another folio");
        assert!(!pc.holds(1, f), "another slot");
        assert!(!pc.holds(9, f), "past the end");
    }

    /// Entries compare by kind, folios by identity (not by contents), shadows by value.
    #[test]
    fn entries_compare_folios_by_identity() {
        let (a, b) = (folio(20), folio(20));
        assert_eq!(Entry::Folio(a), Entry::Folio(a));
        assert_ne!(Entry::Folio(a), Entry::Folio(b), "two folios, equal fields");
        assert_ne!(Entry::Folio(a), Entry::Empty);
        assert_eq!(Entry::Empty, Entry::Empty);
        let s = Shadow::pack(3, 0, 0x1234, false);
        assert_eq!(Entry::Shadow(s), Entry::Shadow(s));
        assert_ne!(
            Entry::Shadow(s),
            Entry::Shadow(Shadow::pack(3, 0, 0x4321, false))
        );
        assert_ne!(Entry::Shadow(s), Entry::Empty);
    }

    #[test]
    fn add_lookup_evict_refault_truncate() {
        let pc = PageCache::new(4);
        assert_eq!(pc.lookup(0, 0, &()), Some(Entry::Empty));
        assert_eq!(pc.lookup(4, 0, &()), None);
        let f = folio(10);
        f.get(); // the cache's reference
        assert_eq!(pc.add(1, f), Ok(None));
        assert_eq!(pc.add(1, folio(11)), Err(AddError::Exists));
        assert_eq!(pc.add(9, f), Err(AddError::OutOfRange));
        match pc.lookup(1, 0, &()) {
            Some(Entry::Folio(g)) => assert!(core::ptr::eq(g, f)),
            other => panic!("{other:?}"),
        }
        assert_eq!(f.refcount(), 2, "the lookup pinned it");
        f.put().unwrap();
        // Eviction: freeze at the cache's one reference, replace with the shadow.
        assert!(f.ref_freeze(1));
        assert_eq!(pc.lookup(2, 0, &()), Some(Entry::Empty));
        let shadow = Shadow::pack(3, 0, 99, true);
        assert!(pc.replace_with_shadow(1, f, Some(shadow)));
        assert!(!pc.replace_with_shadow(1, f, None), "no longer there");
        assert_eq!(pc.lookup(1, 0, &()), Some(Entry::Shadow(shadow)));
        assert_eq!((pc.nr_folios(), pc.nr_shadows()), (0, 1));
        // Refault: the new folio takes the slot and gets the shadow back.
        let g = folio(12);
        g.get();
        assert_eq!(pc.add(1, g), Ok(Some(shadow)));
        assert_eq!((pc.nr_folios(), pc.nr_shadows()), (1, 0));
        let h = folio(13);
        h.get();
        pc.add(3, h).unwrap();
        let gone = pc.truncate(2);
        assert_eq!(gone.len(), 1);
        assert!(core::ptr::eq(gone[0].1, h) && gone[0].0 == 3);
        let mut seen = 0;
        pc.for_each(|i, f| {
            assert_eq!(i, 1);
            assert!(f.is_some());
            seen += 1;
        });
        assert_eq!(seen, 1);
    }

    /// A lookup racing with eviction either pins the folio (and eviction's freeze fails) or
    /// sees the shadow; it never returns a folio the slot no longer holds.
    #[test]
    fn lookup_races_with_eviction() {
        // Bounded: a lookup that spins on a slot eviction never changed fails the test.
        bounded(
            "2000 rounds of lookup against eviction",
            20,
            lookup_vs_eviction,
        );
    }

    fn lookup_vs_eviction() {
        let pc = std::sync::Arc::new(PageCache::new(1));
        for round in 0..2000u64 {
            let f = folio(100 + round);
            f.get();
            pc.add(0, f).unwrap();
            let pc2 = pc.clone();
            let reader = std::thread::spawn(move || match pc2.lookup(0, 0, &()).unwrap() {
                Entry::Folio(g) => {
                    let still = core::ptr::eq(g, f);
                    g.put().unwrap();
                    still
                }
                Entry::Shadow(_) | Entry::Empty => true,
            });
            // Evict unless the reader holds it.
            loop {
                if f.ref_freeze(1) {
                    assert!(pc.replace_with_shadow(0, f, Some(Shadow::pack(1, 0, round, false))));
                    break;
                }
                std::hint::spin_loop();
            }
            assert!(
                reader.join().unwrap(),
                "lookup returned a folio not in the slot"
            );
            assert!(matches!(pc.lookup(0, 0, &()), Some(Entry::Shadow(_))));
            // Clear the shadow for the next round.
            let _ = pc.truncate(0);
        }
    }

    /// Counts the folios whose last reference was dropped (`__folio_put`).
    #[derive(Default)]
    struct CountReleases(std::sync::atomic::AtomicU64);

    impl FolioRelease for CountReleases {
        fn release_folio(&self, _cpu: usize, folio: &'static Folio) {
            assert_eq!(folio.refcount(), 0, "released with references left");
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A lookup that pinned a folio a truncation then removed drops its pin; when the
    /// truncation's put of the cache's reference came first, the lookup's put is the last,
    /// and the folio must be released (off its LRU, uncharged, freed) by the lookup. A
    /// lookup that let that last reference go unreleased left a folio with no reference on
    /// an LRU list: the soak failure at 12 vCPUs. Race windows widened by `race_delay`.
    #[test]
    fn lookup_racing_with_truncation_releases_the_last_reference() {
        bounded("lookups against 3000 truncations", 60, lookup_vs_truncation);
    }

    fn lookup_vs_truncation() {
        const ROUNDS: u64 = 3000;
        ksync::race::set_delay(2000);
        let pc: &'static PageCache = Box::leak(Box::new(PageCache::new(1)));
        let rel: &'static CountReleases = Box::leak(Box::default());
        let f = folio(200);
        let stop: &'static std::sync::atomic::AtomicBool =
            Box::leak(Box::new(std::sync::atomic::AtomicBool::new(false)));
        let readers: Vec<_> = (0..2)
            .map(|cpu| {
                std::thread::spawn(move || {
                    let mut pinned = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(Entry::Folio(g)) = pc.lookup(0, cpu, rel) {
                            pinned += 1;
                            lru::folio_put(rel, cpu, g).unwrap();
                        }
                    }
                    pinned
                })
            })
            .collect();
        for round in 0..ROUNDS {
            // The cache's reference, then truncation drops it.
            f.get();
            pc.add(0, f).unwrap();
            ksync::race::window();
            let removed = pc.truncate(0);
            assert_eq!(removed.len(), 1);
            lru::folio_put(rel, 2, f).unwrap();
            // Whoever dropped the last reference released the folio, exactly once, before
            // the next round reuses it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while rel.0.load(Ordering::SeqCst) != round + 1 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "round {round}: refcount {} and {} releases: a last reference was dropped \
                     without releasing the folio",
                    f.refcount(),
                    rel.0.load(Ordering::SeqCst)
                );
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::Relaxed);
        let pinned: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
        ksync::race::set_delay(0);
        assert_eq!(rel.0.load(Ordering::SeqCst), ROUNDS);
        assert!(
            pinned > 0,
            "no lookup ever pinned the folio: the race was never run"
        );
    }
}
