//! The kernel console: serial (COM1) and, when the bootloader gave one, the framebuffer.
//!
//! `print!`/`println!` take the console lock with interrupts disabled, so a line from one CPU
//! is never interleaved with another's. The panic and exception paths must not wait on that
//! lock (the CPU that panics may already hold it, inside a `println!`): they use
//! [`emergency_write`], which tries the lock and otherwise writes to a fresh UART handle.
//! [`print_to`] writes to one of the two only (the benchmark's machine-readable records go
//! to serial alone, its 80-column table to the screen alone). [`with_screen`] lends the
//! framebuffer itself, for the QR display of the benchmark's results ([`qr`]).

pub mod framebuffer;
pub mod keyboard;
pub mod qr;

use crate::arch::serial::Serial;
use core::fmt::{self, Write};
use framebuffer::FbConsole;
use spin::Mutex;

/// Output kept from before the framebuffer console exists, replayed onto it when attached
/// (a real machine without serial would otherwise never show the first boot lines).
const EARLY_LOG: usize = 4096;

struct Console {
    serial: Option<Serial>,
    fb: Option<FbConsole>,
    early: [u8; EARLY_LOG],
    early_len: usize,
}

/// One of the console's outputs, for [`print_to`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sink {
    /// COM1 only.
    Serial,
    /// The framebuffer only (nothing while there is none).
    Screen,
}

impl Console {
    fn write_to(&mut self, sink: Sink, s: &str) {
        match (sink, self.serial.as_mut(), self.fb.as_mut()) {
            (Sink::Serial, Some(serial), _) => serial.write_bytes(s.as_bytes()),
            (Sink::Screen, _, Some(fb)) => fb.write_bytes(s.as_bytes()),
            _ => {}
        }
    }
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(serial) = self.serial.as_mut() {
            serial.write_bytes(s.as_bytes());
        }
        match self.fb.as_mut() {
            Some(fb) => fb.write_bytes(s.as_bytes()),
            None => {
                let n = s.len().min(EARLY_LOG - self.early_len);
                self.early[self.early_len..self.early_len + n].copy_from_slice(&s.as_bytes()[..n]);
                self.early_len += n;
            }
        }
        Ok(())
    }
}

static CONSOLE: Mutex<Console> = Mutex::new(Console {
    serial: None,
    fb: None,
    early: [0; EARLY_LOG],
    early_len: 0,
});

/// Brings up the serial port. Call first thing at boot.
pub fn init_serial() {
    let serial = Serial::init_com1();
    CONSOLE.lock().serial = serial;
}

/// Whether a serial port was found.
pub fn has_serial() -> bool {
    CONSOLE.lock().serial.is_some()
}

/// Adds the framebuffer console, replaying the output so far onto it; returns its text size.
pub fn attach_framebuffer(mut fb: FbConsole) -> (usize, usize) {
    let size = fb.size();
    crate::arch::without_interrupts(|| {
        let mut c = CONSOLE.lock();
        fb.write_bytes(&c.early[..c.early_len]);
        c.early_len = 0;
        c.fb = Some(fb);
    });
    size
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments<'_>) {
    crate::arch::without_interrupts(|| {
        let _ = CONSOLE.lock().write_fmt(args);
    });
}

/// Prints to one output only, under the console lock like [`_print`].
pub fn print_to(sink: Sink, args: fmt::Arguments<'_>) {
    struct To<'a>(&'a mut Console, Sink);
    impl Write for To<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.write_to(self.1, s);
            Ok(())
        }
    }
    crate::arch::without_interrupts(|| {
        let mut c = CONSOLE.lock();
        let _ = To(&mut c, sink).write_fmt(args);
    });
}

/// Runs `f` on the framebuffer console under the console lock (interrupts off); `None`
/// when there is no framebuffer.
pub fn with_screen<R>(f: impl FnOnce(&mut FbConsole) -> R) -> Option<R> {
    crate::arch::without_interrupts(|| CONSOLE.lock().fb.as_mut().map(f))
}

/// Writes without waiting for the console lock: for panics and fatal exceptions. If another
/// holder has the lock, the text goes to a fresh COM1 handle (serial only).
pub fn emergency_write(args: fmt::Arguments<'_>) {
    if let Some(mut console) = CONSOLE.try_lock() {
        let _ = console.write_fmt(args);
        return;
    }
    struct Raw(Option<Serial>);
    impl Write for Raw {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            if let Some(serial) = self.0.as_mut() {
                serial.write_bytes(s.as_bytes());
            }
            Ok(())
        }
    }
    let _ = Raw(Serial::init_com1()).write_fmt(args);
}

/// A `fmt::Write` that prints to the console (for code that takes `&mut dyn Write`).
pub struct ConsoleWriter;

impl Write for ConsoleWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        _print(format_args!("{s}"));
        Ok(())
    }
}

/// Prints to the console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => ($crate::console::_print(format_args!($($arg)*)));
}

/// Prints a line to the console.
#[macro_export]
macro_rules! println {
    () => ($crate::print!("\n"));
    ($($arg:tt)*) => ($crate::console::_print(format_args!("{}\n", format_args!($($arg)*))));
}
