//! `kx import --qr IMAGE...`: the results directory from photos or screenshots of the QR
//! codes the kernel shows at the end of `run=bench` (see `kernel/src/console/qr.rs`; the
//! frame format is [`qrpayload`]'s).
//!
//! Every image (PNG or JPEG) is decoded to grey levels and searched for QR codes with
//! [`rqrr`]; an image may hold several codes, images may come in any order and codes may
//! repeat. The codes' frames are put together ([`qrpayload::Assembler`]), the payload is
//! checked against the CRC-32 every code carries and inflated into the `KRESULT` lines, which
//! then go the way of a serial log ([`super::run::import_collected`]). Nothing is written
//! unless the whole payload was recovered. The three ways it can fail have their own exit
//! statuses ([`crate::RunnerExit::for_qr`]):
//!
//! * 11, an image that is no readable image or holds no readable code of ours (none found,
//!   none that decodes, or another QR code: a URL, a code of another program);
//! * 12, codes missing: each one named by its number (`missing codes 3, 7 of 12`);
//! * 13, codes that do not belong together or a payload that fails its checksum: codes of two
//!   runs, one number with two contents, a payload that does not inflate.

use super::collect::Collected;
pub use crate::error::QrError;
use crate::{RunError, RunnerExit};
use qrpayload::{AddError, Added, AssembleError, Assembler, FrameError};
use std::path::{Path, PathBuf};

/// The bytes of every QR code found in the image at `path` that decodes, and how many were
/// found that did not.
pub fn decode_image(path: &Path) -> Result<(Vec<Vec<u8>>, usize), QrError> {
    let unreadable = |why: String| QrError::Unreadable {
        path: path.to_owned(),
        why,
    };
    let img = image::ImageReader::open(path)
        .map_err(|e| unreadable(format!("cannot open: {e}")))?
        .with_guessed_format()
        .map_err(|e| unreadable(format!("cannot read: {e}")))?
        .decode()
        .map_err(|e| unreadable(format!("not a readable PNG or JPEG image: {e}")))?;
    Ok(decode_luma(&img.to_luma8()))
}

/// The codes of a grey-level image (see [`decode_image`]). `rqrr` misses codes in noisy
/// pictures, in pictures turned by a few degrees and with modules of 4 pixels or fewer (a
/// photo from afar, a screenshot scaled down), so the image is searched as it is, smoothed
/// (a Gaussian blur of 1 pixel) and, up to [`UPSCALE_BELOW`] pixels wide, enlarged twice
/// (bilinear), as it is and smoothed, and, for pictures under [`SMALL_BELOW`] pixels wide
/// or when a code was seen but not read, enlarged three times (Catmull-Rom, sharper), and
/// when a code was seen but not read also turned by each of [`TILTS`]; a code found
/// several ways counts once. On the QEMU screenshots of the test (11 pages, 22 codes) each
/// of scaled to 0.6, turned by 3 or -4 degrees and noise of +-60 grey levels lost a code or
/// two with fewer tries, none with the first four; a later run of 16 pages lost one code
/// scaled to 0.6 until the three-times enlargement was added, and one of 32 codes turned by
/// -4 degrees until the turned-back tries were. The count of codes found
/// but not decoded is the largest of the tries.
#[must_use]
pub fn decode_luma(luma: &image::GrayImage) -> (Vec<Vec<u8>>, usize) {
    let (mut codes, mut failed) = decode_once(luma);
    let blurred = image::imageops::blur(luma, 1.0);
    let mut tries = Vec::new();
    if luma.width() <= UPSCALE_BELOW {
        for img in [luma, &blurred] {
            tries.push(image::imageops::resize(
                img,
                img.width() * 2,
                img.height() * 2,
                image::imageops::FilterType::Triangle,
            ));
        }
    }
    tries.push(blurred);
    for img in &tries {
        merge(img, &mut codes, &mut failed);
    }
    // Small modules (a photo from afar, a screenshot scaled down): three times, sharp; slow,
    // so only for small pictures, or when a code was seen and not read, or none was found.
    if luma.width() <= UPSCALE_BELOW
        && (luma.width() < SMALL_BELOW || failed > 0 || codes.is_empty())
    {
        let big = image::imageops::resize(
            luma,
            luma.width() * 3,
            luma.height() * 3,
            image::imageops::FilterType::CatmullRom,
        );
        merge(&big, &mut codes, &mut failed);
    }
    // A photo taken at a slant: when a code was seen and not read, also search the picture
    // turned back by a few degrees either way (the finder patterns survive a tilt that the
    // sampling grid of a tall code does not).
    if failed > 0 && luma.width() <= UPSCALE_BELOW {
        for degrees in TILTS {
            merge(&picture::rotate(luma, degrees), &mut codes, &mut failed);
        }
    }
    (codes, failed)
}

