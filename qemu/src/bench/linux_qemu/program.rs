//! The reference's `/init` (`init.c`, compiled into kx as text) built with the host's C
//! compiler as a static executable (`cc -static -O2 -pthread`: glibc's `libc.a`), kept in
//! `<kx cache>/linux/kx-linux-init-<hash of the source>` so that it is built once per
//! version of the source, and the initramfs around it.

use super::cpio::{self, Entry};
use crate::process::{Termination, run_with_timeout};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The program's source.
pub const SOURCE: &str = include_str!("init.c");
/// The longest the compiler may take.
const CC_TIMEOUT: Duration = Duration::from_secs(120);

/// The program, built into `dir` unless it is there already.
pub fn build(dir: &Path) -> Result<PathBuf, String> {
    let name = format!(
        "kx-linux-init-{:016x}",
        crate::hash::fnv1a(SOURCE.as_bytes())
    );
    let exe = dir.join(&name);
    if exe.is_file() {
        return Ok(exe);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let src = dir.join(format!("{name}.c"));
    let tmp = dir.join(format!("{name}.tmp{}", std::process::id()));
    std::fs::write(&src, SOURCE).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let cc = boot::tool::find_on_path("cc").ok_or("no C compiler (`cc`) on PATH")?;
    let args: Vec<std::ffi::OsString> = vec![
        "-static".into(),
        "-O2".into(),
        "-pthread".into(),
        "-o".into(),
        tmp.clone().into(),
        src.clone().into(),
    ];
    let f = run_with_timeout(&cc, &args, CC_TIMEOUT, false)
        .map_err(|e| format!("cannot run {}: {e}", cc.display()))?;
    match f.termination {
        Termination::Exited(s) if s.success() => {}
        _ => {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!(
                "`cc -static -O2 -pthread {}` failed (is glibc's static libc.a installed? \
                 Debian: libc6-dev): {}",
                src.display(),
                String::from_utf8_lossy(&f.stderr).trim()
            ));
        }
    }
    std::fs::rename(&tmp, &exe).map_err(|e| format!("cannot rename {}: {e}", tmp.display()))?;
    Ok(exe)
}

/// How the program's cycle maps its pages: the reference's configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mapping {
    /// `MAP_PRIVATE | MAP_ANONYMOUS`: anonymous faults (`do_anonymous_page`), config `anon`.
    #[default]
    Private,
    /// `MAP_SHARED | MAP_ANONYMOUS`: a shmem object per cycle, whose pages fault through
    /// `shmem_fault` into its page cache and are truncated when the munmap drops its last
    /// mapping, config `shmem` (seed001's `shmem` config faults a shmem object's pages and
    /// truncates it).
    Shared,
}

impl Mapping {
    /// The reference rows' config: `anon` or `shmem`.
    #[must_use]
    pub const fn config(self) -> &'static str {
        match self {
            Mapping::Private => "anon",
            Mapping::Shared => "shmem",
        }
    }

    /// Its word in `/kx.conf` and the `ready` line: `private` or `shared`.
    #[must_use]
    pub const fn word(self) -> &'static str {
        match self {
            Mapping::Private => "private",
            Mapping::Shared => "shared",
        }
    }

    /// The mapping whose [`Mapping::word`] is `w`.
    #[must_use]
    pub fn from_word(w: &str) -> Option<Mapping> {
        [Mapping::Private, Mapping::Shared]
            .into_iter()
            .find(|m| m.word() == w)
    }
}

/// What `/init` runs: `/kx.conf`'s one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conf {
    /// CPU counts, increasing.
    pub cpus: Vec<u32>,
    /// Measured rounds at each.
    pub rounds: u32,
    /// Warm-up rounds before them.
    pub warmup: u32,
    /// Length of a run, ns.
    pub seconds_ns: u64,
    /// Pages per mmap/touch/munmap cycle.
    pub pages: u64,
    /// Physical address of the coherence plugin's mark page, which the program maps
    /// through `/dev/mem` and marks its runs and windows in (`None`: no marks, `mark=0x0`).
    pub mark: Option<u64>,
    /// How each cycle maps its pages.
    pub mapping: Mapping,
}

impl Conf {
    /// The line `init.c` reads.
    #[must_use]
    pub fn line(&self) -> String {
        let cpus: Vec<String> = self.cpus.iter().map(ToString::to_string).collect();
        format!(
            "cpus={} rounds={} warmup={} seconds_ns={} pages={} mark={:#x} map={}\n",
            cpus.join(","),
            self.rounds,
            self.warmup,
            self.seconds_ns,
            self.pages,
            self.mark.unwrap_or(0),
            self.mapping.word()
        )
    }
}

/// The initramfs: `/init` (the program), `/kx.conf`, `/dev/console` (the kernel opens it
/// as init's stdin/stdout/stderr), `/dev/mem` (for the mark page), empty `/proc` and `/sys`.
#[must_use]
pub fn initramfs(program: Vec<u8>, conf: &Conf) -> Vec<u8> {
    cpio::write(&[
        Entry::dir("dev", 0o755),
        Entry::char_dev("dev/console", 0o600, 5, 1),
        Entry::char_dev("dev/mem", 0o600, 1, 1),
        Entry::dir("proc", 0o555),
        Entry::dir("sys", 0o555),
        Entry::file("init", 0o755, program),
        Entry::file("kx.conf", 0o644, conf.line().into_bytes()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_initramfs_holds_init_and_its_conf() {
        let conf = Conf {
            cpus: vec![1, 2],
            rounds: 5,
            warmup: 1,
            seconds_ns: 500_000_000,
            pages: 512,
            mark: Some(0x600_0000),
            mapping: Mapping::Private,
        };
        let bytes = initramfs(b"\x7fELF".to_vec(), &conf);
        let entries = cpio::parse(&bytes).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "dev",
                "dev/console",
                "dev/mem",
                "proc",
                "sys",
                "init",
                "kx.conf"
            ]
        );
        assert_eq!(entries[1].kind, cpio::Kind::CharDev(5, 1));
        assert_eq!(entries[2].kind, cpio::Kind::CharDev(1, 1));
        assert_eq!(
            entries[6].kind,
            cpio::Kind::File(
                b"cpus=1,2 rounds=5 warmup=1 seconds_ns=500000000 pages=512 mark=0x6000000 \
                  map=private\n"
                    .to_vec()
            )
        );
        assert_eq!(entries[5].perm, 0o755);
        let none = Conf {
            mark: None,
            mapping: Mapping::Shared,
            ..conf
        };
        assert!(
            none.line().ends_with(" mark=0x0 map=shared\n"),
            "{}",
            none.line()
        );
        for m in [Mapping::Private, Mapping::Shared] {
            assert_eq!(Mapping::from_word(m.word()), Some(m));
        }
        assert_eq!(Mapping::from_word("anon"), None);
    }

    #[test]
    fn the_program_marks_at_the_plugins_offsets() {
        // init.c cannot include the abi crate: its defines must be abi's offsets.
        for (name, offset) in [
            ("MARK_RUN_BEGIN", abi::coherence::RUN_BEGIN),
            ("MARK_WINDOW_BEGIN", abi::coherence::WINDOW_BEGIN),
            ("MARK_WINDOW_END", abi::coherence::WINDOW_END),
            ("MARK_RUN_END", abi::coherence::RUN_END),
        ] {
            let define = format!("#define {name} {offset:#05x}\n");
            assert!(SOURCE.contains(&define), "init.c lacks `{}`", define.trim());
            assert!(
                SOURCE.contains(&format!("mark({name});")),
                "init.c never stores {name}"
            );
        }
    }
}
