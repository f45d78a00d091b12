//! The `limit` floor where no trap can be taken: the host-thread mode's floor.
//!
//! In the kernel, `limit` is a real page fault: a touch of a not-present page traps, the
//! region's handler zeroes a page of the CPU's own and installs a PTE to it, the access is
//! retried, and the worker clears the PTE and `invlpg`s the address. Host threads cannot
//! take their own page faults (a SIGSEGV handler would measure Linux's signal delivery, not
//! a fault path), so on the host the floor is the same work as a *function call*: per op,
//! zero a 4 KiB page of the CPU's own, install an entry pointing at it in a software page
//! table of the CPU's own (one 4 KiB table of 512 entries, compare-and-exchange as
//! `set_pte_at` on an entry that must be empty), do the access the fault was for, and clear
//! the entry with an exchange (`ptep_get_and_clear`). Each entry has a page of its own, as
//! the kernel's floor gives each entry of its window a frame: a workload that maps the
//! window maps a different page at each entry. There is no trap, no TLB and no
//! `invlpg`, so this floor is far higher than the kernel's: a host run's fraction of it says
//! how much of the software path's cost is ours, not what the hardware allows. Every CPU's
//! table and page are its own allocations, 4 KiB aligned, and its counters sit in a 128-byte
//! pair of their own, so no two CPUs share a line (nor a prefetched pair).
//!
//! The invariant checked after every run: every entry is clear again and each CPU cleared
//! exactly as many entries as it installed.

use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

/// Entries of a software page table (`PTRS_PER_PTE`).
const PTRS_PER_PTE: usize = 512;
/// The present bit of a software entry.
const PRESENT: u64 = 1;
/// Operations per batch (at most).
const BATCH: u64 = 64;

/// One 4 KiB page of words: a software page table or a data page.
#[repr(C, align(4096))]
struct Page([AtomicU64; PTRS_PER_PTE]);

const _: () = assert!(core::mem::size_of::<Page>() == 4096);

impl Page {
    fn boxed() -> Box<Page> {
        Box::new(Page([const { AtomicU64::new(0) }; PTRS_PER_PTE]))
    }
}

/// One CPU's table, pages and counts.
struct CpuFloor {
    table: Box<Page>,
    /// The page each entry points at when installed, one per entry.
    pages: Vec<Box<Page>>,
    next: AtomicU64,
    installed: AtomicU64,
    cleared: AtomicU64,
}

impl CpuFloor {
    /// An empty table, its pages, no counts.
    fn new() -> CpuFloor {
        CpuFloor {
            table: Page::boxed(),
            pages: (0..PTRS_PER_PTE).map(|_| Page::boxed()).collect(),
            next: AtomicU64::new(0),
            installed: AtomicU64::new(0),
            cleared: AtomicU64::new(0),
        }
    }
}

/// The software floor scenario (`limit`, variant `floor`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftFloor;

/// A [`SoftFloor`] set up for some CPUs.
pub struct SoftFloorInstance {
    /// Per CPU, each on its own 128-byte pair (the counters are written on every op).
    cpus: Vec<ksync::CachePadded<CpuFloor>>,
}

impl BenchScenario for SoftFloor {
    fn name(&self) -> &'static str {
        crate::catalog::LIMIT
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let cpus = (0..setup.cpus)
            .map(|_| ksync::CachePadded(CpuFloor::new()))
            .collect();
        Ok(Box::new(SoftFloorInstance { cpus }))
    }
}

