//! Finite private caches with MESI states: which vCPU holds each line, and what an access
//! costs in transactions between caches.
//!
//! Each vCPU has one set-associative cache (by default 1 MiB, 8 ways, of 64-byte lines: the
//! size of a server core's private L2). An entry is one `AtomicU64`: the line number shifted
//! left by two and the state in the low two bits (invalid, shared, exclusive, modified), so
//! an empty entry is 0. A vCPU holds a line when one of the ways of the line's set in its
//! cache carries the line in a valid state; there is no separate directory, so an eviction
//! (least recently used way of the set) drops a copy silently, as a clean or written-back
//! line leaves a real L2. Finite caches matter: with unlimited ones, a line another vCPU
//! wrote long ago (a page frame reused across CPUs, a structure set up by an earlier run)
//! would count as a transfer forever.
//!
//! An access by vCPU `v`:
//!
//! - hits when `v` holds the line in a state that allows it (any valid state for a load,
//!   exclusive or modified for a store; a store to an exclusive line makes it modified):
//!   no entry of another vCPU is read or written;
//! - a load that misses takes the line from the vCPU that holds it modified, a *read HITM*
//!   (the holder keeps a shared copy), or shares it clean (exclusive when nobody else has
//!   it);
//! - a store that misses takes the line from a modified holder, an *RFO HITM*, and
//!   invalidates every other copy; a store to a line `v` holds shared, or that misses while
//!   others hold it clean, only invalidates: an *upgrade*. Each copy invalidated counts as
//!   an invalidation.
//!
//! A locked read-modify-write is one store for this model (the plugin passes its load as a
//! store): on a real CPU it is one RFO, not a read followed by an upgrade.
//!
//! Under multi-threaded TCG each vCPU runs on its own host thread and calls [`Caches::access`]
//! for its own accesses, right after QEMU performed them. A hit takes no lock and writes no
//! entry of another vCPU (an exclusive line turning modified is a compare-and-swap on the
//! vCPU's own entry). Every other access takes the stripe lock of its line, re-reads its own
//! entry and changes the others' with compare-and-swap: without that, two vCPUs upgrading
//! one line at the same instant each invalidated the other and then both marked their own
//! copy modified, and from then on the line never moved again in the model (a host test
//! with two threads passing a counter counted 1 transfer in 20,000 hand-overs). The order
//! of two accesses the host performs at the same instant is the order their callbacks take
//! the lock, which may differ from the order memory saw them; each hand-over is still seen.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Stripe locks of the transaction path: lines hash to one of these.
const STRIPES: usize = 256;

/// A value alone on a 128-byte pair of host cache lines.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Padded<T>(pub T);

/// The state of a line in one cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not held.
    Invalid = 0,
    /// Held clean, maybe by others too.
    Shared = 1,
    /// Held clean by this cache alone.
    Exclusive = 2,
    /// Held written, by this cache alone.
    Modified = 3,
}

impl State {
    fn of(entry: u64) -> State {
        match entry & 3 {
            0 => State::Invalid,
            1 => State::Shared,
            2 => State::Exclusive,
            _ => State::Modified,
        }
    }
}

/// A transaction between caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A load of a line another vCPU held modified.
    ReadHitm,
    /// A store (or locked read-modify-write) to a line another vCPU held modified.
    RfoHitm,
    /// A store to a line others held clean: invalidations only.
    Upgrade,
}

/// What one access cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The transaction, if the access made one.
    pub kind: Option<Kind>,
    /// Copies invalidated in other caches.
    pub invalidations: u32,
    /// The vCPU that supplied the modified line (HITM kinds).
    pub from: Option<u32>,
    /// Bitmask of the other vCPUs the transaction involved (the supplier and every vCPU
    /// whose copy was invalidated or downgraded), at most 64 vCPUs.
    pub peers: u64,
}

/// Which other vCPUs held a line, by the state they held it in (bit `u` for vCPU `u`).
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    shared: u64,
    exclusive: u64,
    modified: u64,
}

/// Geometry of every vCPU's cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per coherence unit: 64 (a line), or 128 (a line with its adjacent-line
    /// prefetcher's buddy, Intel's spatial prefetcher, modelled as one unit).
    pub line_bytes: u64,
    /// Capacity of each private cache in KiB.
    pub cache_kib: u64,
    /// Ways per set.
    pub ways: usize,
}

