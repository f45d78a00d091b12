//! Where the workspace and its build outputs live.
//!
//! The root is found from this crate's own manifest directory (fixed at compile time), so the
//! tools work from any current directory; `KX_WORKSPACE` overrides it, and a moved checkout
//! is found from the current directory. Kernel artefacts go to
//! `<root>/target-kernel/` (never the host `target/`, so host and kernel builds do not
//! invalidate each other) and user-facing images to `<root>/out/`; both are gitignored.

use crate::BootError;
use std::path::{Path, PathBuf};

/// The kernel workspace on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// `$KX_WORKSPACE` when set; else the workspace this crate was built from; else (the
    /// checkout moved since) the nearest ancestor of the current directory that is one.
    pub fn locate() -> Result<Self, BootError> {
        if let Some(dir) = std::env::var_os("KX_WORKSPACE") {
            return Self::at(PathBuf::from(dir));
        }
        let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        Self::at(&built_from).or_else(|err| {
            let cwd = std::env::current_dir().map_err(|e| BootError::io(".", e))?;
            cwd.ancestors().find_map(|d| Self::at(d).ok()).ok_or(err)
        })
    }

    /// The workspace rooted at `root`, checked to contain `Cargo.toml` and `kernel/`.
    pub fn at(root: impl Into<PathBuf>) -> Result<Self, BootError> {
        let root = root.into();
        let root = root.canonicalize().unwrap_or(root);
        if root.join("Cargo.toml").is_file() && root.join("kernel").join("Cargo.toml").is_file() {
            Ok(Workspace { root })
        } else {
            Err(BootError::NotAWorkspace(root))
        }
    }

    /// The workspace root (where `Cargo.toml` is).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The kernel's cargo target dir: `<root>/target-kernel`.
    #[must_use]
    pub fn kernel_target_dir(&self) -> PathBuf {
        self.root.join("target-kernel")
    }

    /// Scratch space for images and firmware copies: `<root>/target-kernel/work`.
    #[must_use]
    pub fn work_dir(&self) -> PathBuf {
        self.kernel_target_dir().join("work")
    }

    /// Where user-facing images go by default: `<root>/out`.
    #[must_use]
    pub fn out_dir(&self) -> PathBuf {
        self.root.join("out")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_this_workspace() {
        let ws = Workspace::locate().unwrap();
        assert!(ws.root().join("kernel").is_dir());
        assert!(ws.kernel_target_dir().ends_with("target-kernel"));
    }

    #[test]
    fn rejects_other_dirs() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        assert!(matches!(
            Workspace::at(&dir),
            Err(BootError::NotAWorkspace(_))
        ));
    }
}
