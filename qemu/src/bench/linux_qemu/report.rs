//! What the Linux reference's `/init` says on the console (`KXLINUX ...` lines, and the
//! counted boot's `KXSYM` symbol lines, see `init.c`), read back, checked and turned into
//! `run` records.
//!
//! The check that makes a run a result: every thread took one minor fault per page it
//! touched, give or take [`FAULT_SLACK`] faults of the program itself (its stack, the vDSO
//! data page): fewer faults than pages means pages came without a fault (a huge page, a
//! pre-faulted mapping), more means something else faulted; either way the rate would not
//! be that of 4 KiB faults (anonymous, or shmem's with `--linux-shmem`), and the run is an
//! error, not a result.

use super::program::Mapping;
use bench::Run;
use bench::record::CpuShare;

/// Prefix of the program's lines.
pub const PREFIX: &str = "KXLINUX ";
/// Prefix of the counted boot's symbol lines (a `/proc/kallsyms` line each).
pub const SYMBOL_PREFIX: &str = "KXSYM ";
/// Faults a thread may take beyond one per page in a run (its own stack and the vDSO).
pub const FAULT_SLACK: u64 = 32;

/// One thread's figures over a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thread {
    /// The CPU it was pinned to.
    pub cpu: u32,
    /// Pages touched (one mmap/touch/munmap cycle counts its pages).
    pub ops: u64,
    /// Its own time, ns.
    pub ns: u64,
    /// Its minor faults over the loop (`getrusage(RUSAGE_THREAD)` delta).
    pub minflt: u64,
}

/// One run: a CPU count, a round (0: warm-up) and its threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunLine {
    /// Threads (one per CPU).
    pub cpus: u32,
    /// Round, from 1; 0 for a warm-up.
    pub round: u32,
    /// From the common start to the last thread's end, ns.
    pub ns: u64,
    /// The machine's `pgfault` (/proc/vmstat) over the run.
    pub pgfault: u64,
    /// Per thread.
    pub threads: Vec<Thread>,
}

/// One line of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// Set up: CPUs online, whether it runs in a memcg of its own, the kernel release.
    Ready {
        /// CPUs online.
        online: u32,
        /// Inside the cgroup v2 memcg `kx`.
        memcg: bool,
        /// How its cycles map their pages.
        mapping: Mapping,
        /// `uname -r`.
        release: String,
    },
    /// A run's figures.
    Run(RunLine),
    /// Every run done.
    End,
    /// The program failed (it then exits with its failure code).
    Error(String),
}

fn key<'a>(word: Option<&'a str>, name: &str) -> Result<&'a str, String> {
    word.and_then(|w| w.strip_prefix(name)?.strip_prefix('='))
        .ok_or_else(|| format!("expected `{name}=`"))
}

fn num<T: std::str::FromStr>(word: Option<&str>, name: &str) -> Result<T, String> {
    let v = key(word, name)?;
    v.parse()
        .map_err(|_| format!("`{name}={v}` is not a number"))
}

fn thread(word: &str) -> Result<Thread, String> {
    let bad = || format!("`{word}` is not t=CPU:OPS:NS:MINFLT");
    let v = word.strip_prefix("t=").ok_or_else(bad)?;
    let f: Vec<u64> = v
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    match f[..] {
        [cpu, ops, ns, minflt] => Ok(Thread {
            cpu: u32::try_from(cpu).map_err(|_| bad())?,
            ops,
            ns,
            minflt,
        }),
        _ => Err(bad()),
    }
}

