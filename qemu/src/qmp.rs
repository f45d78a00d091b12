//! A minimal QMP client (QEMU Machine Protocol, JSON over a unix socket) for what the runner
//! needs: the vCPUs' host thread ids, to pin them.
//!
//! QEMU is started with `-qmp unix:PATH,server=on,wait=off`; the runner connects (retrying
//! until the socket exists), reads the greeting (`{"QMP": {...}}`), negotiates
//! (`qmp_capabilities`) and asks `query-cpus-fast`, whose answer gives each vCPU's
//! `cpu-index` and `thread-id`. Asynchronous events (`{"event": ...}`) between are skipped.
//! Every read has a timeout (what is left until the caller's deadline), so a QEMU that
//! stops answering costs the runner at most that long, never a hang.

use serde::Deserialize;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often to retry connecting while the socket does not exist yet.
const RETRY: Duration = Duration::from_millis(20);

/// A negotiated QMP connection.
pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    deadline: Instant,
}

/// One entry of `query-cpus-fast`.
#[derive(Debug, Deserialize)]
struct CpuInfoFast {
    #[serde(rename = "cpu-index")]
    cpu_index: u32,
    #[serde(rename = "thread-id")]
    thread_id: i32,
}

impl Qmp {
    /// Connects to the socket at `path` (retrying until `deadline` while it is missing or
    /// refuses), reads the greeting and negotiates capabilities.
    pub fn connect(path: &Path, deadline: Instant) -> Result<Qmp, String> {
        Qmp::connect_while(path, deadline, &|| true)
    }

