//! The `limit` scenario in the kernel: the floor under every fault scenario, with a real
//! page fault per operation and nothing else.
//!
//! One operation on a CPU: a write (a touch routine, as a benchmark worker's) to a
//! not-present page of the CPU's own 2 MiB window raises #PF; the region's handler zeroes a
//! 4 KiB frame of the CPU's own through the direct map (with the kernel's `clear_page`) and
//! installs a PTE to it (Linux's
//! `do_anonymous_page` without the allocator, the memcg charge or the LRU: no
//! `alloc_page`, no `mem_cgroup_charge`, no `folio_add_lru`); the write is retried and
//! succeeds; the worker clears the PTE (`ptep_get_and_clear`) and drops its translation
//! with `invlpg` (`flush_tlb_page` of one local CPU). What is left is what the hardware (or
//! the emulator) charges for a trap, a 4 KiB clear, two PTE writes and an `invlpg`: every
//! fault scenario's row is shown as a fraction of this rate at the same CPU count.
//!
//! Each CPU owns a 2 MiB window of one address-space range, a private PTE table linked for
//! that window (so no two CPUs share a table, a table lock or a PTE cache line) and 512
//! private frames, one per entry; the page faulted rotates through the window's 512
//! entries, as a `page_fault1` worker walks its mapping, and each fault zeroes the frame of
//! its entry. A workload that maps a 2 MiB window maps a different frame at each of its
//! pages, and the fault scenarios' 512-page batches clear 512 different frames per batch:
//! with one frame for every fault the floor zeroed 4 KiB that stayed in the host's caches
//! and in the emulator's TLB, which no fault of those workloads can, and the fault paths'
//! shares of it read lower than they do of a frame per entry (docs/design.md, "The
//! floor's frames").
//!
//! The invariant checked after every run: every entry is clear, and the region's handler
//! resolved exactly as many faults in each CPU's window as the CPU did operations since
//! setup (so each operation really trapped: a translation `invlpg` failed to drop would let
//! a write through without a fault). The handler counts them itself, not the CPU's fault
//! statistics: the engine measures an instance of the floor around every run of a fault
//! scenario, whose faults on the same CPU come in between. A fault in the window that ends
//! at a fixup fails the batch.
//!
//! Unsafe code here, and why: the floor's fault handler reaches its instance through the
//! region's data word and writes its window's page-table entries directly, as the floor of
//! the fault path must.
#![allow(unsafe_code)]

use crate::arch::aspace::{self, MmRange};
use crate::arch::clear_page::clear_page;
use crate::arch::fault::{self, FaultError, FaultInfo, FaultStats, RegionHandle};
use crate::arch::pte::{PMD_SIZE, PTRS_PER_PTE, Pte, PteProt, pte_index};
use crate::arch::vmlayout::pfn_to_kaddr;
use crate::arch::{tlb, touch};
use crate::mm::frame_pool::{PoolFrames, recycle, zeroed_frame};
use crate::percpu::CpuSet;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use bench::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use core::sync::atomic::{AtomicU64, Ordering};
use x86_64::PhysAddr;

/// Operations per batch (at most).
const BATCH: u64 = 32;

/// The kernel's `limit` floor (variant `floor`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TrapFloor;

/// One CPU's window, table and frames.
struct Window {
    /// First address of the CPU's 2 MiB.
    base: u64,
    /// Its private page table.
    pt: PhysAddr,
    /// The frame each entry maps when it faults, one per entry (an array of the table's
    /// length, so `pte_index` reaches it without a bounds check).
    frames: Box<[PhysAddr; PTRS_PER_PTE]>,
    /// The next entry to fault.
    next: AtomicU64,
    /// Operations done since setup.
    ops: AtomicU64,
    /// Faults the handler resolved in this window since setup (written by its CPU only).
    resolved: AtomicU64,
}

impl Window {
    fn entries(&self) -> &[AtomicU64; PTRS_PER_PTE] {
        // SAFETY: `pt` is this window's own page table, linked at setup and unlinked only by
        // `release`, which runs after every use of the instance's windows.
        unsafe { aspace::pte_entries(self.pt) }
    }
}

