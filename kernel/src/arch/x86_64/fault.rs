//! The page-fault handler: #PF on a registered region goes to that region's handler, which
//! maps the page (the access is retried) or fails (the access resumes at its exception-table
//! fixup with the error); every other #PF is fatal.
//!
//! Models Linux's `arch/x86/mm/fault.c`: `exc_page_fault` reads CR2 and the error code,
//! `do_user_addr_fault` re-enables interrupts when the interrupted context had them
//! (`local_irq_enable` after `user_mode(regs) || regs->flags & X86_EFLAGS_IF`) and calls
//! `handle_mm_fault`; a failure in kernel mode goes to `kernelmode_fixup_or_oops`, which
//! resumes at the `fixup_exception` entry or oopses (`page_fault_oops`). Here the "VMA
//! lookup" is a table of regions that the platform-neutral mm glue registers at run time
//! ([`set_region_fault_handler`]): address ranges inside the address-space slot
//! ([`super::aspace`]), each with a plain `fn` and an opaque word it gets back.
//!
//! Outcomes of a #PF at address CR2 with faulting RIP:
//! - CR2 in a registered region, the handler returns `Ok`: return from the trap; the CPU
//!   retries the instruction.
//! - The handler returns `Err(e)` (not [`FaultError::Unhandled`]) and RIP has an exception
//!   table entry: resume at the fixup with `e`'s code in `rdx`; counted as a fixup.
//! - The handler returns `Err(e)` and RIP has no entry, or it returns `Unhandled` (a
//!   protection fault or instruction fetch it does not claim), or CR2 is in no region, or
//!   the error code has the reserved-bit flag (a corrupt paging entry): the fatal report of
//!   [`super::trap::fatal`] (vector, error code, RIP, CR2 and its meaning), then the exception
//!   exit code. `run=pagefault` takes this path.
//!
//! Interrupts. The fault core takes spin locks and may wait for TLB-shootdown acks
//! ([`super::tlb`]), while the CPUs it waits for may spin on a lock in their own fault
//! handler: a CPU inside its handler must keep serving IPIs. So the handler runs with
//! interrupts enabled when the interrupted context had IF set (the trap frame's RFLAGS), and
//! disables them again before returning. A region fault with IF clear is a kernel bug (a
//! touch with interrupts off, e.g. inside `PerCpu::with`, could deadlock against a shootdown)
//! and is reported as fatal.
//!
//! What a region handler may do. It runs on the faulting CPU's own stack (#PF has no IST
//! stack, so a kernel stack overflow still becomes a double fault), nested in whatever code
//! did the touch, with interrupts enabled. It may take spin locks, allocate, reclaim and
//! shoot down TLBs. The touch routines hold no locks, but their caller might: a caller must
//! not touch while holding a lock the fault path takes. The handler must not return before
//! releasing what it took, and must not rely on the interrupted code's state. Registrations
//! are read without locks (a seqcount per slot) and the fault path writes only per-CPU
//! counters, so faulting CPUs share no written cache line here.
//!
//! Unregistering a region while faults on it may be in flight is the caller's bug: a fault
//! that already looked the region up still calls its (static) handler.
//!
//! Unsafe code here, and why: a region's handler is stored as a `usize` in a
//! seqcount-protected slot and turned back into its `fn` pointer.
#![allow(unsafe_code)]

use super::aspace::{MM_SLOT_END, MM_SLOT_START};
use super::extable;
use super::percpu::counter_inc;
use super::trap::{self, TrapFrame, vector};
use crate::percpu::{MAX_CPUS, cpu_id};
use crate::sync::SpinMutex;
use core::fmt;
use core::ops::Range;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};

/// Page-fault error code bits (SDM vol. 3, 4.7; Linux's `enum x86_pf_error_code`).
mod pf {
    /// The entry was present: a protection violation, not a missing page.
    pub const PROT: u64 = 1 << 0;
    /// The access was a write.
    pub const WRITE: u64 = 1 << 1;
    /// The access came from ring 3.
    pub const USER: u64 = 1 << 2;
    /// A paging entry had a reserved bit set.
    pub const RSVD: u64 = 1 << 3;
    /// The access was an instruction fetch.
    pub const INSTR: u64 = 1 << 4;
}

/// RFLAGS.IF.
const RFLAGS_IF: u64 = 1 << 9;

