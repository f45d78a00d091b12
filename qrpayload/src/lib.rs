//! The benchmark's `KRESULT` records as a numbered sequence of QR codes, and back.
//!
//! A machine without a serial port shows its results on screen only; the kernel turns the
//! records (the `KRESULT` lines exactly as printed on serial, each ending in `\n`) into a
//! *payload* (raw DEFLATE, [`miniz_oxide`] level 9), cuts it into chunks and shows one QR
//! code per chunk ([`Sequence`]). The host (`kx import --qr`) decodes the codes from
//! photographs or screenshots, puts the chunks back together ([`Assembler`]), checks the
//! payload against its checksum and inflates it back into the same lines a serial log holds.
//!
//! Every code carries one *frame* in byte mode: a 15-byte header, then its chunk.
//!
//! | bytes | field |
//! |---|---|
//! | 0..2 | magic `KQ` |
//! | 2 | format version, 1 |
//! | 3..5 | index `i`, 1-based (little-endian u16) |
//! | 5..7 | count `n` of codes in the sequence (u16) |
//! | 7..11 | payload length in bytes (u32) |
//! | 11..15 | CRC-32 (IEEE) of the whole payload (u32) |
//! | 15.. | payload bytes `(i-1)*CHUNK .. min(i*CHUNK, length)` |
//!
//! The codes use error-correction level M (15% of the codewords recoverable), versions up to
//! [`MAX_VERSION`] (49 x 49 modules; every code but the last is that size), so a frame
//! holds at most [`FRAME_MAX`] bytes. Larger versions hold more, but `rqrr`, the decoder of
//! `kx import --qr`, stops finding codes above version 8 once a photo is turned by a degree
//! or two (version 10 failed at 2 degrees, version 20 at half a degree). The CRC-32 doubles as the sequence's identity: codes
//! of two different runs never assemble into one payload.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;
pub use qrcodegen_no_heap::{QrCode, QrCodeEcc, Version};

/// The two bytes every frame starts with.
pub const MAGIC: [u8; 2] = *b"KQ";
/// The frame format version.
pub const FORMAT: u8 = 1;
/// Header bytes before a frame's chunk.
pub const HEADER: usize = 15;
/// The largest QR version used: 49 x 49 modules.
pub const MAX_VERSION: u8 = 8;
/// The error-correction level of every code.
pub const ECC: QrCodeEcc = QrCodeEcc::Medium;
/// Bytes a version-8 code at level M holds in byte mode.
pub const FRAME_MAX: usize = 152;
/// Payload bytes per code.
pub const CHUNK: usize = FRAME_MAX - HEADER;
/// Quiet zone around a code, in modules (the standard's minimum).
pub const QUIET_ZONE: usize = 4;
/// Scratch and output buffer length for [`Sequence::encode`].
pub const BUFFER_LEN: usize = Version::new(MAX_VERSION).buffer_len();
/// Largest payload after inflating (a default run's records are a few MiB).
pub const MAX_RECORDS: usize = 256 << 20;

/// Pixels per module when the screen has room: 6 (a 1.6 mm module on a 24-inch 1080p
/// screen; a code with its quiet zone is 342 pixels, 9 cm, across).
pub const MODULE_PX: usize = 6;
/// Smallest module, pixels.
pub const MIN_MODULE_PX: usize = 2;

/// Where the codes of a page go on a screen (the kernel's drawing, host-tested here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Pixels per module.
    pub module: usize,
    /// Codes across and down.
    pub cols: usize,
    /// Rows of codes.
    pub rows: usize,
    /// A code's cell (label line, then the code with its quiet zone), pixels; multiples of
    /// the glyph size, so labels fall on text cells.
    pub cell_w: usize,
    /// See `cell_w`.
    pub cell_h: usize,
    /// Glyph size in pixels (text lines at the top take two).
    pub glyph: usize,
}

impl Layout {
    /// The layout of `size`-module codes on a `w` x `h` screen with `glyph`-pixel glyphs:
    /// [`MODULE_PX`] per module, as many codes as fit; if not even one fits, one code with
    /// the largest module that does (at least [`MIN_MODULE_PX`]).
    #[must_use]
    pub fn new(w: usize, h: usize, glyph: usize, size: usize) -> Option<Layout> {
        let avail_h = h.checked_sub(2 * glyph + glyph)?;
        let total = size + 2 * QUIET_ZONE;
        let fit = (avail_h.min(w) / total).min(MODULE_PX);
        if fit < MIN_MODULE_PX {
            return None;
        }
        let up = |v: usize| v.div_ceil(glyph) * glyph;
        let cell_w = up(total * fit).min(w);
        let cell_h = up(glyph + total * fit).min(h - 2 * glyph);
        Some(Layout {
            module: fit,
            cols: (w / cell_w).max(1),
            rows: ((h - 2 * glyph) / cell_h).max(1),
            cell_w,
            cell_h,
            glyph,
        })
    }

