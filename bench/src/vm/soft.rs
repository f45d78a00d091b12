//! [`VmHost`] on host threads: the buddy allocator over an arena of host memory, the
//! software MMU, and a QSBR RCU domain the threads report to.
//!
//! `kx bench --host` and this crate's tests run the seeds' scenarios with it. A store is
//! [`Vm::touch`] (a present PTE is a hit, anything else goes through `handle_mm_fault`)
//! followed by the store itself, into the frame the software PTE maps: a function call, not
//! a trap, with no TLB. Each benchmark thread reports a quiescent state between batches
//! ([`SoftHost::quiescent`], wired to the platform's quiescent point); [`VmHost::rcu_barrier`]
//! runs with every thread idle, so it takes every CPU offline, completes a grace period and
//! runs the callbacks.
//!
//! Unsafe code here, and why (one of bench's two such modules): a software address space
//! reads and writes the words of the frames its PTEs map, which are host memory of the
//! arena handed to the buddy allocator; the only way to that memory from a frame number is
//! a raw pointer into the arena.
#![allow(unsafe_code)]

use super::{Pn, Space, VmHost};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicU64, Ordering};
use ksync::Ticket;
use mm::context::{Vm, VmConfig};
use mm::fault::FaultError;
use mm::mm_struct::MmStruct;
use mm::pgtable::Mmu;
use mm::soft_mmu::SoftMmu;
use mm::vma::VmArea;
use page_alloc::{HeapStorage, NumaTopology, PageAlloc, PcpConfig, PfnRange};

/// First frame of the arena (1 MiB, as if the first megabyte were firmware's).
const BASE_PFN: u64 = 0x100;
/// Where address spaces start, and the range each one gets.
const SPACE_BASE: u64 = 0x10_0000_0000;
const SPACE_ALIGN: u64 = 1 << 30;

/// The fault core on host threads.
pub struct SoftHost {
    alloc: &'static PageAlloc,
    mmu: &'static SoftMmu,
    rcu: &'static ksync::Rcu<Ticket>,
    nr_cpus: usize,
    next_space: AtomicU64,
}

impl core::fmt::Debug for SoftHost {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SoftHost")
            .field("nr_cpus", &self.nr_cpus)
            .field("free", &self.alloc.nr_free_pages())
            .finish()
    }
}

impl SoftHost {
    /// `nr_cpus` CPUs over `mib` MiB of arena on one node (leaked: frames and the
    /// allocator live for the process).
    pub fn new(nr_cpus: usize, mib: u64) -> Result<SoftHost, String> {
        let pages = mib * 256;
        let numa = NumaTopology::round_robin(
            1,
            nr_cpus,
            &[(0, PfnRange::new(BASE_PFN, BASE_PFN + pages))],
        )
        .map_err(|e| format!("topology: {e:?}"))?;
        let alloc = PageAlloc::with_all_free(numa, &mut HeapStorage::new(), PcpConfig::default())
            .map_err(|e| format!("page allocator: {e:?}"))?;
        let alloc: &'static PageAlloc = Box::leak(Box::new(alloc));
        let mmu = SoftMmu::new(BASE_PFN, pages);
        let rcu: &'static ksync::Rcu<Ticket> = Box::leak(Box::new(ksync::Rcu::new(nr_cpus)));
        for c in 0..nr_cpus {
            rcu.online(c).map_err(|e| format!("rcu: {e:?}"))?;
        }
        Ok(SoftHost {
            alloc,
            mmu,
            rcu,
            nr_cpus,
            next_space: AtomicU64::new(0),
        })
    }

    /// CPU `cpu` holds no RCU-protected reference (between two batches).
    pub fn quiescent(&self, cpu: usize) {
        let _ = self.rcu.quiescent_state(cpu);
    }

    /// Free frames once every per-CPU list is drained.
    #[must_use]
    pub fn free_frames(&self) -> u64 {
        self.alloc.drain_all();
        self.alloc.nr_free_pages()
    }
}

/// An address space of a [`SoftHost`].
struct SoftSpace<'v, P: Pn, V: VmArea> {
    vm: &'v Vm<P, SoftMmu>,
    mm: Option<Box<MmStruct<V, SoftMmu>>>,
    mmu: &'static SoftMmu,
}

