//! Pictures of QR codes for the tests of `kx import --qr`: a code drawn as the kernel draws
//! it, and the ways a photograph differs from a screenshot (smaller, turned a few degrees,
//! noisy), several pictures side by side in one image.

use image::{GrayImage, Luma};

/// `qr` drawn black on white with `module` pixels per module and a quiet zone of
/// [`qrpayload::QUIET_ZONE`] modules, as the kernel draws it.
#[must_use]
pub fn render(qr: &qrpayload::QrCode<'_>, module: u32) -> GrayImage {
    let size = qr.size() as u32;
    let quiet = qrpayload::QUIET_ZONE as u32;
    let side = (size + 2 * quiet) * module;
    GrayImage::from_fn(side, side, |x, y| {
        let (mx, my) = (
            (x / module) as i32 - quiet as i32,
            (y / module) as i32 - quiet as i32,
        );
        Luma([if qr.get_module(mx, my) { 0 } else { 255 }])
    })
}

/// `img` scaled by `factor` (Lanczos, as a phone's or viewer's downscaling).
#[must_use]
pub fn scale(img: &GrayImage, factor: f32) -> GrayImage {
    let w = ((img.width() as f32 * factor).round() as u32).max(1);
    let h = ((img.height() as f32 * factor).round() as u32).max(1);
    image::imageops::resize(img, w, h, image::imageops::FilterType::Lanczos3)
}

/// `img` turned by `degrees` about its centre (bilinear), the corners filled white, on a
/// canvas large enough to hold it all.
#[must_use]
pub fn rotate(img: &GrayImage, degrees: f32) -> GrayImage {
    let (w, h) = (img.width() as f32, img.height() as f32);
    let (sin, cos) = degrees.to_radians().sin_cos();
    let nw = (w * cos.abs() + h * sin.abs()).ceil() as u32;
    let nh = (w * sin.abs() + h * cos.abs()).ceil() as u32;
    let (cx, cy, ncx, ncy) = (w / 2.0, h / 2.0, nw as f32 / 2.0, nh as f32 / 2.0);
    let at = |x: i64, y: i64| -> f32 {
        if x < 0 || y < 0 || x >= i64::from(img.width()) || y >= i64::from(img.height()) {
            255.0
        } else {
            f32::from(img.get_pixel(x as u32, y as u32).0[0])
        }
    };
    GrayImage::from_fn(nw, nh, |x, y| {
        let (dx, dy) = (x as f32 + 0.5 - ncx, y as f32 + 0.5 - ncy);
        let sx = cos * dx + sin * dy + cx - 0.5;
        let sy = -sin * dx + cos * dy + cy - 0.5;
        let (x0, y0) = (sx.floor(), sy.floor());
        let (fx, fy) = (sx - x0, sy - y0);
        let (x0, y0) = (x0 as i64, y0 as i64);
        let v = at(x0, y0) * (1.0 - fx) * (1.0 - fy)
            + at(x0 + 1, y0) * fx * (1.0 - fy)
            + at(x0, y0 + 1) * (1.0 - fx) * fy
            + at(x0 + 1, y0 + 1) * fx * fy;
        Luma([v.round().clamp(0.0, 255.0) as u8])
    })
}

/// `img` with noise: every pixel moved by up to `amplitude` grey levels either way
/// (uniform, from a fixed seed, so a test sees the same picture every time).
#[must_use]
pub fn noise(img: &GrayImage, amplitude: u8, seed: u64) -> GrayImage {
    let mut x = seed | 1;
    let mut out = img.clone();
    for p in out.pixels_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let span = 2 * i32::from(amplitude) + 1;
        let d = (x % span as u64) as i32 - i32::from(amplitude);
        p.0[0] = (i32::from(p.0[0]) + d).clamp(0, 255) as u8;
    }
    out
}

/// The pictures side by side on a white canvas, `gap` pixels apart.
#[must_use]
pub fn side_by_side(pictures: &[GrayImage], gap: u32) -> GrayImage {
    let w = pictures.iter().map(|p| p.width() + gap).sum::<u32>() + gap;
    let h = pictures.iter().map(GrayImage::height).max().unwrap_or(0) + 2 * gap;
    let mut out = GrayImage::from_pixel(w, h, Luma([255]));
    let mut x = gap;
    for p in pictures {
        image::imageops::replace(&mut out, p, i64::from(x), i64::from(gap));
        x += p.width() + gap;
    }
    out
}
