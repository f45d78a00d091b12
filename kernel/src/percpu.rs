//! Per-CPU data: the CPU id, each CPU's area, and slots that CPUs use without locks.
//!
//! Models Linux's per-CPU machinery (`include/linux/percpu-defs.h`, `smp_processor_id`,
//! `this_cpu_ptr`, `per_cpu_ptr`). Every CPU has a [`CpuArea`] reached through GS base
//! ([`crate::arch::percpu`]): its id, APIC id, NUMA node (`numa_node_id()`), stack,
//! and the mailbox of [`on_each_cpu()`](on_each_cpu::on_each_cpu). Ids are dense, 0 is the boot CPU, and they are handed out in bring-up
//! order, so `0..nr_cpu_ids()` are exactly the online CPUs once bring-up is over.
//!
//! [`PerCpu<T>`] is the lock-free slot array other subsystems build on (per-CPU free lists,
//! folio batches, stat deltas, RCU state): one cache-aligned slot per CPU, reached by the
//! running CPU with [`PerCpu::with`], which disables interrupts for the duration (the kernel
//! has no scheduler, so a CPU can only be interrupted, never migrated) and refuses re-entry
//! from the same CPU ([`PerCpu::try_with`] returns [`PerCpuError::Reentered`]; `with` treats it
//! as a kernel bug and panics) instead of handing out a second `&mut`. Slots are 128
//! bytes apart so that two CPUs' slots never share a cache line nor the adjacent-line
//! prefetch pair (the 128-byte spatial prefetcher). Data that other CPUs must read while the owner writes
//! (counters summed by a reader) goes in a [`PerCpuShared<T>`] of `Sync` cells instead.
//!
//! Unsafe code here, and why: each CPU's area is found through GS and shared with the other
//! CPUs, so `Sync` is asserted for it: written only during bring-up, before its CPU starts,
//! and read-only apart from its atomics after.
#![allow(unsafe_code)]

pub mod on_each_cpu;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::{Cell, UnsafeCell};
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicUsize, Ordering};
use lru::NodeId;

use crate::arch::percpu as arch;
use crate::mm::stack_range::KernelStack;
pub use on_each_cpu::{CallError, CpuSet, on_cpus, on_each_cpu};

/// Largest number of CPUs the kernel brings up.
pub const MAX_CPUS: usize = abi::cmdline::MAX_CPUS as usize;

/// A CPU's own area; GS base points at it.
#[repr(C, align(128))]
pub struct CpuArea {
    /// Address of this area (read as `gs:[0]`).
    self_ptr: *const CpuArea,
    /// Dense CPU id (read as `gs:[8]`).
    cpu: usize,
    /// Local APIC ID.
    apic_id: u32,
    /// Bring-up state (see [`CpuState`]).
    pub(crate) state: AtomicU8,
    /// The stack the CPU entered the kernel on (`None` for the boot CPU's boot stack).
    stack: Option<KernelStack>,
    /// Cross-CPU call waiting for this CPU ([`on_each_cpu()`](on_each_cpu::on_each_cpu)).
    pub(crate) call: AtomicPtr<on_each_cpu::CallData>,
    /// Set while this CPU runs a cross-CPU call's function.
    pub(crate) in_call: AtomicBool,
    /// The CPU's NUMA node (0 until NUMA discovery sets it).
    node: AtomicU32,
}

const _: () = assert!(core::mem::offset_of!(CpuArea, self_ptr) == 0);
const _: () = assert!(core::mem::offset_of!(CpuArea, cpu) == arch::CPU_ID_OFFSET);

/// Where a CPU is in bring-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CpuState {
    /// Area prepared, CPU not (yet) running kernel code.
    Starting = 0,
    /// Running: idle loop or work.
    Online = 1,
    /// Came in but could not finish its setup; halted.
    Failed = 2,
}

impl CpuArea {
    fn new(cpu: usize, apic_id: u32) -> Self {
        CpuArea {
            self_ptr: core::ptr::null(),
            cpu,
            apic_id,
            state: AtomicU8::new(CpuState::Starting as u8),
            stack: None,
            call: AtomicPtr::new(core::ptr::null_mut()),
            in_call: AtomicBool::new(false),
            node: AtomicU32::new(0),
        }
    }

    /// The CPU's NUMA node.
    #[must_use]
    pub fn node(&self) -> NodeId {
        self.node.load(Ordering::Relaxed)
    }

    /// The CPU id.
    #[must_use]
    pub fn cpu(&self) -> usize {
        self.cpu
    }

    /// The local APIC ID firmware listed for this CPU.
    #[must_use]
    pub fn apic_id(&self) -> u32 {
        self.apic_id
    }

    /// The kernel stack the CPU runs on (APs; `None` for the boot CPU).
    #[must_use]
    pub fn stack(&self) -> Option<&KernelStack> {
        self.stack.as_ref()
    }

    /// Bring-up state.
    #[must_use]
    pub fn state(&self) -> CpuState {
        match self.state.load(Ordering::Acquire) {
            1 => CpuState::Online,
            2 => CpuState::Failed,
            _ => CpuState::Starting,
        }
    }
}