    /// Codes per page.
    #[must_use]
    pub fn per_page(&self) -> usize {
        self.cols * self.rows
    }
}

/// CRC-32 (IEEE 802.3, reflected, as zlib's `crc32`).
#[must_use]
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// The records did not fit into 65,535 codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLong(pub usize);

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes compressed need more than 65535 codes", self.0)
    }
}

/// The compressed records and the codes they make.
pub struct Sequence {
    payload: Vec<u8>,
    crc: u32,
    count: u16,
}

impl Sequence {
    /// Compresses `records` (the `KRESULT` lines, `\n`-terminated) into a sequence.
    pub fn new(records: &[u8]) -> Result<Sequence, TooLong> {
        let payload = miniz_oxide::deflate::compress_to_vec(records, 9);
        let count = payload.len().div_ceil(CHUNK).max(1);
        let count = u16::try_from(count).map_err(|_| TooLong(payload.len()))?;
        Ok(Sequence {
            crc: crc32(&payload),
            payload,
            count,
        })
    }

    /// Number of codes.
    #[must_use]
    pub fn count(&self) -> u16 {
        self.count
    }

    /// The payload's CRC-32.
    #[must_use]
    pub fn crc(&self) -> u32 {
        self.crc
    }

    /// The payload's length in bytes (compressed).
    #[must_use]
    pub fn payload_len(&self) -> usize {
        self.payload.len()
    }

    /// Writes code `index`'s frame (1-based) into `out`; returns its length.
    ///
    /// # Panics
    /// If `index` is not in `1..=count`.
    pub fn frame(&self, index: u16, out: &mut [u8; FRAME_MAX]) -> usize {
        assert!(
            (1..=self.count).contains(&index),
            "code {index} of {}",
            self.count
        );
        let start = usize::from(index - 1) * CHUNK;
        let chunk = &self.payload[start..(start + CHUNK).min(self.payload.len())];
        out[0..2].copy_from_slice(&MAGIC);
        out[2] = FORMAT;
        out[3..5].copy_from_slice(&index.to_le_bytes());
        out[5..7].copy_from_slice(&self.count.to_le_bytes());
        // The payload is below 65,535 * CHUNK bytes, far below u32::MAX.
        out[7..11].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
        out[11..15].copy_from_slice(&self.crc.to_le_bytes());
        out[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
        HEADER + chunk.len()
    }

    /// Code `index` (1-based) as a QR symbol, built in `tmp` and `out` ([`BUFFER_LEN`] bytes
    /// each).
    ///
    /// # Panics
    /// If `index` is out of range or a buffer is shorter than [`BUFFER_LEN`].
    pub fn encode<'b>(&self, index: u16, tmp: &mut [u8], out: &'b mut [u8]) -> QrCode<'b> {
        let mut frame = [0u8; FRAME_MAX];
        let len = self.frame(index, &mut frame);
        encode_bytes(&frame[..len], tmp, out).expect("a frame fits a version-8 code at level M")
    }
}

/// `data` as a QR symbol at level [`ECC`], version 1..=[`MAX_VERSION`], in `tmp` and `out`;
/// `None` when it does not fit.
pub fn encode_bytes<'b>(data: &[u8], tmp: &mut [u8], out: &'b mut [u8]) -> Option<QrCode<'b>> {
    let tmp = tmp.get_mut(..BUFFER_LEN)?;
    let out = out.get_mut(..BUFFER_LEN)?;
    let n = data.len();
    if n > tmp.len() {
        return None;
    }
    tmp[..n].copy_from_slice(data);
    QrCode::encode_binary(
        tmp,
        n,
        out,
        ECC,
        Version::MIN,
        Version::new(MAX_VERSION),
        None,
        false,
    )
    .ok()
}

/// A frame's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// 1-based index.
    pub index: u16,
    /// Codes in the sequence.
    pub count: u16,
    /// Payload length.
    pub len: u32,
    /// Payload CRC-32.
    pub crc: u32,
}

/// Why the bytes of one QR code are not a frame of ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// No `KQ` magic: some other QR code.
    Foreign,
    /// Our magic with another format version.
    Format(u8),
    /// Shorter than its header says, or index, count and length disagree.
    Malformed,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Foreign => write!(f, "not a kx results code (no `KQ` magic)"),
            FrameError::Format(v) => write!(f, "kx results code of format {v}, not {FORMAT}"),
            FrameError::Malformed => write!(f, "kx results code with an inconsistent header"),
        }
    }
}

