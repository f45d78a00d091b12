//! A record's `KRESULT` line: serde_json's compact JSON, made pure ASCII.
//!
//! The records ([`crate::record`]) derive serde's `Serialize` and `Deserialize`, so the kernel
//! that writes a line and the runner that reads it use the same types: the schema exists
//! once. A line is `KRESULT ` and ONE JSON object: `"type"` first (the record's
//! [`KResult::TYPE`], the tag of [`crate::Record`]'s variants), then the record's fields in
//! declaration order. serde_json writes it (`alloc`, no `std`), so a line is built in a
//! `String` on the heap; [`KResult::line`] does that before the caller prints it, so no
//! allocation happens inside the console's lock with interrupts off.
//!
//! What a line guarantees, checked by the tests below:
//!
//! - pure ASCII, one line: serde_json escapes `"`, `\` and the control characters (`\n`,
//!   `\t`, `\b`, `\f`, `\r`, else `\u00XX`); this module then escapes every non-ASCII
//!   character as `\uXXXX` (a surrogate pair above U+FFFF) and DEL as `\u007f`, which serde_json
//!   leaves raw: such characters occur only inside string literals, where the escape is the
//!   same string. A line survives any serial terminal and a QR code's byte mode.
//! - numbers that read back to the same value: integers in decimal, floats in serde_json's
//!   shortest round-trip form (`0.5`, `1e+21`, `1.5e-7`, `0.000015`).
//! - no NaN or infinity: serde_json writes a non-finite float as `null`, which the parser
//!   rejects for a required field; the record constructors refuse such values first.
//!
//! Lines written before serde wrote them (the hand-written writer this replaced, Rust's
//! `{:?}` for floats) differ in spelling only: `\u0008` and `\u000c` for `\b` and `\f`;
//! `1e21` for `1e+21` (floats from 1e16 up); `1.5e-5` for `0.000015` (floats in
//! [1e-5, 1e-4)); and, for some floats from 1e10 up, the other of two equally short digit
//! strings that read back to the same f64 (`82133090470.20313` for `82133090470.20312`).
//! Both spell the same JSON values, read by the same parser
//! ([`crate::record::parse_line`]); the record tests keep an old line readable. Every other
//! byte of a line is what the old writer wrote.

use abi::report::RESULT_TAG;
use alloc::string::String;
use serde::Serialize;

/// A record that is printed as one `KRESULT` line.
pub trait KResult: Serialize {
    /// The `"type"` value: the name of its [`crate::Record`] variant.
    const TYPE: &'static str;

    /// The whole line, `KRESULT {...}`, without a newline: `println!("{}", r.line())`.
    fn line(&self) -> String
    where
        Self: Sized,
    {
        line(Self::TYPE, self)
    }
}

/// A record with its `"type"` key first.
#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    record: &'a T,
}

/// `KRESULT ` and `record` as one-line ASCII JSON with `"type": kind` first.
///
/// # Panics
///
/// If serde_json refuses the record, which it does only for a map with non-string keys or a
/// `Serialize` impl that fails: the records have neither (their maps are keyed by
/// `String`), and every record type's line is parsed back in the tests.
#[must_use]
pub fn line<T: Serialize>(kind: &'static str, record: &T) -> String {
    let json = serde_json::to_string(&Tagged { kind, record })
        .expect("a record serializes (string map keys, derived impls)");
    let mut out = String::with_capacity(RESULT_TAG.len() + 1 + json.len());
    out.push_str(RESULT_TAG);
    out.push(' ');
    push_ascii(&mut out, &json);
    out
}

/// Appends `json` with every non-ASCII character and DEL escaped as `\uXXXX`.
///
/// `json` must be serde_json's output: outside string literals it is ASCII, so every
/// character escaped here is inside one, where `\uXXXX` stands for the same character.
fn push_ascii(out: &mut String, json: &str) {
    let mut start = 0;
    for (i, ch) in json.char_indices() {
        if ch.is_ascii() && ch != '\x7f' {
            continue;
        }
        out.push_str(&json[start..i]);
        start = i + ch.len_utf8();
        let mut units = [0u16; 2];
        for u in ch.encode_utf16(&mut units) {
            push_hex4(out, *u);
        }
    }
    out.push_str(&json[start..]);
}

