//! `kx import --qr` on pictures drawn here: several codes per image in any order with
//! duplicates, scaled down, rotated, noisy, JPEG; and each way it must fail.

use super::picture::{noise, render, rotate, scale, side_by_side};
use super::*;
use image::GrayImage;
use qrpayload::{BUFFER_LEN, Sequence};

fn records(lines: usize, salt: u64) -> String {
    let mut s = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ salt;
    for i in 0..lines {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!(
            "KRESULT {{\"type\":\"run\",\"scenario\":\"seed001-faultfree\",\"round\":{i},\"ops\":{},\"ns\":{}}}\n",
            x % 1_000_000,
            x >> 40
        ));
    }
    s
}

/// The sequence's codes drawn with `module` pixels per module.
fn pictures(seq: &Sequence, module: u32) -> Vec<GrayImage> {
    let (mut tmp, mut out) = ([0u8; BUFFER_LEN], [0u8; BUFFER_LEN]);
    (1..=seq.count())
        .map(|i| render(&seq.encode(i, &mut tmp, &mut out), module))
        .collect()
}

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("kx-qr-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn save(&self, name: &str, img: &GrayImage) -> PathBuf {
        let p = self.0.join(name);
        img.save(&p).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn several_codes_per_image_in_any_order_with_duplicates() {
    let recs = records(300, 0);
    let seq = Sequence::new(recs.as_bytes()).unwrap();
    let n = seq.count() as usize;
    assert!(n >= 3, "{n} codes");
    let pics = pictures(&seq, 4);
    let dir = Dir::new("order");
    let mut files = Vec::new();
    // Last two codes in one image, then the rest backwards, code 1 twice.
    files.push(dir.save(
        "a.png",
        &side_by_side(&[pics[n - 1].clone(), pics[n - 2].clone()], 40),
    ));
    for i in (0..n - 2).rev() {
        files.push(dir.save(&format!("c{i}.png"), &pics[i]));
    }
    files.push(dir.save("again.png", &pics[0]));
    assert_eq!(records_from_images(&files).unwrap(), recs);
}

#[test]
fn photographs_scaled_down_rotated_noisy_or_jpeg_decode() {
    let recs = records(300, 1);
    let seq = Sequence::new(recs.as_bytes()).unwrap();
    let pics = pictures(&seq, 6);
    let dir = Dir::new("photo");
    let files: Vec<PathBuf> = pics
        .iter()
        .enumerate()
        .map(|(i, p)| match i % 4 {
            0 => dir.save(&format!("{i}-scaled.png"), &scale(p, 0.5)),
            1 => dir.save(&format!("{i}-rotated.png"), &rotate(p, 4.0)),
            2 => dir.save(&format!("{i}-noisy.png"), &noise(p, 60, i as u64)),
            _ => dir.save(&format!("{i}.jpg"), &rotate(&scale(p, 0.7), -3.0)),
        })
        .collect();
    assert_eq!(records_from_images(&files).unwrap(), recs);
}

#[test]
fn a_missing_code_is_named() {
    let seq = Sequence::new(records(300, 2).as_bytes()).unwrap();
    let n = seq.count();
    let pics = pictures(&seq, 4);
    let dir = Dir::new("missing");
    let files: Vec<PathBuf> = (0..pics.len())
        .filter(|&i| i != 1)
        .map(|i| dir.save(&format!("{i}.png"), &pics[i]))
        .collect();
    let err = records_from_images(&files).unwrap_err();
    assert_eq!(RunnerExit::for_qr(&err), RunnerExit::QrMissing);
    assert_eq!(RunnerExit::for_qr(&err).status(), 12);
    assert!(
        err.to_string()
            .starts_with(&format!("missing code 2 of {n}:")),
        "{err}"
    );
}

#[test]
fn foreign_blank_and_broken_images_are_unreadable() {
    let dir = Dir::new("foreign");
    let (mut tmp, mut out) = ([0u8; BUFFER_LEN], [0u8; BUFFER_LEN]);
    let url = qrpayload::encode_bytes(b"https://example.org/", &mut tmp, &mut out).unwrap();
    let foreign = dir.save("url.png", &render(&url, 4));
    let err = records_from_images(&[foreign]).unwrap_err();
    assert_eq!(RunnerExit::for_qr(&err).status(), 11, "{err}");
    assert!(
        err.to_string().contains("not one of kx's results codes"),
        "{err}"
    );

    let blank = dir.save(
        "blank.png",
        &GrayImage::from_pixel(300, 200, image::Luma([255])),
    );
    let err = records_from_images(&[blank]).unwrap_err();
    assert_eq!(RunnerExit::for_qr(&err), RunnerExit::QrUnreadable);
    assert!(err.to_string().ends_with("no QR code found in it"), "{err}");

    let broken = dir.0.join("broken.png");
    std::fs::write(&broken, b"\x89PNG\r\n\x1a\nthis is not the rest of a PNG").unwrap();
    let err = records_from_images(&[broken]).unwrap_err();
    assert_eq!(RunnerExit::for_qr(&err), RunnerExit::QrUnreadable);
    assert!(
        err.to_string().contains("not a readable PNG or JPEG"),
        "{err}"
    );
}

#[test]
fn codes_of_two_runs_are_corrupt() {
    let a = Sequence::new(records(300, 3).as_bytes()).unwrap();
    let b = Sequence::new(records(300, 4).as_bytes()).unwrap();
    let dir = Dir::new("tworuns");
    let files = [
        dir.save("a.png", &pictures(&a, 4)[0]),
        dir.save("b.png", &pictures(&b, 4)[1]),
    ];
    let err = records_from_images(&files).unwrap_err();
    assert_eq!(RunnerExit::for_qr(&err), RunnerExit::QrCorrupt);
    assert_eq!(RunnerExit::for_qr(&err).status(), 13);
    assert!(err.to_string().contains("code of another run"), "{err}");
}