/// Splits one code's bytes into its header and chunk, checking the header's consistency.
pub fn parse_frame(bytes: &[u8]) -> Result<(Header, &[u8]), FrameError> {
    if bytes.len() < 3 || bytes[0..2] != MAGIC {
        return Err(FrameError::Foreign);
    }
    if bytes[2] != FORMAT {
        return Err(FrameError::Format(bytes[2]));
    }
    if bytes.len() < HEADER {
        return Err(FrameError::Malformed);
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let h = Header {
        index: u16_at(3),
        count: u16_at(5),
        len: u32_at(7),
        crc: u32_at(11),
    };
    let chunk = &bytes[HEADER..];
    let len = h.len as usize;
    let expected_count = len.div_ceil(CHUNK).max(1);
    if h.index == 0 || h.index > h.count || usize::from(h.count) != expected_count {
        return Err(FrameError::Malformed);
    }
    let start = usize::from(h.index - 1) * CHUNK;
    if chunk.len() != (len - start).min(CHUNK) {
        return Err(FrameError::Malformed);
    }
    Ok((h, chunk))
}

/// Why the codes seen do not make the records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AssembleError {
    /// No code of ours was seen at all.
    Empty,
    /// These codes (1-based) of the `n` were never seen.
    Missing {
        /// The missing indices, increasing.
        missing: Vec<u16>,
        /// Codes in the sequence.
        count: u16,
    },
    /// The chunks put together do not match the checksum every code carries.
    Checksum {
        /// The checksum the codes carry.
        expected: u32,
        /// The reassembled payload's.
        actual: u32,
    },
    /// The payload matched its checksum but does not inflate (or inflates past
    /// [`MAX_RECORDS`]).
    Inflate,
}

impl fmt::Display for AssembleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssembleError::Empty => write!(f, "no kx results code found"),
            AssembleError::Missing { missing, count } => {
                write!(f, "missing code")?;
                if missing.len() > 1 {
                    write!(f, "s")?;
                }
                for (i, m) in missing.iter().enumerate() {
                    write!(f, "{}{m}", if i == 0 { " " } else { ", " })?;
                }
                write!(f, " of {count}")
            }
            AssembleError::Checksum { expected, actual } => write!(
                f,
                "the codes put together have checksum {actual:08x}, not the {expected:08x} they carry"
            ),
            AssembleError::Inflate => write!(f, "the payload does not inflate"),
        }
    }
}

/// What [`Assembler::add`] made of one code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// A code not seen before.
    New(Header),
    /// The same code again (identical bytes).
    Duplicate(Header),
}

/// Why [`Assembler::add`] refused a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// Not a frame of ours.
    Frame(FrameError),
    /// A frame of another sequence (different count, length or checksum).
    OtherRun {
        /// The checksum of the sequence seen first.
        first: u32,
        /// This code's.
        this: u32,
    },
    /// The same index again with different bytes.
    Conflict(u16),
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddError::Frame(e) => e.fmt(f),
            AddError::OtherRun { first, this } => write!(
                f,
                "code of another run (checksum {this:08x}; the first code seen had {first:08x})"
            ),
            AddError::Conflict(i) => write!(f, "code {i} seen twice with different contents"),
        }
    }
}

/// Collects codes in any order, duplicates allowed, and puts the records back together.
#[derive(Default)]
pub struct Assembler {
    header: Option<Header>,
    chunks: BTreeMap<u16, Vec<u8>>,
}

impl Assembler {
    /// An empty assembler.
    #[must_use]
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// Adds one decoded code's bytes.
    pub fn add(&mut self, bytes: &[u8]) -> Result<Added, AddError> {
        let (h, chunk) = parse_frame(bytes).map_err(AddError::Frame)?;
        let first = *self.header.get_or_insert(h);
        if (first.count, first.len, first.crc) != (h.count, h.len, h.crc) {
            return Err(AddError::OtherRun {
                first: first.crc,
                this: h.crc,
            });
        }
        match self.chunks.get(&h.index) {
            Some(seen) if seen.as_slice() == chunk => Ok(Added::Duplicate(h)),
            Some(_) => Err(AddError::Conflict(h.index)),
            None => {
                self.chunks.insert(h.index, chunk.to_vec());
                Ok(Added::New(h))
            }
        }
    }

    /// The sequence's header, once a code was added.
    #[must_use]
    pub fn header(&self) -> Option<Header> {
        self.header
    }

    /// The indices not seen yet (empty before the first code).
    #[must_use]
    pub fn missing(&self) -> Vec<u16> {
        let Some(h) = self.header else {
            return Vec::new();
        };
        (1..=h.count)
            .filter(|i| !self.chunks.contains_key(i))
            .collect()
    }

    /// The records: the payload checked and inflated.
    pub fn finish(&self) -> Result<Vec<u8>, AssembleError> {
        let h = self.header.ok_or(AssembleError::Empty)?;
        let missing = self.missing();
        if !missing.is_empty() {
            return Err(AssembleError::Missing {
                missing,
                count: h.count,
            });
        }
        let payload: Vec<u8> = self.chunks.values().flatten().copied().collect();
        let actual = crc32(&payload);
        if actual != h.crc {
            return Err(AssembleError::Checksum {
                expected: h.crc,
                actual,
            });
        }
        miniz_oxide::inflate::decompress_to_vec_with_limit(&payload, MAX_RECORDS)
            .map_err(|_| AssembleError::Inflate)
    }
}

#[cfg(test)]
mod tests;