    /// [`Qmp::connect`], giving up as soon as `alive` says QEMU is gone (a QEMU that fails at
    /// start never creates its socket: no reason to wait for the deadline).
    pub fn connect_while(
        path: &Path,
        deadline: Instant,
        alive: &dyn Fn() -> bool,
    ) -> Result<Qmp, String> {
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e) if Instant::now() >= deadline => {
                    return Err(format!("cannot connect to {}: {e}", path.display()));
                }
                Err(_) if !alive() => {
                    return Err("QEMU exited before its QMP socket answered".into());
                }
                Err(_) => std::thread::sleep(RETRY),
            }
        };
        let writer = stream
            .try_clone()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut q = Qmp {
            reader: BufReader::new(stream),
            writer,
            deadline,
        };
        let greeting = q.read_message()?;
        if greeting.get("QMP").is_none() {
            return Err(format!("no QMP greeting, got `{greeting}`"));
        }
        q.execute("qmp_capabilities")?;
        Ok(q)
    }

    /// Reads one JSON message, within the deadline.
    fn read_message(&mut self) -> Result<Value, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("QEMU did not answer in time".into());
        }
        self.reader
            .get_ref()
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err("QEMU closed the QMP connection".into()),
            Ok(_) => serde_json::from_str(line.trim())
                .map_err(|e| format!("not a QMP message (`{}`): {e}", line.trim())),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(format!(
                    "QEMU did not answer within {:.1} s",
                    left.as_secs_f64()
                ))
            }
            Err(e) => Err(format!("reading QMP: {e}")),
        }
    }

    /// Runs `command` (no arguments) and returns its `return` value; events are skipped.
    pub fn execute(&mut self, command: &str) -> Result<Value, String> {
        let msg = serde_json::json!({ "execute": command });
        writeln!(self.writer, "{msg}")
            .and_then(|()| self.writer.flush())
            .map_err(|e| format!("writing QMP: {e}"))?;
        loop {
            let m = self.read_message()?;
            if let Some(r) = m.get("return") {
                return Ok(r.clone());
            }
            if let Some(e) = m.get("error") {
                return Err(format!("{command}: {e}"));
            }
            // An event or anything else: not our answer.
        }
    }

    /// Each vCPU's (cpu-index, host thread id), by index.
    pub fn vcpu_threads(&mut self) -> Result<Vec<(u32, i32)>, String> {
        let r = self.execute("query-cpus-fast")?;
        let mut cpus: Vec<CpuInfoFast> = serde_json::from_value(r.clone())
            .map_err(|e| format!("query-cpus-fast answered `{r}`: {e}"))?;
        if cpus.is_empty() {
            return Err("query-cpus-fast lists no vCPU".into());
        }
        cpus.sort_by_key(|c| c.cpu_index);
        Ok(cpus.iter().map(|c| (c.cpu_index, c.thread_id)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;
    use std::path::PathBuf;

    fn socket(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("kx-qmp-{name}-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    /// A stand-in QMP server answering as QEMU 7.2 does, with an event in between.
    #[test]
    fn asks_for_the_vcpu_threads() {
        let path = socket("ok");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            writeln!(
                w,
                r#"{{"QMP": {{"version": {{"qemu": {{"micro": 22, "minor": 2, "major": 7}}}}, "capabilities": ["oob"]}}}}"#
            )
            .unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert!(line.contains("qmp_capabilities"));
            write!(w, "{{\"return\": {{}}}}\r\n").unwrap();
            line.clear();
            r.read_line(&mut line).unwrap();
            assert!(line.contains("query-cpus-fast"));
            writeln!(
                w,
                r#"{{"timestamp": {{"seconds": 1, "microseconds": 2}}, "event": "RESUME"}}"#
            )
            .unwrap();
            writeln!(
                w,
                r#"{{"return": [{{"thread-id": 4102, "props": {{"core-id": 1, "thread-id": 0, "socket-id": 0}}, "qom-path": "/machine/unattached/device[2]", "cpu-index": 1, "target": "x86_64"}}, {{"thread-id": 4101, "props": {{"core-id": 0, "thread-id": 0, "socket-id": 0}}, "qom-path": "/machine/unattached/device[0]", "cpu-index": 0, "target": "x86_64"}}]}}"#
            )
            .unwrap();
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut q = Qmp::connect(&path, deadline).unwrap();
        assert_eq!(q.vcpu_threads().unwrap(), [(0, 4101), (1, 4102)]);
        server.join().unwrap();
        let _ = std::fs::remove_file(&path);
    }

    /// A QEMU that accepts and says nothing costs the deadline, not a hang.
    #[test]
    fn a_silent_qemu_times_out() {
        let path = socket("silent");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(800));
            drop(s);
        });
        let t0 = Instant::now();
        let e = Qmp::connect(&path, t0 + Duration::from_millis(300))
            .err()
            .unwrap();
        // The deadline ended the wait: a read that outwaited it would see the server close.
        assert!(e.contains("did not answer"), "{e}");
        server.join().unwrap();
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_missing_socket_and_errors_are_reported() {
        let t0 = Instant::now();
        let e = Qmp::connect(
            Path::new("/nonexistent/qmp.sock"),
            t0 + Duration::from_millis(100),
        )
        .err()
        .unwrap();
        assert!(e.contains("cannot connect to /nonexistent/qmp.sock"), "{e}");
        // A QEMU that is gone is not waited for.
        let t0 = Instant::now();
        let e = Qmp::connect_while(
            Path::new("/nonexistent/qmp.sock"),
            t0 + Duration::from_secs(30),
            &|| false,
        )
        .err()
        .unwrap();
        // Not the 30 s deadline's "did not answer": the wait ended on QEMU's exit.
        assert!(e.contains("QEMU exited"), "{e}");
        let path = socket("err");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            writeln!(w, r#"{{"QMP": {{}}}}"#).unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            writeln!(w, r#"{{"return": {{}}}}"#).unwrap();
            line.clear();
            r.read_line(&mut line).unwrap();
            writeln!(
                w,
                r#"{{"error": {{"class": "CommandNotFound", "desc": "no"}}}}"#
            )
            .unwrap();
        });
        let mut q = Qmp::connect(&path, Instant::now() + Duration::from_secs(10)).unwrap();
        let e = q.vcpu_threads().unwrap_err();
        assert!(e.contains("CommandNotFound"), "{e}");
        server.join().unwrap();
        let _ = std::fs::remove_file(&path);
    }
}
