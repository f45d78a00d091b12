//! Unit tests of the frame format, the sequence and the assembler.

extern crate std;

use super::*;
use alloc::format;
use alloc::string::String;

/// Records like a run's: many similar JSON lines (compressible, but not trivially).
fn records(lines: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
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
    s.into_bytes()
}

fn frames(seq: &Sequence) -> Vec<Vec<u8>> {
    (1..=seq.count())
        .map(|i| {
            let mut f = [0u8; FRAME_MAX];
            let n = seq.frame(i, &mut f);
            f[..n].to_vec()
        })
        .collect()
}

#[test]
fn crc32_matches_the_standard_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn a_full_frame_is_exactly_a_version_8_code_at_level_m() {
    let (mut tmp, mut out) = ([0u8; BUFFER_LEN], [0u8; BUFFER_LEN]);
    let full = [0xa5u8; FRAME_MAX];
    let qr = encode_bytes(&full, &mut tmp, &mut out).expect("fits");
    assert_eq!(qr.version().value(), MAX_VERSION);
    assert_eq!(qr.size(), 49);
    let over = [0xa5u8; FRAME_MAX + 1];
    assert!(encode_bytes(&over, &mut tmp, &mut out).is_none());
}

#[test]
fn codes_in_any_order_with_duplicates_give_the_records_back() {
    let recs = records(3000);
    let seq = Sequence::new(&recs).unwrap();
    assert!(seq.count() > 3, "{} codes", seq.count());
    let fs = frames(&seq);
    let mut asm = Assembler::new();
    for f in fs.iter().rev().chain(fs.iter().step_by(2)) {
        asm.add(f).unwrap();
    }
    assert!(matches!(asm.add(&fs[0]), Ok(Added::Duplicate(_))));
    assert_eq!(asm.finish().unwrap(), recs);
    // Every full code is version 8; the sequence's codes all encode.
    let (mut tmp, mut out) = ([0u8; BUFFER_LEN], [0u8; BUFFER_LEN]);
    assert_eq!(seq.encode(1, &mut tmp, &mut out).version().value(), 8);
    let _ = seq.encode(seq.count(), &mut tmp, &mut out);
}

#[test]
fn empty_records_are_one_code() {
    let seq = Sequence::new(b"").unwrap();
    assert_eq!(seq.count(), 1);
    let mut asm = Assembler::new();
    asm.add(&frames(&seq)[0]).unwrap();
    assert_eq!(asm.finish().unwrap(), b"");
}

#[test]
fn missing_codes_are_named() {
    let seq = Sequence::new(&records(3000)).unwrap();
    let n = seq.count();
    let fs = frames(&seq);
    let mut asm = Assembler::new();
    for (i, f) in fs.iter().enumerate() {
        if i != 1 && i + 1 != fs.len() {
            asm.add(f).unwrap();
        }
    }
    let err = asm.finish().unwrap_err();
    assert_eq!(
        err,
        AssembleError::Missing {
            missing: alloc::vec![2, n],
            count: n
        }
    );
    assert_eq!(format!("{err}"), format!("missing codes 2, {n} of {n}"));
    assert_eq!(Assembler::new().finish(), Err(AssembleError::Empty));
}

#[test]
fn foreign_and_malformed_codes_are_refused() {
    let mut asm = Assembler::new();
    assert_eq!(
        asm.add(b"https://example.org"),
        Err(AddError::Frame(FrameError::Foreign))
    );
    assert_eq!(
        asm.add(b"KQ\x02rest"),
        Err(AddError::Frame(FrameError::Format(2)))
    );
    let seq = Sequence::new(&records(100)).unwrap();
    let mut f = frames(&seq).remove(0);
    f.pop();
    assert_eq!(asm.add(&f), Err(AddError::Frame(FrameError::Malformed)));
    f[3] = 0; // index 0
    assert_eq!(asm.add(&f), Err(AddError::Frame(FrameError::Malformed)));
}

#[test]
fn codes_of_another_run_and_corrupted_chunks_are_caught() {
    let a = Sequence::new(&records(3000)).unwrap();
    let b = Sequence::new(&records(2999)).unwrap();
    let fa = frames(&a);
    let mut asm = Assembler::new();
    asm.add(&fa[0]).unwrap();
    assert!(matches!(
        asm.add(&frames(&b)[1]),
        Err(AddError::OtherRun { .. })
    ));
    // The same index with other bytes is a conflict.
    let mut changed = fa[0].clone();
    changed[HEADER] ^= 1;
    assert_eq!(asm.add(&changed), Err(AddError::Conflict(1)));
    // A chunk changed consistently (header intact) fails the checksum.
    let mut asm = Assembler::new();
    for (i, f) in fa.iter().enumerate() {
        let mut f = f.clone();
        if i == 1 {
            f[HEADER + 7] ^= 0x40;
        }
        asm.add(&f).unwrap();
    }
    assert!(matches!(
        asm.finish(),
        Err(AssembleError::Checksum { expected, .. }) if expected == a.crc()
    ));
}

#[test]
fn pages_hold_as_many_codes_as_fit_at_six_pixels_per_module() {
    // (width, height, glyph) -> codes per page; a version-8 code is 49 modules.
    for (w, h, glyph, per) in [
        (800, 600, 8, 2),
        (1024, 768, 16, 4),
        (1920, 1080, 16, 10),
        (640, 480, 8, 1),
    ] {
        let l = Layout::new(w, h, glyph, 49).unwrap();
        assert_eq!(l.module, MODULE_PX, "{w}x{h}");
        assert_eq!(l.per_page(), per, "{w}x{h}");
        assert!(l.cols * l.cell_w <= w && 2 * glyph + l.rows * l.cell_h <= h);
        assert_eq!(l.cell_w % glyph, 0);
    }
    // A small screen gets one code with smaller modules; a tiny one none.
    let l = Layout::new(320, 240, 8, 49).unwrap();
    assert_eq!((l.module, l.per_page()), (3, 1));
    assert_eq!(Layout::new(100, 100, 8, 49), None);
}
