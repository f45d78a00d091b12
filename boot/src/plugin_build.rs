//! The coherence plugin (`coherence/plugin`, `libkx_coherence.so`), built for the host the
//! way QEMU loads it: a release `cdylib` with the clean environment of [`crate::cargo_env`],
//! in a target dir of its own (`target-kernel/plugin`), so that a surrounding `cargo test`
//! or `cargo clippy` neither waits for it nor changes its flags.

use crate::tool::run_inherit;
use crate::{BootError, Workspace};
use std::path::PathBuf;

/// The package and the file cargo makes of it.
pub const PACKAGE: &str = "coherence-plugin";
/// The plugin's file name.
pub const FILE: &str = "libkx_coherence.so";

/// Where the plugin lands: `target-kernel/plugin/release/libkx_coherence.so`.
#[must_use]
pub fn plugin_path(ws: &Workspace) -> PathBuf {
    ws.kernel_target_dir()
        .join("plugin")
        .join("release")
        .join(FILE)
}

/// Builds the plugin (quietly when `quiet`) and returns its path.
pub fn build_plugin(ws: &Workspace, quiet: bool) -> Result<PathBuf, BootError> {
    let mut cmd = crate::cargo_env::clean_cargo();
    cmd.current_dir(ws.root())
        .args(["build", "--release", "-p", PACKAGE, "--target-dir"])
        .arg(ws.kernel_target_dir().join("plugin"));
    if quiet {
        cmd.arg("--quiet");
    }
    run_inherit(&mut cmd)?;
    let path = plugin_path(ws);
    if !path.is_file() {
        return Err(BootError::NotFound(path));
    }
    Ok(path)
}
