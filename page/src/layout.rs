//! Layout descriptors: a struct's fields as the layout report prints them, pahole-style.
//!
//! This is a leaf: the structs describe themselves with [`FieldDesc`] and
//! [`layout_field!`](crate::layout_field) next to their compile-time asserts, and
//! `lru::layout_report`, above them all, prints them. For each struct: field, offset,
//! size, cacheline group, 64-byte line and 128-byte pair, plus a marker where a field
//! written without a lock (group `stats`/`lrugen_stats`) shares a line with a field of
//! another group, the situation seeds 000 and 001 fix. It writes to any `core::fmt::Write`,
//! so the host runner's `layout` subcommand and the kernel's serial console print the same
//! table.

use crate::cacheline::{line_of, pair_of, share_line};
use core::fmt::{self, Write};

/// One field of a struct as the report shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDesc {
    /// Field name (Linux's where it has one).
    pub name: &'static str,
    /// Byte offset from the start of the struct.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Cacheline group the field belongs to.
    pub group: &'static str,
}

/// A [`FieldDesc`] for field `$field` (a path such as `memcg.bin` is allowed) of `$ty` in
/// cacheline group `$group`; the printed name is the last path segment unless given as
/// `"name" => path`. Usable in `const` items.
#[macro_export]
macro_rules! layout_field {
    ($ty:ty, $group:expr, $name:expr => $($f:tt).+) => {
        $crate::layout::FieldDesc {
            name: $name,
            offset: ::core::mem::offset_of!($ty, $($f).+),
            size: $crate::cacheline::field_size(|s: &$ty| &s.$($f).+),
            group: $group,
        }
    };
    ($ty:ty, $group:expr, $field:ident) => {
        $crate::layout_field!($ty, $group, stringify!($field) => $field)
    };
}

impl FieldDesc {
    /// One past the last byte of the field.
    #[must_use]
    pub const fn end(&self) -> usize {
        self.offset + self.size
    }

    /// Whether the field is written locklessly from many CPUs.
    #[must_use]
    pub fn is_hot_lockless(&self) -> bool {
        matches!(self.group, "stats" | "lrugen_stats")
    }
}

/// A struct's name, size, alignment and fields.
#[derive(Debug, Clone, Copy)]
pub struct StructLayout<'a> {
    /// Display name, e.g. `lru_gen_folio (grouped)`.
    pub name: &'a str,
    /// `size_of`.
    pub size: usize,
    /// `align_of`.
    pub align: usize,
    /// The fields, in offset order.
    pub fields: &'a [FieldDesc],
}

impl StructLayout<'_> {
    /// Fields (by index) that share a 64-byte line with a lockless-hot field of another
    /// group.
    pub fn false_sharing(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.fields.iter().enumerate().flat_map(move |(i, a)| {
            self.fields.iter().enumerate().filter_map(move |(j, b)| {
                (i != j
                    && a.is_hot_lockless()
                    && a.group != b.group
                    && share_line(a.offset, a.size, b.offset, b.size))
                .then_some((i, j))
            })
        })
    }

    /// Print the struct pahole-style.
    pub fn print(&self, w: &mut dyn Write) -> fmt::Result {
        writeln!(
            w,
            "struct {} {{ /* size {}, align {}, {} lines, {} pairs */",
            self.name,
            self.size,
            self.align,
            self.size.div_ceil(64),
            self.size.div_ceil(128)
        )?;
        writeln!(
            w,
            "    {:<24} {:>6} {:>6}  {:<13} {:>9} {:>9}",
            "field", "offset", "size", "group", "line", "pair"
        )?;
        let mut prev_end = 0;
        for (i, f) in self.fields.iter().enumerate() {
            if f.offset > prev_end {
                writeln!(w, "    /* hole: {} bytes */", f.offset - prev_end)?;
            }
            prev_end = f.end();
            let last = f.end().saturating_sub(1).max(f.offset);
            let span = |a: usize, b: usize| -> (usize, usize) { (a, b) };
            let (l0, l1) = span(line_of(f.offset), line_of(last));
            let (p0, p1) = span(pair_of(f.offset), pair_of(last));
            let hot = self.false_sharing().any(|(a, b)| a == i || b == i);
            writeln!(
                w,
                "    {:<24} {:>6} {:>6}  {:<13} {:>4}-{:<4} {:>4}-{:<4}{}",
                f.name,
                f.offset,
                f.size,
                f.group,
                l0,
                l1,
                p0,
                p1,
                if hot {
                    " <- shares a line with lockless counters"
                } else {
                    ""
                }
            )?;
        }
        if self.size > prev_end {
            writeln!(w, "    /* padding: {} bytes */", self.size - prev_end)?;
        }
        writeln!(w, "}};")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn print_marks_holes() {
        let fields = [
            FieldDesc {
                name: "a",
                offset: 0,
                size: 8,
                group: "g",
            },
            FieldDesc {
                name: "b",
                offset: 64,
                size: 8,
                group: "stats",
            },
        ];
        let l = StructLayout {
            name: "t",
            size: 128,
            align: 64,
            fields: &fields,
        };
        let mut s = String::new();
        l.print(&mut s).unwrap();
        assert!(s.contains("hole: 56 bytes"), "{s}");
        assert!(s.contains("padding: 56 bytes"), "{s}");
        assert_eq!(l.false_sharing().count(), 0);
    }
}
