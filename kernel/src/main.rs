//! A bootable x86_64 kernel that models Linux's memcg/LRU machinery.
//!
//! Freestanding binary for the host triple on stable Rust (no rust-src, no extra target). The boot
//! stub (`arch::boot`) enters [`kernel_entry`] in long mode on a static stack with the
//! first 4 GiB identity mapped; from there: console, CPU tables, boot information, frames,
//! own page tables, then [`kmain`] on a guarded stack: heap, framebuffer, command line, SMP
//! bring-up, NUMA discovery, the page allocator (the handover from the early frames), RCU,
//! and the requested action.
//!
//! Unsafe code is denied crate-wide: each module that needs it says why in its own
//! documentation ("Unsafe code here, and why") and allows it there, so the unsafe surface
//! is the list of those modules (`grep -rl 'allow(unsafe_code)' kernel/src`).
#![no_std]
#![no_main]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]

extern crate alloc;

pub mod arch;
pub mod bench;
pub mod boot_info;
pub mod console;
pub mod crash;
pub mod exit;
pub mod ktest;
pub mod layout;
pub mod mm;
pub mod pagealloc_bench;
pub mod panic;
pub mod percpu;
pub mod rcu;
pub mod summary;
pub mod sync;
pub mod tests;
pub mod vm;

use abi::{Action, ExitCode};
use arch::{gdt, multiboot, paging, trap};
use boot_info::MemKind;
use mm::{frame, heap, stack};

/// Pages of the main kernel stack (64 KiB).
pub const KERNEL_STACK_PAGES: u64 = 16;

static MAIN_STACK: spin::Once<stack::KernelStack> = spin::Once::new();

/// The guarded stack [`kmain`] runs on.
#[must_use]
pub fn main_stack() -> Option<&'static stack::KernelStack> {
    MAIN_STACK.get()
}

/// Called by the boot stub with the multiboot magic and the boot information's address.
///
/// The one item outside the modules' fences that uses unsafe code: the boot stub finds it by
/// its unmangled name, and the first steps of boot (the early GDT, the boot information
/// at the loader's address, the kernel's own page tables, the switch to the guarded stack)
/// can only be done through the arch layer's unsafe entry points.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn kernel_entry(magic: u32, info: u32) -> ! {
    // SAFETY: first code on the BSP: no other CPU runs, no per-CPU area exists yet.
    unsafe { arch::percpu::install_boot_area() };
    console::init_serial();
    // SAFETY: first code on the BSP, nothing else running.
    unsafe { gdt::init_bsp_early() };
    trap::load_idt();

    // SAFETY: magic/info come straight from the loader; the boot identity map is live.
    let bi = match unsafe { multiboot::parse(magic, info) } {
        Ok(bi) => boot_info::set(bi),
        Err(e) => panic!("cannot read the boot information: {e:?}"),
    };
    println!(
        "memcg-lru kernel {} booting ({:?})",
        env!("CARGO_PKG_VERSION"),
        bi.protocol
    );

    let image = paging::kernel_image();
    frame::init(bi, &[image, bi.info_range]);
    let mut top: u64 = 4 << 30;
    for r in bi.regions().iter().filter(|r| r.kind != MemKind::Reserved) {
        top = top.max(r.end());
    }
    if let Some(fb) = bi.framebuffer {
        top = top.max(fb.phys + u64::from(fb.pitch) * u64::from(fb.height));
    }
    // SAFETY: BSP, once, on the boot identity map.
    if let Err(e) = unsafe { paging::init(top) } {
        panic!("cannot build the kernel page tables: {e:?}");
    }
    let stack = match stack::alloc(KERNEL_STACK_PAGES) {
        Ok(s) => *MAIN_STACK.call_once(|| s),
        Err(e) => panic!("cannot map the kernel stack: {e:?}"),
    };
    // SAFETY: a fresh, mapped, 16-byte aligned stack; nothing on the boot stack is used again.
    unsafe { arch::switch_stack(stack.top.as_u64(), kmain, 0) }
}

/// The rest of boot, on the guarded kernel stack, then the action the command line asks for.
pub extern "C" fn kmain(_: usize) -> ! {
    if let Err(e) = gdt::install_guarded_ist() {
        panic!("cannot map the interrupt stacks: {e:?}");
    }
    let bi = boot_info::get();
    let Some(heap_size) = heap::init(bi.usable_bytes()) else {
        println!("out of memory: no contiguous block for the kernel heap");
        exit::exit(ExitCode::OutOfMemory);
    };
    summary::attach_framebuffer(bi);
    println!(
        "heap: {} MiB; frames: {} used, {} free",
        heap_size >> 20,
        frame::stats().0,
        frame::stats().1
    );

    let skip_path = bi.protocol == boot_info::BootProtocol::Multiboot1;
    let cfg = match abi::cmdline::parse(bi.cmdline(), skip_path) {
        Ok(cfg) if !bi.cmdline_truncated => cfg,
        Ok(_) => bad_cmdline(format_args!("longer than {} bytes", boot_info::MAX_CMDLINE)),
        Err(e) => bad_cmdline(format_args!("{e}")),
    };
    exit::set_method(cfg.exit);
    vm::set_cmdline_faults(cfg.fail_page_alloc, cfg.fail_charge);
    if let Some(spins) = cfg.race_delay {
        // Before the APs start: every CPU reads it from its first race window on.
        ksync::race::set_delay(spins);
        println!("race_delay: race windows stall up to {spins} spin iterations");
    }
    sync::init();
    arch::smp::init(bi.rsdp, cfg.cpus);
    let apic_ids: alloc::vec::Vec<u32> = (0..percpu::nr_cpu_ids())
        .map(|c| percpu::area(c).map_or(0, percpu::CpuArea::apic_id))
        .collect();
    let numa = arch::numa::init(bi, &apic_ids);
    percpu::set_nodes(|cpu| numa.topology.cpu_to_node(cpu));
    let pcp = ::page_alloc::PcpConfig {
        batch: cfg.pcp_batch,
        high: cfg.pcp_high,
    };
    if let Err(e) = mm::page_alloc::init(pcp) {
        println!("page allocator: {e}");
        exit::exit(ExitCode::OutOfMemory);
    }
    rcu::init();
    arch::start_interrupts();

    let code = match cfg.action {
        Action::Summary => {
            summary::print(bi);
            ExitCode::Success
        }
        Action::Test(sel) => ktest::run(sel),
        Action::Bench => {
            let profiling = cfg.profile_hz.map(arch::profile::start);
            if let Some(Err(e)) = profiling {
                println!("profile: not sampling: {e}");
            }
            let code = bench::run(&cfg.bench, bi);
            if let Some(Ok(())) = profiling {
                arch::profile::stop_and_dump();
            }
            code
        }
        Action::Layout => layout::print(),
        Action::PageAlloc => pagealloc_bench::run(),
        Action::Crash(c) => crash::crash(c),
    };
    exit::exit(code)
}

fn bad_cmdline(why: core::fmt::Arguments<'_>) -> ! {
    println!("bad command line: {why}");
    println!("command line was: `{}`", boot_info::get().cmdline());
    println!("accepted keys:");
    for (k, v) in abi::cmdline::ACCEPTED {
        println!("  {k}={v}");
    }
    exit::exit(ExitCode::BadCmdline)
}
