//! The seeds' scenarios on this kernel's fault core: [`bench::vm::VmHost`] over the page
//! allocator, the kernel's RCU and the address-space slot.
//!
//! A scenario's store is a real store (`touch_write_u64`): it traps into the #PF
//! dispatcher, which calls `handle_mm_fault` for the address space's range, and a failed
//! fault comes back through the exception table as the touch routine's error. Contexts and
//! address spaces are the ones the `vm_*` tests use ([`crate::vm`]).

use crate::arch::fault::FaultError as XFault;
use crate::arch::mmu::KernelMmu;
use crate::arch::touch::{TouchError, touch_read_u64, touch_write_u64};
use crate::percpu;
use crate::vm::aspace::KernelMm;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use bench::vm::{Pn, Space, VmHost};
use mm::context::{Vm, VmConfig};
use mm::fault::FaultError;
use mm::mm_struct::MmStruct;
use mm::vma::VmArea;

/// The kernel's fault core for the benchmark.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelVmHost;

struct KernelSpace<'v, P: Pn, V: VmArea>(KernelMm<'v, P, V>);

fn fault_error(e: TouchError) -> FaultError {
    match e {
        TouchError::Fault(XFault::MemcgOom) => FaultError::MemcgOom,
        TouchError::Fault(XFault::NoMemory) => FaultError::NoMemory,
        TouchError::Fault(XFault::Injected) => FaultError::Injected,
        TouchError::Fault(XFault::AccessDenied) => FaultError::AccessDenied,
        TouchError::Fault(XFault::NoPage | XFault::Unhandled) | TouchError::BadAddress(_) => {
            FaultError::NoRegion
        }
    }
}

impl<P: Pn, V: VmArea + 'static> Space<V, KernelMmu> for KernelSpace<'_, P, V> {
    fn mm(&self) -> &MmStruct<V, KernelMmu> {
        self.0.mm()
    }

    fn base(&self) -> u64 {
        self.0.base()
    }

    fn use_mm(&self, _cpu: usize) {
        self.0.use_mm();
    }

    fn write(&self, _cpu: usize, va: u64, value: u64) -> Result<(), FaultError> {
        touch_write_u64(va, value).map_err(fault_error)
    }

    fn read(&self, _cpu: usize, va: u64) -> Result<u64, FaultError> {
        touch_read_u64(va).map_err(fault_error)
    }
}

impl VmHost for KernelVmHost {
    type Mmu = KernelMmu;

    fn nr_cpus(&self) -> usize {
        percpu::nr_cpu_ids()
    }

    fn node_of(&self, cpu: usize) -> u32 {
        percpu::cpu_to_node(cpu)
    }

    fn new_vm<P: Pn>(&self, cfg: VmConfig) -> Result<Box<Vm<P, KernelMmu>>, String> {
        let nr = self.nr_cpus();
        crate::vm::new_vm::<P>(|c| {
            *c = cfg;
            c.nr_cpus = nr;
        })
        .map_err(|e| format!("{e:?}"))
    }

    fn new_space<'v, P: Pn, V: VmArea + 'static>(
        &self,
        vm: &'v Vm<P, KernelMmu>,
        size: u64,
    ) -> Result<Box<dyn Space<V, KernelMmu> + 'v>, String> {
        let mm = KernelMm::<P, V>::new(vm, size).map_err(|e| format!("address space: {e:?}"))?;
        Ok(Box::new(KernelSpace(mm)))
    }

    fn heap_free(&self) -> Option<usize> {
        Some(crate::mm::heap::usage().1)
    }

    fn rcu_barrier(&self) -> Result<(), String> {
        crate::rcu::rcu_barrier()
            .map(|_| ())
            .map_err(|e| format!("rcu_barrier: {e}"))
    }
}