impl Geometry {
    /// Why this geometry cannot be modelled, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.line_bytes != 64 && self.line_bytes != 128 {
            return Err(format!(
                "line size {} is neither 64 nor 128 bytes",
                self.line_bytes
            ));
        }
        if self.ways == 0 || self.ways > 32 {
            return Err(format!("{} ways: give 1 to 32", self.ways));
        }
        let lines = self.cache_kib * 1024 / self.line_bytes;
        if lines < self.ways as u64 || !(lines / self.ways as u64).is_power_of_two() {
            return Err(format!(
                "a {} KiB cache of {}-byte lines in {} ways has no power-of-two set count",
                self.cache_kib, self.line_bytes, self.ways
            ));
        }
        if self.cache_kib > 64 * 1024 {
            return Err(format!("{} KiB per cache: at most 65536", self.cache_kib));
        }
        Ok(())
    }

    fn sets(&self) -> usize {
        (self.cache_kib * 1024 / self.line_bytes) as usize / self.ways
    }
}

/// Every vCPU's private cache.
pub struct Caches {
    geometry: Geometry,
    shift: u32,
    sets: usize,
    vcpus: usize,
    /// `[vcpu][set][way]`: line << 2 | state.
    tags: Vec<AtomicU64>,
    /// `[vcpu][set][way]`: the owner's access count at the entry's last use (LRU).
    used: Vec<AtomicU32>,
    /// Per vCPU: accesses so far (the LRU clock; only the owner writes it), each on its own
    /// host cache line pair: vCPU threads write theirs on every access, and clocks side by
    /// side made the model itself a false-sharing benchmark (2 vCPUs ran 75x slower under
    /// the plugin than without it, 1 vCPU 15x).
    clock: Vec<Padded<AtomicU32>>,
    /// Taken by the transaction path of every line that hashes to it.
    stripes: Vec<Padded<Mutex<()>>>,
}

impl Caches {
    /// Empty caches for `vcpus` vCPUs (at most 64).
    pub fn new(geometry: Geometry, vcpus: usize) -> Result<Caches, String> {
        geometry.check()?;
        if vcpus == 0 || vcpus > 64 {
            return Err(format!("{vcpus} vCPUs: the model tracks 1 to 64"));
        }
        let sets = geometry.sets();
        let n = vcpus * sets * geometry.ways;
        Ok(Caches {
            geometry,
            shift: geometry.line_bytes.trailing_zeros(),
            sets,
            vcpus,
            tags: (0..n).map(|_| AtomicU64::new(0)).collect(),
            used: (0..n).map(|_| AtomicU32::new(0)).collect(),
            clock: (0..vcpus).map(|_| Padded(AtomicU32::new(0))).collect(),
            stripes: (0..STRIPES).map(|_| Padded(Mutex::new(()))).collect(),
        })
    }

    /// The geometry.
    #[must_use]
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The coherence unit (line number) of physical address `pa`.
    #[must_use]
    pub fn line_of(&self, pa: u64) -> u64 {
        pa >> self.shift
    }

    /// Drops every copy (a run starts with cold caches).
    pub fn clear(&self) {
        for t in &self.tags {
            t.store(0, Relaxed);
        }
        for u in &self.used {
            u.store(0, Relaxed);
        }
    }

    fn base(&self, vcpu: usize, line: u64) -> usize {
        (vcpu * self.sets + (line as usize & (self.sets - 1))) * self.geometry.ways
    }

    /// The state of `line` in `vcpu`'s cache.
    #[must_use]
    pub fn state(&self, vcpu: usize, line: u64) -> State {
        let b = self.base(vcpu, line);
        self.tags[b..b + self.geometry.ways]
            .iter()
            .map(|t| t.load(Relaxed))
            .find(|&e| e >> 2 == line && State::of(e) != State::Invalid)
            .map_or(State::Invalid, State::of)
    }

