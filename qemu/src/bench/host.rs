//! Where a results directory came from: the host, the workspace's git revision, the runner's
//! command line, QEMU's version and a UTC timestamp, recorded in `results.json` beside the
//! kernel's own `machine` record; for `kx bench`, also the accelerator, the host's topology
//! and the placement of the vCPUs or threads, and other processes' load on the host.
//!
//! The timestamp is computed from `SystemTime` with the days-to-civil algorithm (no date
//! crate needed); the same instant names the default results directory
//! (`results/20250102T030405Z/`).

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The host side of a results directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `kx bench` or `kx import`.
    pub tool: String,
    /// The runner's arguments, shell-quoted.
    pub command_line: String,
    /// `git rev-parse HEAD` of the workspace, `unknown` outside a git checkout.
    pub git_revision: String,
    /// Whether the checkout had uncommitted changes (`None`: not a git checkout).
    pub git_dirty: Option<bool>,
    /// The host's CPU model (`/proc/cpuinfo`).
    pub host_cpu: String,
    /// The host's cores.
    pub host_cores: u32,
    /// The host's kernel (`uname -srv`; host-thread runs).
    #[serde(default)]
    pub host_kernel: Option<String>,
    /// `qemu-system-x86_64 --version`'s first line (`None`: QEMU did not run).
    pub qemu_version: Option<String>,
    /// When, UTC, RFC 3339.
    pub timestamp: String,
    /// `kx import`: the log it read.
    pub log: Option<String>,
    /// `kx bench`: how the QEMU run ended.
    pub outcome: Option<String>,
    /// `kx bench`: the accelerator QEMU ran under.
    #[serde(default)]
    pub accel: Option<crate::accel::Accel>,
    /// `kx bench` (QEMU and `--host`): the host's topology and where each vCPU or thread
    /// ran ([`crate::placement`]).
    #[serde(default)]
    pub placement: Option<crate::placement::PlacementRecord>,
    /// `kx bench`: other processes' CPU use before and during each run
    /// ([`crate::hostload`]).
    #[serde(default)]
    pub host_load: Option<crate::hostload::HostLoadRecord>,
}

impl HostInfo {
    /// What can be learned about this host now, for `tool`, with the workspace at `root`.
    #[must_use]
    pub fn gather(tool: &str, root: &Path, now: SystemTime) -> HostInfo {
        let git = |args: &[&str]| -> Option<String> {
            let out = Command::new("git")
                .arg("-C")
                .arg(root)
                .args(args)
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        };
        let revision = git(&["rev-parse", "HEAD"]).filter(|r| !r.is_empty());
        HostInfo {
            tool: tool.into(),
            command_line: command_line(std::env::args()),
            git_dirty: revision
                .as_ref()
                .and_then(|_| git(&["status", "--porcelain", "--untracked-files=no"]))
                .map(|s| !s.is_empty()),
            git_revision: revision.unwrap_or_else(|| "unknown".into()),
            host_cpu: host_cpu().unwrap_or_else(|| "unknown".into()),
            host_cores: crate::cli::host_cores(),
            host_kernel: None,
            qemu_version: None,
            timestamp: rfc3339(now),
            log: None,
            outcome: None,
            accel: None,
            placement: None,
            host_load: None,
        }
    }
}

/// `qemu-system-x86_64 --version`'s first line.
#[must_use]
pub fn qemu_version(qemu: &Path) -> Option<String> {
    let out = Command::new(qemu).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(|l| l.trim().to_owned())
}

/// The host's CPU model, from `/proc/cpuinfo`.
pub(crate) fn host_cpu() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

/// Arguments joined with spaces, each quoted for a POSIX shell when it needs it.
pub fn command_line(args: impl IntoIterator<Item = String>) -> String {
    args.into_iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=,:+@%".contains(&b));
            if plain {
                a
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// (year, month, day, hour, minute, second) of `t`, UTC.
fn civil(t: SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (
        (rem / 3600) as u32,
        (rem / 60 % 60) as u32,
        (rem % 60) as u32,
    );
    (year, month, day, h, m, s)
}

/// `2025-01-02T03:04:05Z`.
#[must_use]
pub fn rfc3339(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `20250102T030405Z`: a directory name that sorts by time.
#[must_use]
pub fn dir_stamp(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        let t = UNIX_EPOCH + Duration::from_secs(1_735_787_045); // 2025-01-02 03:04:05
        assert_eq!(rfc3339(t), "2025-01-02T03:04:05Z");
        assert_eq!(dir_stamp(t), "20250102T030405Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn quoting() {
        let args = ["kx", "bench", "--append", "run=x y", "it's", ""].map(String::from);
        assert_eq!(
            command_line(args),
            "kx bench --append 'run=x y' 'it'\\''s' ''"
        );
    }

    #[test]
    fn gathers_without_a_git_checkout() {
        let h = HostInfo::gather("kx import", Path::new("/"), UNIX_EPOCH);
        assert_eq!(h.git_revision, "unknown");
        assert_eq!(h.git_dirty, None);
        assert!(h.host_cores >= 1);
    }
}