/// Reads one console line: `None` if it is not the program's, else the line or why it
/// does not parse.
#[must_use]
pub fn parse_line(line: &str) -> Option<Result<Line, String>> {
    let rest = line.trim_end_matches(['\r', '\n']).strip_prefix(PREFIX)?;
    let (word, args) = rest.split_once(' ').unwrap_or((rest, ""));
    let mut w = args.split_ascii_whitespace();
    let parsed = match word {
        "ready" => (|| {
            let online = num(w.next(), "online")?;
            let memcg = num::<u8>(w.next(), "memcg")? == 1;
            key(w.next(), "thp")
                .ok()
                .filter(|v| *v == "never")
                .ok_or("transparent huge pages are not off")?;
            let map = key(w.next(), "map")?;
            let mapping = Mapping::from_word(map)
                .ok_or_else(|| format!("`map={map}` is neither private nor shared"))?;
            let release = key(w.next(), "release")?.to_owned();
            Ok(Line::Ready {
                online,
                memcg,
                mapping,
                release,
            })
        })(),
        "run" => (|| {
            let cpus = num(w.next(), "cpus")?;
            let round = num(w.next(), "round")?;
            let ns = num(w.next(), "ns")?;
            let pgfault = num(w.next(), "pgfault")?;
            let threads = w.map(thread).collect::<Result<Vec<_>, _>>()?;
            Ok(Line::Run(RunLine {
                cpus,
                round,
                ns,
                pgfault,
                threads,
            }))
        })(),
        "end" if args.is_empty() => Ok(Line::End),
        "error" => Ok(Line::Error(args.to_owned())),
        _ => Err(format!("unknown line `{rest}`")),
    };
    Some(parsed)
}

impl RunLine {
    /// Whether this run is a result: one thread per CPU, each pinned to its own CPU, each
    /// with one minor fault per page touched (up to [`FAULT_SLACK`] more).
    pub fn check(&self) -> Result<(), String> {
        let at = format!("cpus={} round={}", self.cpus, self.round);
        if self.threads.len() != self.cpus as usize {
            return Err(format!(
                "{at}: {} thread figures for {} CPUs",
                self.threads.len(),
                self.cpus
            ));
        }
        for (i, t) in self.threads.iter().enumerate() {
            if t.cpu as usize != i {
                return Err(format!("{at}: thread {i} ran on CPU {}", t.cpu));
            }
            if t.ops == 0 || t.ns == 0 {
                return Err(format!("{at}: thread {i} touched no page"));
            }
            if t.minflt < t.ops || t.minflt > t.ops + FAULT_SLACK {
                return Err(format!(
                    "{at}: the thread on CPU {} touched {} pages and took {} minor faults \
                     (expected one per page, at most {FAULT_SLACK} more)",
                    t.cpu, t.ops, t.minflt
                ));
            }
        }
        Ok(())
    }

    /// The `run` record (scenario `linux`, config `mapping`'s, variant [`super::VARIANT`]),
    /// with the threads as per-CPU shares and the fault counts as counters.
    pub fn to_run(&self, mapping: Mapping) -> Result<Run, String> {
        let ops = self.threads.iter().map(|t| t.ops).sum();
        let mut r = Run::new(
            super::SCENARIO,
            mapping.config(),
            super::VARIANT,
            self.cpus,
            self.round,
            self.round == 0,
            ops,
            self.ns,
        )
        .map_err(|e| format!("cpus={} round={}: {e}", self.cpus, self.round))?;
        r.per_cpu = self
            .threads
            .iter()
            .map(|t| CpuShare {
                cpu: t.cpu,
                ops: t.ops,
                ns: t.ns,
            })
            .collect();
        let minflt: u64 = self.threads.iter().map(|t| t.minflt).sum();
        r.counters
            .insert("linux_minor_faults".into(), minflt as i64);
        r.counters
            .insert("vmstat_pgfault".into(), self.pgfault as i64);
        Ok(r)
    }
}

/// Everything the program said in one boot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Its `ready` line: (online CPUs, in a memcg, release).
    pub ready: Option<(u32, bool, String)>,
    /// How its cycles mapped their pages (the `ready` line's `map=`).
    pub mapping: Option<Mapping>,
    /// Its runs, in order.
    pub runs: Vec<RunLine>,
    /// Whether it said `end`.
    pub end: bool,
    /// Its own error, or the first line that does not parse.
    pub error: Option<String>,
    /// Its `KXSYM` lines without the prefix, one per line (the counted boot's kernel text
    /// symbols; empty in the timed boots).
    pub kallsyms: String,
}

