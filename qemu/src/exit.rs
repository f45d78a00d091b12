//! The runner's own exit status: one number per kind of ending, for scripts and CI.
//!
//! When the kernel ran and exited, `kx` passes the kernel's [`abi::ExitCode`] through as its
//! port value (success becomes 0), so `kx run --append run=panic; echo $?` prints 18. The
//! runner's own failures use small numbers that no kernel code uses: 2 bad arguments, 3 a
//! named file does not exist, 4 host packages missing, 5 build failed, 6 QEMU failed (could
//! not start, its own error status 1, killed by a signal), 7 timeout (QEMU killed by the
//! runner), 8 the console output contradicts the exit code (e.g. a test line missing), 9 the
//! benchmark's `KRESULT` records are malformed or incomplete (no `end` record, a cut line, a
//! lost comparison), 10 the benchmark's `end` record says its invariant checks failed;
//! `kx import --qr`: 11 an image unreadable or without a code of ours, 12 codes missing,
//! 13 codes that contradict each other or a payload that fails its checksum; 14
//! `--accel kvm` where KVM does not work; 15 `kx bench --strict` on a busy host.

use crate::results::TestReport;
use crate::{Outcome, RunOutput};
use abi::ExitCode;
use boot::error::{EXIT_BUILD_FAILED, EXIT_MISSING_PACKAGES, EXIT_NOT_FOUND, EXIT_USAGE};

/// How `kx` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunnerExit {
    /// The kernel reported success and its output agreed.
    Success,
    /// Bad command-line arguments to the runner.
    Usage,
    /// A file named on the command line does not exist.
    NotFound,
    /// Host packages are missing and were not installed.
    MissingPackages,
    /// Building the kernel or the image failed.
    BuildFailed,
    /// QEMU failed: did not start, exited 1 (its own error) or an unknown status, or died of
    /// a signal.
    QemuFailed,
    /// The runner's timeout killed QEMU.
    Timeout,
    /// The kernel's console output contradicts its exit code (missing or failed test lines).
    OutputMismatch,
    /// Benchmark records malformed or incomplete (a line that does not parse, no `end`,
    /// counts that disagree, comparisons missing or contradicting their runs).
    BadResults,
    /// The benchmark's `end` record says an invariant check failed.
    InvariantsFailed,
    /// `kx import --qr`: an image that cannot be read or holds no readable results code
    /// (none found, none decodes, a foreign QR code).
    QrUnreadable,
    /// `kx import --qr`: codes of the sequence missing from every image.
    QrMissing,
    /// `kx import --qr`: codes of different runs, one number with two contents, or a
    /// payload that fails its checksum or does not inflate.
    QrCorrupt,
    /// `--accel kvm`, and KVM does not work on this host (the probe says why).
    KvmUnavailable,
    /// `kx bench --strict`, and other processes kept the host busy before the run.
    HostBusy,
    /// `--coherence` or `kx bench`'s cost boot, and QEMU cannot load the coherence plugin (no
    /// TCG plugin support, a plugin API version the plugin does not speak) or the run cannot
    /// use it (KVM).
    NoPlugin,
    /// The kernel exited with this code (any but success).
    Kernel(ExitCode),
}

