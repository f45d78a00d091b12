//! Which Linux kernel the reference boots: the file named by `--linux-kernel` (or
//! `$KX_LINUX_KERNEL`), else Debian's cloud kernel kept in `<kx cache>/linux/`
//! (`vmlinuz-<release>`; the newest release when there are several), fetched there by
//! [`fetch`] with the distribution's own tools: `apt-cache depends` resolves the
//! meta-package [`META_PACKAGE`] to its versioned `linux-image-*` package, `apt-get
//! download` fetches that `.deb` (about 26 MB; it needs the network or a local mirror),
//! `dpkg-deb -x` unpacks it, and the image and its `config-*` are kept, the rest removed.
//! Each tool runs under [`TOOL_TIMEOUT`].

use crate::process::{Termination, run_with_timeout};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The Debian meta-package whose kernel the reference boots.
pub const META_PACKAGE: &str = "linux-image-cloud-amd64";
/// The environment variable naming a kernel image (like `--linux-kernel`).
pub const ENV: &str = "KX_LINUX_KERNEL";
/// The longest any of `apt-cache`, `apt-get download` and `dpkg-deb` may take.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// `<cache>/linux`, where the kernel and the program are kept.
#[must_use]
pub fn dir(cache: &Path) -> PathBuf {
    cache.join("linux")
}

/// A name as text and numbers, so that `6.1.0-48` sorts after `6.1.0-9`.
fn version_key(name: &str) -> Vec<(u64, String)> {
    let mut key = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            key.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
            rest = &rest[digits..];
        } else {
            let text = rest.len() - rest.trim_start_matches(|c: char| !c.is_ascii_digit()).len();
            key.push((0, rest[..text].to_owned()));
            rest = &rest[text..];
        }
    }
    key
}

/// The newest `vmlinuz-*` in `<cache>/linux` (by version: `-48` after `-9`).
#[must_use]
pub fn cached(cache: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir(cache))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .max_by_key(|p| version_key(&p.to_string_lossy()))
}

/// The versioned package a meta-package depends on, from `apt-cache depends` output.
#[must_use]
pub fn versioned_package(depends: &str) -> Option<String> {
    depends.lines().find_map(|l| {
        let dep = l.trim().strip_prefix("Depends:")?.trim();
        let dep = dep.trim_start_matches('<').trim_end_matches('>');
        (dep.starts_with("linux-image-") && dep != META_PACKAGE).then(|| dep.to_owned())
    })
}

/// Runs `sh -c script` (arguments `$1`..) under [`TOOL_TIMEOUT`]; its stdout, or why not.
fn sh(script: &str, args: &[&str]) -> Result<String, String> {
    let mut argv: Vec<std::ffi::OsString> = vec!["-c".into(), script.into(), "sh".into()];
    argv.extend(args.iter().map(Into::into));
    let f = run_with_timeout(Path::new("/bin/sh"), &argv, TOOL_TIMEOUT, false)
        .map_err(|e| format!("cannot run `{script}`: {e}"))?;
    let stderr = String::from_utf8_lossy(&f.stderr);
    match f.termination {
        Termination::Exited(s) if s.success() => Ok(String::from_utf8_lossy(&f.stdout).into()),
        Termination::Exited(s) => Err(format!(
            "`{script}` {args:?} failed ({s}): {}",
            stderr.lines().last().unwrap_or("").trim()
        )),
        Termination::TimedOut => Err(format!(
            "`{script}` {args:?} took more than {} s",
            TOOL_TIMEOUT.as_secs()
        )),
    }
}

/// Fetches Debian's cloud kernel into `<cache>/linux` (see the module doc); its image.
pub fn fetch(cache: &Path) -> Result<PathBuf, String> {
    let d = dir(cache);
    std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    let depends = sh("exec apt-cache depends \"$1\"", &[META_PACKAGE])?;
    let package = versioned_package(&depends)
        .ok_or_else(|| format!("`apt-cache depends {META_PACKAGE}` names no linux-image"))?;
    let work = d.join(format!("fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let w = work.to_string_lossy().into_owned();
    let result = sh(
        "cd \"$1\" && apt-get download \"$2\" && dpkg-deb -x \"$2\"_*.deb root",
        &[&w, &package],
    )
    .and_then(|_| keep_image(&work.join("root").join("boot"), &d));
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// Copies `vmlinuz-*` and `config-*` from an unpacked package's `boot` into `dest`.
fn keep_image(boot: &Path, dest: &Path) -> Result<PathBuf, String> {
    let mut image = None;
    let entries =
        std::fs::read_dir(boot).map_err(|e| format!("cannot read {}: {e}", boot.display()))?;
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("vmlinuz-") || name.starts_with("config-") {
            let to = dest.join(&name);
            std::fs::copy(e.path(), &to)
                .map_err(|err| format!("cannot copy {name} to {}: {err}", dest.display()))?;
            if name.starts_with("vmlinuz-") {
                image = Some(to);
            }
        }
    }
    image.ok_or_else(|| format!("no vmlinuz-* in {}", boot.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meta_package_resolves_to_its_versioned_image() {
        let out = "linux-image-cloud-amd64\n  Depends: linux-image-6.1.0-48-cloud-amd64\n";
        assert_eq!(
            versioned_package(out).as_deref(),
            Some("linux-image-6.1.0-48-cloud-amd64")
        );
        assert_eq!(versioned_package("linux-image-cloud-amd64\n"), None);
        assert_eq!(
            versioned_package("x\n  Depends: <linux-image-6.1.0-9-cloud-amd64>\n").as_deref(),
            Some("linux-image-6.1.0-9-cloud-amd64")
        );
    }

    #[test]
    fn the_newest_cached_image_is_chosen() {
        let cache = std::env::temp_dir().join(format!("kx-linux-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        assert_eq!(cached(&cache), None);
        std::fs::create_dir_all(dir(&cache)).unwrap();
        for f in [
            "vmlinuz-6.1.0-9-cloud-amd64",
            "vmlinuz-6.1.0-48-cloud-amd64",
            "config-6.1.0-99-cloud-amd64",
        ] {
            std::fs::write(dir(&cache).join(f), b"x").unwrap();
        }
        // By version, not by name ("9" < "48"); a config is not an image.
        assert_eq!(
            cached(&cache),
            Some(dir(&cache).join("vmlinuz-6.1.0-48-cloud-amd64"))
        );
        let _ = std::fs::remove_dir_all(&cache);
    }
}
