//! An address space in the kernel: a range of the address-space slot, its `mm_struct`, and
//! its registration with the page-fault dispatcher.
//!
//! [`KernelMm::new`] takes a 1 GiB-aligned range of the slot, builds the fault core's
//! address space over it and registers the range with the #PF dispatcher together with a
//! pointer to a small target record (the context and the address space) and a handler
//! monomorphised for their types. A page fault there ends in
//! [`mm::context::Vm::handle_mm_fault`] on the faulting CPU, with interrupts enabled (the
//! dispatcher re-enables them, so the CPU keeps answering shootdown IPIs while it waits for
//! a lock); its error goes back to the touch routine through the exception table.
//!
//! Every CPU that accesses the range calls [`KernelMm::use_mm`] first (Linux's
//! `kthread_use_mm`): it puts the CPU in the address space's `mm_cpumask`, which unmaps
//! shoot down.
//!
//! Dropping a `KernelMm` unregisters the range first (so no fault can reach the target any
//! more), then unmaps every region, frees the page tables and gives the range back.
//!
//! Unsafe code here, and why: the kernel's fault handler reaches its address space through
//! the region's data word, which lives as long as the region is registered.
#![allow(unsafe_code)]

use super::KernelVm;
use crate::arch::aspace::{self, MmRange};
use crate::arch::fault::{self, FaultError as ArchFault, FaultInfo, RegionHandle};
use crate::arch::mmu::KernelMmu;
use alloc::boxed::Box;
use memcg::MemCgroupPerNode;
use mm::fault::FaultError;
use mm::mm_struct::MmStruct;
use mm::vma::VmArea;

/// What the dispatcher's handler needs: the context and the address space.
struct Target<P: MemCgroupPerNode, V: VmArea> {
    vm: *const KernelVm<P>,
    mm: *const MmStruct<V, KernelMmu>,
}

/// The region fault handler for address spaces of type `V` in contexts of type `P`.
fn region_fault<P: MemCgroupPerNode, V: VmArea>(info: &FaultInfo) -> Result<(), ArchFault> {
    if info.protection {
        // Present pages are never write-protected in this kernel: not ours to resolve.
        return Err(ArchFault::Unhandled);
    }
    // SAFETY: `data` is the `Target<P, V>` `KernelMm::new` registered with this very
    // function; it and what it points at live until the registration is cleared, which
    // `KernelMm::drop` does before freeing anything.
    let t = unsafe { &*(info.region.data as *const Target<P, V>) };
    // SAFETY: as above.
    let (vm, mm) = unsafe { (&*t.vm, &*t.mm) };
    vm.handle_mm_fault(mm, info.cpu, info.addr, info.write)
        .map_err(|e| match e {
            FaultError::MemcgOom => ArchFault::MemcgOom,
            FaultError::NoMemory => ArchFault::NoMemory,
            FaultError::Injected => ArchFault::Injected,
            FaultError::AccessDenied => ArchFault::AccessDenied,
            FaultError::NoRegion => ArchFault::NoPage,
        })
}

/// Why an address space could not be made.
#[derive(Debug)]
pub enum KernelMmError {
    /// No range left in the slot.
    Aspace(aspace::AspaceError),
    /// The dispatcher has no room, or the range overlaps another.
    Region(fault::RegionError),
    /// The fault core refused the range.
    Mm(mm::mm_struct::MmError),
}

/// An address space of the kernel, live for page faults.
pub struct KernelMm<'v, P: MemCgroupPerNode, V: VmArea> {
    vm: &'v KernelVm<P>,
    mm: Option<Box<MmStruct<V, KernelMmu>>>,
    target: *mut Target<P, V>,
    handle: Option<RegionHandle>,
    range: Option<MmRange>,
}