/// Why a region handler could not resolve a fault. The code (1..) travels to the touch
/// routine's caller in `rdx` ([`FaultError::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum FaultError {
    /// The memcg stays over its limit after reclaim (`mem_cgroup_charge` failing:
    /// `VM_FAULT_OOM`).
    MemcgOom = 1,
    /// No free frame (the page allocator failing: `VM_FAULT_OOM`).
    NoMemory = 2,
    /// A fault-injection point failed the fault on purpose.
    Injected = 3,
    /// The region does not allow this access, e.g. a write to a read-only region
    /// (`VM_FAULT_SIGSEGV`).
    AccessDenied = 4,
    /// The region's object has no page at this offset (`VM_FAULT_SIGBUS`).
    NoPage = 5,
    /// The handler does not claim the fault (a protection fault on an entry it installed,
    /// an instruction fetch): reported as fatal even at a touch instruction.
    Unhandled = 6,
}

impl FaultError {
    /// The value put in the fixup's `rdx` (never 0).
    #[must_use]
    pub const fn code(self) -> u64 {
        self as u64
    }

    /// The error with this code. Only the fault handler writes codes, all of them from
    /// [`Self::code`]; anything else reads as [`FaultError::Unhandled`].
    #[must_use]
    pub const fn from_code(code: u64) -> Self {
        match code {
            1 => FaultError::MemcgOom,
            2 => FaultError::NoMemory,
            3 => FaultError::Injected,
            4 => FaultError::AccessDenied,
            5 => FaultError::NoPage,
            _ => FaultError::Unhandled,
        }
    }
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultError::MemcgOom => "memcg over its limit after reclaim",
            FaultError::NoMemory => "no free frame",
            FaultError::Injected => "injected failure",
            FaultError::AccessDenied => "access not allowed in this region",
            FaultError::NoPage => "no page at this offset",
            FaultError::Unhandled => "fault not claimed by the region",
        })
    }
}

/// A registered region as its handler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// The word given to [`set_region_fault_handler`] (e.g. the address space it belongs to).
    pub data: usize,
}

/// One page fault, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInfo {
    /// The faulting address (CR2).
    pub addr: u64,
    /// A write access.
    pub write: bool,
    /// An instruction fetch.
    pub instruction_fetch: bool,
    /// From ring 3 (never, in this kernel).
    pub user: bool,
    /// The entry was present: a protection violation (e.g. a write to a read-only entry).
    pub protection: bool,
    /// The faulting CPU.
    pub cpu: usize,
    /// The faulting instruction.
    pub rip: u64,
    /// The region the address is in.
    pub region: Region,
}

/// A region's fault handler: `Ok` once the access can be retried, `Err` otherwise.
pub type RegionFaultHandler = fn(&FaultInfo) -> Result<(), FaultError>;

/// Most regions registered at once.
pub const MAX_REGIONS: usize = 64;

/// A registration, to remove it with [`clear_region_fault_handler`].
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a region stays registered until its handle is cleared"]
pub struct RegionHandle {
    index: usize,
    seq: u32,
}

/// Why a region could not be registered or removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionError {
    /// Empty, or not 4 KiB aligned at both ends.
    BadRange {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// Not inside the address-space slot.
    OutsideSlot,
    /// Overlaps this registered region.
    Overlaps {
        /// First byte of the registered region.
        start: u64,
        /// One past its last byte.
        end: u64,
    },
    /// [`MAX_REGIONS`] regions are registered.
    Full,
    /// The handle's registration was already removed.
    Stale,
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegionError::BadRange { start, end } => {
                write!(f, "{start:#x}..{end:#x} is empty or not page aligned")
            }
            RegionError::OutsideSlot => write!(f, "region outside the address-space slot"),
            RegionError::Overlaps { start, end } => {
                write!(f, "overlaps the registered region {start:#x}..{end:#x}")
            }
            RegionError::Full => write!(f, "all {MAX_REGIONS} region slots in use"),
            RegionError::Stale => write!(f, "region no longer registered"),
        }
    }
}

