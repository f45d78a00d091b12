//! The benchmark's results as a numbered sequence of QR codes on the framebuffer.
//!
//! A machine without a serial port shows the results table on screen, but the `KRESULT`
//! records `kx import` needs never leave it. So at the end of `run=bench` the kernel shows
//! every record, compressed, as QR codes to photograph (the format: [`qrpayload`]; `kx import
//! --qr` reads the photos back):
//!
//! * [`Display::for_boot`] decides from `qr=` (`auto`: on real hardware only; `on`: also
//!   under a hypervisor; `off`: never) and from the framebuffer (pixels needed, not EGA text)
//!   whether the codes will be shown, and if so starts keeping a copy of every record line
//!   ([`capture`], called by the benchmark platform for each record it prints).
//! * [`Display::show`] then draws one code per screen: error-correction level M, version up
//!   to 20 (97 modules), a white quiet zone of at least 4 modules, each module the largest
//!   whole number of pixels that fits the screen below two text lines ("code i of n", the
//!   payload's CRC-32 and length, the keys). On a 1024 x 768 screen a module is 7 pixels and
//!   the code 679 pixels wide; at least 2 pixels per module are required.
//! * Keys (polled PS/2, [`super::keyboard`]): Space, Enter, Right: next; Left, Backspace:
//!   back; Escape, `q`: leave. Until a first key is pressed the display steps forward by
//!   itself every [`AUTO_STEP_S`] seconds (a keyboard that does not answer, e.g. a USB one
//!   without legacy emulation, never stops it); after one, only keys step.
//! * On a real machine the results table stays on screen for [`LEAD_S`] seconds first (any
//!   key: at once), and the sequence cycles until a leave key (then the kernel reports its
//!   outcome and halts as usual) or a reset. Under a hypervisor (`qr=on`) it is shown once:
//!   stepping past the last code ends it and the kernel exits.
//!
//! Each code shown is also announced on serial as `KQR code <i> of <n> crc <8 hex digits>`
//! (the tests take QEMU's screendump then).

use super::keyboard::{self, Key};
use super::{Sink, print_to, with_screen};
use crate::arch::x86_64::{cpu, tsc};
use crate::boot_info::{BootInfo, BootProtocol};
use abi::QrMode;
use alloc::string::String;
use core::fmt::{self, Write};
use qrpayload::{BUFFER_LEN, QUIET_ZONE, QrCode, Sequence};
use spin::Mutex;

/// Seconds a code stays before the display steps by itself (until a key is pressed).
pub const AUTO_STEP_S: u64 = 8;
/// Seconds the results table stays on a real machine's screen before the codes.
pub const LEAD_S: u64 = 20;
/// Smallest module, pixels.
const MIN_MODULE_PX: usize = 2;
const WHITE: u32 = 0x00ff_ffff;
const BLACK: u32 = 0;

/// The record lines kept for the codes (`None`: not keeping them).
static RECORDS: Mutex<Option<String>> = Mutex::new(None);

/// Keeps a copy of one record line (`KRESULT {...}`) when the codes will be shown.
pub fn capture(line: &dyn fmt::Display) {
    crate::arch::x86_64::without_interrupts(|| {
        if let Some(buf) = RECORDS.lock().as_mut() {
            let _ = writeln!(buf, "{line}");
        }
    });
}

/// The QR display of one benchmark run.
pub struct Display {
    /// Cycle until a leave key (real hardware) instead of showing the sequence once.
    cycle: bool,
}

impl Display {
    /// The display `qr=` and the screen ask for, with record capture started; `None` (and a
    /// line saying why when the codes were asked for) otherwise.
    pub fn for_boot(bi: &BootInfo) -> Option<Display> {
        let skip_path = bi.protocol == BootProtocol::Multiboot1;
        let mode = abi::cmdline::parse(bi.cmdline(), skip_path).map_or(QrMode::Auto, |c| c.qr);
        let bare = cpu::platform() == cpu::Platform::BareMetal;
        let wanted = match mode {
            QrMode::Off => false,
            QrMode::On => true,
            QrMode::Auto => bare,
        };
        if !wanted {
            return None;
        }
        if with_screen(|fb| fb.pixels().is_some()) != Some(true) {
            crate::println!("qr: no graphics framebuffer, the results cannot be shown as QR codes");
            return None;
        }
        *RECORDS.lock() = Some(String::new());
        Some(Display { cycle: bare })
    }