/// The turns [`decode_luma`] tries when a code was seen but not read, in degrees.
pub const TILTS: [f32; 4] = [-5.0, -2.5, 2.5, 5.0];

/// Adds the codes of `img` not in `codes` yet; `failed` keeps the largest count of codes
/// found and not read.
fn merge(img: &image::GrayImage, codes: &mut Vec<Vec<u8>>, failed: &mut usize) {
    let (more, f) = decode_once(img);
    *failed = (*failed).max(f);
    for c in more {
        if !codes.contains(&c) {
            codes.push(c);
        }
    }
}

/// Images narrower than this are also searched three times enlarged.
pub const SMALL_BELOW: u32 = 640;

/// Widest image [`decode_luma`] also searches enlarged.
pub const UPSCALE_BELOW: u32 = 2048;

fn decode_once(luma: &image::GrayImage) -> (Vec<Vec<u8>>, usize) {
    let (w, h) = (luma.width() as usize, luma.height() as usize);
    let mut prepared = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| {
        luma.get_pixel(x as u32, y as u32).0[0]
    });
    let mut codes = Vec::new();
    let mut failed = 0;
    for grid in prepared.detect_grids() {
        let mut bytes = Vec::new();
        match grid.decode_to(&mut bytes) {
            Ok(_) => codes.push(bytes),
            Err(_) => failed += 1,
        }
    }
    (codes, failed)
}

/// Reads every image and returns the records (the `KRESULT` lines), reporting per image
/// which codes it held.
pub fn records_from_images(images: &[PathBuf]) -> Result<String, QrError> {
    let mut asm = Assembler::new();
    for path in images {
        let (codes, failed) = decode_image(path)?;
        let mut new = Vec::new();
        let mut dup = 0;
        for bytes in &codes {
            match asm.add(bytes) {
                Ok(Added::New(h)) => new.push(h.index),
                Ok(Added::Duplicate(_)) => dup += 1,
                Err(AddError::Frame(FrameError::Foreign)) => {
                    return Err(QrError::Unreadable {
                        path: path.clone(),
                        why: format!(
                            "a QR code that is not one of kx's results codes (it starts {:?})",
                            String::from_utf8_lossy(&bytes[..bytes.len().min(24)])
                        ),
                    });
                }
                Err(AddError::Frame(e)) => {
                    return Err(QrError::Unreadable {
                        path: path.clone(),
                        why: e.to_string(),
                    });
                }
                Err(e) => {
                    return Err(QrError::Corrupt {
                        path: Some(path.clone()),
                        why: e.to_string(),
                    });
                }
            }
        }
        if codes.is_empty() {
            return Err(QrError::Unreadable {
                path: path.clone(),
                why: if failed == 0 {
                    "no QR code found in it".into()
                } else {
                    format!(
                        "{failed} QR code{} found, none readable (too small, blurred, cut off?)",
                        if failed == 1 { "" } else { "s" }
                    )
                },
            });
        }
        new.sort_unstable();
        let n = asm.header().map_or(0, |h| h.count);
        let list: Vec<String> = new.iter().map(u16::to_string).collect();
        println!(
            "kx import --qr: {}: code{} {} of {n}{}{}",
            path.display(),
            if new.len() == 1 { "" } else { "s" },
            if list.is_empty() {
                "(none new)".to_owned()
            } else {
                list.join(", ")
            },
            if dup > 0 {
                format!(", {dup} seen before")
            } else {
                String::new()
            },
            if failed > 0 {
                format!(", {failed} unreadable")
            } else {
                String::new()
            }
        );
    }
    match asm.finish() {
        Ok(records) => String::from_utf8(records).map_err(|_| QrError::Corrupt {
            path: None,
            why: "the payload is not text".into(),
        }),
        Err(e @ AssembleError::Missing { .. }) => Err(QrError::Missing(e)),
        Err(AssembleError::Empty) => Err(QrError::Unreadable {
            path: images.first().cloned().unwrap_or_default(),
            why: "no kx results code found".into(),
        }),
        Err(e) => Err(QrError::Corrupt {
            path: None,
            why: e.to_string(),
        }),
    }
}

/// `kx import --qr IMAGE...`.
pub fn import(root: &Path, images: &[PathBuf], out: Option<&Path>) -> Result<RunnerExit, RunError> {
    for path in images {
        if !path.is_file() {
            return Err(RunError::NotFound(path.clone()));
        }
    }
    let text = records_from_images(images).map_err(RunError::Qr)?;
    let c = Collected::from_log(&text);
    let source = images
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    super::run::import_collected(root, &format!("qr: {source}"), &c, out)
}

pub mod picture;
#[cfg(test)]
mod tests;
