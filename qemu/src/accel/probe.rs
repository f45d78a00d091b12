//! The KVM probe: KVM where it works, TCG otherwise, decided by booting the kernel, never
//! by the mere presence of `/dev/kvm`.
//!
//! `/dev/kvm` existing and opening read-write (API version 12) does not mean KVM works: on
//! nested hosts QEMU 7.2 aborts at start with `-cpu host` ("failed to set MSR 0x10a", an
//! assertion, status 134), and with other CPU models the guest can die at its first SSE
//! instruction while QEMU hangs. So `--accel auto` (the default) and `--accel kvm` first
//! check the device, then boot this workspace's kernel once under KVM with a tight timeout
//! (`run=summary` on one vCPU) and look at how it ended:
//!
//! - the kernel's success code: KVM works;
//! - QEMU's own failure (it could not start, its error status, a signal such as the
//!   assertion's SIGABRT): [`ProbeOutcome::QemuFailed`] with what QEMU printed last;
//! - the timeout: [`ProbeOutcome::GuestHung`];
//! - any other kernel exit: [`ProbeOutcome::GuestFailed`].
//!
//! The outcome is cached per host in `$KX_CACHE_DIR` (default
//! `${XDG_CACHE_HOME:-$HOME/.cache}/kx`), keyed by what it depends on ([`ProbeKey`]): the
//! QEMU binary and its version line, the host kernel's release, the host CPU model and the
//! kernel build probed; any of them new probes again. Only a probe's own outcome is cached:
//! a kernel that does not build fails the run before any probe, and nothing else writes
//! the cache. `auto` falls back to TCG saying
//! what the probe saw; `kvm` where the probe failed is an error with its own exit status
//! ([`crate::RunnerExit::KvmUnavailable`]). Under KVM the guest gets `-cpu host,pmu=on`
//! (the host's CPU model and its performance counters); under TCG `-cpu max`.

use super::{Accel, AccelRequest};
use crate::process::{Termination, run_with_timeout};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the KVM probe ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ProbeOutcome {
    /// The kernel booted under KVM and exited with its success code.
    Works,
    /// `/dev/kvm` is missing, cannot be opened read-write or reports another API version.
    NoDevice {
        /// Why.
        detail: String,
    },
    /// QEMU failed by itself: could not start, exited with its own error, died of a signal.
    QemuFailed {
        /// Its exit status, if it exited.
        status: Option<i32>,
        /// What it said last (stderr), or the signal.
        detail: String,
    },
    /// Nothing ended the boot before the probe's timeout: the guest hung (QEMU was killed).
    GuestHung {
        /// The timeout, seconds.
        timeout_s: u64,
    },
    /// The kernel ran under KVM but did not report success.
    GuestFailed {
        /// How it ended.
        detail: String,
    },
}

impl ProbeOutcome {
    /// Whether KVM works.
    #[must_use]
    pub fn works(&self) -> bool {
        matches!(self, ProbeOutcome::Works)
    }
}

impl fmt::Display for ProbeOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeOutcome::Works => f.write_str("the kernel booted under KVM"),
            ProbeOutcome::NoDevice { detail } => write!(f, "no usable /dev/kvm: {detail}"),
            ProbeOutcome::QemuFailed {
                status: Some(s),
                detail,
            } => write!(f, "QEMU failed under KVM (status {s}): {detail}"),
            ProbeOutcome::QemuFailed {
                status: None,
                detail,
            } => write!(f, "QEMU failed under KVM: {detail}"),
            ProbeOutcome::GuestHung { timeout_s } => write!(
                f,
                "the guest hung under KVM (no exit within {timeout_s} s; QEMU was killed)"
            ),
            ProbeOutcome::GuestFailed { detail } => {
                write!(f, "the kernel did not succeed under KVM: {detail}")
            }
        }
    }
}

/// What a probe's outcome depends on: a cached outcome answers only for the same key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeKey {
    /// The QEMU binary run (as found on `$PATH`).
    pub qemu: String,
    /// Its `--version` first line.
    pub qemu_version: String,
    /// The host kernel's release (`/proc/sys/kernel/osrelease`).
    pub kernel_release: String,
    /// The host CPU's model name (`/proc/cpuinfo`): what `-cpu host` passes on.
    pub cpu_model: String,
    /// The kernel build probed: FNV-1a of its ELF32 image, in hex (a kernel change may fix
    /// or break its boot under KVM).
    pub kernel_build: String,
}

