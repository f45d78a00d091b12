//! The Linux reference's worker process (`kx __linux-ref-worker ...`): threads that fault
//! anonymous memory in with Linux's own page-fault path, one per core of the run, pinned,
//! driven batch by batch by the runner over stdin/stdout ([`super::protocol`]).
//!
//! It is a process of its own so that it can join a fresh memcg ([`super::cgroup`]) without
//! moving the runner. The two loops are the reference benchmarks' own:
//!
//! - [`Kind::PageFault1`] (seed001's reference), will-it-scale's `page_fault1`: each thread
//!   maps its own private anonymous region, writes one byte to every page (one fault each),
//!   and unmaps it, over and over. will-it-scale maps 128 MiB; here a region is 16 MiB (4096
//!   faults) so that a 0.1 s run still has several iterations.
//! - [`Kind::Pft`] (seed003's reference), mmtests' `pft`: one thread maps ONE shared region,
//!   every thread faults its own slice of it (16 MiB each) between two barriers, and the
//!   region is unmapped, over and over.
//!
//! An operation is one page faulted. Batches end at an iteration boundary at or after the
//! runner's deadline (or after `max_ops` pages), so every counted page was faulted and its
//! region unmapped inside the batch. Transparent huge pages are declined per mapping
//! (`MADV_NOHUGEPAGE`): every fault is one 4 KiB page.

use super::cgroup;
use super::protocol::{Batch, Reply};
use crate::bench::threads::sys::{self, AnonMap};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};

/// The hidden subcommand that starts a worker.
pub const COMMAND: &str = "__linux-ref-worker";

/// Which reference loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// will-it-scale page_fault1: private region per thread.
    PageFault1,
    /// mmtests pft: slices of one shared region.
    Pft,
}

impl Kind {
    /// The name on the worker's command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::PageFault1 => "page_fault1",
            Kind::Pft => "pft",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        match s {
            "page_fault1" => Some(Kind::PageFault1),
            "pft" => Some(Kind::Pft),
            _ => None,
        }
    }
}

/// The worker's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// The loop.
    pub kind: Kind,
    /// Host cores, one thread each, in index order.
    pub cores: Vec<usize>,
    /// Region (page_fault1) or slice (pft) per thread, MiB.
    pub mib: usize,
    /// The cgroup to join first.
    pub cgroup: Option<String>,
}

impl Args {
    /// As command-line words after [`COMMAND`].
    #[must_use]
    pub fn to_words(&self) -> Vec<String> {
        let cores: Vec<String> = self.cores.iter().map(ToString::to_string).collect();
        let mut w = vec![
            "--kind".into(),
            self.kind.name().into(),
            "--cores".into(),
            cores.join(","),
            "--mib".into(),
            self.mib.to_string(),
        ];
        if let Some(c) = &self.cgroup {
            w.extend(["--cgroup".into(), c.clone()]);
        }
        w
    }

    /// Reads the words after [`COMMAND`].
    pub fn parse(words: &[String]) -> Result<Args, String> {
        let (mut kind, mut cores, mut mib, mut cgroup) = (None, None, None, None);
        let mut it = words.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--kind" => kind = Some(Kind::parse(value).ok_or("bad --kind")?),
                "--cores" => {
                    let list: Result<Vec<usize>, _> = value.split(',').map(str::parse).collect();
                    cores = Some(list.map_err(|e| format!("--cores: {e}"))?);
                }
                "--mib" => mib = Some(value.parse().map_err(|e| format!("--mib: {e}"))?),
                "--cgroup" => cgroup = Some(value.clone()),
                other => return Err(format!("unknown worker option {other}")),
            }
        }
        let args = Args {
            kind: kind.ok_or("--kind missing")?,
            cores: cores.ok_or("--cores missing")?,
            mib: mib.ok_or("--mib missing")?,
            cgroup,
        };
        if args.cores.is_empty() || args.mib == 0 {
            return Err("no cores or an empty region".into());
        }
        Ok(args)
    }
}

/// What one thread of a pft run shares with the others.
pub struct PftShared {
    barrier: Barrier,
    region: Mutex<Option<Arc<AnonMap>>>,
    stop: AtomicBool,
    slice_pages: usize,
    threads: usize,
}

impl PftShared {
    /// For `threads` threads with `mib` MiB slices.
    #[must_use]
    pub fn new(threads: usize, mib: usize) -> PftShared {
        PftShared {
            barrier: Barrier::new(threads),
            region: Mutex::new(None),
            stop: AtomicBool::new(false),
            slice_pages: mib * 256,
            threads,
        }
    }
}

/// One page_fault1 batch on the calling thread: (pages faulted) or an error.
pub fn page_fault1(pages: usize, b: &Batch) -> Result<u64, String> {
    let mut done: u64 = 0;
    while done < b.max_ops {
        let m = AnonMap::new(pages).map_err(|e| format!("mmap: {e}"))?;
        let k = (pages as u64).min(b.max_ops - done) as usize;
        for p in 0..k {
            m.touch(p, 1);
        }
        drop(m);
        done += k as u64;
        if sys::monotonic_ns() >= b.deadline_ns {
            break;
        }
    }
    Ok(done)
}

