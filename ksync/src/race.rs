//! Injected delays in race windows (`race_delay=`): a stress aid, off by default.
//!
//! A race needs one CPU to stop between two steps while another runs through the same
//! state. On a real machine an interrupt or a cache miss opens such a window now and then;
//! under an emulator with as many vCPUs as host cores the windows hardly ever open, and
//! with more vCPUs than host cores (a vCPU preempted by the host scheduler at an arbitrary
//! instruction) they open rarely and by chance. Code that knows it sits in such a window
//! (between a lockless pin and the re-check that validates it, between a flag cleared and
//! the lock that follows, between a count taken and the check that publishes it) calls
//! [`window`]; when a delay is set, the CPU then spins for a pseudo-random number of
//! iterations up to that delay, so the other side of the race runs through the window far
//! more often. Linux has no such knob in mainline; its nearest relatives are the
//! `CONFIG_DEBUG_*` delays some subsystems sprinkle into their lockless paths.
//!
//! Off (the default, and every benchmark run) a window costs one relaxed load of a
//! read-mostly word and a predicted branch. The delay is set once, before the work whose
//! windows it widens starts (the kernel's command line, a host test's setup).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The largest delay [`set_delay`] accepts, in spin iterations.
pub const MAX_DELAY: u32 = 1_000_000;

static DELAY: AtomicU32 = AtomicU32::new(0);
/// Windows entered with a delay set: the stress tests report it, so a run whose windows
/// never opened does not pass for one that widened them.
static STALLS: AtomicU64 = AtomicU64::new(0);
/// The pseudo-random stream of stall lengths, shared by every CPU (only while enabled).
static STREAM: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

/// Sets the largest stall, in spin iterations (0: off). Values above [`MAX_DELAY`] are
/// clamped to it.
pub fn set_delay(spins: u32) {
    DELAY.store(spins.min(MAX_DELAY), Ordering::Relaxed);
}

/// The largest stall now set (0: off).
#[must_use]
pub fn delay() -> u32 {
    DELAY.load(Ordering::Relaxed)
}

/// Windows entered with a delay set, since boot (or the process's start).
#[must_use]
pub fn stalls() -> u64 {
    STALLS.load(Ordering::Relaxed)
}

/// A race window: with a delay set, spin for a pseudo-random number of iterations below
/// it; otherwise nothing.
#[inline(always)]
pub fn window() {
    let max = DELAY.load(Ordering::Relaxed);
    if max != 0 {
        stall(max);
    }
}

#[cold]
#[inline(never)]
fn stall(max: u32) {
    STALLS.fetch_add(1, Ordering::Relaxed);
    // splitmix64 over a shared counter: every stall draws a fresh length, and about a
    // quarter of them are none at all (so both orders of each race keep happening).
    let mut z = STREAM.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    if z & 3 == 0 {
        return;
    }
    let spins = (z >> 2) % u64::from(max) + 1;
    for _ in 0..spins {
        core::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test touches the global knob, so nothing else here races with it.
    #[test]
    fn windows_stall_only_while_a_delay_is_set() {
        set_delay(0);
        let before = stalls();
        for _ in 0..100 {
            window();
        }
        assert_eq!(stalls(), before, "a window stalled with the delay off");
        set_delay(u32::MAX);
        assert_eq!(delay(), MAX_DELAY, "the delay is clamped");
        set_delay(50);
        for _ in 0..100 {
            window();
        }
        assert_eq!(stalls(), before + 100);
        set_delay(0);
        window();
        assert_eq!(stalls(), before + 100);
    }
}