    /// Vcpu `vcpu` loads (`store` false) or stores to physical address `pa`.
    ///
    /// # Panics
    ///
    /// If `vcpu` is not below the vCPU count the caches were made for.
    pub fn access(&self, vcpu: usize, pa: u64, store: bool) -> Outcome {
        assert!(vcpu < self.vcpus, "vcpu {vcpu} of {}", self.vcpus);
        let line = self.line_of(pa);
        let now = self.clock[vcpu].0.load(Relaxed).wrapping_add(1);
        self.clock[vcpu].0.store(now, Relaxed);
        let b = self.base(vcpu, line);
        // The hit path: no lock, and no write to another vCPU's entries.
        if let Some((i, e)) = self.find(b, line) {
            match (State::of(e), store) {
                (_, false) | (State::Modified, true) => {
                    self.used[i].store(now, Relaxed);
                    return Outcome::default();
                }
                (State::Exclusive, true) => {
                    let m = line << 2 | State::Modified as u64;
                    if self.tags[i]
                        .compare_exchange(e, m, Relaxed, Relaxed)
                        .is_ok()
                    {
                        self.used[i].store(now, Relaxed);
                        return Outcome::default();
                    }
                }
                _ => {}
            }
        }
        // The transaction path, under the line's stripe lock: every change of another
        // vCPU's entry for this line happens under it.
        let _line = self.stripes[(line as usize) % self.stripes.len()]
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut out = Outcome::default();
        let own = self.find(b, line);
        if let Some((i, e)) = own {
            self.used[i].store(now, Relaxed);
            if !store || State::of(e) == State::Modified {
                return out;
            }
        }
        let seen = if store {
            self.others(vcpu, line, |_| Some(State::Invalid))
        } else {
            self.others(vcpu, line, |s| match s {
                State::Modified | State::Exclusive => Some(State::Shared),
                _ => None,
            })
        };
        let any = seen.shared | seen.exclusive | seen.modified;
        if seen.modified != 0 {
            out.kind = Some(if store { Kind::RfoHitm } else { Kind::ReadHitm });
            out.from = Some(seen.modified.trailing_zeros());
            out.peers = seen.modified;
        }
        if store {
            out.invalidations = any.count_ones();
            out.peers = any;
            if out.kind.is_none() && any != 0 {
                out.kind = Some(Kind::Upgrade);
            }
        }
        let state = match (store, any != 0) {
            (true, _) => State::Modified,
            (false, true) => State::Shared,
            (false, false) => State::Exclusive,
        };
        match own {
            // A store to a shared (or, after a lost race, exclusive) copy: an upgrade.
            Some((i, _)) => self.tags[i].store(line << 2 | state as u64, Relaxed),
            None => self.install(b, line, state, now),
        }
        out
    }

    /// The way of the set at `b` holding `line` in a valid state, with its entry.
    fn find(&self, b: usize, line: u64) -> Option<(usize, u64)> {
        (b..b + self.geometry.ways)
            .map(|i| (i, self.tags[i].load(Relaxed)))
            .find(|&(_, e)| e >> 2 == line && State::of(e) != State::Invalid)
    }

    /// Changes every other vCPU's copy of `line` to what `next` says for its state (`None`:
    /// leave it) and returns which vCPUs held it in which state. Called under the line's
    /// stripe lock, so the only change another vCPU can make to its own copy meanwhile is
    /// the lock-free exclusive-to-modified one (or evicting it): the swap then fails and is
    /// retried with the state it found.
    fn others(&self, vcpu: usize, line: u64, next: impl Fn(State) -> Option<State>) -> Seen {
        let mut seen = Seen::default();
        for u in (0..self.vcpus).filter(|&u| u != vcpu) {
            let Some((i, mut e)) = self.find(self.base(u, line), line) else {
                continue;
            };
            loop {
                let state = State::of(e);
                if let Some(new) = next(state) {
                    let value = if new == State::Invalid {
                        0
                    } else {
                        line << 2 | new as u64
                    };
                    match self.tags[i].compare_exchange(e, value, Relaxed, Relaxed) {
                        Ok(_) => {}
                        Err(now) if now >> 2 == line && State::of(now) != State::Invalid => {
                            e = now;
                            continue;
                        }
                        // Evicted meanwhile: it no longer holds the line.
                        Err(_) => break,
                    }
                }
                let bit = 1u64 << u;
                match state {
                    State::Shared => seen.shared |= bit,
                    State::Exclusive => seen.exclusive |= bit,
                    State::Modified => seen.modified |= bit,
                    State::Invalid => {}
                }
                break;
            }
        }
        seen
    }