impl ProbeKey {
    /// The key for probing `elf32` with `qemu` on this host (`qemu_version`: its version line).
    #[must_use]
    pub fn for_host(qemu: &Path, qemu_version: &str, elf32: &Path) -> ProbeKey {
        ProbeKey {
            qemu: qemu.display().to_string(),
            qemu_version: qemu_version.into(),
            kernel_release: kernel_release(),
            cpu_model: crate::bench::host::host_cpu().unwrap_or_else(|| "unknown".into()),
            kernel_build: std::fs::read(elf32).map_or_else(
                |e| format!("unreadable: {e}"),
                |b| format!("{:016x}", crate::hash::fnv1a(&b)),
            ),
        }
    }
}

/// A cached probe: its outcome and what it was made on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// What it depends on.
    #[serde(flatten)]
    pub key: ProbeKey,
    /// How it ended.
    pub outcome: ProbeOutcome,
}

/// The accelerator chosen, and the sentence that says why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccelDecision {
    /// The accelerator.
    pub accel: Accel,
    /// Why, for the first line of output.
    pub why: String,
}

/// The probe's timeout: a kernel that boots under KVM exits `run=summary` in well under a
/// second; TCG takes a few.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The kernel's success exit through `isa-debug-exit`: `(0x10 << 1) | 1`.
const SUCCESS_STATUS: i32 = ((abi::ExitCode::Success as i32) << 1) | 1;

/// `KVM_GET_API_VERSION`: `_IO(KVMIO, 0x00)`.
const KVM_GET_API_VERSION: libc::c_ulong = 0xAE00;
/// The API version every KVM since Linux 2.6.22 reports.
const KVM_API_VERSION: i32 = 12;

/// Checks that `dev` (normally `/dev/kvm`) opens read-write and reports KVM's API version.
#[allow(unsafe_code)]
pub fn check_device(dev: &Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dev)
        .map_err(|e| format!("{}: {e}", dev.display()))?;
    // SAFETY: `f` is an open file descriptor for the call's duration; KVM_GET_API_VERSION
    // takes no argument and only returns a number (on another device it fails with ENOTTY).
    let v = unsafe { libc::ioctl(f.as_raw_fd(), KVM_GET_API_VERSION as _, 0) };
    match v {
        KVM_API_VERSION => Ok(()),
        -1 => Err(format!(
            "{}: KVM_GET_API_VERSION failed: {}",
            dev.display(),
            std::io::Error::last_os_error()
        )),
        v => Err(format!(
            "{}: KVM API version {v}, not {KVM_API_VERSION}",
            dev.display()
        )),
    }
}

/// QEMU's arguments for the probe: a direct boot of the ELF32 under KVM with one vCPU and
/// 64 MiB, `run=summary`, the machine every launch gets otherwise.
#[must_use]
pub fn probe_args(elf32: &Path) -> Vec<OsString> {
    let launch = crate::launch::Launch {
        mode: crate::Mode::Direct,
        smp: 1,
        mem_mib: 64,
        nodes: None,
        medium: crate::Medium::Kernel {
            elf32: elf32.to_path_buf(),
            cmdline: "run=summary exit=qemu".into(),
        },
        ovmf_code: PathBuf::new(),
        ovmf_vars: None,
        accel: Accel::Kvm,
        qmp: None,
        mirror: None,
        plugin: None,
        tcg_single: false,
        icount: None,
    };
    // A direct launch with a kernel is always consistent.
    launch.args().unwrap_or_default()
}

