//! Starting QEMU under a timeout that kills its whole process group, capturing its output.
//!
//! QEMU starts as the leader of a new process group (so the kill reaches anything it spawns
//! and nothing of ours), with `PR_SET_PDEATHSIG = SIGKILL` (so QEMU dies with the runner, e.g.
//! when a test binary is interrupted, instead of spinning on with a hung guest). The runner
//! polls for the exit every few milliseconds and, at the deadline, sends `SIGKILL` to the
//! group *before* reaping QEMU, so the group id cannot have been reused by then. Serial
//! (QEMU's stdout) and QEMU's own messages (stderr) are read by two threads; serial can be
//! echoed to the terminal as it arrives, and [`run_streaming`] hands each complete serial
//! line (and a last unterminated one at the end) to a callback while QEMU still runs, which
//! is how `kx bench` drives its progress bar.
//!
//! Unsafe code here, and why: `pre_exec` and three libc calls (one of the runner's few
//! places with `unsafe`).
#![allow(unsafe_code)]

use crate::RunError;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// The error code [`die_with_parent`] reports when the parent is already gone (std hands
/// the parent only the code of a `pre_exec` error, so the message is added there).
const PARENT_GONE: i32 = libc::ESRCH;

/// What the child runs between fork and exec: asks for `SIGKILL` when the thread that
/// spawned it (the runner's waiting thread) dies, then checks that `parent` is still its
/// parent (if the runner died between fork and prctl, the signal will never come).
///
/// Async-signal-safe: two system calls, no allocation (the errors are bare OS codes;
/// `io::Error::other` would box its message), no lock.
///
/// # Errors
/// prctl's error, or `ESRCH` when the parent is not `parent`.
pub fn die_with_parent(parent: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number; getppid has no arguments.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            return Err(std::io::Error::from_raw_os_error(PARENT_GONE));
        }
    }
    Ok(())
}

/// How often the runner checks whether QEMU has exited.
const POLL: Duration = Duration::from_millis(5);

/// How the QEMU process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// It exited by itself with this status.
    Exited(ExitStatus),
    /// The runner killed it at the deadline.
    TimedOut,
}

/// What a finished process left behind.
#[derive(Clone, Debug)]
pub struct Finished {
    /// How it ended.
    pub termination: Termination,
    /// Everything it wrote to stdout (the serial console).
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr (QEMU's own messages).
    pub stderr: Vec<u8>,
    /// From spawn to exit (or kill).
    pub elapsed: Duration,
    /// From spawn to its first byte on stdout.
    pub first_output: Option<Duration>,
}

/// Runs `program args...`, killing its process group after `timeout`; with `echo`, stdout is
/// copied to our stdout as it arrives.
pub fn run_with_timeout(
    program: &Path,
    args: &[OsString],
    timeout: Duration,
    echo: bool,
) -> Result<Finished, RunError> {
    run_streaming(program, args, timeout, echo, &mut |_| {})
}

/// [`run_with_timeout`], calling `on_line` with every serial line (without its `\n`; a
/// `\r` before it is kept) as soon as it is complete, from the thread that reads serial.
pub fn run_streaming(
    program: &Path,
    args: &[OsString],
    timeout: Duration,
    echo: bool,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<Finished, RunError> {
    run_streaming_with(program, args, timeout, echo, &mut |_| {}, on_line)
}

/// [`run_streaming`], also calling `on_start` with the process id once it runs, on a thread
/// of its own while serial is read and the deadline watched (the runner pins QEMU's threads
/// there); the run's result waits for it to return.
pub fn run_streaming_with(
    program: &Path,
    args: &[OsString],
    timeout: Duration,
    echo: bool,
    on_start: &mut (dyn FnMut(u32) + Send),
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<Finished, RunError> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec; `die_with_parent` makes two
    // async-signal-safe system calls and allocates nothing (its errors are OS error codes,
    // which `io::Error` holds inline), so it needs no lock that another thread of the runner
    // may have held at the fork.
    unsafe {
        cmd.pre_exec(move || die_with_parent(parent));
    }
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        RunError::Spawn(if e.raw_os_error() == Some(PARENT_GONE) {
            std::io::Error::other("the runner exited before QEMU started")
        } else {
            e
        })
    })?;
    let first = OnceLock::new();
    let out_pipe = child.stdout.take().expect("stdout is piped");
    let mut err_pipe = child.stderr.take().expect("stderr is piped");
    let pid = child.id();
    let (termination, elapsed, stdout, stderr) = thread::scope(|scope| {
        let started = scope.spawn(move || on_start(pid));
        let out = scope.spawn(|| pump(out_pipe, echo, &first, start, on_line));
        let err = scope.spawn(move || {
            let mut buf = Vec::new();
            let _ = err_pipe.read_to_end(&mut buf);
            buf
        });
        let termination = wait_or_kill(&mut child, start + timeout);
        let elapsed = start.elapsed();
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let _ = started.join();
        (termination, elapsed, stdout, stderr)
    });
    Ok(Finished {
        termination: termination.map_err(RunError::Wait)?,
        stdout,
        stderr,
        elapsed,
        first_output: first.get().copied(),
    })
}

fn wait_or_kill(child: &mut Child, deadline: Instant) -> std::io::Result<Termination> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Termination::Exited(status));
        }
        if Instant::now() >= deadline {
            kill_group(child.id());
            // Reap it; the zombie kept the group id reserved until now.
            child.wait()?;
            return Ok(Termination::TimedOut);
        }
        thread::sleep(POLL);
    }
}