// SAFETY: the raw `target` is only read by the fault handler (through the registration)
// and freed by `drop`, which takes `&mut self`; everything else a `KernelMm` hands out is
// the context and the `MmStruct`, which are shared between CPUs by design (their own locks
// and RCU make that safe). So sharing or moving a `KernelMm` between CPUs is as safe as
// sharing those.
unsafe impl<P: MemCgroupPerNode, V: VmArea> Sync for KernelMm<'_, P, V>
where
    KernelVm<P>: Sync,
    MmStruct<V, KernelMmu>: Sync,
{
}

// SAFETY: as for `Sync`: the target pointer is owned by the `KernelMm` wherever it lives.
unsafe impl<P: MemCgroupPerNode, V: VmArea> Send for KernelMm<'_, P, V>
where
    KernelVm<P>: Sync,
    MmStruct<V, KernelMmu>: Send + Sync,
{
}

impl<P: MemCgroupPerNode, V: VmArea> core::fmt::Debug for KernelMm<'_, P, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelMm").field("mm", &self.mm).finish()
    }
}

impl<'v, P: MemCgroupPerNode, V: VmArea> KernelMm<'v, P, V> {
    /// A new address space of `size` bytes (rounded up to 1 GiB) in context `vm`.
    pub fn new(vm: &'v KernelVm<P>, size: u64) -> Result<Self, KernelMmError> {
        let range = aspace::mm_range_alloc(size).map_err(KernelMmError::Aspace)?;
        let (start, end) = (range.start(), range.end());
        let mm = match vm.new_mm::<V>(start, end - start) {
            Ok(mm) => mm,
            Err(e) => {
                ksync::warn_on_once!(
                    aspace::mm_range_free(range).is_err(),
                    "freeing an address-space range failed"
                );
                return Err(KernelMmError::Mm(e));
            }
        };
        let target = Box::into_raw(Box::new(Target {
            vm: core::ptr::from_ref(vm),
            mm: core::ptr::from_ref(&*mm),
        }));
        let handle = match fault::set_region_fault_handler(
            start..end,
            region_fault::<P, V>,
            target as usize,
        ) {
            Ok(h) => h,
            Err(e) => {
                // SAFETY: `target` came from `Box::into_raw` above and was not published.
                drop(unsafe { Box::from_raw(target) });
                ksync::warn_on_once!(
                    aspace::mm_range_free(range).is_err(),
                    "freeing an address-space range failed"
                );
                return Err(KernelMmError::Region(e));
            }
        };
        Ok(KernelMm {
            vm,
            mm: Some(mm),
            target,
            handle: Some(handle),
            range: Some(range),
        })
    }

    /// The fault core's address space.
    #[must_use]
    pub fn mm(&self) -> &MmStruct<V, KernelMmu> {
        self.mm.as_deref().expect("present until drop")
    }

    /// First address of the range.
    #[must_use]
    pub fn base(&self) -> u64 {
        self.mm().range().0
    }

    /// The running CPU is about to access this address space
    /// ([`MmStruct::use_mm`], Linux's `kthread_use_mm`): from now on every unmap's
    /// shootdown includes it. Every CPU that loads or stores in the range must call this
    /// first: the slot is mapped on every CPU at once, so a CPU can cache a translation
    /// another CPU's fault installed without ever faulting itself.
    pub fn use_mm(&self) {
        self.mm().use_mm(crate::percpu::cpu_id());
    }
}

impl<P: MemCgroupPerNode, V: VmArea> Drop for KernelMm<'_, P, V> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            ksync::warn_on_once!(
                fault::clear_region_fault_handler(h).is_err(),
                "clearing a region's fault handler failed"
            );
        }
        // SAFETY: the registration is gone, so no fault handler can be using the target.
        drop(unsafe { Box::from_raw(self.target) });
        if let Some(mut mm) = self.mm.take() {
            self.vm.destroy_mm(&mut mm, crate::percpu::cpu_id());
            drop(mm);
        }
        if let Some(r) = self.range.take() {
            ksync::warn_on_once!(
                aspace::mm_range_free(r).is_err(),
                "freeing an address-space range failed"
            );
        }
    }
}