/// One pft batch on thread `b.index` of `s.threads` (all of them run one at once; thread 0
/// maps and unmaps the shared region).
pub fn pft(s: &PftShared, b: &Batch) -> Result<u64, String> {
    let leader = b.index == 0;
    let mut done: u64 = 0;
    let mut error = None;
    loop {
        if leader {
            let stop = sys::monotonic_ns() >= b.deadline_ns && done > 0 || done >= b.max_ops;
            if !stop {
                match AnonMap::new(s.slice_pages * s.threads) {
                    Ok(m) => {
                        *s.region.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(m))
                    }
                    Err(e) => error = Some(format!("mmap: {e}")),
                }
            }
            s.stop.store(stop || error.is_some(), Ordering::Release);
        }
        s.barrier.wait();
        if s.stop.load(Ordering::Acquire) {
            break;
        }
        let region = s
            .region
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or("no shared region")?;
        let k = (s.slice_pages as u64).min(b.max_ops - done) as usize;
        let first = b.index * s.slice_pages;
        for p in first..first + k {
            region.touch(p, 1);
        }
        drop(region);
        done += k as u64;
        s.barrier.wait();
        if leader {
            s.region.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }
    // Every thread has left the loop; the next batch's leader re-arms `stop` before its
    // first barrier, which no thread passes before it.
    error.map_or(Ok(done), Err)
}

fn say(out: &Mutex<std::io::Stdout>, r: &Reply) {
    let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
    let _ = writeln!(o, "{}", r.line());
    let _ = o.flush();
}

/// The worker process: returns its exit status.
#[must_use]
pub fn main(words: &[String]) -> i32 {
    let args = match Args::parse(words) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("kx {COMMAND}: {e}");
            return 2;
        }
    };
    if !sys::die_with_parent() {
        return 0;
    }
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let ready = match &args.cgroup {
        None => Err("no cgroup was made for it".to_owned()),
        Some(c) => match cgroup::join(std::path::Path::new(c)) {
            Ok(()) => Ok(c.clone()),
            Err(e) => Err(format!("cannot join {c}: {e}")),
        },
    };
    say(&out, &Reply::Ready(ready));
    let shared = Arc::new(PftShared::new(args.cores.len(), args.mib));
    let mut senders = Vec::new();
    let mut threads = Vec::new();
    for (index, &core) in args.cores.iter().enumerate() {
        let (tx, rx) = mpsc::channel::<Batch>();
        senders.push(tx);
        let (out, shared, kind, pages) = (out.clone(), shared.clone(), args.kind, args.mib * 256);
        threads.push(std::thread::spawn(move || {
            let pinned = sys::pin_this_thread(core);
            for b in rx {
                let before = sys::thread_minor_faults();
                let r = match (&pinned, kind) {
                    (Err(e), _) => Err(format!("cannot pin to core {core}: {e}")),
                    (Ok(()), Kind::PageFault1) => page_fault1(pages, &b),
                    (Ok(()), Kind::Pft) => pft(&shared, &b),
                };
                let minflt = sys::thread_minor_faults() - before;
                say(
                    &out,
                    &match r {
                        Ok(ops) => Reply::Done { index, ops, minflt },
                        Err(what) => Reply::Error { index, what },
                    },
                );
            }
        }));
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match Batch::parse(&line).filter(|b| b.index < senders.len()) {
            Some(b) => {
                let _ = senders[b.index].send(b);
            }
            None => {
                eprintln!("kx {COMMAND}: bad request `{line}`");
                return 2;
            }
        }
    }
    drop(senders);
    for t in threads {
        let _ = t.join();
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip() {
        let a = Args {
            kind: Kind::Pft,
            cores: vec![0, 3],
            mib: 16,
            cgroup: Some("/sys/fs/cgroup/x".into()),
        };
        assert_eq!(Args::parse(&a.to_words()), Ok(a));
        assert!(Args::parse(&["--kind".into()]).is_err());
        assert!(Args::parse(&["--kind".into(), "nope".into()]).is_err());
    }

    #[test]
    fn page_fault1_faults_every_page_it_counts() {
        let b = Batch {
            index: 0,
            max_ops: 300,
            deadline_ns: u64::MAX,
        };
        let before = sys::thread_minor_faults();
        assert_eq!(page_fault1(128, &b), Ok(300));
        assert!(sys::thread_minor_faults() - before >= 300);
        let timed = Batch {
            max_ops: u64::MAX,
            deadline_ns: sys::monotonic_ns() + 2_000_000,
            ..b
        };
        let n = page_fault1(64, &timed).unwrap();
        assert!(n >= 64 && n.is_multiple_of(64), "{n}");
    }

    #[test]
    fn pft_threads_fault_their_slices_of_one_region_together() {
        let s = Arc::new(PftShared::new(2, 1));
        for round in 0..2 {
            let deadline = sys::monotonic_ns() + 3_000_000;
            let results: Vec<u64> = (0..2)
                .map(|index| {
                    let s = s.clone();
                    std::thread::spawn(move || {
                        pft(
                            &s,
                            &Batch {
                                index,
                                max_ops: u64::MAX,
                                deadline_ns: deadline,
                            },
                        )
                        .unwrap()
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect();
            assert_eq!(results[0], results[1], "round {round}");
            assert!(
                results[0] >= 256 && results[0].is_multiple_of(256),
                "{results:?}"
            );
            assert!(s.region.lock().unwrap().is_none(), "the region is unmapped");
        }
        let counted = Batch {
            index: 0,
            max_ops: 100,
            deadline_ns: u64::MAX,
        };
        let one = PftShared::new(1, 1);
        assert_eq!(pft(&one, &counted), Ok(100));
    }
}