/// Boots `elf32` under KVM with `qemu` and says how it ended.
#[must_use]
pub fn probe(qemu: &Path, elf32: &Path, timeout: Duration) -> ProbeOutcome {
    use std::os::unix::process::ExitStatusExt;
    let finished = match run_with_timeout(qemu, &probe_args(elf32), timeout, false) {
        Ok(f) => f,
        Err(e) => {
            return ProbeOutcome::QemuFailed {
                status: None,
                detail: format!("could not start {}: {e}", qemu.display()),
            };
        }
    };
    let last = |s: &[u8]| {
        String::from_utf8_lossy(s)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("(nothing)")
            .trim()
            .to_owned()
    };
    let status = match finished.termination {
        Termination::TimedOut => {
            return ProbeOutcome::GuestHung {
                timeout_s: timeout.as_secs(),
            };
        }
        Termination::Exited(status) => status,
    };
    match (status.code(), status.signal()) {
        (Some(SUCCESS_STATUS), _) => ProbeOutcome::Works,
        (None, Some(sig)) => ProbeOutcome::QemuFailed {
            status: None,
            detail: format!("killed by signal {sig}: {}", last(&finished.stderr)),
        },
        // QEMU's own failures: 1 (its error), and statuses no kernel exit makes (even ones;
        // the abort of a failed assertion shows up as 134 through a shell).
        (Some(s), _) if s == 1 || s % 2 == 0 => ProbeOutcome::QemuFailed {
            status: Some(s),
            detail: last(&finished.stderr),
        },
        (Some(s), _) => ProbeOutcome::GuestFailed {
            detail: format!(
                "exit status {s}; last serial line: {}",
                last(&finished.stdout)
            ),
        },
        (None, None) => ProbeOutcome::QemuFailed {
            status: None,
            detail: "ended without a status".into(),
        },
    }
}

/// Where the probe's outcome is cached: `$KX_CACHE_DIR`, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/kx`, else `None` (no cache: probe every time).
#[must_use]
pub fn cache_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("KX_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("kx")))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("kx")))
}

