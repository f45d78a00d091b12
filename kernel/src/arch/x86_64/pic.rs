//! The legacy 8259A interrupt controllers: moved off the exception vectors, then masked.
//!
//! Models Linux's `arch/x86/kernel/i8259.c` (`init_8259A`, `mask_8259A`). Firmware leaves the
//! master PIC at vectors 8..15, where a timer tick (IRQ 0) would arrive as a double fault,
//! and often with the PIT's IRQ unmasked. Interrupts here come only from local APICs (IPIs),
//! so the PICs are reprogrammed to [`PIC_VECTOR_BASE`]..+16 and every line is masked before
//! the boot CPU enables interrupts. A masked 8259 can still deliver a *spurious* IRQ 7 or 15
//! (an interrupt withdrawn between the request and the CPU's acknowledge); those two vectors
//! get handlers that ignore them, except that a spurious IRQ 15 still needs an EOI on the
//! master, whose cascade input did fire. Any other vector of the range stays fatal: with
//! every line masked it cannot legitimately arrive.
//!
//! Unsafe code here, and why: masking the legacy PICs is I/O port writes.
#![allow(unsafe_code)]

use super::trap;
use x86_64::instructions::port::Port;

/// First vector of the reprogrammed PICs (master 0x20..0x28, slave 0x28..0x30).
pub const PIC_VECTOR_BASE: u8 = 0x20;

const MASTER_CMD: u16 = 0x20;
const MASTER_DATA: u16 = 0x21;
const SLAVE_CMD: u16 = 0xa0;
const SLAVE_DATA: u16 = 0xa1;
const EOI: u8 = 0x20;

fn outb(port: u16, v: u8) {
    // SAFETY: ports 0x20/0x21/0xa0/0xa1 are the 8259A command and data registers on every PC
    // (chipsets keep them for compatibility); port 0x80 is the POST diagnostic port, which
    // Linux also writes as an I/O delay. Nothing else is affected by these writes.
    unsafe { Port::<u8>::new(port).write(v) };
    // SAFETY: as above (an I/O delay for old PICs that need time between writes).
    unsafe { Port::<u8>::new(0x80).write(0) };
}

/// Reprograms both PICs to [`PIC_VECTOR_BASE`], masks every line and installs the spurious
/// IRQ handlers. Boot CPU, once, with interrupts disabled.
pub fn disable() {
    outb(MASTER_DATA, 0xff);
    outb(SLAVE_DATA, 0xff);
    // ICW1: edge triggered, cascaded, ICW4 follows.
    outb(MASTER_CMD, 0x11);
    outb(SLAVE_CMD, 0x11);
    // ICW2: vector bases.
    outb(MASTER_DATA, PIC_VECTOR_BASE);
    outb(SLAVE_DATA, PIC_VECTOR_BASE + 8);
    // ICW3: the slave hangs off the master's IR2.
    outb(MASTER_DATA, 1 << 2);
    outb(SLAVE_DATA, 2);
    // ICW4: 8086 mode, normal EOI.
    outb(MASTER_DATA, 0x01);
    outb(SLAVE_DATA, 0x01);
    outb(MASTER_DATA, 0xff);
    outb(SLAVE_DATA, 0xff);
    trap::register(PIC_VECTOR_BASE + 7, |_| {});
    trap::register(PIC_VECTOR_BASE + 15, |_| outb(MASTER_CMD, EOI));
}