/// A [`TrapFloor`] set up for some CPUs.
pub struct TrapFloorInstance {
    range: Option<MmRange>,
    handle: Option<RegionHandle>,
    /// Per CPU, each on its own 128-byte pair (its counters are written on every op).
    windows: Vec<ksync::CachePadded<Window>>,
}

/// The region handler: zero the faulting CPU's frame and map it at the faulting address.
fn floor_fault(info: &FaultInfo) -> Result<(), FaultError> {
    // SAFETY: the region's data word is the address of the boxed instance that registered
    // it; `release` clears the registration before the instance is dropped, and only the
    // instance's own batches touch the region, so the instance outlives every fault on it.
    let inst = unsafe { &*(info.region.data as *const TrapFloorInstance) };
    let w = inst.windows.get(info.cpu).ok_or(FaultError::AccessDenied)?;
    if info.addr & !(PMD_SIZE - 1) != w.base || info.protection || info.instruction_fetch {
        return Err(FaultError::AccessDenied);
    }
    let frame = w.frames[pte_index(info.addr)];
    // SAFETY: the frame belongs to this window's entry, which is clear now (the entry is
    // cleared after every op and this fault is for a not-present entry), so no mapping of
    // it is live: the direct map is its only alias while it is zeroed.
    unsafe { clear_page(pfn_to_kaddr(frame.as_u64() >> 12)) };
    // The frame and its PTE as the fault path makes them (`KernelMmu::frame_ptr`, `mk_pte`).
    let pte = Pte::from_pfn(frame.as_u64() >> 12, PteProt::read_write());
    w.entries()[pte_index(info.addr)]
        .compare_exchange(0, pte.raw(), Ordering::Release, Ordering::Relaxed)
        .map_err(|_| FaultError::AccessDenied)?;
    // Only this window's CPU faults in it: a plain add, no locked RMW in the floor.
    let resolved = w.resolved.load(Ordering::Relaxed);
    w.resolved.store(resolved + 1, Ordering::Relaxed);
    Ok(())
}

impl BenchScenario for TrapFloor {
    fn name(&self) -> &'static str {
        bench::catalog::LIMIT
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let err = |what: &str, e: &dyn core::fmt::Display| ScenarioError(format!("{what}: {e}"));
        let cpus = u64::from(setup.cpus);
        let range =
            aspace::mm_range_alloc(cpus * PMD_SIZE).map_err(|e| err("address range", &e))?;
        let start = range.start();
        let mut inst = Box::new(TrapFloorInstance {
            range: Some(range),
            handle: None,
            windows: Vec::new(),
        });
        for cpu in 0..setup.cpus {
            let base = start + u64::from(cpu) * PMD_SIZE;
            let mut got = Vec::with_capacity(PTRS_PER_PTE);
            got.extend((0..PTRS_PER_PTE).map_while(|_| zeroed_frame()));
            let frames: Box<[PhysAddr; PTRS_PER_PTE]> = match got.into_boxed_slice().try_into() {
                Ok(frames) => frames,
                Err(short) => {
                    short.into_iter().for_each(recycle);
                    return Err(ScenarioError::new("out of frames for the floor's windows"));
                }
            };
            let Some(pt) = zeroed_frame() else {
                frames.into_iter().for_each(recycle);
                return Err(ScenarioError::new("out of frames for the floor's windows"));
            };
            // SAFETY: `pt` is a zeroed frame the instance owns until `release` unlinks it.
            if let Err(e) = unsafe { aspace::link_pte_table(base, pt, &mut PoolFrames) } {
                recycle(pt);
                frames.into_iter().for_each(recycle);
                return Err(err("page table", &e));
            }
            inst.windows.push(ksync::CachePadded(Window {
                base,
                pt,
                frames,
                next: AtomicU64::new(0),
                ops: AtomicU64::new(0),
                resolved: AtomicU64::new(0),
            }));
        }
        let data = &*inst as *const TrapFloorInstance as usize;
        let handle =
            fault::set_region_fault_handler(start..start + cpus * PMD_SIZE, floor_fault, data)
                .map_err(|e| err("region", &e))?;
        inst.handle = Some(handle);
        Ok(inst)
    }
}

