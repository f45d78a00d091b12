//! A text console drawn on a linear framebuffer with an 8x8 bitmap font (`font8x8`).
//!
//! UEFI machines have no VGA text mode, so on a real machine without a serial port the
//! bootloader's framebuffer is the only place progress and results can appear. Glyphs are
//! scaled to 16x16 on screens at least 1024 pixels wide. Supports 32- and 24-bit RGB layouts
//! (any channel positions) and the EGA text mode GRUB may hand over under BIOS.
//!
//! Besides text, the console fills rectangles and places text at a given cell
//! ([`FbConsole::fill_rect`], [`FbConsole::text_at`]): the QR display ([`super::qr`]) draws
//! on the whole screen with them and clears it afterwards ([`FbConsole::reset`]).
//!
//! Unsafe code here, and why: the framebuffer is memory at an address the boot loader
//! passes, written through raw pointers.
#![allow(unsafe_code)]

use crate::boot_info::{FbFormat, FramebufferInfo};
use font8x8::legacy::BASIC_LEGACY;

/// Foreground colour as 0xRRGGBB.
const FG: u32 = 0x00d0_d0d0;

/// A console on a framebuffer mapped at `base` (a kernel virtual address).
pub struct FbConsole {
    base: *mut u8,
    info: FramebufferInfo,
    scale: usize,
    cols: usize,
    rows: usize,
    col: usize,
    row: usize,
}

// SAFETY: the framebuffer is a plain memory range owned by the console; the console is only
// reached through the console mutex, so at most one CPU writes it at a time.
unsafe impl Send for FbConsole {}

impl FbConsole {
    /// Creates a console over the framebuffer `info`, already mapped at `base`.
    ///
    /// # Safety
    /// `base` must map `info.pitch * info.height` bytes of the framebuffer, writable, and
    /// nothing else may write that range while the console exists.
    pub unsafe fn new(base: *mut u8, info: FramebufferInfo) -> Option<FbConsole> {
        let (cols, rows, scale) = match info.format {
            FbFormat::EgaText => (info.width as usize, info.height as usize, 1),
            FbFormat::Rgb { .. } if matches!(info.bpp, 24 | 32) => {
                let scale = if info.width >= 1024 { 2 } else { 1 };
                (
                    info.width as usize / (8 * scale),
                    info.height as usize / (8 * scale),
                    scale,
                )
            }
            FbFormat::Rgb { .. } => return None,
        };
        if cols == 0 || rows == 0 {
            return None;
        }
        let mut c = FbConsole {
            base,
            info,
            scale,
            cols,
            rows,
            col: 0,
            row: 0,
        };
        c.clear();
        Some(c)
    }

    /// Text columns and rows.
    #[must_use]
    pub fn size(&self) -> (usize, usize) {
        (self.cols, self.rows)
    }

    /// The screen in pixels and the glyph scale, `(width, height, scale)`; `None` in EGA text
    /// mode, which has no pixels.
    #[must_use]
    pub fn pixels(&self) -> Option<(usize, usize, usize)> {
        match self.info.format {
            FbFormat::EgaText => None,
            FbFormat::Rgb { .. } => Some((
                self.info.width as usize,
                self.info.height as usize,
                self.scale,
            )),
        }
    }

    /// Clears the screen and puts the cursor at the top left.
    pub fn reset(&mut self) {
        self.clear();
        self.col = 0;
        self.row = 0;
    }

    /// Fills the rectangle at `(x, y)` of `w` x `h` pixels with `rgb` (0xRRGGBB), clipped to
    /// the screen; nothing in EGA text mode.
    pub fn fill_rect(&mut self, x: usize, y: usize, w: usize, h: usize, rgb: u32) {
        if self.info.format == FbFormat::EgaText {
            return;
        }
        let (width, height) = (self.info.width as usize, self.info.height as usize);
        let (x1, y1) = ((x + w).min(width), (y + h).min(height));
        let px = self.pixel(rgb).to_le_bytes();
        let bpp = usize::from(self.info.bpp / 8);
        for yy in y.min(y1)..y1 {
            let line = yy * self.info.pitch as usize;
            for xx in x.min(x1)..x1 {
                // SAFETY: xx < width and yy < height, so the pixel's bytes lie inside the
                // mapped `pitch * height` bytes (constructor contract).
                unsafe {
                    let p = self.base.add(line + xx * bpp);
                    for (i, b) in px.iter().take(bpp).enumerate() {
                        p.add(i).write_volatile(*b);
                    }
                }
            }
        }
    }

