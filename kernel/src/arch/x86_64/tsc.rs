//! The time-stamp counter: frequency discovery, a cycle counter and a monotonic ns clock.
//!
//! Models Linux's `native_calibrate_tsc` / `pit_calibrate_tsc` (`arch/x86/kernel/tsc.c`). The
//! frequency comes from CPUID first: leaf 0x15 gives the TSC/crystal ratio and, when the CPU
//! reports it, the crystal frequency; leaf 0x16 gives the nominal base frequency in MHz. When
//! neither is there (AMD, QEMU TCG, older Intel) the TSC is counted across a 50 ms one-shot of
//! PIT channel 2, the way Linux does it: gate the channel on through port 0x61, load the count
//! in mode 0, and spin until OUT2 (port 0x61 bit 5) goes high.
//!
//! [`now_ns`] converts with a 32.32 fixed-point multiplier computed once (`mult`), so reading
//! the clock is one `rdtsc`, a subtraction and a 128-bit multiply, with no division. The clock
//! is monotonic on each CPU; across CPUs it is as synchronised as the TSCs themselves, which
//! holds on CPUs with an invariant TSC (reported in [`TscInfo::invariant`]) and under QEMU.
//! Calibration runs once on the boot CPU before the others start; they share the result.
//!
//! Unsafe code here, and why: `rdtsc` and `lfence` are intrinsics the compiler marks
//! unsafe.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use raw_cpuid::CpuId;
use x86_64::instructions::port::Port;

/// PIT input clock, Hz.
const PIT_HZ: u64 = 1_193_182;
/// Length of the PIT calibration window, ms.
const CALIBRATE_MS: u64 = 50;

static HZ: AtomicU64 = AtomicU64::new(0);
/// ns per cycle in 32.32 fixed point.
static MULT: AtomicU64 = AtomicU64::new(0);
/// TSC value that [`now_ns`] counts from (boot of the clock).
static BASE: AtomicU64 = AtomicU64::new(0);

/// Where the frequency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscSource {
    /// CPUID leaf 0x15 (crystal clock times the TSC/crystal ratio).
    Cpuid15,
    /// CPUID leaf 0x16 (nominal base frequency).
    Cpuid16,
    /// Counted against the PIT.
    Pit,
}

/// The result of [`init`].
#[derive(Clone, Copy, Debug)]
pub struct TscInfo {
    /// TSC ticks per second.
    pub hz: u64,
    /// Where `hz` came from.
    pub source: TscSource,
    /// CPUID says the TSC runs at a constant rate in all power states.
    pub invariant: bool,
}

/// Why the TSC cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscError {
    /// CPUID does not list a TSC.
    NoTsc,
    /// PIT calibration measured an implausible rate (below 1 MHz): no working PIT.
    CalibrationFailed(u64),
}

/// Reads the TSC (not ordered against surrounding loads and stores).
#[inline]
#[must_use]
pub fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` has no memory effects; CR4.TSD is clear so it is allowed at any CPL.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Reads the TSC after all earlier instructions have completed (`lfence; rdtsc`), for
/// measuring a region of code.
#[inline]
#[must_use]
pub fn rdtsc_ordered() -> u64 {
    // SAFETY: `lfence` only orders instruction execution; SSE2 is always present on x86_64.
    unsafe { core::arch::x86_64::_mm_lfence() };
    rdtsc()
}

/// CPUID's statement of the frequency ([`hw::cpuid::tsc_hz`], host-tested on recorded CPUs).
fn from_cpuid() -> Option<(u64, TscSource)> {
    let (hz, from) = hw::cpuid::tsc_hz(&CpuId::new())?;
    let source = match from {
        hw::cpuid::TscFrom::Leaf15 => TscSource::Cpuid15,
        hw::cpuid::TscFrom::Leaf16 => TscSource::Cpuid16,
    };
    Some((hz, source))
}

/// Counts TSC ticks over a [`CALIBRATE_MS`] one-shot of PIT channel 2.
fn pit_calibrate() -> u64 {
    let latch = PIT_HZ * CALIBRATE_MS / 1000;
    let mut ctl = Port::<u8>::new(0x61);
    let mut cmd = Port::<u8>::new(0x43);
    let mut ch2 = Port::<u8>::new(0x42);
    // SAFETY: ports 0x61 (system control B), 0x43 (PIT command) and 0x42 (PIT channel 2) are
    // the legacy PIT/speaker interface; channel 2 drives only the speaker, which stays off
    // (bit 1 cleared). Nothing else in the kernel uses them, and this runs once on the BSP.
    let (t0, t1) = unsafe {
        let v = ctl.read();
        ctl.write((v & !0x02) | 0x01);
        cmd.write(0xb0); // channel 2, lobyte/hibyte, mode 0, binary
        ch2.write((latch & 0xff) as u8);
        ch2.write((latch >> 8) as u8);
        let t0 = rdtsc_ordered();
        while ctl.read() & 0x20 == 0 {
            core::hint::spin_loop();
        }
        let t1 = rdtsc_ordered();
        ctl.write(v & !0x03);
        (t0, t1)
    };
    (t1 - t0) * 1000 / CALIBRATE_MS
}

/// Finds the TSC frequency and starts the clock. Runs once on the boot CPU.
pub fn init() -> Result<TscInfo, TscError> {
    let cpuid = CpuId::new();
    if !cpuid.get_feature_info().is_some_and(|f| f.has_tsc()) {
        return Err(TscError::NoTsc);
    }
    let invariant = cpuid
        .get_advanced_power_mgmt_info()
        .is_some_and(|p| p.has_invariant_tsc());
    let (hz, source) = match from_cpuid() {
        Some(x) => x,
        None => (pit_calibrate(), TscSource::Pit),
    };
    if hz < 1_000_000 {
        return Err(TscError::CalibrationFailed(hz));
    }
    let mult = ((1_000_000_000u128 << 32) / u128::from(hz)) as u64;
    MULT.store(mult, Relaxed);
    BASE.store(rdtsc(), Relaxed);
    HZ.store(hz, Relaxed);
    Ok(TscInfo {
        hz,
        source,
        invariant,
    })
}

/// TSC ticks per second (0 before [`init`]).
#[must_use]
pub fn hz() -> u64 {
    HZ.load(Relaxed)
}

/// Converts a cycle count to nanoseconds (0 before [`init`]).
#[must_use]
pub fn cycles_to_ns(cycles: u64) -> u64 {
    ((u128::from(cycles) * u128::from(MULT.load(Relaxed))) >> 32) as u64
}

/// Nanoseconds since [`init`]; monotonic on each CPU.
#[must_use]
pub fn now_ns() -> u64 {
    cycles_to_ns(rdtsc().saturating_sub(BASE.load(Relaxed)))
}

/// Spins for at least `us` microseconds (needs [`init`]; returns at once before it).
pub fn delay_us(us: u64) {
    let cycles = hz().saturating_mul(us) / 1_000_000;
    let start = rdtsc();
    while rdtsc().wrapping_sub(start) < cycles {
        core::hint::spin_loop();
    }
}