fn kill_group(leader: u32) {
    let Ok(pgid) = libc::pid_t::try_from(leader) else {
        return;
    };
    // SAFETY: kill(2) takes no pointers. `-pgid` names the group QEMU leads (created by
    // `process_group(0)`); QEMU is not reaped yet, so the id still belongs to that group.
    // It fails only with ESRCH (the group is gone: QEMU exited at the deadline), which needs
    // nothing more.
    let _ = unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

fn pump(
    mut pipe: impl Read,
    echo: bool,
    first: &OnceLock<Duration>,
    start: Instant,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    // Where the line not yet handed to `on_line` starts in `all`.
    let mut line_start = 0;
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let _ = first.set(start.elapsed());
                let old_len = all.len();
                all.extend_from_slice(&buf[..n]);
                if echo {
                    let mut so = std::io::stdout().lock();
                    let _ = so.write_all(&buf[..n]);
                    let _ = so.flush();
                }
                for i in old_len..all.len() {
                    if all[i] == b'\n' {
                        on_line(&String::from_utf8_lossy(&all[line_start..i]));
                        line_start = i + 1;
                    }
                }
            }
        }
    }
    if line_start < all.len() {
        on_line(&String::from_utf8_lossy(&all[line_start..]));
    }
    all
}

/// The unit tests' allocator: the system's, counting the allocations each thread makes, so
/// a test can show that code meant for between fork and exec allocates nothing.
#[cfg(test)]
mod counting_alloc {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    }

    struct Counting;

    // SAFETY: every call is forwarded to the system allocator unchanged; the count is a
    // const-initialised thread-local `Cell` (no allocation, no destructor).
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.with(|c| c.set(c.get() + 1));
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCATIONS.with(|c| c.set(c.get() + 1));
            // SAFETY: the caller's contract, passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// Allocations this thread has made so far.
    pub(super) fn allocations() -> u64 {
        ALLOCATIONS.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// What runs between fork and exec allocates nothing, also when it fails: a child forked
    /// while another thread held the allocator's lock would deadlock on it.
    #[test]
    fn the_child_setup_allocates_nothing() {
        // On a thread of its own, whose parent-death setting outlives nothing of interest.
        std::thread::spawn(|| {
            let before = counting_alloc::allocations();
            let wrong = die_with_parent(std::process::id() as libc::pid_t);
            let after = counting_alloc::allocations();
            assert_eq!(after, before, "die_with_parent allocated");
            assert_eq!(
                wrong.as_ref().map_err(std::io::Error::raw_os_error),
                Err(Some(PARENT_GONE))
            );
            // The count works: a boxed error is an allocation.
            let boxed = std::io::Error::other("x");
            assert!(counting_alloc::allocations() > after);
            drop(boxed);
        })
        .join()
        .unwrap();
    }

    fn sh(script: &str, timeout: Duration) -> Finished {
        run_with_timeout(
            Path::new("/bin/sh"),
            &["-c".into(), script.into()],
            timeout,
            false,
        )
        .unwrap()
    }

    #[test]
    fn exit_status_and_output_are_captured() {
        let f = sh(
            "echo serial; echo qemu-msg >&2; exit 33",
            Duration::from_secs(30),
        );
        match f.termination {
            Termination::Exited(s) => assert_eq!(s.code(), Some(33)),
            t => panic!("{t:?}"),
        }
        assert_eq!(f.stdout, b"serial\n");
        assert_eq!(f.stderr, b"qemu-msg\n");
        assert!(f.first_output.is_some());
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        // The shell starts a grandchild that holds stdout open; killing only the shell would
        // leave the reader waiting for the grandchild.
        let f = sh(
            "echo started; sleep 1000 & sleep 1000; echo never",
            Duration::from_millis(300),
        );
        assert_eq!(f.termination, Termination::TimedOut);
        assert_eq!(f.stdout, b"started\n");
    }

    #[test]
    fn signal_death_is_not_a_timeout() {
        let f = sh("kill -9 $$", Duration::from_secs(30));
        match f.termination {
            Termination::Exited(s) => assert_eq!(s.signal(), Some(9)),
            t => panic!("{t:?}"),
        }
    }

    #[test]
    fn lines_are_streamed_while_the_process_runs() {
        // The script waits for the runner to have seen its first line (the callback creates
        // the marker file) before printing the rest: only a streaming reader gets there.
        let dir = std::env::temp_dir().join(format!("kx-stream-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let marker = dir.to_string_lossy().into_owned();
        let script = format!(
            "echo one; i=0; while [ ! -e {marker} ] && [ $i -lt 500 ]; do sleep 0.01; \
             i=$((i+1)); done; [ -e {marker} ] && printf 'two\\r\\nthree'"
        );
        let mut lines = Vec::new();
        let f = run_streaming(
            Path::new("/bin/sh"),
            &["-c".into(), script.into()],
            Duration::from_secs(30),
            false,
            &mut |l| {
                if l == "one" {
                    std::fs::write(&dir, b"").unwrap();
                }
                lines.push(l.to_owned());
            },
        )
        .unwrap();
        let _ = std::fs::remove_file(&dir);
        assert_eq!(lines, ["one", "two\r", "three"]);
        assert_eq!(f.stdout, b"one\ntwo\r\nthree");
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let r = run_with_timeout(
            Path::new("/no/such/qemu"),
            &[],
            Duration::from_secs(1),
            false,
        );
        assert!(matches!(r, Err(RunError::Spawn(_))));
    }
}