    /// Writes `text` at cell `(col, row)` without moving the cursor, clipped at the right edge.
    pub fn text_at(&mut self, col: usize, row: usize, text: &str) {
        if row >= self.rows {
            return;
        }
        for (i, b) in text.bytes().enumerate() {
            if col + i >= self.cols {
                break;
            }
            self.draw(col + i, row, b);
        }
    }

    fn bytes(&self) -> usize {
        self.info.pitch as usize * self.info.height as usize
    }

    fn clear(&mut self) {
        if self.info.format == FbFormat::EgaText {
            for i in 0..self.cols * self.rows {
                self.ega_put(i, b' ');
            }
        } else {
            // SAFETY: `bytes()` is the mapped size (constructor contract).
            unsafe { core::ptr::write_bytes(self.base, 0, self.bytes()) };
        }
    }

    /// Writes text, wrapping at the right edge and scrolling at the bottom.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'\n' => self.newline(),
                b'\r' => self.col = 0,
                _ => {
                    if self.col == self.cols {
                        self.newline();
                    }
                    self.draw(self.col, self.row, b);
                    self.col += 1;
                }
            }
        }
    }

    fn newline(&mut self) {
        self.col = 0;
        if self.row + 1 < self.rows {
            self.row += 1;
        } else {
            self.scroll();
        }
    }

    fn scroll(&mut self) {
        if self.info.format == FbFormat::EgaText {
            let line = self.cols * 2;
            // SAFETY: both ranges lie inside the mapped text buffer (rows * cols * 2 bytes).
            unsafe {
                core::ptr::copy(self.base.add(line), self.base, line * (self.rows - 1));
            }
            for c in 0..self.cols {
                self.ega_put((self.rows - 1) * self.cols + c, b' ');
            }
            return;
        }
        let row_bytes = self.info.pitch as usize * 8 * self.scale;
        let keep = row_bytes * (self.rows - 1);
        // SAFETY: source and destination lie inside the mapped framebuffer; `copy` allows the
        // overlap.
        unsafe {
            core::ptr::copy(self.base.add(row_bytes), self.base, keep);
            core::ptr::write_bytes(self.base.add(keep), 0, row_bytes);
        }
    }

    fn ega_put(&mut self, cell: usize, ch: u8) {
        // SAFETY: cell < cols * rows, inside the mapped text buffer; 0x07 = grey on black.
        unsafe {
            (self.base as *mut u16)
                .add(cell)
                .write_volatile(0x0700 | u16::from(ch))
        };
    }

    fn draw(&mut self, col: usize, row: usize, ch: u8) {
        if self.info.format == FbFormat::EgaText {
            self.ega_put(row * self.cols + col, ch);
            return;
        }
        let glyph = BASIC_LEGACY[usize::from(if ch < 128 { ch } else { b'?' })];
        let (x0, y0) = (col * 8 * self.scale, row * 8 * self.scale);
        let fg = self.pixel(FG);
        let bpp = usize::from(self.info.bpp / 8);
        for (gy, bits) in glyph.iter().enumerate() {
            for sy in 0..self.scale {
                let y = y0 + gy * self.scale + sy;
                let line = y * self.info.pitch as usize;
                for gx in 0..8 {
                    let on = bits & (1 << gx) != 0;
                    let px = if on { fg } else { 0 };
                    for sx in 0..self.scale {
                        let x = x0 + gx * self.scale + sx;
                        let off = line + x * bpp;
                        // SAFETY: x < width and y < height by construction of cols/rows, so
                        // `off + bpp <= pitch * height`, inside the mapping.
                        unsafe {
                            let p = self.base.add(off);
                            let bytes = px.to_le_bytes();
                            for (i, b) in bytes.iter().take(bpp).enumerate() {
                                p.add(i).write_volatile(*b);
                            }
                        }
                    }
                }
            }
        }
    }

    fn pixel(&self, rgb: u32) -> u32 {
        let FbFormat::Rgb { red, green, blue } = self.info.format else {
            return 0;
        };
        let chan = |v: u32, (pos, size): (u8, u8)| {
            let v = if size >= 8 {
                v << (size - 8)
            } else {
                v >> (8 - size)
            };
            v << pos
        };
        chan((rgb >> 16) & 0xff, red) | chan((rgb >> 8) & 0xff, green) | chan(rgb & 0xff, blue)
    }
}