/// One registration. `seq` is odd while a writer changes the slot (a seqcount: readers
/// retry), and counts up forever, so a handle's `seq` names one registration.
struct Slot {
    seq: AtomicU32,
    start: AtomicU64,
    end: AtomicU64,
    handler: AtomicUsize,
    data: AtomicUsize,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            seq: AtomicU32::new(0),
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
            handler: AtomicUsize::new(0),
            data: AtomicUsize::new(0),
        }
    }

    /// A consistent snapshot: the handler (0 = free) and the region.
    fn read(&self) -> (usize, Region) {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            let handler = self.handler.load(Ordering::Relaxed);
            let region = Region {
                start: self.start.load(Ordering::Relaxed),
                end: self.end.load(Ordering::Relaxed),
                data: self.data.load(Ordering::Relaxed),
            };
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return (handler, region);
            }
        }
    }

    /// Rewrites the slot (registry lock held); returns the new, even `seq`.
    fn write(&self, handler: usize, region: Region) -> u32 {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.handler.store(handler, Ordering::Relaxed);
        self.start.store(region.start, Ordering::Relaxed);
        self.end.store(region.end, Ordering::Relaxed);
        self.data.store(region.data, Ordering::Relaxed);
        let s = s.wrapping_add(2);
        self.seq.store(s, Ordering::Release);
        s
    }
}

static REGIONS: [Slot; MAX_REGIONS] = [const { Slot::new() }; MAX_REGIONS];
/// Slots `HIGH..` have never been used: lookups stop there.
static HIGH: AtomicUsize = AtomicUsize::new(0);

ksync::lock_class!(
    /// Serialises changes to the region table (faults read it without locks).
    pub FaultRegionsLock, "fault_regions"
);

static REGISTRY: SpinMutex<FaultRegionsLock, ()> = SpinMutex::new(());

/// Makes `handler` resolve faults on `range` (page aligned, inside the address-space
/// slot, overlapping no registered region); `data` is handed back in [`FaultInfo::region`].
pub fn set_region_fault_handler(
    range: Range<u64>,
    handler: RegionFaultHandler,
    data: usize,
) -> Result<RegionHandle, RegionError> {
    let (start, end) = (range.start, range.end);
    if start >= end || !start.is_multiple_of(4096) || !end.is_multiple_of(4096) {
        return Err(RegionError::BadRange { start, end });
    }
    if start < MM_SLOT_START || end > MM_SLOT_END {
        return Err(RegionError::OutsideSlot);
    }
    let _g = REGISTRY.lock();
    let mut free = None;
    for (i, s) in REGIONS.iter().enumerate() {
        let (h, r) = s.read();
        if h == 0 {
            free = free.or(Some(i));
        } else if r.start < end && start < r.end {
            return Err(RegionError::Overlaps {
                start: r.start,
                end: r.end,
            });
        }
    }
    let index = free.ok_or(RegionError::Full)?;
    HIGH.fetch_max(index + 1, Ordering::Release);
    let seq = REGIONS[index].write(handler as usize, Region { start, end, data });
    Ok(RegionHandle { index, seq })
}

/// Removes a registration: faults on its range are fatal again.
pub fn clear_region_fault_handler(handle: RegionHandle) -> Result<(), RegionError> {
    let _g = REGISTRY.lock();
    let slot = &REGIONS[handle.index];
    if slot.seq.load(Ordering::Relaxed) != handle.seq {
        return Err(RegionError::Stale);
    }
    slot.write(
        0,
        Region {
            start: 0,
            end: 0,
            data: 0,
        },
    );
    Ok(())
}

/// Slot `s`'s handler and region if it is registered and contains `addr`.
fn probe(s: &Slot, addr: u64) -> Option<(RegionFaultHandler, Region)> {
    let (h, r) = s.read();
    if h == 0 || !(r.start..r.end).contains(&addr) {
        return None;
    }
    // SAFETY: only `set_region_fault_handler` stores a non-zero handler, and it stores a
    // `RegionFaultHandler`; fn pointers and usize have the same size here.
    let f = unsafe { core::mem::transmute::<usize, RegionFaultHandler>(h) };
    Some((f, r))
}

/// The registered region containing `addr`, with its handler.
///
/// The slot this CPU last found is tried first, as Linux's per-thread `vmacache` was: a
/// benchmark's CPU faults its own region over and over, and scanning every registered slot
/// (a seqcount read each) per fault was a cost Linux does not pay. The hint only picks the
/// slot read first; the read itself is checked as every other, and regions never overlap,
/// so a stale hint costs one probe and nothing else.
fn lookup(addr: u64) -> Option<(RegionFaultHandler, Region)> {
    if !(MM_SLOT_START..MM_SLOT_END).contains(&addr) {
        return None;
    }
    let high = HIGH.load(Ordering::Acquire).min(MAX_REGIONS);
    let hint = COUNTERS.get(cpu_id()).map(|c| &c.last_hit);
    if let Some(i) = hint.map(|h| h.load(Ordering::Relaxed))
        && i < high
        && let Some(hit) = probe(&REGIONS[i], addr)
    {
        return Some(hit);
    }
    let (i, hit) = REGIONS[..high]
        .iter()
        .enumerate()
        .find_map(|(i, s)| probe(s, addr).map(|hit| (i, hit)))?;
    if let Some(h) = hint {
        h.store(i, Ordering::Relaxed);
    }
    Some(hit)
}

