//! A minimal JSON writer for one-line records, by hand because the kernel has no serde.
//!
//! It writes into any [`core::fmt::Write`] (the kernel's console, a `String`), never
//! allocates, and produces only what RFC 8259 allows: strings escaped (`"`, `\`, control
//! characters, and every non-ASCII character as `\uXXXX`, surrogate pairs included, so a
//! record line is pure ASCII and survives any serial terminal), integers as decimal, and
//! floats in Rust's shortest round-trip form (`0.5`, `1e21`, `1.5e-7`), which JSON accepts.
//! A NaN or an infinity cannot be written as a number: it becomes `null`, which the parser
//! then rejects for a required field (the record constructors refuse such values first).
//!
//! The writer tracks only whether a comma is due; nesting is the caller's (the record
//! module's), checked by the round-trip tests that parse every line with serde_json.

use core::fmt::{self, Write};

/// Writes one JSON value (an object, typically) into `out`.
pub struct JsonWriter<'w, W: Write + ?Sized> {
    out: &'w mut W,
    /// A value was written at the current level: the next one needs a comma.
    comma: bool,
}

impl<'w, W: Write + ?Sized> JsonWriter<'w, W> {
    /// A writer into `out`.
    pub fn new(out: &'w mut W) -> Self {
        JsonWriter { out, comma: false }
    }

    fn sep(&mut self) -> fmt::Result {
        if core::mem::replace(&mut self.comma, true) {
            self.out.write_char(',')?;
        }
        Ok(())
    }

    /// `{`.
    pub fn begin_object(&mut self) -> fmt::Result {
        self.sep()?;
        self.comma = false;
        self.out.write_char('{')
    }

    /// `}`.
    pub fn end_object(&mut self) -> fmt::Result {
        self.comma = true;
        self.out.write_char('}')
    }

    /// `[`.
    pub fn begin_array(&mut self) -> fmt::Result {
        self.sep()?;
        self.comma = false;
        self.out.write_char('[')
    }

    /// `]`.
    pub fn end_array(&mut self) -> fmt::Result {
        self.comma = true;
        self.out.write_char(']')
    }

    /// `"key":` (the value follows).
    pub fn key(&mut self, key: &str) -> fmt::Result {
        self.sep()?;
        write_string(self.out, key)?;
        self.out.write_char(':')?;
        self.comma = false;
        Ok(())
    }

    /// A string value.
    pub fn string(&mut self, s: &str) -> fmt::Result {
        self.sep()?;
        write_string(self.out, s)
    }

    /// An unsigned integer value.
    pub fn uint(&mut self, v: u64) -> fmt::Result {
        self.sep()?;
        write!(self.out, "{v}")
    }

    /// A signed integer value.
    pub fn int(&mut self, v: i64) -> fmt::Result {
        self.sep()?;
        write!(self.out, "{v}")
    }

    /// A float value; `null` if it is not finite.
    pub fn float(&mut self, v: f64) -> fmt::Result {
        self.sep()?;
        if v.is_finite() {
            // `{:?}` is the shortest representation that reads back to the same f64, with
            // an exponent for very large or small values; all of its forms are JSON numbers.
            write!(self.out, "{v:?}")
        } else {
            self.out.write_str("null")
        }
    }

    /// `true` or `false`.
    pub fn bool(&mut self, v: bool) -> fmt::Result {
        self.sep()?;
        self.out.write_str(if v { "true" } else { "false" })
    }

    /// `null`.
    pub fn null(&mut self) -> fmt::Result {
        self.sep()?;
        self.out.write_str("null")
    }

    /// `"key":"value"`.
    pub fn field_str(&mut self, key: &str, v: &str) -> fmt::Result {
        self.key(key)?;
        self.string(v)
    }

    /// `"key":v`.
    pub fn field_uint(&mut self, key: &str, v: u64) -> fmt::Result {
        self.key(key)?;
        self.uint(v)
    }

    /// `"key":v` for a float (`null` if not finite).
    pub fn field_float(&mut self, key: &str, v: f64) -> fmt::Result {
        self.key(key)?;
        self.float(v)
    }

    /// `"key":v` for an optional float (`null` if absent or not finite).
    pub fn field_opt_float(&mut self, key: &str, v: Option<f64>) -> fmt::Result {
        self.key(key)?;
        match v {
            Some(v) => self.float(v),
            None => self.null(),
        }
    }

    /// `"key":true|false`.
    pub fn field_bool(&mut self, key: &str, v: bool) -> fmt::Result {
        self.key(key)?;
        self.bool(v)
    }
}

/// Writes `s` as a JSON string literal, pure ASCII.
pub fn write_string<W: Write + ?Sized>(out: &mut W, s: &str) -> fmt::Result {
    out.write_char('"')?;
    let mut start = 0;
    for (i, ch) in s.char_indices() {
        let plain = ch.is_ascii() && ch >= ' ' && ch != '"' && ch != '\\' && ch != '\x7f';
        if plain {
            continue;
        }
        out.write_str(&s[start..i])?;
        start = i + ch.len_utf8();
        match ch {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            _ => {
                let mut units = [0u16; 2];
                for u in ch.encode_utf16(&mut units) {
                    write!(out, "\\u{u:04x}")?;
                }
            }
        }
    }
    out.write_str(&s[start..])?;
    out.write_char('"')
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn js(s: &str) -> String {
        let mut out = String::new();
        write_string(&mut out, s).unwrap();
        out
    }

    #[test]
    fn escapes_are_json_and_ascii() {
        assert_eq!(js("plain"), "\"plain\"");
        assert_eq!(js("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(js("\n\r\t\x01\x7f"), "\"\\n\\r\\t\\u0001\\u007f\"");
        assert_eq!(js("é😀"), "\"\\u00e9\\ud83d\\ude00\"");
        for s in [
            "",
            "x\u{0}y",
            "Intel(R) Xeon(R) CPU @ 2.20GHz",
            "tab\there",
            "\u{2028}",
        ] {
            let out = js(s);
            assert!(out.is_ascii());
            let back: String = serde_json::from_str(&out).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn objects_arrays_and_numbers() {
        let mut out = String::new();
        let mut w = JsonWriter::new(&mut out);
        w.begin_object().unwrap();
        w.field_uint("a", 1).unwrap();
        w.key("b").unwrap();
        w.begin_array().unwrap();
        w.float(0.5).unwrap();
        w.float(1e21).unwrap();
        w.float(1.5e-7).unwrap();
        w.float(f64::NAN).unwrap();
        w.int(-3).unwrap();
        w.end_array().unwrap();
        w.key("c").unwrap();
        w.begin_object().unwrap();
        w.end_object().unwrap();
        w.field_bool("d", false).unwrap();
        w.field_opt_float("e", None).unwrap();
        w.end_object().unwrap();
        assert_eq!(
            out,
            r#"{"a":1,"b":[0.5,1e21,1.5e-7,null,-3],"c":{},"d":false,"e":null}"#
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["b"][1].as_f64(), Some(1e21));
    }
}
