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
//! * [`Display::show`] then shows the codes page by page: error-correction level M, version
//!   up to 8 (49 modules), a white quiet zone of 4 modules, [`qrpayload::MODULE_PX`] pixels per module
//!   (fewer only when not even one code fits, at least [`qrpayload::MIN_MODULE_PX`]), as many codes per
//!   page as fit ([`qrpayload::Layout`]: 4 on 1024 x 768, 10 on 1920 x 1080). Each code has its label
//!   `code i/n` and the CRC-32 above it; the top lines say which page and codes are shown, the payload's
//!   CRC-32 and length, and the keys.
//! * Keys (polled PS/2, [`super::keyboard`]): Space, Enter, Right: next page; Left,
//!   Backspace: back; Escape, `q`: leave. Until a first key is pressed the display steps by
//!   itself every [`AUTO_STEP_S`] seconds (a keyboard that does not answer, e.g. a USB one
//!   without legacy emulation, never stops it); after one, only keys step.
//! * On a real machine the results table stays on screen for [`LEAD_S`] seconds first (any
//!   key: at once), and the sequence cycles until a leave key (then the kernel reports its
//!   outcome and halts as usual) or a reset. Under a hypervisor (`qr=on`) it is shown once:
//!   stepping past the last code ends it and the kernel exits.
//!
//! Each page shown is also announced on serial as `KQR page <p> of <P> codes <a>-<b> of <n>
//! crc <8 hex digits>` (the tests take QEMU's screendump then).
//!
//! Unsafe code here, and why: the QR encoder runs on a freshly mapped large stack (assembly
//! switches to it and back), with its job passed as a raw pointer.
#![allow(unsafe_code)]

use super::keyboard::{self, Key};
use super::{Sink, print_to, with_screen};
use crate::arch::{cpu, tsc};
use crate::boot_info::{BootInfo, BootProtocol};
use abi::QrMode;
use alloc::string::String;
use core::fmt::{self, Write};
use qrpayload::{BUFFER_LEN, Layout, QUIET_ZONE, Sequence};
use spin::Mutex;

/// Seconds a code stays before the display steps by itself (until a key is pressed).
pub const AUTO_STEP_S: u64 = 8;
/// Seconds the results table stays on a real machine's screen before the codes.
pub const LEAD_S: u64 = 20;
const WHITE: u32 = 0x00ff_ffff;
const BLACK: u32 = 0;

/// The record lines kept for the codes (`None`: not keeping them).
static RECORDS: Mutex<Option<String>> = Mutex::new(None);

