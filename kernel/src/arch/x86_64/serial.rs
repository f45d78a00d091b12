//! COM1 serial port: the console every test and QEMU run reads.
//!
//! Backed by `uart_16550`. Real machines often have no COM1 (init's scratch-register probe
//! fails) or a port with nothing attached (CTS never asserted); writes are therefore bounded:
//! a byte that the UART does not take within a spin budget is dropped and the port is marked
//! stalled, so a missing cable can never hang the kernel.
//!
//! Unsafe code here, and why: the UART is programmed through I/O ports.
#![allow(unsafe_code)]

use uart_16550::backend::PioBackend;
use uart_16550::{Config, Uart16550};

/// I/O base of COM1.
pub const COM1: u16 = 0x3F8;

/// How many polls a byte may wait for the transmitter before the port counts as stalled.
const SPIN_BUDGET: u32 = 200_000;

/// An initialised serial port.
pub struct Serial {
    uart: Uart16550<PioBackend>,
    stalled: bool,
}

impl Serial {
    /// Probes and initialises COM1 (115200 8N1, FIFO on). `None` when no UART answers.
    pub fn init_com1() -> Option<Serial> {
        // SAFETY: COM1's eight registers at 0x3F8..0x3FF are the standard PC serial port; the
        // console owns them for the kernel's whole life (nothing else drives COM1).
        let mut uart = unsafe { Uart16550::new_port(COM1) }.ok()?;
        uart.init(Config::default()).ok()?;
        Some(Serial {
            uart,
            stalled: false,
        })
    }

    /// Writes `bytes`, turning `\n` into `\r\n`, dropping output while the port is stalled.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
    }

    fn put(&mut self, byte: u8) {
        let budget = if self.stalled { 1 } else { SPIN_BUDGET };
        for _ in 0..budget {
            if self.uart.try_send_byte(byte).is_ok() {
                self.stalled = false;
                return;
            }
            core::hint::spin_loop();
        }
        self.stalled = true;
    }
}