/// The host kernel's release.
#[must_use]
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// The probe's outcome for `key`: from the cache in `dir` when it was made for the same key,
/// else from `run` (then written to the cache). Returns the record and whether it came
/// from the cache. A cache written by an older kx (another key) is probed over.
pub fn cached_probe(
    dir: Option<&Path>,
    key: &ProbeKey,
    run: impl FnOnce() -> ProbeOutcome,
) -> (ProbeRecord, bool) {
    let file = dir.map(|d| d.join("kvm-probe.json"));
    if let Some(rec) = file
        .as_deref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|s| serde_json::from_str::<ProbeRecord>(&s).ok())
        .filter(|r| r.key == *key)
    {
        return (rec, true);
    }
    let rec = ProbeRecord {
        key: key.clone(),
        outcome: run(),
    };
    if let (Some(dir), Some(file)) = (dir, file.as_deref())
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(text) = serde_json::to_string_pretty(&rec)
    {
        // A cache that cannot be written only costs the next run another probe.
        let tmp = file.with_extension("json.tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }
    (rec, false)
}

/// The accelerator for `req`: TCG when asked; otherwise the device check, then the probe
/// (through `probe`, which may answer from the cache and says where). `Err` only for
/// `--accel kvm` where KVM does not work, with why.
pub fn decide(
    req: AccelRequest,
    device: impl FnOnce() -> Result<(), String>,
    probe: impl FnOnce() -> (ProbeOutcome, String),
) -> Result<AccelDecision, String> {
    if req == AccelRequest::Tcg {
        return Ok(AccelDecision {
            accel: Accel::Tcg,
            why: "tcg (--accel tcg)".into(),
        });
    }
    let (outcome, source) = match device() {
        Err(detail) => (ProbeOutcome::NoDevice { detail }, "checked now".to_owned()),
        Ok(()) => probe(),
    };
    match (outcome.works(), req) {
        (true, _) => Ok(AccelDecision {
            accel: Accel::Kvm,
            why: format!("kvm ({outcome}; probe {source})"),
        }),
        (false, AccelRequest::Kvm) => Err(format!("{outcome} (probe {source})")),
        (false, _) => Ok(AccelDecision {
            accel: Accel::Tcg,
            why: format!("tcg (auto: KVM does not work here: {outcome}; probe {source})"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kx-accel-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A stand-in for QEMU: a shell script.
    fn stand_in(dir: &Path, body: &str) -> PathBuf {
        let p = dir.join("qemu-system-x86_64");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn requests_parse_and_args_follow_the_accelerator() {
        assert_eq!("auto".parse(), Ok(AccelRequest::Auto));
        assert_eq!("kvm".parse(), Ok(AccelRequest::Kvm));
        assert_eq!("tcg".parse(), Ok(AccelRequest::Tcg));
        assert!(
            "hvf"
                .parse::<AccelRequest>()
                .unwrap_err()
                .contains("auto, kvm, tcg")
        );
        assert_eq!(Accel::Kvm.args(), ["-accel", "kvm", "-cpu", "host,pmu=on"]);
        assert_eq!(Accel::Tcg.args(), ["-accel", "tcg", "-cpu", "max"]);
        let a = probe_args(Path::new("/k.elf"));
        let s: Vec<_> = a.iter().map(|x| x.to_string_lossy().into_owned()).collect();
        assert!(s.windows(2).any(|w| w == ["-accel", "kvm"]));
        assert!(s.windows(2).any(|w| w == ["-kernel", "/k.elf"]));
        assert!(
            s.windows(2)
                .any(|w| w == ["-append", "run=summary exit=qemu"])
        );
    }

    /// The probe's three outcomes with stand-ins: the kernel's success, QEMU's abort (as
    /// QEMU 7.2 on a nested host: "failed to set MSR 0x10a"), and a guest that hangs.
    #[test]
    fn probe_tells_works_qemu_failure_and_a_hang_apart() {
        let d = scratch("probe");
        let elf = d.join("k.elf");
        std::fs::write(&elf, b"").unwrap();
        let ok = stand_in(&d, "echo 'kernel: summary'; exit 33");
        assert_eq!(probe(&ok, &elf, PROBE_TIMEOUT), ProbeOutcome::Works);

        let abort = stand_in(
            &d,
            "echo 'qemu-system-x86_64: ../target/i386/kvm/kvm.c:2980: kvm_buf_set_msrs: \
             Assertion `ret == cpu->kvm_msr_buf->nmsrs` failed.' >&2\n\
             echo 'error: failed to set MSR 0x10a to 0x0' >&2\nkill -ABRT $$",
        );
        match probe(&abort, &elf, PROBE_TIMEOUT) {
            ProbeOutcome::QemuFailed { detail, .. } => {
                assert!(detail.contains("MSR 0x10a"), "{detail}")
            }
            o => panic!("{o:?}"),
        }
        let own_error = stand_in(
            &d,
            "echo 'qemu: could not access KVM kernel module' >&2; exit 1",
        );
        assert_eq!(
            probe(&own_error, &elf, PROBE_TIMEOUT),
            ProbeOutcome::QemuFailed {
                status: Some(1),
                detail: "qemu: could not access KVM kernel module".into()
            }
        );
        let hang = stand_in(&d, "exec sleep 30");
        assert_eq!(
            probe(&hang, &elf, Duration::from_secs(1)),
            ProbeOutcome::GuestHung { timeout_s: 1 }
        );
        let panicked = stand_in(&d, "echo 'PANIC: boom'; exit 37");
        match probe(&panicked, &elf, PROBE_TIMEOUT) {
            ProbeOutcome::GuestFailed { detail } => assert!(detail.contains("PANIC"), "{detail}"),
            o => panic!("{o:?}"),
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_cache_is_kept_per_key() {
        let d = scratch("cache");
        let mut runs = 0;
        let mut probe_once = |o: ProbeOutcome| {
            runs += 1;
            o
        };
        let key = ProbeKey {
            qemu: "/usr/bin/qemu-system-x86_64".into(),
            qemu_version: "QEMU 7.2".into(),
            kernel_release: "6.1.0".into(),
            cpu_model: "AMD EPYC".into(),
            kernel_build: "0123".into(),
        };
        let hung = ProbeOutcome::GuestHung { timeout_s: 20 };
        let (r, cached) = cached_probe(Some(&d), &key, || probe_once(hung.clone()));
        assert!(!cached);
        assert_eq!(r.outcome, hung);
        let (r, cached) = cached_probe(Some(&d), &key, || probe_once(ProbeOutcome::Works));
        assert!(cached, "the same key: the cached outcome");
        assert_eq!(r.outcome, hung);
        type Change = fn(&mut ProbeKey);
        let changes: [(&str, Change); 5] = [
            ("a new QEMU binary", |k| k.qemu = "/opt/qemu".into()),
            ("a new QEMU", |k| k.qemu_version = "QEMU 8.0".into()),
            ("a new host kernel", |k| k.kernel_release = "6.2.0".into()),
            ("another host CPU", |k| k.cpu_model = "Intel Xeon".into()),
            ("a new kernel build", |k| k.kernel_build = "4567".into()),
        ];
        for (what, change) in changes {
            let mut k = key.clone();
            change(&mut k);
            let (r, cached) = cached_probe(Some(&d), &k, || probe_once(ProbeOutcome::Works));
            assert!(!cached, "{what} probes again");
            assert_eq!(r.outcome, ProbeOutcome::Works);
            // Back to the first key: its outcome was overwritten, so it probes again too.
            let (_, cached) = cached_probe(Some(&d), &key, || probe_once(hung.clone()));
            assert!(!cached, "{what}: the cache holds the last key only");
        }
        // A corrupt cache file, or one of an older kx without the key's fields, is probed
        // over.
        for text in [
            "{",
            r#"{"qemu_version":"QEMU 7.2","kernel_release":"6.1.0","outcome":{"outcome":"works"}}"#,
        ] {
            std::fs::write(d.join("kvm-probe.json"), text).unwrap();
            let (_, cached) = cached_probe(Some(&d), &key, || probe_once(ProbeOutcome::Works));
            assert!(!cached, "{text}");
        }
        assert_eq!(runs, 13);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_key_names_the_kernel_build() {
        let d = scratch("key");
        let (a, b) = (d.join("a.elf"), d.join("b.elf"));
        std::fs::write(&a, b"one build").unwrap();
        std::fs::write(&b, b"another build").unwrap();
        let q = Path::new("/usr/bin/qemu-system-x86_64");
        let ka = ProbeKey::for_host(q, "QEMU 7.2", &a);
        let kb = ProbeKey::for_host(q, "QEMU 7.2", &b);
        assert_eq!(ka.kernel_build.len(), 16, "{ka:?}");
        assert_ne!(ka.kernel_build, kb.kernel_build);
        assert_eq!(
            (ka.qemu.as_str(), ka.cpu_model.is_empty()),
            (q.to_str().unwrap(), false)
        );
        assert_eq!(
            ka,
            ProbeKey::for_host(q, "QEMU 7.2", &a),
            "the same build, the same key"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn decide_falls_back_for_auto_and_refuses_for_kvm() {
        let failed = || {
            (
                ProbeOutcome::QemuFailed {
                    status: Some(134),
                    detail: "failed to set MSR 0x10a".into(),
                },
                "cached in /c".to_owned(),
            )
        };
        let d = decide(AccelRequest::Auto, || Ok(()), failed).unwrap();
        assert_eq!(d.accel, Accel::Tcg);
        assert!(
            d.why.starts_with("tcg (auto: KVM does not work here"),
            "{}",
            d.why
        );
        assert!(d.why.contains("MSR 0x10a") && d.why.contains("cached in /c"));
        let e = decide(AccelRequest::Kvm, || Ok(()), failed).unwrap_err();
        assert!(e.contains("status 134"), "{e}");
        let e = decide(
            AccelRequest::Kvm,
            || Err("/dev/kvm: No such file".into()),
            || panic!("no probe without a device"),
        )
        .unwrap_err();
        assert!(e.contains("no usable /dev/kvm"), "{e}");
        let works = || (ProbeOutcome::Works, "run now".to_owned());
        assert_eq!(
            decide(AccelRequest::Auto, || Ok(()), works).unwrap().accel,
            Accel::Kvm
        );
        assert_eq!(
            decide(AccelRequest::Kvm, || Ok(()), works).unwrap().accel,
            Accel::Kvm
        );
        let t = decide(
            AccelRequest::Tcg,
            || panic!("no device check"),
            || panic!("no probe"),
        );
        assert_eq!(t.unwrap().accel, Accel::Tcg);
    }

    #[test]
    fn a_file_that_is_not_kvm_is_no_device() {
        let e = check_device(Path::new("/nonexistent/kvm")).unwrap_err();
        assert!(e.contains("/nonexistent/kvm"), "{e}");
        let e = check_device(Path::new("/dev/null")).unwrap_err();
        assert!(e.contains("KVM_GET_API_VERSION"), "{e}");
    }
}
