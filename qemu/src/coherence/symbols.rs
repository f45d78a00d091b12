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

    /// The function containing `pc`, demangled without its hash.
    #[must_use]
    pub fn function(&self, pc: u64) -> Option<&str> {
        containing(&self.funcs, pc)
    }

    /// The data symbol (a static) containing `addr`, with the offset into it.
    #[must_use]
    pub fn object(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self
            .data
            .partition_point(|(a, _, _)| *a <= addr)
            .checked_sub(1)?;
        let (a, size, name) = &self.data[i];
        (addr < a + (*size).max(1)).then(|| (name.as_str(), addr - a))
    }
}

fn containing(v: &[(u64, u64, String)], addr: u64) -> Option<&str> {
    let i = v.partition_point(|(a, _, _)| *a <= addr).checked_sub(1)?;
    let (a, size, name) = &v[i];
    (addr < a + (*size).max(1)).then_some(name.as_str())
}