// SAFETY: the raw self pointer is only an address (read through GS); every mutable field is
// atomic, and the rest is written before the CPU is started and read-only afterwards.
unsafe impl Sync for CpuArea {}
// SAFETY: as above; areas are created on the boot CPU and used by their own CPU.
unsafe impl Send for CpuArea {}

/// The areas, indexed by CPU id. Fixed capacity: pushing never moves an area.
struct Areas {
    slots: Box<[UnsafeCell<Option<CpuArea>>]>,
    /// Areas `0..count` are published.
    count: AtomicUsize,
}

// SAFETY: an area is written only by the boot CPU during bring-up, before `count` publishes
// it (Release) and before its CPU starts; after that it is read-only apart from its atomics.
unsafe impl Sync for Areas {}

static AREAS: spin::Once<Areas> = spin::Once::new();

/// Creates the area table with room for `capacity` CPUs and installs the boot CPU's area
/// (id 0) in its GS base. Runs once on the boot CPU before any other CPU starts.
pub fn init_boot_cpu(capacity: usize, apic_id: u32) {
    let capacity = capacity.clamp(1, MAX_CPUS);
    let areas = AREAS.call_once(|| Areas {
        slots: (0..capacity).map(|_| UnsafeCell::new(None)).collect(),
        count: AtomicUsize::new(0),
    });
    if areas.count.load(Ordering::Acquire) != 0 {
        return;
    }
    let area = prepare(0, apic_id, None).expect("capacity is at least 1");
    // SAFETY: the area is in the never-moving, never-freed table and is the boot CPU's.
    unsafe { arch::set_gs_base(area.cast()) };
    publish(0);
    // SAFETY: just installed; this is the boot CPU.
    unsafe { &*area }
        .state
        .store(CpuState::Online as u8, Ordering::Release);
    arch::mark_ready();
    // SAFETY: the boot CPU's GS base points at its area (above), whose second word is its
    // id; every AP installs its own area before it runs anything else.
    unsafe { ksync::cpu::set_cpu_id_gs_offset(core::mem::offset_of!(CpuArea, cpu)) };
}

/// Fills area `cpu` (not yet published) and returns its address, for the AP trampoline.
/// `None` when `cpu` is outside the table or already published.
pub(crate) fn prepare(
    cpu: usize,
    apic_id: u32,
    stack: Option<KernelStack>,
) -> Option<*const CpuArea> {
    let areas = AREAS.get()?;
    if cpu < areas.count.load(Ordering::Acquire) {
        return None;
    }
    let slot = areas.slots.get(cpu)?;
    let mut area = CpuArea::new(cpu, apic_id);
    area.stack = stack;
    // SAFETY: slots at or past `count` are unpublished: no CPU other than the boot CPU (the
    // caller, during bring-up) can see them, and a CPU that timed out was parked with INIT.
    unsafe {
        *slot.get() = Some(area);
        (*slot.get()).as_mut().map(|a| {
            a.self_ptr = a as *const CpuArea;
            a as *const CpuArea
        })
    }
}

/// Makes area `cpu` visible to [`area`] and [`nr_cpu_ids`] (called when that CPU is online).
pub(crate) fn publish(cpu: usize) {
    if let Some(a) = AREAS.get() {
        a.count.store(cpu + 1, Ordering::Release);
    }
}

/// The id of the running CPU (0 before per-CPU areas exist, when only the boot CPU runs).
#[inline]
#[must_use]
pub fn cpu_id() -> usize {
    arch::cpu_id()
}

/// How many CPUs are online; their ids are `0..nr_cpu_ids()`.
#[must_use]
pub fn nr_cpu_ids() -> usize {
    AREAS
        .get()
        .map_or(1, |a| a.count.load(Ordering::Acquire).max(1))
}

/// The area of online CPU `cpu`.
#[must_use]
pub fn area(cpu: usize) -> Option<&'static CpuArea> {
    let areas = AREAS.get()?;
    if cpu >= areas.count.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: published areas are never written again except through their atomics.
    unsafe { (*areas.slots[cpu].get()).as_ref() }
}

/// Records the NUMA node of every online CPU (`numa_set_node()`), from `node_of(cpu)`.
/// Runs on the boot CPU after NUMA discovery.
pub fn set_nodes(node_of: impl Fn(usize) -> u32) {
    for cpu in 0..nr_cpu_ids() {
        if let Some(a) = area(cpu) {
            a.node.store(node_of(cpu), Ordering::Relaxed);
        }
    }
}

/// The NUMA node of `cpu` (`cpu_to_node()`; 0 for a CPU that is not online).
#[must_use]
pub fn cpu_to_node(cpu: usize) -> u32 {
    area(cpu).map_or(0, CpuArea::node)
}

/// The running CPU's NUMA node (`numa_node_id()`).
#[must_use]
pub fn numa_node_id() -> NodeId {
    this_area().map_or(0, CpuArea::node)
}

