//! A sampling profiler on the local APIC timer (`profile=HZ` with `run=bench`): every
//! online CPU's timer fires periodically at about `HZ` per second of guest time, and the
//! handler stores the interrupted RIP in that CPU's buffer; at the end of the benchmark the
//! buffers are dumped on the console, each CPU's samples counted by address:
//!
//! ```text
//! KPROFILE hz=<HZ> period_ticks=<N> ticks_per_s=<T> cpus=<C> capacity=<per CPU> anchor=<A>
//! KPROFILE cpu=<i> samples=<S> dropped=<D>
//! KPROF <cpu> <rip hex> <count>
//! ```
//!
//! `anchor` is the address of [`stop_and_dump`]: `scripts/tcg-profile.py --apic` boots with
//! it and symbolises the addresses, after checking the anchor against the ELF it reads (a
//! log of another build would be symbolised wrongly). Unlike the
//! script's monitor sampling (which stops the VM, and under TCG tends to see the vCPU only
//! at its next exception), the timer is a guest interrupt: QEMU delivers it at the next
//! translation-block boundary, wherever the vCPU is, so the samples are spread over time as
//! the guest spends it, up to the granularity of a block (a sample names the first
//! instruction of the block about to run). Interrupts are delivered only where IF is set:
//! code that runs with interrupts off (the trap entry before the #PF handler enables them,
//! `without_interrupts` sections such as the console lock, the IPI handlers) has its time
//! charged to the instruction after it re-enables them, as with any maskable-interrupt
//! profiler (Linux's perf uses the PMU's NMI for that reason; TCG has no PMU).
//!
//! The timer runs in periodic mode, divide by 16, at a period calibrated against the TSC
//! over 10 ms on the boot CPU. Each CPU has [`CAPACITY`] slots; samples beyond are counted
//! as dropped. The handler costs a trap entry and exit, two loads, a store and an EOI.

use super::apic;
use super::trap::{self, TrapFrame};
use crate::percpu;
use crate::println;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use spin::Once;

/// The timer's vector (Linux's `LOCAL_TIMER_VECTOR`).
pub const PROFILE_VECTOR: u8 = 0xec;
/// Samples kept per CPU (8 bytes each).
pub const CAPACITY: usize = 1 << 17;

/// APIC timer registers (xAPIC offsets).
mod reg {
    pub const LVT_TIMER: u32 = 0x320;
    pub const INITIAL_COUNT: u32 = 0x380;
    pub const CURRENT_COUNT: u32 = 0x390;
    pub const DIVIDE: u32 = 0x3e0;
}
/// LVT timer: periodic mode.
const PERIODIC: u32 = 1 << 17;
/// LVT: masked.
const MASKED: u32 = 1 << 16;
/// Divide configuration for divide by 16.
const DIVIDE_16: u32 = 0b0011;

/// One CPU's samples.
struct Buffer {
    rips: Vec<AtomicU64>,
    len: AtomicUsize,
    dropped: AtomicU64,
}

static BUFFERS: Once<Vec<Buffer>> = Once::new();
static STOPPED: AtomicBool = AtomicBool::new(false);
static PERIOD: AtomicU32 = AtomicU32::new(0);
static HZ: AtomicU32 = AtomicU32::new(0);
static TICKS_PER_S: AtomicU64 = AtomicU64::new(0);

/// Why the profiler did not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileError {
    /// The timer did not count during calibration.
    TimerStopped,
    /// The rate asked for is above what the timer can divide.
    RateTooHigh(u32),
    /// Arming the other CPUs failed.
    Call(percpu::CallError),
}

impl core::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ProfileError::TimerStopped => f.write_str("the APIC timer does not count"),
            ProfileError::RateTooHigh(hz) => write!(f, "{hz} Hz is above the timer's rate"),
            ProfileError::Call(e) => write!(f, "cannot arm every CPU's timer: {e:?}"),
        }
    }
}