    /// Shows the captured records as codes until the sequence ends or a leave key.
    pub fn show(self) {
        let records = RECORDS.lock().take().unwrap_or_default();
        let seq = match Sequence::new(records.as_bytes()) {
            Ok(s) => s,
            Err(e) => {
                crate::println!("qr: {e}");
                return;
            }
        };
        let n = seq.count();
        crate::println!(
            "qr: {} bytes of records, {} compressed, as {n} QR code{}",
            records.len(),
            seq.payload_len(),
            if n == 1 { "" } else { "s" }
        );
        drop(records);
        keyboard::flush();
        let mut keyed = false;
        if self.cycle {
            crate::println!("qr: the codes follow in {LEAD_S} s (any key: now)");
            if wait_key(Some(LEAD_S)).is_some() {
                keyed = true;
            }
        }
        let (mut tmp, mut out) = ([0u8; BUFFER_LEN], [0u8; BUFFER_LEN]);
        let mut i: u16 = 1;
        loop {
            let qr = seq.encode(i, &mut tmp, &mut out);
            if !draw(&qr, i, &seq) {
                break;
            }
            print_to(
                Sink::Serial,
                format_args!("KQR code {i} of {n} crc {:08x}\n", seq.crc()),
            );
            let key = wait_key((!keyed).then_some(AUTO_STEP_S));
            keyed |= key.is_some();
            match key.unwrap_or(Key::Next) {
                Key::Next if i < n => i += 1,
                Key::Next if self.cycle => i = 1,
                Key::Next | Key::Quit => break,
                Key::Back => i = if i > 1 { i - 1 } else { n },
                Key::Other => {}
            }
        }
        with_screen(|fb| fb.reset());
        crate::println!("qr: done ({n} codes, crc {:08x})", seq.crc());
    }
}

/// Waits for a key, at most `seconds` (forever with `None`).
fn wait_key(seconds: Option<u64>) -> Option<Key> {
    let deadline = seconds.map(|s| tsc::now_ns().saturating_add(s * 1_000_000_000));
    loop {
        if let Some(k) = keyboard::poll() {
            return Some(k);
        }
        if deadline.is_some_and(|d| tsc::now_ns() >= d) {
            return None;
        }
        core::hint::spin_loop();
    }
}

/// Draws code `i` with its caption; false (and a message) when the screen is too small.
fn draw(qr: &QrCode<'_>, i: u16, seq: &Sequence) -> bool {
    let size = qr.size() as usize;
    let drawn = with_screen(|fb| {
        let (w, h, scale) = fb.pixels()?;
        let band = 2 * 8 * scale;
        let avail = h.checked_sub(band)?;
        let module = avail.min(w) / (size + 2 * QUIET_ZONE);
        if module < MIN_MODULE_PX {
            return None;
        }
        fb.reset();
        fb.fill_rect(0, band, w, avail, WHITE);
        let (x0, y0) = ((w - size * module) / 2, band + (avail - size * module) / 2);
        for y in 0..size {
            let mut x = 0;
            while x < size {
                if !qr.get_module(x as i32, y as i32) {
                    x += 1;
                    continue;
                }
                let run = (x..size)
                    .take_while(|&xx| qr.get_module(xx as i32, y as i32))
                    .count();
                fb.fill_rect(
                    x0 + x * module,
                    y0 + y * module,
                    run * module,
                    module,
                    BLACK,
                );
                x += run;
            }
        }
        let mut line = String::new();
        let _ = write!(
            line,
            "kx results: code {i} of {}   crc32 {:08x}   {} bytes",
            seq.count(),
            seq.crc(),
            seq.payload_len()
        );
        fb.text_at(0, 0, &line);
        line.clear();
        let _ = write!(
            line,
            "next: Space/->  back: <-  leave: Esc/q  (no key: next in {AUTO_STEP_S} s)"
        );
        fb.text_at(0, 1, &line);
        Some(())
    });
    if drawn.is_none() {
        crate::println!("qr: the screen is too small for a {size}-module code");
    }
    drawn.is_some()
}