    /// Puts `line` in `state` into the set at `b`: an empty way, else the least recently
    /// used one.
    fn install(&self, b: usize, line: u64, state: State, now: u32) {
        let ways = self.geometry.ways;
        let victim = (b..b + ways)
            .find(|&i| State::of(self.tags[i].load(Relaxed)) == State::Invalid)
            .unwrap_or_else(|| {
                (b..b + ways)
                    .max_by_key(|&i| now.wrapping_sub(self.used[i].load(Relaxed)))
                    .unwrap_or(b)
            });
        self.tags[victim].store(line << 2 | state as u64, Relaxed);
        self.used[victim].store(now, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caches(line_bytes: u64, cache_kib: u64, ways: usize, vcpus: usize) -> Caches {
        Caches::new(
            Geometry {
                line_bytes,
                cache_kib,
                ways,
            },
            vcpus,
        )
        .unwrap()
    }

    #[test]
    fn a_line_passed_between_two_writers_is_one_rfo_hitm_per_handoff() {
        let c = caches(64, 64, 4, 2);
        assert_eq!(c.access(0, 0x1000, true), Outcome::default());
        for i in 0..10 {
            let (v, u) = (1 - i % 2, i % 2);
            let o = c.access(v, 0x1008, true);
            assert_eq!(o.kind, Some(Kind::RfoHitm), "handoff {i}");
            assert_eq!(o.from, Some(u as u32));
            assert_eq!(o.invalidations, 1);
            assert_eq!(c.state(u, 0x1000 >> 6), State::Invalid);
            assert_eq!(c.state(v, 0x1000 >> 6), State::Modified);
            assert_eq!(c.access(v, 0x1010, true), Outcome::default());
        }
    }

    #[test]
    fn a_reader_of_a_written_line_is_a_read_hitm_and_the_writer_then_upgrades() {
        let c = caches(64, 64, 4, 3);
        c.access(0, 0x40, true);
        let r = c.access(1, 0x48, false);
        assert_eq!((r.kind, r.from), (Some(Kind::ReadHitm), Some(0)));
        assert_eq!(c.state(0, 1), State::Shared);
        assert_eq!(c.access(2, 0x40, false).kind, None, "a clean shared read");
        let w = c.access(0, 0x40, true);
        assert_eq!((w.kind, w.invalidations), (Some(Kind::Upgrade), 2));
        assert_eq!(w.peers, 0b110);
    }

    #[test]
    fn a_lone_reader_gets_it_exclusive_and_writes_silently() {
        let c = caches(64, 64, 4, 2);
        assert_eq!(c.access(0, 0x80, false), Outcome::default());
        assert_eq!(c.state(0, 2), State::Exclusive);
        assert_eq!(c.access(0, 0x80, true), Outcome::default());
        assert_eq!(c.state(0, 2), State::Modified);
    }

    #[test]
    fn two_halves_of_a_pair_are_one_unit_only_with_128_byte_lines() {
        for (bytes, shared) in [(64, false), (128, true)] {
            let c = caches(bytes, 64, 4, 2);
            c.access(0, 0x1000, true);
            c.access(1, 0x1040, true);
            let o = c.access(0, 0x1000, true);
            assert_eq!(o.kind == Some(Kind::RfoHitm), shared, "{bytes}-byte lines");
        }
    }

    #[test]
    fn an_evicted_copy_is_not_a_transfer() {
        // 1 KiB, 2 ways, 64-byte lines: 8 sets; lines 0, 8 and 16 share set 0.
        let c = caches(64, 1, 2, 2);
        c.access(0, 0, true);
        c.access(0, 8 * 64, true);
        c.access(0, 16 * 64, true);
        assert_eq!(c.state(0, 0), State::Invalid, "the LRU way was evicted");
        assert_eq!(c.access(1, 0, true), Outcome::default());
        assert_eq!(c.state(0, 8), State::Modified, "the younger way stayed");
    }

    #[test]
    fn cleared_caches_hold_nothing() {
        let c = caches(64, 64, 4, 2);
        c.access(0, 0x40, true);
        c.clear();
        assert_eq!(c.access(1, 0x40, true), Outcome::default());
    }

    #[test]
    fn bad_geometries_are_refused() {
        let g = |line_bytes, cache_kib, ways| Geometry {
            line_bytes,
            cache_kib,
            ways,
        };
        assert!(g(32, 1024, 8).check().is_err());
        assert!(g(64, 1000, 8).check().is_err());
        assert!(g(64, 1024, 0).check().is_err());
        assert!(g(64, 1024, 8).check().is_ok());
        assert!(Caches::new(g(64, 64, 4), 65).is_err());
    }
}
