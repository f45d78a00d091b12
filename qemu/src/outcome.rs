//! How a QEMU run ended, decoded: a kernel exit code, a runner timeout, or a QEMU failure.
//!
//! The kernel's codes come from the `isa-debug-exit` device ([`abi::ExitCode::from_qemu_status`]).
//! QEMU's own failures exit 1 (never a kernel code, see `abi::exit`); any other status that
//! is not a kernel code, and death by a signal, are QEMU failures too. A timeout is the
//! runner's verdict, reported on its own so a hang is never mistaken for a crash.

use crate::process::{Finished, Termination};
use abi::ExitCode;
use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

/// The decoded ending of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The kernel wrote this code to the exit device.
    Kernel(ExitCode),
    /// The runner killed QEMU at the deadline.
    Timeout(Duration),
    /// QEMU exited with a status that is not a kernel code (1: QEMU's own error; 0: the guest
    /// shut down or reset without writing the exit device, e.g. a triple fault with
    /// `-no-reboot`).
    QemuStatus(i32),
    /// QEMU died of a signal it did not get from the runner.
    QemuSignal(i32),
}

impl Outcome {
    /// Decodes how the process ended.
    #[must_use]
    pub fn decode(termination: Termination, timeout: Duration) -> Self {
        match termination {
            Termination::TimedOut => Outcome::Timeout(timeout),
            Termination::Exited(status) => match (status.code(), status.signal()) {
                (Some(code), _) => match ExitCode::from_qemu_status(code) {
                    Some(k) => Outcome::Kernel(k),
                    None => Outcome::QemuStatus(code),
                },
                (None, Some(sig)) => Outcome::QemuSignal(sig),
                (None, None) => Outcome::QemuStatus(-1),
            },
        }
    }

    /// Whether the kernel reported success.
    #[must_use]
    pub fn is_success(self) -> bool {
        self == Outcome::Kernel(ExitCode::Success)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Kernel(c) => write!(
                f,
                "kernel exited: {} (port 0x{:02x}, QEMU status {})",
                c.name(),
                c.port_value(),
                c.qemu_status()
            ),
            Outcome::Timeout(t) => write!(f, "timeout: killed QEMU after {} s", t.as_secs_f64()),
            Outcome::QemuStatus(1) => f.write_str("QEMU failed (exit status 1, its own error)"),
            Outcome::QemuStatus(0) => f.write_str(
                "QEMU exited 0 without a kernel exit code (guest reset or shut down; \
                 a triple fault under -no-reboot)",
            ),
            Outcome::QemuStatus(s) => write!(f, "QEMU exited with unknown status {s}"),
            Outcome::QemuSignal(s) => write!(f, "QEMU killed by signal {s}"),
        }
    }
}

/// Everything a finished run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// How it ended.
    pub outcome: Outcome,
    /// The serial console, lossily decoded as UTF-8.
    pub serial: String,
    /// QEMU's own stderr.
    pub qemu_stderr: String,
    /// Wall time of the QEMU process.
    pub elapsed: Duration,
    /// Time to the first serial byte.
    pub first_output: Option<Duration>,
}

impl RunOutput {
    /// Decodes a finished process that ran under `timeout`.
    #[must_use]
    pub fn from_finished(f: Finished, timeout: Duration) -> Self {
        RunOutput {
            outcome: Outcome::decode(f.termination, timeout),
            serial: String::from_utf8_lossy(&f.stdout).into_owned(),
            qemu_stderr: String::from_utf8_lossy(&f.stderr).into_owned(),
            elapsed: f.elapsed,
            first_output: f.first_output,
        }
    }

    /// The serial console's lines without `\r`.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.serial.lines().map(|l| l.trim_end_matches('\r'))
    }

    /// The last `n` serial lines, for failure messages.
    #[must_use]
    pub fn tail(&self, n: usize) -> String {
        let lines: Vec<&str> = self.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::ExitStatus;

    fn exited(code: i32) -> Termination {
        Termination::Exited(ExitStatus::from_raw(code << 8))
    }

    #[test]
    fn decodes_every_kernel_code_and_the_rest() {
        let t = Duration::from_secs(5);
        for c in ExitCode::ALL {
            assert_eq!(
                Outcome::decode(exited(c.qemu_status()), t),
                Outcome::Kernel(c)
            );
        }
        assert_eq!(Outcome::decode(exited(1), t), Outcome::QemuStatus(1));
        assert_eq!(Outcome::decode(exited(0), t), Outcome::QemuStatus(0));
        assert_eq!(
            Outcome::decode(Termination::TimedOut, t),
            Outcome::Timeout(t)
        );
        assert_eq!(
            Outcome::decode(Termination::Exited(ExitStatus::from_raw(9)), t),
            Outcome::QemuSignal(9)
        );
        assert!(Outcome::Kernel(ExitCode::Success).is_success());
        assert!(!Outcome::Timeout(t).is_success());
        assert!(Outcome::Timeout(t).to_string().starts_with("timeout"));
    }

    #[test]
    fn lines_drop_carriage_returns() {
        let out = RunOutput {
            outcome: Outcome::QemuStatus(1),
            serial: "a\r\nb\r\nc".into(),
            qemu_stderr: String::new(),
            elapsed: Duration::ZERO,
            first_output: None,
        };
        assert_eq!(out.lines().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(out.tail(2), "b\nc");
    }
}