impl Report {
    /// Reads the console output `serial`.
    #[must_use]
    pub fn read(serial: &str) -> Report {
        let mut r = Report::default();
        for line in serial.lines() {
            if let Some(sym) = line.strip_prefix(SYMBOL_PREFIX) {
                r.kallsyms.push_str(sym.trim_end_matches('\r'));
                r.kallsyms.push('\n');
                continue;
            }
            match parse_line(line) {
                None => {}
                Some(Ok(Line::Ready {
                    online,
                    memcg,
                    mapping,
                    release,
                })) => {
                    r.ready = Some((online, memcg, release));
                    r.mapping = Some(mapping);
                }
                Some(Ok(Line::Run(run))) => r.runs.push(run),
                Some(Ok(Line::End)) => r.end = true,
                Some(Ok(Line::Error(e))) => {
                    r.error.get_or_insert(format!("the program failed: {e}"));
                }
                Some(Err(e)) => {
                    r.error.get_or_insert(format!("a line does not parse: {e}"));
                }
            }
        }
        r
    }

    /// The kernel's text symbols its `KXSYM` lines gave, or why there are none.
    pub fn symbols(&self) -> Result<crate::coherence::symbols::Symbols, String> {
        if self.kallsyms.is_empty() {
            return Err("the program printed no KXSYM lines".into());
        }
        crate::coherence::symbols::Symbols::parse_nm(&self.kallsyms)
            .map_err(|why| format!("its KXSYM lines: {why}"))
    }