/// `\uXXXX`, lower-case hex as serde_json writes its own escapes.
fn push_hex4(out: &mut String, u: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(char::from(HEX[usize::from((u >> shift) & 0xf)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;

    #[derive(Serialize)]
    struct Sample<'a> {
        s: &'a str,
        f: f64,
        o: Option<f64>,
        m: BTreeMap<&'a str, i64>,
    }

    fn json_of(s: &str) -> String {
        let l = line(
            "t",
            &Sample {
                s,
                f: 0.5,
                o: None,
                m: BTreeMap::new(),
            },
        );
        let json = l.strip_prefix("KRESULT ").unwrap();
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["s"], s, "{l}");
        assert!(
            l.is_ascii() && !l.contains('\n') && !l.contains('\x7f'),
            "{l}"
        );
        l
    }

    #[test]
    fn strings_are_escaped_to_ascii_and_read_back() {
        assert_eq!(
            json_of("a\"b\\c"),
            r#"KRESULT {"type":"t","s":"a\"b\\c","f":0.5,"o":null,"m":{}}"#
        );
        assert!(json_of("\n\r\t\x01\x7f").contains(r#""\n\r\t\u0001\u007f""#));
        assert!(json_of("é😀").contains(r#""\u00e9\ud83d\ude00""#));
        for s in [
            "",
            "x\u{0}y",
            "Intel(R) Xeon(R) CPU @ 2.20GHz",
            "tab\there",
            "\u{2028}",
            "\u{8}\u{c}\u{ffff}\u{10ffff}",
            "\\u00e9 is not an escape here",
        ] {
            json_of(s);
        }
    }

    #[test]
    fn map_keys_numbers_and_non_finite_floats() {
        let m = BTreeMap::from([("z\u{e9}", -3), ("a", i64::MAX)]);
        let l = line(
            "t",
            &Sample {
                s: "",
                f: f64::NAN,
                o: Some(1e21),
                m,
            },
        );
        assert_eq!(
            l,
            r#"KRESULT {"type":"t","s":"","f":null,"o":1e+21,"m":{"a":9223372036854775807,"z\u00e9":-3}}"#
        );
        for f in [1.5e-7, 1.5e-5, 0.1 + 0.2, 123_456_789.123, f64::MAX] {
            let l = line(
                "t",
                &Sample {
                    s: "",
                    f,
                    o: None,
                    m: BTreeMap::new(),
                },
            );
            let v: serde_json::Value = serde_json::from_str(&l[8..]).unwrap();
            assert_eq!(v["f"].as_f64(), Some(f), "{l}");
        }
    }

    proptest::proptest! {
        /// Any string and any finite float: the line is one line of ASCII and reads back
        /// to the same string and the same f64, bit for bit.
        #[test]
        fn any_string_and_float_reads_back(s in ".*", bits in proptest::num::u64::ANY) {
            let f = f64::from_bits(bits);
            proptest::prop_assume!(f.is_finite());
            let l = line("t", &Sample { s: &s, f, o: Some(-f), m: BTreeMap::from([(&*s, 1)]) });
            proptest::prop_assert!(l.is_ascii() && !l.contains(['\n', '\r', '\x7f']), "{}", l);
            let v: serde_json::Value = serde_json::from_str(&l[8..]).unwrap();
            proptest::prop_assert_eq!(v["s"].as_str(), Some(&*s));
            proptest::prop_assert_eq!(v["m"][&*s].as_i64(), Some(1));
            let back = v["f"].as_f64().unwrap();
            proptest::prop_assert_eq!(back.to_bits(), f.to_bits(), "{}", l);
            proptest::prop_assert_eq!(v["o"].as_f64().unwrap().to_bits(), (-f).to_bits());
        }
    }
}