/// The running CPU's area (through `gs:[0]`, so it works while the CPU is still coming up).
#[must_use]
pub fn this_area() -> Option<&'static CpuArea> {
    let p = arch::gs_word::<0>() as *const CpuArea;
    // SAFETY: a non-zero `gs:[0]` is the self pointer of this CPU's area, installed by
    // `init_boot_cpu` or the AP trampoline; areas are never moved or freed.
    unsafe { p.as_ref() }
}

/// Why a per-CPU slot could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerCpuError {
    /// The running CPU is already inside `with` on this `PerCpu` (an interrupt handler or a
    /// nested call): a second `&mut` would alias the first.
    Reentered {
        /// The CPU.
        cpu: usize,
    },
    /// The `PerCpu` was created with fewer slots than there are CPUs (created before
    /// bring-up finished).
    NoSlot {
        /// The CPU.
        cpu: usize,
        /// Slots in the `PerCpu`.
        slots: usize,
    },
}

impl fmt::Display for PerCpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerCpuError::Reentered { cpu } => {
                write!(f, "per-CPU slot of cpu {cpu} re-entered while in use")
            }
            PerCpuError::NoSlot { cpu, slots } => {
                write!(f, "cpu {cpu} has no slot (only {slots} created)")
            }
        }
    }
}

#[repr(C, align(128))]
struct Slot<T> {
    busy: Cell<bool>,
    value: UnsafeCell<T>,
}

/// One `T` per CPU, used by each CPU for itself without locks.
pub struct PerCpu<T> {
    slots: Box<[Slot<T>]>,
}

// SAFETY: a slot is only touched by its own CPU (`with`), with interrupts off and a busy flag
// against re-entry, or through `&mut self`; values move between CPUs only at creation and
// destruction, hence `T: Send`.
unsafe impl<T: Send> Sync for PerCpu<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for PerCpu<T> {}

impl<T> PerCpu<T> {
    /// One slot per online CPU, slot `cpu` initialised with `init(cpu)`. Create it after SMP
    /// bring-up, or CPUs that came up later have no slot.
    pub fn new(mut init: impl FnMut(usize) -> T) -> Self {
        PerCpu {
            slots: (0..nr_cpu_ids())
                .map(|c| Slot {
                    busy: Cell::new(false),
                    value: UnsafeCell::new(init(c)),
                })
                .collect(),
        }
    }

    /// Number of slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no slots (never, once constructed: the boot CPU always has one).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Runs `f` on the running CPU's slot, interrupts disabled.
    pub fn try_with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Result<R, PerCpuError> {
        crate::arch::without_interrupts(|| {
            let cpu = cpu_id();
            let slot = self.slots.get(cpu).ok_or(PerCpuError::NoSlot {
                cpu,
                slots: self.slots.len(),
            })?;
            if slot.busy.replace(true) {
                return Err(PerCpuError::Reentered { cpu });
            }
            // SAFETY: only this CPU touches this slot (the kernel does not migrate code
            // between CPUs), interrupts are off, and `busy` was clear, so no other reference
            // to the value exists until we clear it again.
            let r = f(unsafe { &mut *slot.value.get() });
            slot.busy.set(false);
            Ok(r)
        })
    }

    /// [`Self::try_with`] for callers that treat a failure as a kernel bug: it panics with
    /// the error's message.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        match self.try_with(f) {
            Ok(r) => r,
            Err(e) => panic!("PerCpu::with: {e}"),
        }
    }

    /// Every slot, for the owner of the `PerCpu` (no CPU can be inside `with` meanwhile).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().map(|s| s.value.get_mut())
    }

    /// Consumes the `PerCpu`, returning the values in CPU order.
    pub fn into_vec(self) -> Vec<T> {
        self.slots
            .into_vec()
            .into_iter()
            .map(|s| s.value.into_inner())
            .collect()
    }
}

/// One `T` per CPU where any CPU may read (and, through `T`'s own atomics, update) any slot:
/// per-CPU counters that a reader sums, flags that other CPUs poll.
pub struct PerCpuShared<T> {
    slots: Box<[Aligned<T>]>,
}

#[repr(C, align(128))]
struct Aligned<T>(T);

impl<T: Sync> PerCpuShared<T> {
    /// One slot per online CPU, slot `cpu` initialised with `init(cpu)`.
    pub fn new(mut init: impl FnMut(usize) -> T) -> Self {
        PerCpuShared {
            slots: (0..nr_cpu_ids()).map(|c| Aligned(init(c))).collect(),
        }
    }

    /// The running CPU's slot (`None` if it has none: created before bring-up finished).
    #[must_use]
    pub fn this_cpu(&self) -> Option<&T> {
        self.get(cpu_id())
    }

    /// CPU `cpu`'s slot.
    #[must_use]
    pub fn get(&self, cpu: usize) -> Option<&T> {
        self.slots.get(cpu).map(|a| &a.0)
    }

    /// Every slot in CPU order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().map(|a| &a.0)
    }

    /// Number of slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no slots.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}
