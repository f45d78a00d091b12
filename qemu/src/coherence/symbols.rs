//! The kernel ELF's symbol table: where the mark page is, and which function an instruction
//! address belongs to (perf c2c's "code beside data").

use elf::ElfBytes;
use elf::abi::{STT_FUNC, STT_OBJECT};
use elf::endian::AnyEndian;
use std::path::Path;

/// Functions and data symbols of one kernel ELF, sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    funcs: Vec<(u64, u64, String)>,
    data: Vec<(u64, u64, String)>,
}

impl Symbols {
    /// Reads the symbol table of the ELF (64- or 32-bit) at `path`.
    pub fn read(path: &Path) -> Result<Symbols, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Symbols::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses an ELF image's symbol table.
    pub fn parse(bytes: &[u8]) -> Result<Symbols, String> {
        let file = ElfBytes::<AnyEndian>::minimal_parse(bytes).map_err(|e| e.to_string())?;
        let (symtab, strtab) = file
            .symbol_table()
            .map_err(|e| e.to_string())?
            .ok_or("no symbol table (a stripped kernel?)")?;
        let mut s = Symbols::default();
        for sym in symtab.iter() {
            let kind = sym.st_symtype();
            if kind != STT_FUNC && kind != STT_OBJECT || sym.st_value == 0 {
                continue;
            }
            let name = strtab
                .get(sym.st_name as usize)
                .map_err(|e| e.to_string())?;
            let name = format!("{:#}", rustc_demangle::demangle(name));
            let entry = (sym.st_value, sym.st_size, name);
            if kind == STT_FUNC {
                s.funcs.push(entry);
            } else {
                s.data.push(entry);
            }
        }
        s.funcs.sort();
        s.data.sort();
        Ok(s)
    }

    /// The address of the data or function symbol `name`.
    #[must_use]
    pub fn address(&self, name: &str) -> Option<u64> {
        self.data
            .iter()
            .chain(&self.funcs)
            .find(|(_, _, n)| n == name)
            .map(|(a, _, _)| *a)
    }

    /// A symbol list in `nm`'s format (address, type, name per line, and a `[module]` after
    /// a module's names), as Linux's `/proc/kallsyms` and `System.map` are: its text symbols
    /// (types `T`, `t`, `W`, `w`), each taken to end where the next begins, as the list
    /// gives no sizes.
    pub fn parse_nm(text: &str) -> Result<Symbols, String> {
        let mut s = Symbols::default();
        for (n, line) in text.lines().enumerate() {
            let bad = || format!("line {}: not `address type name`: `{line}`", n + 1);
            let mut f = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                return Err(bad());
            };
            if f.next().is_some_and(|m| !m.starts_with('[')) || f.next().is_some() {
                return Err(bad());
            }
            let addr = u64::from_str_radix(addr, 16)
                .map_err(|_| format!("line {}: `{addr}` is not a hexadecimal address", n + 1))?;
            if matches!(kind, "T" | "t" | "W" | "w") {
                s.funcs.push((addr, 0, name.to_owned()));
            }
        }
        if s.funcs.is_empty() {
            return Err("no text symbols".into());
        }
        s.funcs.sort();
        let starts: Vec<u64> = s.funcs.iter().map(|f| f.0).skip(1).collect();
        for (f, next) in s.funcs.iter_mut().zip(starts) {
            f.1 = next - f.0;
        }
        Ok(s)
    }

    /// The function containing `pc`, demangled without its hash.
    #[must_use]
    pub fn function(&self, pc: u64) -> Option<&str> {
        containing(&self.funcs, pc).map(|(name, _)| name)
    }

    /// The function containing `pc` and `pc`'s offset into it.
    #[must_use]
    pub fn function_at(&self, pc: u64) -> Option<(&str, u64)> {
        containing(&self.funcs, pc)
    }

    /// The data symbol (a static) containing `addr`, with the offset into it.
    #[must_use]
    pub fn object(&self, addr: u64) -> Option<(&str, u64)> {
        containing(&self.data, addr)
    }
}

/// The symbol of `v` (sorted by address) containing `addr` (a symbol of size 0 holds its
/// first byte), with the offset into it.
fn containing(v: &[(u64, u64, String)], addr: u64) -> Option<(&str, u64)> {
    let i = v.partition_point(|(a, _, _)| *a <= addr).checked_sub(1)?;
    let (a, size, name) = &v[i];
    (addr < a + (*size).max(1)).then(|| (name.as_str(), addr - a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_symbols_in_nm_format_end_where_the_next_begins() {
        let map = "0000000000000000 D __per_cpu_start\n\
                   ffffffff81000000 T _stext\n\
                   ffffffff81000200 t _raw_spin_lock\n\
                   ffffffff81000180 W weak_one\n\
                   ffffffff81000300 D some_data\n\
                   ffffffff81000400 T _etext\n\
                   ffffffffc0000000 t mod_init\t[some_module]\n";
        let s = Symbols::parse_nm(map).unwrap();
        assert_eq!(
            s.function_at(0xffff_ffff_8100_0210),
            Some(("_raw_spin_lock", 0x10))
        );
        assert_eq!(s.function(0xffff_ffff_8100_01ff), Some("weak_one"));
        assert_eq!(
            s.function(0xffff_ffff_8100_0300),
            Some("_raw_spin_lock"),
            "data symbols do not end a function"
        );
        assert_eq!(s.function(0xffff_ffff_8000_0000), None);
        assert_eq!(s.function(0xffff_ffff_c000_0000), Some("mod_init"));
    }

    #[test]
    fn a_symbol_list_that_is_not_one_is_refused() {
        for (text, why) in [
            ("ffffffff81000000 T\n", "line 1: not"),
            ("zz T x\n", "not a hexadecimal address"),
            ("ffffffff81000000 T a b\n", "line 1: not"),
            ("ffffffff81000000 T a [m] c\n", "line 1: not"),
            ("ffffffff81000000 D data\n", "no text symbols"),
            ("", "no text symbols"),
        ] {
            let e = Symbols::parse_nm(text).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
