//! The Linux reference of the host-thread run: Linux's own page-fault path, measured beside
//! ours as the variant `linux` of `seed001-faultfree` (config `anon`) and `seed003-pft`
//! (config `anon`), at the same thread counts, on the same pinned cores, interleaved with
//! the other variants in every round.
//!
//! Each instance (one per CPU count) starts a worker process ([`worker`]: will-it-scale
//! `page_fault1` for seed001, mmtests `pft` for seed003) with one pinned thread per core,
//! inside a fresh cgroup v2 memcg when the host allows it ([`cgroup`]), and says in a note
//! which. A batch of the engine's CPU `i` asks worker thread `i` to fault pages until the
//! run's deadline and waits for its answer; the engine's thread for that CPU sleeps in the
//! meantime on the same core, so the measured time is the worker's, give or take a pipe
//! round trip (tens of microseconds per run). Counters: the worker threads' minor faults
//! (`getrusage`) and, inside a memcg, its `memory.stat` `pgfault`; the invariant after every
//! run is that the threads took at least one minor fault per page they counted.
//!
//! These faults are real traps into Linux, while host-mode faults of ours are function
//! calls: the comparison that means something is the kernel on real hardware (the USB
//! stick) against this reference on the same machine.

pub mod cgroup;
pub mod protocol;
pub mod worker;

use bench::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use protocol::{Batch, Reply};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use worker::Kind;

/// The variant name of the reference.
pub const VARIANT: &str = "linux";
/// MiB per thread: page_fault1's region, pft's slice.
pub const MIB_PER_THREAD: usize = 16;

/// The Linux reference for one scenario.
pub struct LinuxRef {
    scenario: &'static str,
    kind: Kind,
    exe: PathBuf,
    cores: Vec<usize>,
}

impl LinuxRef {
    /// seed001's reference (page_fault1), run by worker processes of `exe` on `cores`
    /// (engine CPU `i` on `cores[i]`).
    #[must_use]
    pub fn seed001(exe: PathBuf, cores: Vec<usize>) -> Self {
        LinuxRef {
            scenario: "seed001-faultfree",
            kind: Kind::PageFault1,
            exe,
            cores,
        }
    }

    /// seed003's reference (pft).
    #[must_use]
    pub fn seed003(exe: PathBuf, cores: Vec<usize>) -> Self {
        LinuxRef {
            scenario: "seed003-pft",
            kind: Kind::Pft,
            exe,
            cores,
        }
    }
}

impl BenchScenario for LinuxRef {
    fn name(&self) -> &'static str {
        self.scenario
    }

    fn variants(&self) -> Vec<&'static str> {
        vec![VARIANT]
    }

    fn supports(&self, config: &str) -> bool {
        config == "anon"
    }

    fn floor_relative(&self) -> bool {
        false
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        let cores = self.cores.get(..setup.cpus as usize).ok_or_else(|| {
            ScenarioError::new(format!("{} CPUs, {} cores", setup.cpus, self.cores.len()))
        })?;
        LinuxInstance::start(self, cores.to_vec()).map(|i| Box::new(i) as Box<dyn Instance>)
    }
}

/// Per worker thread: its pending answer.
struct Slot {
    reply: Mutex<Option<Result<(u64, u64), String>>>,
    ready: Condvar,
}

struct Shared {
    slots: Vec<Slot>,
    /// Set when the worker's stdout ended (it exited).
    gone: Mutex<Option<String>>,
}

impl Shared {
    fn put(&self, index: usize, r: Result<(u64, u64), String>) {
        if let Some(s) = self.slots.get(index) {
            *s.reply.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            s.ready.notify_all();
        }
    }
}

/// One worker process and its cgroup.
struct LinuxInstance {
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    shared: Arc<Shared>,
    reader: Option<std::thread::JoinHandle<()>>,
    stderr: Arc<Mutex<String>>,
    cgroup: Option<cgroup::Cgroup>,
    /// Whether the worker is inside `cgroup`.
    joined: bool,
    note: String,
    minflt: AtomicU64,
    ops: AtomicU64,
}

