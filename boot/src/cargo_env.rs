//! A `cargo` command with the environment of a surrounding cargo run removed.
//!
//! `cargo test` and `cargo run` export variables meant for the crate they run (`CARGO_PKG_*`,
//! `CARGO_MANIFEST_DIR`, ...), and users or tools add build settings (`RUSTFLAGS`,
//! `CARGO_TARGET_DIR`, `CARGO_BUILD_TARGET`, clippy's `RUSTC_WORKSPACE_WRAPPER`, the
//! `CARGO_MAKEFLAGS` jobserver). Any of these would change or break the kernel build, so the
//! nested build drops every `CARGO_*` variable except the few that only say where cargo's
//! home and registry are and how to reach the network, plus the rustc wrappers and flags.

use std::ffi::OsStr;
use std::process::Command;

/// `CARGO_*` variables the nested build keeps: location of cargo's home and registry access.
const KEPT_PREFIXES: &[&str] = &[
    "CARGO_HOME",
    "CARGO_NET_",
    "CARGO_HTTP_",
    "CARGO_REGISTRIES_",
    "CARGO_REGISTRY_",
    "CARGO_TERM_",
];

/// Non-`CARGO_*` variables that change how rustc is invoked or what it is given.
const DROPPED: &[&str] = &[
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC",
    "RUSTDOC",
    "MAKEFLAGS",
    "MFLAGS",
];

/// Whether the nested kernel build must not inherit the variable `name`.
#[must_use]
pub fn is_inherited_build_var(name: &str) -> bool {
    if DROPPED.contains(&name) || name.starts_with("__CARGO") {
        return true;
    }
    name.starts_with("CARGO_")
        && !KEPT_PREFIXES
            .iter()
            .any(|p| name == *p || (p.ends_with('_') && name.starts_with(p)))
}

/// `cargo` (the one running us, if any) with every inherited build variable removed.
#[must_use]
pub fn clean_cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_inherited_build_var) {
            cmd.env_remove(&name);
        }
    }
    cmd.env_remove(OsStr::new("CARGO"));
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_build_settings_and_cargo_run_vars() {
        for v in [
            "CARGO_TARGET_DIR",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_MAKEFLAGS",
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_PROFILE_RELEASE_DEBUG",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
            "RUSTFLAGS",
            "RUSTC_WORKSPACE_WRAPPER",
            "__CARGO_FIX_PLZ",
        ] {
            assert!(is_inherited_build_var(v), "{v} should be dropped");
        }
    }

    #[test]
    fn keeps_home_network_and_unrelated_vars() {
        for v in [
            "CARGO_HOME",
            "CARGO_NET_OFFLINE",
            "CARGO_HTTP_PROXY",
            "CARGO_REGISTRIES_CRATES_IO_PROTOCOL",
            "CARGO_TERM_COLOR",
            "PATH",
            "HOME",
            "RUSTUP_TOOLCHAIN",
            "CARGO_HOMEX_NOT_REALLY",
        ] {
            let expect_dropped = v == "CARGO_HOMEX_NOT_REALLY";
            assert_eq!(is_inherited_build_var(v), expect_dropped, "{v}");
        }
    }
}