/// The timer's ticks per second at divide 16, measured against the TSC over 10 ms.
fn calibrate() -> u64 {
    apic::write(reg::DIVIDE, DIVIDE_16);
    apic::write(reg::LVT_TIMER, MASKED | u32::from(PROFILE_VECTOR));
    apic::write(reg::INITIAL_COUNT, u32::MAX);
    let start = super::tsc::now_ns();
    super::tsc::delay_us(10_000);
    let left = apic::read(reg::CURRENT_COUNT);
    let ns = super::tsc::now_ns().saturating_sub(start).max(1);
    apic::write(reg::INITIAL_COUNT, 0);
    u64::from(u32::MAX - left) * 1_000_000_000 / ns
}

fn arm(period: u32) {
    apic::write(reg::DIVIDE, DIVIDE_16);
    apic::write(reg::LVT_TIMER, PERIODIC | u32::from(PROFILE_VECTOR));
    apic::write(reg::INITIAL_COUNT, period);
}

fn disarm() {
    apic::write(reg::LVT_TIMER, MASKED | u32::from(PROFILE_VECTOR));
    apic::write(reg::INITIAL_COUNT, 0);
}

fn sample(frame: &mut TrapFrame) {
    if STOPPED.load(Relaxed) {
        disarm();
    } else if let Some(b) = BUFFERS.get().and_then(|b| b.get(percpu::cpu_id())) {
        // Only this CPU's handler writes its buffer, with interrupts off.
        let i = b.len.load(Relaxed);
        match b.rips.get(i) {
            Some(slot) => {
                slot.store(frame.rip, Relaxed);
                b.len.store(i + 1, Relaxed);
            }
            None => {
                b.dropped.fetch_add(1, Relaxed);
            }
        }
    }
    apic::eoi();
}

/// Starts sampling every online CPU at about `hz` per second. Boot CPU, once.
pub fn start(hz: u32) -> Result<(), ProfileError> {
    let ticks = calibrate();
    if ticks == 0 {
        return Err(ProfileError::TimerStopped);
    }
    let period = u32::try_from(ticks / u64::from(hz.max(1))).unwrap_or(u32::MAX);
    if period < 16 {
        return Err(ProfileError::RateTooHigh(hz));
    }
    BUFFERS.call_once(|| {
        (0..percpu::nr_cpu_ids())
            .map(|_| Buffer {
                rips: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
                len: AtomicUsize::new(0),
                dropped: AtomicU64::new(0),
            })
            .collect()
    });
    PERIOD.store(period, Relaxed);
    HZ.store(hz, Relaxed);
    TICKS_PER_S.store(ticks, Relaxed);
    STOPPED.store(false, Relaxed);
    trap::register(PROFILE_VECTOR, sample);
    percpu::on_each_cpu(&|_| arm(period)).map_err(ProfileError::Call)
}

/// Stops sampling on every CPU and prints the samples (see the module doc).
pub fn stop_and_dump() {
    STOPPED.store(true, Relaxed);
    // Every CPU disarms its own timer; the handler disarms one that fires meanwhile.
    let _ = percpu::on_each_cpu(&|_| disarm());
    let Some(buffers) = BUFFERS.get() else {
        return;
    };
    println!(
        "KPROFILE hz={} period_ticks={} ticks_per_s={} cpus={} capacity={CAPACITY} \
         anchor={:x}",
        HZ.load(Relaxed),
        PERIOD.load(Relaxed),
        TICKS_PER_S.load(Relaxed),
        buffers.len(),
        stop_and_dump as fn() as usize
    );
    for (cpu, b) in buffers.iter().enumerate() {
        let n = b.len.load(Relaxed).min(CAPACITY);
        println!(
            "KPROFILE cpu={cpu} samples={n} dropped={}",
            b.dropped.load(Relaxed)
        );
        let mut rips: Vec<u64> = b.rips[..n].iter().map(|r| r.load(Relaxed)).collect();
        rips.sort_unstable();
        let mut i = 0;
        while i < rips.len() {
            let j = i + rips[i..].iter().take_while(|r| **r == rips[i]).count();
            println!("KPROF {cpu} {:x} {}", rips[i], j - i);
            i = j;
        }
    }
}