    /// The `run` records of a program that was asked to map its pages by `asked`, every
    /// run checked; the first problem is an error. Their config is the mapping the `ready`
    /// line says the program used: runs without one, or with another than `asked`, are an
    /// error.
    pub fn runs(&self, asked: Mapping) -> Result<Vec<Run>, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.runs.is_empty() {
            return Ok(Vec::new());
        }
        let mapping = self
            .mapping
            .ok_or("runs without a ready line to say how they mapped their pages")?;
        if mapping != asked {
            return Err(format!(
                "asked to map its pages {} and said it mapped them {}",
                asked.word(),
                mapping.word()
            ));
        }
        self.runs
            .iter()
            .map(|l| l.check().and_then(|()| l.to_run(mapping)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "[    0.000000] Linux version 6.1.0\r\n\
        KXLINUX ready online=2 memcg=1 thp=never map=private release=6.1.0-48-cloud-amd64\r\n\
        KXLINUX run cpus=1 round=0 ns=100000000 pgfault=4100 t=0:4096:99000000:4098\r\n\
        KXLINUX run cpus=2 round=1 ns=100500000 pgfault=8300 \
        t=0:4096:100000000:4096 t=1:4608:100400000:4611\r\n\
        KXLINUX end\r\n";

    #[test]
    fn the_counted_boots_symbol_lines_name_the_kernels_text() {
        let serial = "KXLINUX ready online=1 memcg=1 thp=never map=private release=6.1\r\n\
                      KXSYM ffffffff81000000 T _stext\r\n\
                      KXSYM ffffffff81000100 t _raw_spin_lock\r\n\
                      KXSYM ffffffff81000140 T _etext\r\n\
                      KXLINUX end\r\n";
        let r = Report::read(serial);
        assert!(r.end && r.error.is_none(), "{r:?}");
        let s = r.symbols().unwrap();
        assert_eq!(
            s.function_at(0xffff_ffff_8100_0104),
            Some(("_raw_spin_lock", 4))
        );
        // The timed boots print none; a damaged line is said.
        let e = Report::read("KXLINUX end\n").symbols().unwrap_err();
        assert!(e.contains("no KXSYM lines"), "{e}");
        let e = Report::read("KXSYM ffffffff81000000\n")
            .symbols()
            .unwrap_err();
        assert!(e.contains("KXSYM lines: line 1"), "{e}");
    }

    #[test]
    fn lines_parse() {
        let r = Report::read(LOG);
        assert_eq!(r.ready, Some((2, true, "6.1.0-48-cloud-amd64".into())));
        assert!(r.end && r.error.is_none());
        assert_eq!(r.runs.len(), 2);
        assert_eq!(
            r.runs[1].threads[1],
            Thread {
                cpu: 1,
                ops: 4608,
                ns: 100_400_000,
                minflt: 4611
            }
        );
        let runs = r.runs(Mapping::Private).unwrap();
        assert!(runs[0].warmup && !runs[1].warmup);
        assert_eq!(runs[1].ops, 4096 + 4608);
        assert_eq!(runs[1].ns, 100_500_000);
        assert_eq!(runs[1].counters["linux_minor_faults"], 4096 + 4611);
        assert_eq!(runs[1].counters["vmstat_pgfault"], 8300);
        assert_eq!(runs[1].per_cpu.len(), 2);
        assert_eq!(
            (
                runs[1].scenario.as_str(),
                runs[1].config.as_str(),
                runs[1].variant.as_str()
            ),
            ("linux", "anon", "mmap-touch-munmap")
        );
        // A shared mapping's runs are the `shmem` config; runs of another mapping than
        // the one asked for, or with no ready line before them to say theirs, are refused.
        let shared = LOG.replace("map=private", "map=shared");
        let r = Report::read(&shared);
        assert_eq!(r.mapping, Some(Mapping::Shared));
        assert_eq!(r.runs(Mapping::Shared).unwrap()[1].config, "shmem");
        let e = r.runs(Mapping::Private).unwrap_err();
        assert!(e.contains("asked to map its pages private and said it mapped them shared"));
        let without: String = LOG
            .lines()
            .filter(|l| !l.contains("ready"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            Report::read(&without)
                .runs(Mapping::Private)
                .unwrap_err()
                .contains("without a ready line")
        );
    }

    #[test]
    fn bad_lines_are_errors() {
        for bad in [
            "KXLINUX run cpus=1 round=0 ns=x pgfault=1 t=0:1:1:1",
            "KXLINUX run cpus=1 round=0 ns=1 pgfault=1 t=0:1:1",
            "KXLINUX ready online=2 memcg=1 thp=always map=private release=6.1",
            "KXLINUX ready online=2 memcg=1 thp=never map=hugetlb release=6.1",
            "KXLINUX ready online=2 memcg=1 thp=never release=6.1",
            "KXLINUX hello",
        ] {
            assert!(parse_line(bad).unwrap().is_err(), "{bad}");
        }
        assert_eq!(parse_line("[ 1.0] KXLINUX run"), None);
        let r = Report::read("KXLINUX error mmap failed on CPU 1\n");
        assert_eq!(
            r.runs(Mapping::Private).unwrap_err(),
            "the program failed: mmap failed on CPU 1"
        );
    }

    fn one(ops: u64, minflt: u64) -> RunLine {
        RunLine {
            cpus: 1,
            round: 1,
            ns: 1_000_000,
            pgfault: minflt,
            threads: vec![Thread {
                cpu: 0,
                ops,
                ns: 1_000_000,
                minflt,
            }],
        }
    }

    #[test]
    fn faults_must_match_pages() {
        assert!(one(512, 512).check().is_ok());
        assert!(one(512, 512 + FAULT_SLACK).check().is_ok());
        // A huge page: 512 pages, one fault.
        let e = one(512, 1).check().unwrap_err();
        assert!(
            e.contains("touched 512 pages and took 1 minor faults"),
            "{e}"
        );
        assert!(one(512, 512 + FAULT_SLACK + 1).check().is_err());
        let mut wrong_cpu = one(512, 512);
        wrong_cpu.threads[0].cpu = 1;
        assert!(wrong_cpu.check().is_err());
        let mut missing = one(512, 512);
        missing.cpus = 2;
        assert!(missing.check().is_err());
        let log = "KXLINUX ready online=1 memcg=1 thp=never map=private release=6.1\n\
                   KXLINUX run cpus=1 round=1 ns=1000 pgfault=1 t=0:512:1000:1\n";
        let e = Report::read(log).runs(Mapping::Private).unwrap_err();
        assert!(e.contains("took 1 minor faults"), "{e}");
    }
}