impl LinuxInstance {
    fn start(r: &LinuxRef, cores: Vec<usize>) -> Result<LinuxInstance, ScenarioError> {
        let (cg, why_not) = match cgroup::prepare() {
            Ok(cg) => (Some(cg), None),
            Err(why) => (None, Some(why)),
        };
        let args = worker::Args {
            kind: r.kind,
            cores: cores.clone(),
            mib: MIB_PER_THREAD,
            cgroup: cg.as_ref().map(|c| c.path().display().to_string()),
        };
        let mut child = Command::new(&r.exe)
            .arg(worker::COMMAND)
            .args(args.to_words())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                ScenarioError::new(format!("cannot start the worker {}: {e}", r.exe.display()))
            })?;
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(mut e) = child.stderr.take() {
            let sink = stderr.clone();
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = e.read_to_string(&mut text);
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_str(&text);
            });
        }
        let mut first = String::new();
        let ready = stdout
            .read_line(&mut first)
            .ok()
            .and_then(|_| Reply::parse(&first));
        let (joined, note) = match ready {
            Some(Reply::Ready(Ok(_))) => (
                true,
                format!(
                    "Linux's own fault path ({}, {MIB_PER_THREAD} MiB per thread, \
                     MADV_NOHUGEPAGE) in a fresh cgroup v2 memcg of its own under {} (one per \
                     CPU count, removed after it; no memory.max)",
                    r.kind.name(),
                    cgroup::ROOT,
                ),
            ),
            Some(Reply::Ready(Err(joined_not))) => (
                false,
                format!(
                    "Linux's own fault path ({}, {MIB_PER_THREAD} MiB per thread, \
                     MADV_NOHUGEPAGE) WITHOUT a memcg of its own: {}",
                    r.kind.name(),
                    why_not.unwrap_or(joined_not)
                ),
            ),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(std::time::Duration::from_millis(20));
                let err = stderr.lock().unwrap_or_else(|p| p.into_inner()).clone();
                return Err(ScenarioError::new(format!(
                    "the worker did not start (`{}`): {}",
                    first.trim(),
                    err.trim()
                )));
            }
        };
        let shared = Arc::new(Shared {
            slots: cores
                .iter()
                .map(|_| Slot {
                    reply: Mutex::new(None),
                    ready: Condvar::new(),
                })
                .collect(),
            gone: Mutex::new(None),
        });
        let reader = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                for line in stdout.lines() {
                    let Ok(line) = line else { break };
                    match Reply::parse(&line) {
                        Some(Reply::Done { index, ops, minflt }) => {
                            shared.put(index, Ok((ops, minflt)))
                        }
                        Some(Reply::Error { index, what }) => shared.put(index, Err(what)),
                        _ => {}
                    }
                }
                *shared.gone.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some("the worker process exited".into());
                for i in 0..shared.slots.len() {
                    shared.put(i, Err("the worker process exited".into()));
                }
            })
        };
        Ok(LinuxInstance {
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            shared,
            reader: Some(reader),
            stderr,
            cgroup: cg,
            joined,
            note,
            minflt: AtomicU64::new(0),
            ops: AtomicU64::new(0),
        })
    }

    fn stderr_tail(&self) -> String {
        let e = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        e.lines().last().unwrap_or("").to_owned()
    }
}

impl Instance for LinuxInstance {
    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let index = ctx.index as usize;
        let slot = self
            .shared
            .slots
            .get(index)
            .ok_or_else(|| ScenarioError::new(format!("no worker thread {index}")))?;
        *slot.reply.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Some(gone) = self
            .shared
            .gone
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Err(ScenarioError::new(format!(
                "{gone}: {}",
                self.stderr_tail()
            )));
        }
        let b = Batch {
            index,
            max_ops: ctx.max_ops,
            deadline_ns: ctx.deadline_ns,
        };
        {
            let mut stdin = self.stdin.lock().unwrap_or_else(|p| p.into_inner());
            let sent = stdin
                .as_mut()
                .map(|s| writeln!(s, "{}", b.line()).and_then(|()| s.flush()));
            if !matches!(sent, Some(Ok(()))) {
                return Err(ScenarioError::new("cannot write to the worker"));
            }
        }
        let mut reply = slot.reply.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match reply.take() {
                Some(Ok((ops, minflt))) => {
                    self.ops.fetch_add(ops, Ordering::Relaxed);
                    self.minflt.fetch_add(minflt, Ordering::Relaxed);
                    return Ok(ops);
                }
                Some(Err(what)) => {
                    return Err(ScenarioError::new(format!("worker thread {index}: {what}")));
                }
                None => reply = slot.ready.wait(reply).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let mut c = vec![(
            "linux_minor_faults".into(),
            self.minflt.load(Ordering::Relaxed) as i64,
        )];
        if let Some(pgfault) = self
            .cgroup
            .as_ref()
            .filter(|_| self.joined)
            .and_then(|g| g.pgfault())
        {
            c.push(("memcg_pgfault".into(), pgfault as i64));
        }
        c
    }

    fn check(&self) -> Result<(), String> {
        let (ops, minflt) = (
            self.ops.load(Ordering::Relaxed),
            self.minflt.load(Ordering::Relaxed),
        );
        if minflt < ops {
            return Err(format!(
                "the worker counted {ops} pages but its threads took {minflt} minor faults"
            ));
        }
        Ok(())
    }

    fn note(&self) -> Option<String> {
        Some(self.note.clone())
    }

    fn teardown(mut self: Box<Self>) -> Result<(), ScenarioError> {
        self.stop();
        match self.cgroup.take().map(cgroup::Cgroup::remove) {
            Some(Err(e)) => Err(ScenarioError::new(format!("cannot remove the memcg: {e}"))),
            _ => Ok(()),
        }
    }
}

impl LinuxInstance {
    /// Ends the worker: closes its input (it finishes and exits), waits, joins the reader.
    fn stop(&mut self) {
        self.stdin.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if std::time::Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        drop(child);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

impl Drop for LinuxInstance {
    fn drop(&mut self) {
        self.stop();
    }
}