/// One software "fault": zero the page, install its entry, the access, clear the entry.
#[inline(never)]
fn soft_fault(c: &CpuFloor, index: usize, value: u64) -> Result<(), ScenarioError> {
    let (Some(page), Some(slot)) = (c.pages.get(index), c.table.0.get(index)) else {
        return Err(ScenarioError::new(format!("no software entry {index}")));
    };
    for w in &page.0 {
        w.store(0, Ordering::Relaxed);
    }
    let entry = core::ptr::from_ref::<Page>(page) as u64 | PRESENT;
    if slot
        .compare_exchange(0, entry, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(ScenarioError::new(format!(
            "software entry {index} was not empty at install"
        )));
    }
    c.installed.fetch_add(1, Ordering::Relaxed);
    // The access the fault was for, through the entry just installed.
    let mapped = slot.load(Ordering::Acquire) & !(4096 - 1);
    if mapped != entry & !PRESENT {
        return Err(ScenarioError::new("software entry changed under its owner"));
    }
    page.0[0].store(value, Ordering::Relaxed);
    let old = slot.swap(0, Ordering::AcqRel);
    if old != entry {
        return Err(ScenarioError::new(format!(
            "software entry {index} held {old:#x} at clear, {entry:#x} was installed"
        )));
    }
    c.cleared.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

impl Instance for SoftFloorInstance {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let c = self
            .cpus
            .get(ctx.index as usize)
            .ok_or_else(|| ScenarioError::new(format!("no floor set up for cpu {}", ctx.cpu)))?;
        let n = BATCH.min(ctx.max_ops);
        for _ in 0..n {
            let k = c.next.fetch_add(1, Ordering::Relaxed);
            soft_fault(c, (k % PTRS_PER_PTE as u64) as usize, k)?;
        }
        Ok(n)
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let sum = |f: fn(&CpuFloor) -> &AtomicU64| -> i64 {
            self.cpus
                .iter()
                .map(|c| f(&c.0).load(Ordering::Relaxed) as i64)
                .sum()
        };
        alloc::vec![
            ("soft_pte_installs".into(), sum(|c| &c.installed)),
            ("soft_pte_clears".into(), sum(|c| &c.cleared)),
        ]
    }

    fn check(&self) -> Result<(), String> {
        for (cpu, c) in self.cpus.iter().enumerate() {
            if let Some(i) = c
                .table
                .0
                .iter()
                .position(|e| e.load(Ordering::Acquire) != 0)
            {
                return Err(format!("cpu {cpu}: software entry {i} still installed"));
            }
            let (i, k) = (
                c.installed.load(Ordering::Relaxed),
                c.cleared.load(Ordering::Relaxed),
            );
            if i != k {
                return Err(format!("cpu {cpu}: {i} entries installed, {k} cleared"));
            }
        }
        Ok(())
    }

    fn teardown(self: Box<Self>) -> Result<(), ScenarioError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Storage;

    #[test]
    fn a_batch_faults_and_clears_and_keeps_its_invariant() {
        let storage = Storage::new();
        let s = SoftFloor;
        let inst = s
            .instantiate(&Setup {
                config: "anon",
                variant: "floor",
                cpus: 2,
                storage: &storage,
            })
            .unwrap();
        let ctx = |cpu, max_ops| BatchCtx {
            cpu,
            index: cpu,
            max_ops,
            deadline_ns: u64::MAX,
        };
        assert_eq!(inst.run_batch(&ctx(0, u64::MAX)).unwrap(), BATCH);
        assert_eq!(inst.run_batch(&ctx(1, 5)).unwrap(), 5);
        assert!(inst.check().is_ok());
        let counters = inst.counters();
        assert_eq!(counters[0], ("soft_pte_installs".into(), 64 + 5));
        assert_eq!(counters[1], ("soft_pte_clears".into(), 64 + 5));
        assert!(inst.run_batch(&ctx(2, 1)).is_err());
        inst.teardown().unwrap();
    }

    /// Each entry's fault zeroes and writes the entry's own page: the write of operation
    /// `k` lands in page `k mod 512` and no other.
    #[test]
    fn each_entry_faults_on_a_page_of_its_own() {
        let c = CpuFloor::new();
        for k in 0..3 {
            soft_fault(&c, k, 100 + k as u64).unwrap();
        }
        let first: Vec<u64> = c.pages[..4]
            .iter()
            .map(|p| p.0[0].load(Ordering::Relaxed))
            .collect();
        assert_eq!(first, [100, 101, 102, 0]);
        soft_fault(&c, 1, 7).unwrap();
        assert_eq!(c.pages[1].0[0].load(Ordering::Relaxed), 7);
        assert_eq!(c.pages[0].0[0].load(Ordering::Relaxed), 100);
        assert!(soft_fault(&c, PTRS_PER_PTE, 1).is_err());
    }

    #[test]
    fn the_check_sees_a_leaked_entry() {
        let inst = SoftFloorInstance {
            cpus: alloc::vec![ksync::CachePadded(CpuFloor {
                installed: AtomicU64::new(1),
                ..CpuFloor::new()
            })],
        };
        inst.cpus[0].table.0[7].store(0x1000 | PRESENT, Ordering::Relaxed);
        assert_eq!(
            inst.check(),
            Err("cpu 0: software entry 7 still installed".into())
        );
        inst.cpus[0].table.0[7].store(0, Ordering::Relaxed);
        assert_eq!(
            inst.check(),
            Err("cpu 0: 1 entries installed, 0 cleared".into())
        );
    }
}
