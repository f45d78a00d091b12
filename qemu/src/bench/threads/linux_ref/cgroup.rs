//! A fresh cgroup v2 memcg for the Linux reference's worker process, where the host allows
//! one, and the reason in words where it does not.
//!
//! The reference's threads should fault pages into a memcg, as the seeds' workloads do (a
//! page fault charges the faulting task's memcg: `mem_cgroup_charge` on the fault path), but
//! not into the runner's own cgroup, which may have a limit or other tasks. So, when
//! `/sys/fs/cgroup` is a cgroup2 mount whose root offers the memory controller to its
//! children (enabling it in `cgroup.subtree_control` if needed) and a child can be created
//! there, the reference gets `/sys/fs/cgroup/kx-linux-ref-<pid>-<n>` (no `memory.max`: only
//! the charging and the statistics), which its worker process joins before it maps anything
//! and which is removed when the worker is gone. Otherwise — cgroup v1 or a hybrid layout
//! (this development machine), a read-only `/sys/fs/cgroup` (an unprivileged container), a
//! root without the memory controller — the reference runs in the runner's own cgroup and
//! the reason is printed with the results.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where cgroup2 is expected.
pub const ROOT: &str = "/sys/fs/cgroup";

/// A cgroup this process created (removed by [`Cgroup::remove`], or on drop).
#[derive(Debug)]
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// Its directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `pgfault` line of its `memory.stat`, if readable.
    #[must_use]
    pub fn pgfault(&self) -> Option<u64> {
        let stat = std::fs::read_to_string(self.path.join("memory.stat")).ok()?;
        stat.lines()
            .find_map(|l| l.strip_prefix("pgfault "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// Removes the cgroup (it must be empty: its processes have exited). A cgroup whose last
    /// task just exited may still read as populated for a moment: retried for about 1 s.
    pub fn remove(mut self) -> std::io::Result<()> {
        let path = std::mem::take(&mut self.path);
        let mut last = Ok(());
        for _ in 0..100 {
            match std::fs::remove_dir(&path) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Err(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        last
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

/// The filesystem type mounted at `mount_point` per a `/proc/self/mountinfo` text (the last
/// mount there wins, as the kernel shows the top one).
#[must_use]
pub fn mount_type(mountinfo: &str, mount_point: &str) -> Option<String> {
    mountinfo.lines().rev().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        let fstype = right.split(' ').next()?;
        (point == mount_point).then(|| fstype.to_owned())
    })
}

/// A fresh memcg, or why there is none.
pub fn prepare() -> Result<Cgroup, String> {
    prepare_at(
        Path::new(ROOT),
        &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
    )
}

fn prepare_at(root: &Path, mountinfo: &str) -> Result<Cgroup, String> {
    let at = root.display();
    match mount_type(mountinfo, &root.to_string_lossy()) {
        Some(t) if t == "cgroup2" => {}
        Some(t) => {
            return Err(format!(
                "{at} is a {t} mount, not cgroup2 (cgroup v1 or a hybrid layout)"
            ));
        }
        None => return Err(format!("nothing is mounted at {at}")),
    }
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers"))
        .map_err(|e| format!("cannot read {at}/cgroup.controllers: {e}"))?;
    if !controllers.split_whitespace().any(|c| c == "memory") {
        return Err(format!("{at} does not offer the memory controller"));
    }
    let subtree = root.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&subtree)
        .map_err(|e| format!("cannot read {}: {e}", subtree.display()))?;
    if !enabled.split_whitespace().any(|c| c == "memory") {
        std::fs::write(&subtree, "+memory").map_err(|e| {
            format!(
                "cannot enable the memory controller in {}: {e}",
                subtree.display()
            )
        })?;
    }
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "kx-linux-ref-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let path = root.join(name);
    std::fs::create_dir(&path).map_err(|e| format!("cannot create a cgroup in {at}: {e}"))?;
    let cg = Cgroup { path };
    if !cg.path.join("memory.current").exists() {
        return Err(format!(
            "{} has no memory.current: the memory controller is not on for it",
            cg.path.display()
        ));
    }
    Ok(cg)
}

/// Moves the calling process into the cgroup at `path` (every thread it has, and every one
/// it creates later).
pub fn join(path: &Path) -> std::io::Result<()> {
    std::fs::write(path.join("cgroup.procs"), "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";

    #[test]
    fn mount_types_from_mountinfo() {
        assert_eq!(
            mount_type(HYBRID, "/sys/fs/cgroup").as_deref(),
            Some("tmpfs")
        );
        assert_eq!(
            mount_type(HYBRID, "/sys/fs/cgroup/unified").as_deref(),
            Some("cgroup2")
        );
        assert_eq!(mount_type(HYBRID, "/nope"), None);
        let v2 = "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate";
        assert_eq!(mount_type(v2, "/sys/fs/cgroup").as_deref(), Some("cgroup2"));
    }

    #[test]
    fn says_why_not() {
        let e = prepare_at(Path::new("/sys/fs/cgroup"), HYBRID).unwrap_err();
        assert_eq!(
            e,
            "/sys/fs/cgroup is a tmpfs mount, not cgroup2 (cgroup v1 or a hybrid layout)"
        );
        let e = prepare_at(Path::new("/sys/fs/cgroup"), "").unwrap_err();
        assert_eq!(e, "nothing is mounted at /sys/fs/cgroup");
    }

    #[test]
    fn a_fake_cgroup2_root_without_memory_is_refused() {
        let dir = std::env::temp_dir().join(format!("kx-cg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cgroup.controllers"), "cpu io pids\n").unwrap();
        let info = format!("1 1 0:1 / {} rw - cgroup2 cgroup2 rw", dir.display());
        let e = prepare_at(&dir, &info).unwrap_err();
        assert!(e.ends_with("does not offer the memory controller"), "{e}");
        // With the controller offered and enabled, a child is made; a plain directory has
        // no memory.current, which is refused (and the child removed again).
        std::fs::write(dir.join("cgroup.controllers"), "memory\n").unwrap();
        std::fs::write(dir.join("cgroup.subtree_control"), "memory\n").unwrap();
        let e = prepare_at(&dir, &info).unwrap_err();
        assert!(e.contains("has no memory.current"), "{e}");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .collect();
        assert!(left.is_empty(), "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
