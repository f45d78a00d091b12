//! The system summary (`run=summary`): boot path, memory map, CPUs, NUMA nodes, the page
//! allocator's zones, framebuffer.
//!
//! This is what a user sees first on a real machine, so it says plainly what the kernel found.
//!
//! Unsafe code here, and why: the summary screen draws on the framebuffer the boot loader
//! describes.
#![allow(unsafe_code)]

use crate::arch::{cpu, paging};
use crate::boot_info::{BootInfo, BootProtocol};
use crate::console::{ConsoleWriter, framebuffer::FbConsole};
use crate::mm::{frame, heap};
use crate::println;

/// Starts the framebuffer console when the bootloader gave a framebuffer.
pub fn attach_framebuffer(bi: &BootInfo) {
    let Some(fb) = bi.framebuffer else { return };
    let base = paging::phys_to_virt(x86_64::PhysAddr::new(fb.phys)).as_mut_ptr::<u8>();
    // SAFETY: the direct map covers the framebuffer (boot maps up to its end) and nothing
    // else in the kernel writes it.
    match unsafe { FbConsole::new(base, fb) } {
        Some(c) => {
            let (cols, rows) = crate::console::attach_framebuffer(c);
            println!(
                "framebuffer console: {cols}x{rows} text on {}x{} {}bpp",
                fb.width, fb.height, fb.bpp
            );
        }
        None => println!(
            "framebuffer {}x{} {}bpp: unsupported layout",
            fb.width, fb.height, fb.bpp
        ),
    }
}

/// Prints the summary.
pub fn print(bi: &BootInfo) {
    println!("=== system summary ===");
    let path = match bi.protocol {
        BootProtocol::Multiboot1 => "multiboot1 (QEMU -kernel or a multiboot1 loader)",
        BootProtocol::Multiboot2 { uefi: false } => "multiboot2, BIOS firmware",
        BootProtocol::Multiboot2 { uefi: true } => "multiboot2, UEFI firmware",
    };
    println!(
        "boot path: {path}; loader: {}",
        if bi.loader().is_empty() {
            "?"
        } else {
            bi.loader()
        }
    );
    println!("command line: `{}`", bi.cmdline());
    println!("memory map:");
    for r in bi.regions() {
        println!(
            "  {:#014x}-{:#014x} {:>9} KiB {:?}",
            r.start,
            r.end(),
            r.len >> 10,
            r.kind
        );
    }
    if bi.regions_truncated {
        println!(
            "  (memory map truncated at {} entries)",
            crate::boot_info::MAX_REGIONS
        );
    }
    println!("usable RAM: {} MiB", bi.usable_bytes() >> 20);
    let (k0, k1) = paging::kernel_image();
    println!("kernel image: {k0:#x}-{k1:#x} ({} KiB)", (k1 - k0) >> 10);
    let (used, free) = frame::stats();
    println!("early frames: {used} allocated, {free} free");
    let (hu, hf) = heap::usage();
    println!(
        "heap: {} KiB used, {} KiB free, {} KiB cached in size classes",
        hu >> 10,
        hf >> 10,
        heap::cached() >> 10
    );
    match bi.framebuffer {
        Some(fb) => println!(
            "framebuffer: {:#x} {}x{} {}bpp pitch {} {:?}",
            fb.phys, fb.width, fb.height, fb.bpp, fb.pitch, fb.format
        ),
        None => println!("framebuffer: none"),
    }
    let _ = cpu::describe(&mut ConsoleWriter);
    let _ = crate::arch::smp::describe(&mut ConsoleWriter);
    let _ = crate::arch::numa::describe(&mut ConsoleWriter);
    let _ = crate::arch::pmu::describe(&mut ConsoleWriter);
    let _ = crate::mm::page_alloc::describe(&mut ConsoleWriter);
    println!(
        "serial console: {}",
        if crate::console::has_serial() {
            "COM1"
        } else {
            "none"
        }
    );
}
