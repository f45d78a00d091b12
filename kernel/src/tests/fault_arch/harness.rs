//! The fault tests' harness: an address space per test (a slot range with a region whose
//! handler maps fresh frames) and the handler steered through a [`Ctx`].
//!
//! [`on_fault`] is the region handler of every test. It records the fault, then fails it
//! (when the test asked for that page to fail), waits with interrupts on until released
//! (for the test of a shootdown into a handler), or maps a zeroed frame, linking a page
//! table first when the 2 MiB has none. The region's data word is the test's `Ctx`. Frames
//! come from, and go back to, the kernel's fixture pool ([`crate::mm::frame_pool`]). [`Space::teardown`] unmaps, unlinks (shooting down on every CPU) and frees.
//!
//! Unsafe code here, and why: the harness's fault handler reaches its context through the
//! region's data word and installs page-table entries directly.
#![allow(unsafe_code)]

use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::aspace::{self, AspaceError, MmRange};
use crate::arch::fault::{self, FaultError, FaultInfo, RegionHandle};
use crate::arch::pte::{PMD_SIZE, Pte, PteProt, pte_index};
use crate::arch::tsc;
use crate::ktest::TestResult;
use crate::mm::frame_pool::{PoolFrames, recycle, zeroed_frame};
use crate::percpu::{self, CpuSet};
use crate::sync::{KernelLock, SpinMutex};
use x86_64::PhysAddr;

pub(super) type R<T> = Result<T, String>;

/// The entry that maps `vaddr` (its page table must be linked and owned by the test).
pub(super) fn pte_slot(vaddr: u64) -> R<&'static AtomicU64> {
    let pt = aspace::pte_table(vaddr).ok_or_else(|| format!("no page table at {vaddr:#x}"))?;
    // SAFETY: the table was linked by this test's handler or setup and stays linked until
    // the test's teardown, which runs after every use of the entry.
    Ok(unsafe { &aspace::pte_entries(pt)[pte_index(vaddr)] })
}

/// How a test wants its region's faults handled.
pub(super) struct Ctx {
    /// Faults on this page fail with `fail_with` (0: none).
    pub(super) fail_page: AtomicU64,
    pub(super) fail_with: AtomicU64,
    /// The handler waits (interrupts on) until `release`, with `in_handler` set.
    pub(super) wait: AtomicBool,
    pub(super) in_handler: AtomicBool,
    pub(super) release: AtomicBool,
    /// Whether the waiting handler found interrupts enabled.
    pub(super) saw_if: AtomicBool,
    /// The last fault the handler saw.
    pub(super) last: SpinMutex<KernelLock, Option<FaultInfo>>,
}

impl Ctx {
    pub(super) const fn new() -> Self {
        Ctx {
            fail_page: AtomicU64::new(0),
            fail_with: AtomicU64::new(0),
            wait: AtomicBool::new(false),
            in_handler: AtomicBool::new(false),
            release: AtomicBool::new(false),
            saw_if: AtomicBool::new(false),
            last: SpinMutex::new(None),
        }
    }

    pub(super) fn fail(&self, page: u64, e: FaultError) {
        self.fail_with.store(e.code(), Ordering::SeqCst);
        self.fail_page.store(page, Ordering::SeqCst);
    }
}

/// Spins until `cond` or `ms` milliseconds have passed; returns whether `cond` held.
pub(super) fn wait_until(ms: u64, cond: impl Fn() -> bool) -> bool {
    let deadline = tsc::now_ns() + ms * 1_000_000;
    while !cond() {
        if tsc::now_ns() > deadline {
            return false;
        }
        core::hint::spin_loop();
    }
    true
}

/// The region handler of every test: record, then fail, wait, or map a fresh frame.
pub(super) fn on_fault(info: &FaultInfo) -> Result<(), FaultError> {
    // SAFETY: every region of these tests has a `Ctx` as its data word, and the test keeps it
    // alive until the region is cleared (teardown), after its last touch.
    let ctx = unsafe { &*(info.region.data as *const Ctx) };
    *ctx.last.lock() = Some(*info);
    let page = info.addr & !0xfff;
    if page == ctx.fail_page.load(Ordering::SeqCst) {
        return Err(FaultError::from_code(ctx.fail_with.load(Ordering::SeqCst)));
    }
    if ctx.wait.load(Ordering::SeqCst) {
        ctx.saw_if.store(
            x86_64::instructions::interrupts::are_enabled(),
            Ordering::SeqCst,
        );
        ctx.in_handler.store(true, Ordering::SeqCst);
        if !wait_until(10_000, || ctx.release.load(Ordering::SeqCst)) {
            return Err(FaultError::Injected);
        }
    }
    map_fresh(page).map(|_| ())
}

/// Maps a zeroed frame at `page`, linking a page table for its 2 MiB first if needed.
pub(super) fn map_fresh(page: u64) -> Result<PhysAddr, FaultError> {
    if aspace::pte_table(page).is_none() {
        let pt = zeroed_frame().ok_or(FaultError::NoMemory)?;
        // SAFETY: a fresh zeroed table owned by the test until its teardown unlinks it.
        match unsafe { aspace::link_pte_table(page, pt, &mut PoolFrames) } {
            Ok(()) => {}
            Err(AspaceError::AlreadyLinked { .. }) => recycle(pt),
            Err(_) => return Err(FaultError::NoMemory),
        }
    }
    let f = zeroed_frame().ok_or(FaultError::NoMemory)?;
    let pte = Pte::new(f, PteProt::read_write()).map_err(|_| FaultError::NoMemory)?;
    let slot = pte_slot(page).map_err(|_| FaultError::NoMemory)?;
    if slot
        .compare_exchange(0, pte.raw(), Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        recycle(f);
    }
    Ok(f)
}

/// One test's address space: a range with [`on_fault`] registered over it.
pub(super) struct Space {
    pub(super) range: MmRange,
    handle: RegionHandle,
}

impl Space {
    pub(super) fn new(ctx: &Ctx) -> R<Space> {
        let range = aspace::mm_range_alloc(1 << 30).map_err(|e| format!("range: {e}"))?;
        let handle =
            fault::set_region_fault_handler(range.range(), on_fault, ctx as *const Ctx as usize)
                .map_err(|e| format!("register: {e}"))?;
        Ok(Space { range, handle })
    }

    pub(super) fn start(&self) -> u64 {
        self.range.start()
    }

    /// Unregisters, unmaps every page of the first `chunks` 2 MiB, unlinks their tables
    /// (shooting down on every CPU) and frees the range.
    pub(super) fn teardown(self, chunks: u64) -> TestResult {
        fault::clear_region_fault_handler(self.handle).map_err(|e| format!("clear: {e}"))?;
        for c in 0..chunks {
            let base = self.range.start() + c * PMD_SIZE;
            let Some(pt) = aspace::pte_table(base) else {
                continue;
            };
            // SAFETY: the test's own table, linked by `map_fresh`; no CPU touches it now.
            for e in unsafe { aspace::pte_entries(pt) } {
                let old = Pte::from_raw(e.swap(0, Ordering::AcqRel));
                if old.present() {
                    recycle(old.frame());
                }
            }
            match aspace::unlink_pte_table(base, &CpuSet::online()) {
                Ok(Some(t)) if t == pt => recycle(t),
                other => return Err(format!("unlink at {base:#x}: {other:?}")),
            }
        }
        aspace::mm_range_free(self.range).map_err(|(_, e)| format!("free: {e}"))
    }
}

/// The fault counters of the running CPU.
pub(super) fn my_stats() -> fault::FaultStats {
    fault::stats(percpu::cpu_id())
}
