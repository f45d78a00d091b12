//! Polled PS/2 keyboard input (the i8042 controller at ports 0x60/0x64), for the QR display.
//!
//! No interrupts: [`poll`] reads one byte when the controller's output buffer holds a
//! keyboard byte (status bit 0 set, bit 5, the mouse's, clear). Scancodes are set 1, which is
//! what firmware and GRUB leave the controller translating to; a key's break code and the
//! `0xE0` prefix are skipped (so the arrow keys read as the keypad's 4 and 6, the same
//! meaning). A machine without an i8042 reads status `0xFF` and never yields a key; USB
//! keyboards answer here only through the firmware's legacy emulation, which UEFI machines
//! often switch off. The QR display steps by itself when no key comes.
//!
//! Unsafe code here, and why: the PS/2 controller is read through I/O ports.
#![allow(unsafe_code)]

use x86_64::instructions::port::Port;

/// What a key press asks of the QR display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// Space, Enter, Right, Page Down, `n`.
    Next,
    /// Left, Backspace, Page Up, `b`, `p`.
    Back,
    /// Escape, `q`.
    Quit,
    /// Any other key.
    Other,
}

const DATA: u16 = 0x60;
const STATUS: u16 = 0x64;
const OUTPUT_FULL: u8 = 1;
const AUX_DATA: u8 = 1 << 5;

/// The key a set-1 make code means; `None` for a break code or the `0xE0` prefix.
#[must_use]
pub fn decode(scancode: u8) -> Option<Key> {
    if scancode == 0xE0 || scancode & 0x80 != 0 {
        return None;
    }
    Some(match scancode {
        0x39 | 0x1C | 0x4D | 0x51 | 0x31 => Key::Next,
        0x4B | 0x0E | 0x49 | 0x30 | 0x19 => Key::Back,
        0x01 | 0x10 => Key::Quit,
        _ => Key::Other,
    })
}

/// One pressed key, if the controller has one.
pub fn poll() -> Option<Key> {
    let mut status = Port::<u8>::new(STATUS);
    let mut data = Port::<u8>::new(DATA);
    // SAFETY: reading the i8042's status and data ports has no effect beyond taking the
    // byte the controller offers; nothing else in the kernel uses the controller.
    unsafe {
        let s = status.read();
        if s == 0xFF || s & OUTPUT_FULL == 0 {
            return None;
        }
        let byte = data.read();
        if s & AUX_DATA != 0 {
            return None;
        }
        decode(byte)
    }
}

/// Drops whatever the controller holds (keys pressed during the run).
pub fn flush() {
    for _ in 0..64 {
        if poll().is_none() {
            // SAFETY: as in `poll`: a status read only.
            let s = unsafe { Port::<u8>::new(STATUS).read() };
            if s == 0xFF || s & OUTPUT_FULL == 0 {
                return;
            }
        }
    }
}
