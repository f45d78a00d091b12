//! The fault core in the kernel: `mm` on the x86 page tables, the page allocator and
//! the kernel's RCU, with real page faults.
//!
//! The platform-neutral fault core (`mm`) gets, here: the MMU
//! ([`crate::arch::mmu::KernelMmu`]: PTE tables linked into the address-space slot,
//! `invlpg`, shootdown IPIs), the page allocator ([`crate::mm::page_alloc`]) and RCU
//! ([`crate::rcu`]: the QSBR domain memcg and lru's FIFO readers use, and `call_rcu` for
//! regions and region tables). An address space ([`aspace::KernelMm`]) owns a range of the
//! slot and registers it with the page-fault dispatcher, so a load or store there traps
//! into [`mm::context::Vm::handle_mm_fault`]; accesses that may fail go through the
//! exception-table touch routines ([`crate::arch::touch`]), which return the
//! fault's error instead of crashing.

pub mod aspace;

use crate::arch::mmu::{KERNEL_MMU, KernelMmu};
use alloc::boxed::Box;
use memcg::MemCgroupPerNode;
use mm::context::{Vm, VmConfig, VmError};
use mm::fault_inject::FaultSpec;
use mm::rcu::RcuDefer;
use spin::Once;

/// `fail_page_alloc=` and `fail_charge=` from the command line.
static CMDLINE_FAULTS: Once<(Option<FaultSpec>, Option<FaultSpec>)> = Once::new();

fn fault_spec(s: abi::fault_spec::FaultSpec) -> FaultSpec {
    match s {
        abi::fault_spec::FaultSpec::Every(n) => FaultSpec::Every(n),
        abi::fault_spec::FaultSpec::Probability { seed, .. } => FaultSpec::Probability {
            percent: s.percent(),
            seed,
        },
    }
}

/// Records the command line's fault-injection specs (once, at boot).
pub fn set_cmdline_faults(
    page_alloc: Option<abi::fault_spec::FaultSpec>,
    charge: Option<abi::fault_spec::FaultSpec>,
) {
    CMDLINE_FAULTS.call_once(|| (page_alloc.map(fault_spec), charge.map(fault_spec)));
}

/// The command line's `(fail_page_alloc, fail_charge)` specs, `None` where not given.
#[must_use]
pub fn cmdline_faults() -> (Option<FaultSpec>, Option<FaultSpec>) {
    CMDLINE_FAULTS.get().copied().unwrap_or((None, None))
}

/// The kernel's `call_rcu`, for the fault core's regions and region tables.
#[derive(Debug)]
pub struct KernelRcuDefer;

/// The instance the address spaces share.
pub static KERNEL_RCU_DEFER: KernelRcuDefer = KernelRcuDefer;

impl RcuDefer for KernelRcuDefer {
    fn call_rcu(&self, f: Box<dyn FnOnce() + Send>) {
        crate::rcu::call_rcu(f);
    }
}

/// A fault-core context in the kernel.
pub type KernelVm<P> = Vm<P, KernelMmu>;

/// Why a kernel context could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelVmError {
    /// The page allocator or RCU is not up yet.
    NotReady,
    /// The context refused its configuration.
    Vm(VmError),
}

/// A context over the machine's page allocator, for every online CPU.
pub fn new_vm<P: MemCgroupPerNode<Family = ksync::Ticket>>(
    tweak: impl FnOnce(&mut VmConfig),
) -> Result<Box<KernelVm<P>>, KernelVmError> {
    let alloc = crate::mm::page_alloc::get().ok_or(KernelVmError::NotReady)?;
    let rcu = crate::rcu::get().ok_or(KernelVmError::NotReady)?;
    let mut cfg = VmConfig::new(crate::percpu::nr_cpu_ids());
    tweak(&mut cfg);
    // Every kernel context's CPU ids are the machine's CPUs: folio batches and charge
    // stocks are local locks.
    cfg.local_cpus = Some(crate::percpu::on_each_cpu::local_cpus());
    Vm::new(alloc, &KERNEL_MMU, rcu, &KERNEL_RCU_DEFER, cfg).map_err(KernelVmError::Vm)
}
