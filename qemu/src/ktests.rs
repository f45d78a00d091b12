//! The in-kernel tests a kernel ELF holds, read without booting it.
//!
//! Each `#[ktest]` (kernel/ktest) writes its test's name, and `slow` for one that runs only
//! when named, as a text line into `.ktest_names`, which the kernel's linker script keeps in
//! `.rodata` between `__start_ktest_names` and `__stop_ktest_names`. The runner reads those
//! bytes back through the symbols: `kx test --list` prints them, and `kx test NAME...`
//! refuses a name or prefix that selects nothing before it boots anything, with the
//! kernel's own check (`abi::TestSelection::unmatched`) and exit status.

use elf::ElfBytes;
use elf::endian::AnyEndian;
use std::path::Path;

/// One registered test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KTest {
    /// Its name (`test=NAME`).
    pub name: String,
    /// Run only when named.
    pub slow: bool,
}

/// The tests of the kernel ELF at `path` (64- or 32-bit), by name.
pub fn read(path: &Path) -> Result<Vec<KTest>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The tests of an ELF image, by name.
pub fn parse(bytes: &[u8]) -> Result<Vec<KTest>, String> {
    let file = ElfBytes::<AnyEndian>::minimal_parse(bytes).map_err(|e| e.to_string())?;
    let (symtab, strtab) = file
        .symbol_table()
        .map_err(|e| e.to_string())?
        .ok_or("no symbol table (a stripped kernel?)")?;
    let (mut start, mut stop) = (None, None);
    for sym in symtab.iter() {
        match strtab
            .get(sym.st_name as usize)
            .map_err(|e| e.to_string())?
        {
            "__start_ktest_names" => start = Some(sym.st_value),
            "__stop_ktest_names" => stop = Some(sym.st_value),
            _ => {}
        }
    }
    let (Some(start), Some(stop)) = (start, stop) else {
        return Err(
            "no __start_ktest_names/__stop_ktest_names (a kernel from before #[ktest]?)".into(),
        );
    };
    if stop < start {
        return Err(format!(
            "__stop_ktest_names {stop:#x} below __start_ktest_names {start:#x}"
        ));
    }
    let sections = file.section_headers().ok_or("no section headers")?;
    let holder = sections
        .iter()
        .find(|s| {
            s.sh_addr <= start && stop <= s.sh_addr + s.sh_size && s.sh_type != elf::abi::SHT_NOBITS
        })
        .ok_or_else(|| format!("no section holds the test names at {start:#x}..{stop:#x}"))?;
    let from =
        usize::try_from(holder.sh_offset + (start - holder.sh_addr)).map_err(|e| e.to_string())?;
    let to = from + usize::try_from(stop - start).map_err(|e| e.to_string())?;
    let text = bytes
        .get(from..to)
        .ok_or("the test names lie past the end of the file")?;
    let text = std::str::from_utf8(text).map_err(|e| format!("test names: {e}"))?;
    let mut tests = Vec::new();
    for line in text.lines() {
        let mut w = line.split(' ');
        let name = w
            .next()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("test names: empty line in {text:?}"))?;
        let slow = match w.next() {
            None => false,
            Some("slow") => true,
            Some(other) => return Err(format!("test names: `{line}`: unknown mark `{other}`")),
        };
        tests.push(KTest {
            name: name.to_owned(),
            slow,
        });
    }
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tests)
}

/// The listing `kx test --list` prints: one name a line, slow ones marked.
#[must_use]
pub fn listing(tests: &[KTest]) -> String {
    tests
        .iter()
        .map(|t| {
            if t.slow {
                format!("{} (slow: only when named)\n", t.name)
            } else {
                format!("{}\n", t.name)
            }
        })
        .collect()
}

/// Why the kernel command line `cmdline` would be refused for selecting no test among
/// `tests`: the kernel's own check (`abi::TestSelection::unmatched`) on the selection the
/// kernel will parse from it. `Ok` when the line selects something, or is no test run, or
/// does not parse (the kernel says why then).
pub fn check(cmdline: &str, tests: &[KTest]) -> Result<(), String> {
    let Ok(config) = abi::cmdline::parse(cmdline, false) else {
        return Ok(());
    };
    let abi::Action::Test(sel) = config.action else {
        return Ok(());
    };
    match sel.unmatched(tests.iter().map(|t| (t.name.as_str(), t.slow))) {
        Some(entry) => Err(entry.to_string()),
        None => Ok(()),
    }
}

/// The tests the kernel command line `cmdline` asks for by name, as the kernel parses it
/// (`a,b` is two names): each must report. A `PREFIX*` is not a test (its members are in the
/// kernel's plan line), and `test=all` or no `test=` names none.
#[must_use]
pub fn named(cmdline: &str) -> Vec<String> {
    let Ok(config) = abi::cmdline::parse(cmdline, false) else {
        return Vec::new();
    };
    let abi::Action::Test(sel) = config.action else {
        return Vec::new();
    };
    sel.patterns()
        .filter_map(|p| match p {
            abi::TestPattern::Name(n) => Some(n.to_owned()),
            abi::TestPattern::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, slow: bool) -> KTest {
        KTest {
            name: name.into(),
            slow,
        }
    }

    #[test]
    fn the_names_that_must_report_are_the_kernels_names() {
        let n = |line: &str| named(line);
        assert_eq!(n("run=test test=heap,smp_*,paging"), ["heap", "paging"]);
        assert_eq!(n("run=test test=all"), Vec::<String>::new());
        assert_eq!(n("run=test"), Vec::<String>::new());
        assert_eq!(
            n("run=test test=mm_a,all"),
            ["mm_a", "all"],
            "`all` in a list"
        );
        assert_eq!(n("run=summary"), Vec::<String>::new());
    }

    #[test]
    fn the_list_marks_slow_tests_and_the_check_is_the_kernels() {
        let tests = [t("mm_a", false), t("mm_b", false), t("vm_soak_long", true)];
        assert_eq!(
            listing(&tests),
            "mm_a\nmm_b\nvm_soak_long (slow: only when named)\n"
        );
        assert_eq!(check("run=test test=mm_*,vm_soak_long", &tests), Ok(()));
        assert_eq!(check("run=test test=all", &tests), Ok(()));
        assert_eq!(check("run=test", &tests), Ok(()));
        assert_eq!(check("run=summary", &tests), Ok(()), "not a test run");
        assert_eq!(
            check("run=test test=mm_a,mm_c", &tests),
            Err("no test named `mm_c`".into())
        );
        assert_eq!(
            check("run=test test=vm_*", &tests),
            Err("no test (slow ones aside) starts with `vm_`".into()),
            "slow tests need their name"
        );
        assert_eq!(
            check("run=test test=mm_a,all", &tests),
            Err("no test named `all`".into()),
            "`all` inside a list is a name, as the kernel reads it"
        );
    }

    #[test]
    fn an_elf_without_registrations_is_an_error_not_an_empty_list() {
        assert!(parse(b"not an elf").is_err());
    }
}
