//! Fault injection: `fail_page_alloc` and `fail_charge`, as Linux's `fault_attr`
//! (lib/fault-inject.c, `should_fail()`).
//!
//! An attribute fails either every Nth call (Linux's `interval` with `probability=100`) or
//! each call with a probability, drawn from a per-CPU xorshift stream seeded from a given
//! seed (so a run is reproducible for a given CPU count and schedule). The fault core asks
//! `should_fail` right before allocating a frame and before charging a memcg; an injected
//! failure takes exactly the path a real one takes (the fault fails cleanly through the
//! exception-table fixup), and is counted here as well as where it surfaces.

use alloc::boxed::Box;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::{CachePadded, MAX_CPUS};

/// When an attribute fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultSpec {
    /// Never (the default).
    Off,
    /// Every `n`th call (`n >= 1`).
    Every(u64),
    /// Each call with probability `percent` / 100, from `seed`.
    Probability {
        /// Percent, in (0, 100].
        percent: f64,
        /// Seed of the per-CPU random streams.
        seed: u64,
    },
}

/// One fault attribute (`struct fault_attr`).
#[derive(Debug)]
pub struct FaultAttr {
    name: &'static str,
    spec: FaultSpec,
    /// Threshold for the probability test: fail when `rand < threshold`.
    threshold: u64,
    calls: AtomicU64,
    injected: AtomicU64,
    /// One stream per CPU, on the heap (`MAX_CPUS` cache lines would not fit a stack).
    rng: Box<[CachePadded<AtomicU64>]>,
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

impl FaultAttr {
    /// An attribute called `name` (for reports) failing as `spec` says.
    #[must_use]
    pub fn new(name: &'static str, spec: FaultSpec) -> Self {
        let (threshold, seed) = match spec {
            FaultSpec::Probability { percent, seed } => {
                let p = (percent / 100.0).clamp(0.0, 1.0);
                ((p * u64::MAX as f64) as u64, seed)
            }
            _ => (0, 0),
        };
        FaultAttr {
            name,
            spec,
            threshold,
            calls: AtomicU64::new(0),
            injected: AtomicU64::new(0),
            rng: (0..MAX_CPUS)
                .map(|cpu| {
                    // Distinct non-zero streams per CPU.
                    CachePadded(AtomicU64::new(
                        xorshift(seed ^ (cpu as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1,
                    ))
                })
                .collect(),
        }
    }

    /// The attribute's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// How it fails.
    #[must_use]
    pub fn spec(&self) -> FaultSpec {
        self.spec
    }

    /// Whether the call made now on `cpu` must fail (`should_fail`).
    ///
    /// An attribute that is off answers inline, with one compare, where it is asked on the
    /// fault path; the counting and the random stream stay out of line, so that a build
    /// whose faults never fail does not carry them between the fault's hot blocks (as
    /// Linux's `should_fail_alloc_page` is a call only built with `CONFIG_FAIL_PAGE_ALLOC`).
    #[inline(always)]
    pub fn should_fail(&self, cpu: usize) -> bool {
        if let FaultSpec::Off = self.spec {
            return false;
        }
        self.should_fail_on(cpu)
    }

    /// [`Self::should_fail`] for an attribute that is on: counts the call and decides.
    #[cold]
    #[inline(never)]
    fn should_fail_on(&self, cpu: usize) -> bool {
        let fail = match self.spec {
            FaultSpec::Off => return false,
            FaultSpec::Every(n) => {
                let c = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
                c.is_multiple_of(n.max(1))
            }
            FaultSpec::Probability { .. } => {
                self.calls.fetch_add(1, Ordering::Relaxed);
                let slot = &self.rng[cpu % MAX_CPUS].0;
                let x = xorshift(slot.load(Ordering::Relaxed));
                slot.store(x, Ordering::Relaxed);
                x < self.threshold
            }
        };
        if fail {
            self.injected.fetch_add(1, Ordering::Relaxed);
        }
        fail
    }

    /// Calls that asked.
    #[must_use]
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Failures injected.
    #[must_use]
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_every_and_probability() {
        let off = FaultAttr::new("off", FaultSpec::Off);
        assert!((0..1000).all(|_| !off.should_fail(0)));
        assert_eq!(off.injected(), 0);
        let every = FaultAttr::new("every", FaultSpec::Every(10));
        let hits: Vec<bool> = (0..30).map(|_| every.should_fail(1)).collect();
        assert_eq!(hits.iter().filter(|&&h| h).count(), 3);
        assert!(hits[9] && hits[19] && hits[29] && !hits[0]);
        assert_eq!((every.calls(), every.injected()), (30, 3));
        let p = FaultAttr::new(
            "p",
            FaultSpec::Probability {
                percent: 10.0,
                seed: 42,
            },
        );
        let n = (0..100_000).filter(|i| p.should_fail(i % 4)).count();
        assert!((8_000..12_000).contains(&n), "{n} of 100000 at 10%");
        // Same seed, same CPU: same stream.
        let a = FaultAttr::new(
            "a",
            FaultSpec::Probability {
                percent: 50.0,
                seed: 7,
            },
        );
        let b = FaultAttr::new(
            "b",
            FaultSpec::Probability {
                percent: 50.0,
                seed: 7,
            },
        );
        let sa: Vec<bool> = (0..64).map(|_| a.should_fail(3)).collect();
        let sb: Vec<bool> = (0..64).map(|_| b.should_fail(3)).collect();
        assert_eq!(sa, sb);
        let all = FaultAttr::new(
            "all",
            FaultSpec::Probability {
                percent: 100.0,
                seed: 1,
            },
        );
        assert!((0..100).all(|_| all.should_fail(0)));
    }

    /// The generator is Marsaglia's xorshift64 with the (13, 7, 17) triple: its
    /// first two outputs from 1, worked out by hand.
    #[test]
    fn the_stream_is_xorshift64_13_7_17() {
        assert_eq!(xorshift(1), 0x4082_2041);
        assert_eq!(xorshift(0x4082_2041), 0x1000_4106_0c01_1441);
    }

    /// Each CPU draws from its own stream: a different seed or CPU gives a different
    /// sequence, and the name and spec are kept for reports.
    #[test]
    fn streams_differ_per_cpu_and_seed() {
        let spec = |seed| FaultSpec::Probability {
            percent: 50.0,
            seed,
        };
        let draw = |a: &FaultAttr, cpu| (0..64).map(|_| a.should_fail(cpu)).collect::<Vec<_>>();
        let a = FaultAttr::new("fail_charge", spec(7));
        let twin = FaultAttr::new("twin", spec(7));
        let b = FaultAttr::new("b", spec(8));
        assert_eq!((a.name(), a.spec()), ("fail_charge", spec(7)));
        // Fresh attributes, so each sequence starts its stream.
        let a0 = draw(&a, 0);
        assert_ne!(a0, draw(&twin, 1), "two CPUs, one seed");
        assert_ne!(a0, draw(&b, 0), "one CPU, two seeds");
        assert_eq!(a.calls(), 64);
    }
}
