//! Per-CPU GDT and TSS, with the interrupt stacks (IST) every vector runs on.
//!
//! Every vector except #PF runs on an IST stack: libcore is precompiled and might use the red
//! zone, which an interrupt on the same stack would clobber (CI's objdump check verifies no
//! function in the image does). #PF stays on the current stack on purpose: when a stack
//! overflows into its guard page, the CPU cannot push the #PF frame and escalates to a double
//! fault, which has its own IST stack and is reported as such.
//!
//! The BSP starts on static tables with static IST stacks (usable before paging and the
//! heap); [`install_guarded_ist`] later swaps in stacks with guard pages. Other CPUs get
//! heap-allocated tables through [`init_ap`].
//!
//! Unsafe code here, and why: loading the GDT, the TSS and the segment registers are
//! privileged instructions whose tables must stay alive and in place.
#![allow(unsafe_code)]

use crate::mm::stack;
use core::cell::UnsafeCell;
use x86_64::VirtAddr;
use x86_64::instructions::segmentation::{CS, DS, ES, SS, Segment};
use x86_64::instructions::tables::load_tss;
use x86_64::registers::segmentation::SegmentSelector;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable};
use x86_64::structures::tss::TaskStateSegment;

/// IST slot (0-based, as `set_stack_index` takes it) for double faults.
pub const IST_DOUBLE_FAULT: u16 = 0;
/// IST slot for NMIs.
pub const IST_NMI: u16 = 1;
/// IST slot for machine checks.
pub const IST_MACHINE_CHECK: u16 = 2;
/// IST slot for every other vector except #PF.
pub const IST_OTHER: u16 = 3;
/// Pages per IST stack.
pub const IST_PAGES: u64 = 4;

const EARLY_IST_SIZE: usize = 16 * 1024;

#[repr(C, align(16))]
struct EarlyStacks([[u8; EARLY_IST_SIZE]; 4]);

/// The boot CPU's tables, usable before paging and the heap exist.
struct BspTables {
    ist: UnsafeCell<EarlyStacks>,
    tss: UnsafeCell<TaskStateSegment>,
    gdt: UnsafeCell<GlobalDescriptorTable>,
}

// SAFETY: written only during single-threaded BSP boot (`init_bsp_early`,
// `install_guarded_ist`); afterwards only the CPU reads them.
unsafe impl Sync for BspTables {}

static BSP: BspTables = BspTables {
    ist: UnsafeCell::new(EarlyStacks([[0; EARLY_IST_SIZE]; 4])),
    tss: UnsafeCell::new(TaskStateSegment::new()),
    gdt: UnsafeCell::new(GlobalDescriptorTable::new()),
};

/// Builds a GDT with kernel code/data and `tss`, returns it with the selectors.
fn build(tss: &'static TaskStateSegment) -> (GlobalDescriptorTable, [SegmentSelector; 3]) {
    let mut gdt = GlobalDescriptorTable::new();
    let code = gdt.append(Descriptor::kernel_code_segment());
    let data = gdt.append(Descriptor::kernel_data_segment());
    let tss = gdt.append(Descriptor::tss_segment(tss));
    (gdt, [code, data, tss])
}

/// Loads `gdt` and reloads the segment registers and the task register.
///
/// # Safety
/// `gdt` must stay alive and unchanged for as long as this CPU runs, and `sel` must be its
/// selectors.
unsafe fn load(gdt: &'static GlobalDescriptorTable, sel: [SegmentSelector; 3]) {
    gdt.load();
    // SAFETY: the selectors index the GDT just loaded: a 64-bit code segment, a data segment
    // and an available TSS.
    unsafe {
        CS::set_reg(sel[0]);
        SS::set_reg(sel[1]);
        DS::set_reg(sel[1]);
        ES::set_reg(sel[1]);
        load_tss(sel[2]);
    }
}

/// Loads the BSP's static GDT and TSS with static IST stacks. First thing after entry.
///
/// # Safety
/// Call once, on the BSP, before any other CPU starts.
pub unsafe fn init_bsp_early() {
    // SAFETY: single-threaded boot; these statics are only touched here and in
    // `install_guarded_ist` (also BSP boot) and read by the CPU.
    unsafe {
        let tss = &mut *BSP.tss.get();
        for (i, s) in (*BSP.ist.get()).0.iter().enumerate() {
            tss.interrupt_stack_table[i] = VirtAddr::from_ptr(s.as_ptr_range().end);
        }
        let (gdt, sel) = build(&*BSP.tss.get());
        *BSP.gdt.get() = gdt;
        load(&*BSP.gdt.get(), sel);
    }
}

/// Replaces the BSP's static IST stacks with guarded ones (needs paging).
pub fn install_guarded_ist() -> Result<(), stack::StackError> {
    let mut tops = [VirtAddr::zero(); 4];
    for t in &mut tops {
        *t = stack::alloc(IST_PAGES)?.top;
    }
    // SAFETY: BSP boot, single-threaded; the CPU reads IST pointers from the TSS on each
    // interrupt, so updating them in place takes effect for the next one.
    unsafe {
        let tss = &mut *BSP.tss.get();
        for (i, top) in tops.into_iter().enumerate() {
            tss.interrupt_stack_table[i] = top;
        }
    }
    Ok(())
}

/// Builds and loads a GDT and TSS with guarded IST stacks for an application processor.
/// Runs on that AP; the tables are leaked (they live as long as the CPU).
pub fn init_ap() -> Result<(), stack::StackError> {
    let mut tss = TaskStateSegment::new();
    for i in 0..4 {
        tss.interrupt_stack_table[i] = stack::alloc(IST_PAGES)?.top;
    }
    let tss: &'static TaskStateSegment = alloc::boxed::Box::leak(alloc::boxed::Box::new(tss));
    let (gdt, sel) = build(tss);
    let gdt: &'static GlobalDescriptorTable = alloc::boxed::Box::leak(alloc::boxed::Box::new(gdt));
    // SAFETY: leaked, so alive forever and never changed.
    unsafe { load(gdt, sel) };
    Ok(())
}