/// Keeps a copy of one record line (`KRESULT {...}`) when the codes will be shown.
pub fn capture(line: &dyn fmt::Display) {
    crate::arch::without_interrupts(|| {
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
        let seq = match compress(records.as_bytes()) {
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
        let total = pages(&seq);
        let mut page: u16 = 0;
        while total > 0 && draw_page(&seq, page) {
            let key = wait_key((!keyed).then_some(AUTO_STEP_S));
            keyed |= key.is_some();
            match key.unwrap_or(Key::Next) {
                Key::Next if page + 1 < total => page += 1,
                Key::Next if self.cycle => page = 0,
                Key::Next | Key::Quit => break,
                Key::Back => page = if page > 0 { page - 1 } else { total - 1 },
                Key::Other => {}
            }
        }
        with_screen(|fb| fb.reset());
        crate::println!("qr: done ({n} codes, crc {:08x})", seq.crc());
    }
}

/// Pages of the private stack the compression runs on (256 KiB).
const COMPRESS_STACK_PAGES: u64 = 64;

/// [`Sequence::new`] on a private stack: `miniz_oxide`'s compressor keeps its 64 KiB LZ code
/// buffer inline, as much as a whole kernel stack (a double fault on the first try).
fn compress(records: &[u8]) -> Result<Sequence, String> {
    struct Job<'a> {
        input: &'a [u8],
        out: Option<Result<Sequence, qrpayload::TooLong>>,
    }
    extern "C" fn run(arg: usize) {
        // SAFETY: `arg` is the `&mut Job` passed by `compress` below, alive and not otherwise
        // used during this call.
        let job = unsafe { &mut *(arg as *mut Job<'_>) };
        job.out = Some(Sequence::new(job.input));
    }
    let stack = crate::mm::stack::alloc(COMPRESS_STACK_PAGES)
        .map_err(|e| alloc::format!("no stack for the compression: {e:?}"))?;
    let mut job = Job {
        input: records,
        out: None,
    };
    // SAFETY: the stack is freshly mapped, unused and 16-byte aligned at its top (a page
    // boundary); `run` returns normally (panics abort) and keeps r12 (callee-saved), which
    // holds the old stack pointer across the call; every caller-saved register is declared
    // clobbered. The stack's frames are never freed (256 KiB once per run).
    unsafe {
        core::arch::asm!(
            "mov r12, rsp",
            "mov rsp, {top}",
            "call {f}",
            "mov rsp, r12",
            top = in(reg) stack.top.as_u64(),
            f = in(reg) run as extern "C" fn(usize),
            in("rdi") &mut job as *mut Job<'_> as usize,
            out("r12") _,
            clobber_abi("C"),
        );
    }
    match job.out {
        Some(Ok(seq)) => Ok(seq),
        Some(Err(e)) => Err(alloc::format!("{e}")),
        None => Err("the compression did not run".into()),
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

/// Draws page `page` (0-based) of the sequence: its codes with their labels and the caption.
fn draw_page(seq: &Sequence, page: u16) -> bool {
    let n = seq.count();
    let (mut tmp, mut out) = ([0u8; BUFFER_LEN], [0u8; BUFFER_LEN]);
    let size = seq.encode(1, &mut tmp, &mut out).size() as usize;
    let drawn = with_screen(|fb| {
        let (w, h, scale) = fb.pixels()?;
        let l = Layout::new(w, h, 8 * scale, size)?;
        let per = l.per_page();
        let pages = usize::from(n).div_ceil(per);
        let first = usize::from(page) * per + 1;
        let last = (first + per - 1).min(usize::from(n));
        fb.reset();
        let top = 2 * l.glyph;
        let mut line = String::new();
        for (slot, i) in (first..=last).enumerate() {
            let (cx, cy) = ((slot % l.cols) * l.cell_w, top + (slot / l.cols) * l.cell_h);
            line.clear();
            let _ = write!(line, "code {i}/{n} {:08x}", seq.crc());
            fb.text_at(cx / l.glyph + 1, cy / l.glyph, &line);
            let qr = seq.encode(i as u16, &mut tmp, &mut out);
            let side = (qr.size() as usize + 2 * QUIET_ZONE) * l.module;
            let (x0, y0) = (cx, cy + l.glyph);
            fb.fill_rect(x0, y0, side, side, WHITE);
            let (qx, qy) = (x0 + QUIET_ZONE * l.module, y0 + QUIET_ZONE * l.module);
            let qs = qr.size() as usize;
            for y in 0..qs {
                let mut x = 0;
                while x < qs {
                    let run = (x..qs)
                        .take_while(|&xx| qr.get_module(xx as i32, y as i32))
                        .count();
                    if run == 0 {
                        x += 1;
                        continue;
                    }
                    fb.fill_rect(
                        qx + x * l.module,
                        qy + y * l.module,
                        run * l.module,
                        l.module,
                        BLACK,
                    );
                    x += run;
                }
            }
        }
        line.clear();
        let _ = write!(
            line,
            "kx results: page {} of {pages}, codes {first}-{last} of {n}, crc32 {:08x}, {} bytes",
            page + 1,
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
        Some((pages, first, last))
    });
    match drawn.flatten() {
        Some((pages, first, last)) => {
            print_to(
                Sink::Serial,
                format_args!(
                    "KQR page {} of {pages} codes {first}-{last} of {n} crc {:08x}\n",
                    page + 1,
                    seq.crc()
                ),
            );
            true
        }
        None => {
            crate::println!("qr: the screen is too small for a {size}-module code");
            false
        }
    }
}

/// Pages the sequence takes on this screen (0 when it does not fit).
fn pages(seq: &Sequence) -> u16 {
    let (mut tmp, mut out) = ([0u8; BUFFER_LEN], [0u8; BUFFER_LEN]);
    let size = seq.encode(1, &mut tmp, &mut out).size() as usize;
    with_screen(|fb| {
        let (w, h, scale) = fb.pixels()?;
        let l = Layout::new(w, h, 8 * scale, size)?;
        Some(usize::from(seq.count()).div_ceil(l.per_page()) as u16)
    })
    .flatten()
    .unwrap_or(0)
}