impl TrapFloorInstance {
    /// Unregisters the region, clears what is left, unlinks the tables and frees the range.
    fn release(&mut self) -> Result<(), String> {
        let mut first_error: Option<String> = None;
        let mut note = |e: String| {
            first_error.get_or_insert(e);
        };
        if let Some(h) = self.handle.take()
            && let Err(e) = fault::clear_region_fault_handler(h)
        {
            note(format!("region: {e}"));
        }
        let mut cpus = CpuSet::new();
        for c in 0..self.windows.len() {
            cpus.insert(c);
        }
        for (cpu, w) in self.windows.drain(..).enumerate() {
            let leaked = w
                .entries()
                .iter()
                .filter(|e| e.swap(0, Ordering::AcqRel) != 0)
                .count();
            if leaked != 0 {
                note(format!("cpu {cpu}: {leaked} PTEs still set at teardown"));
            }
            match aspace::unlink_pte_table(w.base, &cpus) {
                Ok(Some(t)) if t == w.pt => {
                    recycle(t);
                    w.0.frames.into_iter().for_each(recycle);
                }
                // A table that may still be cached, or not ours: leak it and its frames.
                other => note(format!("unlink at {:#x}: {other:?}", w.base)),
            }
        }
        if let Some(r) = self.range.take()
            && let Err((r, e)) = aspace::mm_range_free(r)
        {
            // The range stays reserved: better lost than reused with a table still in it.
            note(format!("range {:#x}: {e}", r.start()));
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for TrapFloorInstance {
    fn drop(&mut self) {
        // After `teardown` there is nothing left; otherwise free what can be freed.
        let _ = self.release();
    }
}

impl Instance for TrapFloorInstance {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let w = self
            .windows
            .get(ctx.index as usize)
            .ok_or_else(|| ScenarioError(format!("no window for cpu {}", ctx.cpu)))?;
        let n = BATCH.min(ctx.max_ops);
        for _ in 0..n {
            let k = w.next.fetch_add(1, Ordering::Relaxed);
            let addr = w.base + (k % PTRS_PER_PTE as u64) * 4096;
            touch::touch_write_u64(addr, k)
                .map_err(|e| ScenarioError(format!("touch {addr:#x}: {e}")))?;
            let old = Pte::from_raw(w.entries()[pte_index(addr)].swap(0, Ordering::AcqRel));
            if !old.present() || old.frame() != w.frames[pte_index(addr)] {
                return Err(ScenarioError(format!(
                    "{addr:#x}: the write went through {old:?}, not its entry's frame"
                )));
            }
            tlb::flush_tlb_local(addr);
            w.ops.fetch_add(1, Ordering::Relaxed);
        }
        Ok(n)
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let total = self
            .windows
            .iter()
            .enumerate()
            .fold(FaultStats::default(), |a, (cpu, _)| {
                let s = fault::stats(cpu);
                FaultStats {
                    faults: a.faults + s.faults,
                    resolved: a.resolved + s.resolved,
                    fixups: a.fixups + s.fixups,
                }
            });
        let invlpg: u64 = (0..self.windows.len())
            .map(|c| tlb::stats(c).page_flushes)
            .sum();
        alloc::vec![
            ("page_faults".into(), total.faults as i64),
            ("page_faults_resolved".into(), total.resolved as i64),
            ("page_fault_fixups".into(), total.fixups as i64),
            ("invlpg".into(), invlpg as i64),
        ]
    }

    fn check(&self) -> Result<(), String> {
        for (cpu, w) in self.windows.iter().enumerate() {
            if let Some(i) = w
                .entries()
                .iter()
                .position(|e| e.load(Ordering::Acquire) != 0)
            {
                return Err(format!("cpu {cpu}: PTE {i} of its window is still set"));
            }
            let ops = w.ops.load(Ordering::Relaxed);
            let resolved = w.resolved.load(Ordering::Relaxed);
            if resolved != ops {
                return Err(format!(
                    "cpu {cpu}: {ops} operations but {resolved} page faults resolved in its \
                     window"
                ));
            }
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<(), ScenarioError> {
        self.release().map_err(ScenarioError)
    }
}