/// The registered region containing `addr`, if any (a fault there would go to its handler).
#[must_use]
pub fn region_at(addr: u64) -> Option<Region> {
    lookup(addr).map(|(_, r)| r)
}

/// One CPU's page-fault counters, written only by that CPU.
#[repr(C, align(128))]
struct Counters {
    faults: AtomicU64,
    resolved: AtomicU64,
    fixups: AtomicU64,
    /// The region slot this CPU's last lookup found ([`lookup`]'s hint).
    last_hit: AtomicUsize,
}

static COUNTERS: [Counters; MAX_CPUS] = [const {
    Counters {
        faults: AtomicU64::new(0),
        resolved: AtomicU64::new(0),
        fixups: AtomicU64::new(0),
        last_hit: AtomicUsize::new(0),
    }
}; MAX_CPUS];

/// Page-fault counts of one CPU, or summed over all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Faults on registered regions handed to a handler.
    pub faults: u64,
    /// Of those, resolved (the access was retried).
    pub resolved: u64,
    /// Of those, failed and resumed at an exception-table fixup.
    pub fixups: u64,
}

/// CPU `cpu`'s counts (zero for a CPU that never faulted or does not exist).
#[must_use]
pub fn stats(cpu: usize) -> FaultStats {
    COUNTERS
        .get(cpu)
        .map_or(FaultStats::default(), |c| FaultStats {
            faults: c.faults.load(Ordering::Relaxed),
            resolved: c.resolved.load(Ordering::Relaxed),
            fixups: c.fixups.load(Ordering::Relaxed),
        })
}

/// Counts summed over every CPU.
#[must_use]
pub fn stats_total() -> FaultStats {
    (0..MAX_CPUS)
        .map(stats)
        .fold(FaultStats::default(), |a, s| FaultStats {
            faults: a.faults + s.faults,
            resolved: a.resolved + s.resolved,
            fixups: a.fixups + s.fixups,
        })
}

/// Installs the page-fault handler. Boot CPU, once; before it every #PF is fatal, which is
/// right that early in boot.
pub fn init() {
    trap::register(vector::PAGE_FAULT, page_fault);
}

fn page_fault(frame: &mut TrapFrame) {
    let cr2 = x86_64::registers::control::Cr2::read_raw();
    let code = frame.error_code;
    let Some((handler, region)) = lookup(cr2) else {
        trap::fatal(frame, Some(cr2), None)
    };
    if code & pf::RSVD != 0 {
        trap::fatal(
            frame,
            Some(cr2),
            Some(format_args!(
                "a paging entry for this address has a reserved bit set"
            )),
        )
    }
    if frame.rflags & RFLAGS_IF == 0 {
        trap::fatal(
            frame,
            Some(cr2),
            Some(format_args!(
                "fault on region {:#x}..{:#x} with interrupts disabled (touches need IF set)",
                region.start, region.end
            )),
        )
    }
    let cpu = cpu_id();
    let counters = &COUNTERS[cpu % MAX_CPUS];
    counter_inc(&counters.faults);
    let info = FaultInfo {
        addr: cr2,
        write: code & pf::WRITE != 0,
        instruction_fetch: code & pf::INSTR != 0,
        user: code & pf::USER != 0,
        protection: code & pf::PROT != 0,
        cpu,
        rip: frame.rip,
        region,
    };
    x86_64::instructions::interrupts::enable();
    let r = handler(&info);
    x86_64::instructions::interrupts::disable();
    match r {
        Ok(()) => counter_inc(&counters.resolved),
        Err(FaultError::Unhandled) => trap::fatal(
            frame,
            Some(cr2),
            Some(format_args!(
                "the handler of region {:#x}..{:#x} did not claim the fault",
                region.start, region.end
            )),
        ),
        Err(e) => match extable::search(frame.rip) {
            Some(fixup) => {
                frame.rip = fixup;
                frame.rdx = e.code();
                counter_inc(&counters.fixups);
            }
            None => trap::fatal(
                frame,
                Some(cr2),
                Some(format_args!(
                    "fault on region {:#x}..{:#x} failed ({e}) at an instruction with no \
                     exception-table entry",
                    region.start, region.end
                )),
            ),
        },
    }
}