impl<P: Pn, V: VmArea> SoftSpace<'_, P, V> {
    fn mm_ref(&self) -> &MmStruct<V, SoftMmu> {
        self.mm.as_deref().expect("present until drop")
    }

    /// The word at `va` in the frame its PTE maps now.
    fn word(&self, va: u64) -> Option<&AtomicU64> {
        let pfn = self.mmu.pte_pfn(self.mm_ref().pgtable().read_pte(va))?;
        let p = self.mmu.frame_ptr(pfn).wrapping_add((va & 0xff8) as usize);
        // Words of mapped frames are only ever accessed atomically by the scenarios (zeroing
        // and backing-store reads happen before a frame is mapped or after it is unmapped).
        let word = p.cast::<AtomicU64>();
        // SAFETY: in the arena's live frame (4 KiB, process lifetime), 8-aligned, atomic only.
        Some(unsafe { &*word })
    }
}

impl<P: Pn, V: VmArea> Space<V, SoftMmu> for SoftSpace<'_, P, V> {
    fn mm(&self) -> &MmStruct<V, SoftMmu> {
        self.mm_ref()
    }

    fn base(&self) -> u64 {
        self.mm_ref().range().0
    }

    fn use_mm(&self, cpu: usize) {
        self.mm_ref().use_mm(cpu);
    }

    fn write(&self, cpu: usize, va: u64, value: u64) -> Result<(), FaultError> {
        // A page evicted between the touch and the store (an object page) is simply
        // faulted again.
        loop {
            self.vm.touch(self.mm_ref(), cpu, va, true)?;
            if let Some(w) = self.word(va) {
                w.store(value, Ordering::Relaxed);
                return Ok(());
            }
        }
    }

    fn read(&self, cpu: usize, va: u64) -> Result<u64, FaultError> {
        loop {
            self.vm.touch(self.mm_ref(), cpu, va, false)?;
            if let Some(w) = self.word(va) {
                return Ok(w.load(Ordering::Relaxed));
            }
        }
    }
}

impl<P: Pn, V: VmArea> Drop for SoftSpace<'_, P, V> {
    fn drop(&mut self) {
        if let Some(mut mm) = self.mm.take() {
            self.vm.destroy_mm(&mut mm, 0);
        }
    }
}

impl VmHost for SoftHost {
    type Mmu = SoftMmu;

    fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    fn new_vm<P: Pn>(&self, mut cfg: VmConfig) -> Result<Box<Vm<P, SoftMmu>>, String> {
        cfg.nr_cpus = self.nr_cpus;
        Vm::new(self.alloc, self.mmu, self.rcu, self.rcu, cfg).map_err(|e| format!("{e:?}"))
    }

    fn new_space<'v, P: Pn, V: VmArea + 'static>(
        &self,
        vm: &'v Vm<P, SoftMmu>,
        size: u64,
    ) -> Result<Box<dyn Space<V, SoftMmu> + 'v>, String> {
        let len = size.div_ceil(SPACE_ALIGN).max(1) * SPACE_ALIGN;
        let base = SPACE_BASE + self.next_space.fetch_add(len, Ordering::Relaxed);
        let mm = vm
            .new_mm::<V>(base, len)
            .map_err(|e| format!("address space: {e:?}"))?;
        Ok(Box::new(SoftSpace {
            vm,
            mm: Some(mm),
            mmu: self.mmu,
        }))
    }

    fn rcu_barrier(&self) -> Result<(), String> {
        // Every engine CPU is idle: each goes offline (an extended quiescent state), so the
        // grace period cannot wait for a thread that is gone.
        for c in 0..self.nr_cpus {
            self.rcu
                .offline(c)
                .map_err(|e| format!("rcu_barrier: CPU {c}: {e}"))?;
        }
        let done = self.rcu.synchronize(None).map(|_| ());
        for c in 0..self.nr_cpus {
            let _ = self.rcu.online(c);
        }
        done.map_err(|e| format!("rcu_barrier: {e}"))?;
        self.rcu.run_callbacks();
        Ok(())
    }
}