impl RunnerExit {
    /// The runner's own codes with their meaning, for help text and the README table.
    pub const OWN: [(RunnerExit, &'static str); 16] = [
        (RunnerExit::Success, "the kernel reported success"),
        (RunnerExit::Usage, "bad runner arguments"),
        (
            RunnerExit::NotFound,
            "a file named on the command line does not exist",
        ),
        (
            RunnerExit::MissingPackages,
            "host packages missing and not installed",
        ),
        (
            RunnerExit::BuildFailed,
            "building the kernel or image failed",
        ),
        (
            RunnerExit::QemuFailed,
            "QEMU failed (did not start, its own error, a signal)",
        ),
        (RunnerExit::Timeout, "timeout: the runner killed QEMU"),
        (
            RunnerExit::OutputMismatch,
            "console output contradicts the exit code",
        ),
        (
            RunnerExit::BadResults,
            "benchmark results malformed or incomplete (no end record, a cut or bad line)",
        ),
        (
            RunnerExit::InvariantsFailed,
            "benchmark invariant checks failed (the end record says so)",
        ),
        (
            RunnerExit::QrUnreadable,
            "import --qr: an image unreadable, or without a readable results code (none found, none decodes, a foreign QR code)",
        ),
        (
            RunnerExit::QrMissing,
            "import --qr: codes missing (each named by its number)",
        ),
        (
            RunnerExit::QrCorrupt,
            "import --qr: codes of different runs or contradicting each other, or the payload fails its checksum",
        ),
        (
            RunnerExit::KvmUnavailable,
            "--accel kvm, and KVM does not work here (the probe says why)",
        ),
        (
            RunnerExit::HostBusy,
            "bench --strict, and other processes kept the host busy (more than 0.1 core) before the run",
        ),
        (
            RunnerExit::NoPlugin,
            "--coherence or the cost boot, and QEMU cannot load the coherence plugin (no TCG plugin support, another plugin API) or the run cannot use it (KVM)",
        ),
    ];

    /// The process exit status.
    #[must_use]
    pub const fn status(self) -> i32 {
        match self {
            RunnerExit::Success => 0,
            RunnerExit::Usage => EXIT_USAGE,
            RunnerExit::NotFound => EXIT_NOT_FOUND,
            RunnerExit::MissingPackages => EXIT_MISSING_PACKAGES,
            RunnerExit::BuildFailed => EXIT_BUILD_FAILED,
            RunnerExit::QemuFailed => 6,
            RunnerExit::Timeout => 7,
            RunnerExit::OutputMismatch => 8,
            RunnerExit::BadResults => 9,
            RunnerExit::InvariantsFailed => 10,
            RunnerExit::QrUnreadable => 11,
            RunnerExit::QrMissing => 12,
            RunnerExit::QrCorrupt => 13,
            RunnerExit::KvmUnavailable => 14,
            RunnerExit::HostBusy => 15,
            RunnerExit::NoPlugin => 30,
            RunnerExit::Kernel(ExitCode::Success) => 0,
            RunnerExit::Kernel(code) => code.port_value() as i32,
        }
    }

    /// The exit status for a failed `kx import --qr`.
    #[must_use]
    pub fn for_qr(e: &crate::error::QrError) -> Self {
        use crate::error::QrError;
        match e {
            QrError::Unreadable { .. } => RunnerExit::QrUnreadable,
            QrError::Missing(_) => RunnerExit::QrMissing,
            QrError::Corrupt { .. } => RunnerExit::QrCorrupt,
        }
    }

    /// The exit code for an error that stopped the run.
    #[must_use]
    pub fn for_error(e: &crate::RunError) -> Self {
        use crate::RunError;
        match e {
            RunError::Boot(b) => match b.exit_status() {
                EXIT_MISSING_PACKAGES => RunnerExit::MissingPackages,
                EXIT_NOT_FOUND => RunnerExit::NotFound,
                EXIT_USAGE => RunnerExit::Usage,
                _ => RunnerExit::BuildFailed,
            },
            RunError::Spawn(_) | RunError::Wait(_) => RunnerExit::QemuFailed,
            RunError::Io { .. } => RunnerExit::BuildFailed,
            RunError::NotFound(_) => RunnerExit::NotFound,
            RunError::MediumMismatch(_) | RunError::NotAFile(_) => RunnerExit::Usage,
            RunError::BadInput { .. } => RunnerExit::BadResults,
            RunError::KvmUnavailable(_) => RunnerExit::KvmUnavailable,
            RunError::Qr(e) => Self::for_qr(e),
            RunError::Plugin(_) => RunnerExit::NoPlugin,
        }
    }
}

/// The runner's exit for an outcome of a non-test run.
#[must_use]
pub fn exit_for(outcome: Outcome) -> RunnerExit {
    match outcome {
        Outcome::Kernel(ExitCode::Success) => RunnerExit::Success,
        Outcome::Kernel(code) => RunnerExit::Kernel(code),
        Outcome::Timeout(_) => RunnerExit::Timeout,
        Outcome::QemuStatus(_) | Outcome::QemuSignal(_) => RunnerExit::QemuFailed,
    }
}

/// The runner's exit for a test run: a success code with contradicting lines is a mismatch.
#[must_use]
pub fn test_exit(out: &RunOutput, report: &TestReport, requested: Option<&[String]>) -> RunnerExit {
    match exit_for(out.outcome) {
        RunnerExit::Success if !report.problems(out.outcome, requested).is_empty() => {
            RunnerExit::OutputMismatch
        }
        other => other,
    }
}

/// The exit-code table printed by `kx help`: one entry a status, wrapped under its text to
/// fit an 80-column terminal (clap would wrap it from the line's start).
#[must_use]
pub fn exit_code_help() -> String {
    let mut s = String::from("exit status:\n");
    let mut entry = |status: i32, what: &str| {
        let mut line = format!("  {status:>3} ");
        for word in what.split(' ') {
            if line.len() + 1 + word.len() > 79 {
                s.push_str(&line);
                s.push('\n');
                line = " ".repeat(6);
            }
            line.push(' ');
            line.push_str(word);
        }
        s.push_str(&line);
        s.push('\n');
    };
    for (e, what) in RunnerExit::OWN {
        entry(e.status(), what);
    }
    for c in ExitCode::ALL
        .into_iter()
        .filter(|c| *c != ExitCode::Success)
    {
        entry(
            RunnerExit::Kernel(c).status(),
            &format!(
                "the kernel exited with {} (0x{:02x})",
                c.name(),
                c.port_value()
            ),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Termination;
    use std::time::Duration;

    #[test]
    fn statuses_are_distinct_and_never_clash_with_kernel_codes() {
        let mut seen = std::collections::HashSet::new();
        for (e, _) in RunnerExit::OWN {
            assert!(seen.insert(e.status()), "{e:?}");
        }
        for c in ExitCode::ALL {
            let s = RunnerExit::Kernel(c).status();
            if c == ExitCode::Success {
                assert_eq!(s, 0);
            } else {
                assert!(seen.insert(s), "{c:?} clashes");
                assert!(s > 15 && s < 30);
            }
        }
        assert_eq!(RunnerExit::Kernel(ExitCode::Panic).status(), 0x12);
    }

    fn output(outcome: Outcome, serial: &str) -> RunOutput {
        RunOutput {
            outcome,
            serial: serial.into(),
            qemu_stderr: String::new(),
            elapsed: Duration::ZERO,
            first_output: None,
        }
    }

    #[test]
    fn exits() {
        let t = Outcome::decode(Termination::TimedOut, Duration::from_secs(1));
        assert_eq!(exit_for(t), RunnerExit::Timeout);
        assert_eq!(exit_for(Outcome::QemuStatus(1)), RunnerExit::QemuFailed);
        assert_eq!(
            exit_for(Outcome::Kernel(ExitCode::Panic)),
            RunnerExit::Kernel(ExitCode::Panic)
        );
        let ok = Outcome::Kernel(ExitCode::Success);
        let good = output(ok, "KTEST a ok\nKTEST-SUMMARY 1 passed, 0 failed\n");
        let r = TestReport::parse(&good.serial);
        assert_eq!(test_exit(&good, &r, None), RunnerExit::Success);
        let lost = output(ok, "KTEST-SUMMARY 1 passed, 0 failed\n");
        let r = TestReport::parse(&lost.serial);
        assert_eq!(test_exit(&lost, &r, None), RunnerExit::OutputMismatch);
        let failed = output(Outcome::Kernel(ExitCode::TestFailure), "KTEST a FAILED\n");
        let r = TestReport::parse(&failed.serial);
        assert_eq!(
            test_exit(&failed, &r, None),
            RunnerExit::Kernel(ExitCode::TestFailure)
        );
    }

    #[test]
    fn help_lists_every_code() {
        let h = exit_code_help();
        for (e, _) in RunnerExit::OWN {
            assert!(h.contains(&format!("  {:>3}  ", e.status())));
        }
        assert!(h.contains("panic (0x12)"));
        assert!(h.lines().all(|l| l.len() < 80), "{h}");
    }
}
