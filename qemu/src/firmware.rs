//! OVMF's variable store: every UEFI run gets its own writable copy.
//!
//! The firmware code is mapped read-only from the system file; the variable store must be
//! writable (OVMF records boot entries in it), and sharing one file between runs would let
//! one boot's NVRAM change the next and make parallel runs fight over QEMU's file lock. So
//! each run copies the template into a private directory that is removed when the run ends.

use crate::RunError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A private copy of the OVMF variable store, deleted on drop.
#[derive(Debug)]
pub struct PrivateVars {
    dir: PathBuf,
    file: PathBuf,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl PrivateVars {
    /// Copies `template` into a fresh directory under `parent`.
    pub fn copy_from(template: &Path, parent: &Path) -> Result<Self, RunError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("ovmf-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| RunError::io(&dir, e))?;
        let file = dir.join("OVMF_VARS.fd");
        // Remove the directory again if the copy fails.
        let vars = PrivateVars { dir, file };
        std::fs::copy(template, &vars.file).map_err(|e| RunError::io(template, e))?;
        let mut perms = std::fs::metadata(&vars.file)
            .map_err(|e| RunError::io(&vars.file, e))?
            .permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&vars.file, perms).map_err(|e| RunError::io(&vars.file, e))?;
        Ok(vars)
    }

    /// The writable file to give QEMU as the second pflash.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.file
    }
}

impl Drop for PrivateVars {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_is_private_writable_and_removed() {
        let parent = std::env::temp_dir().join(format!("kx-fw-test-{}", std::process::id()));
        std::fs::create_dir_all(&parent).unwrap();
        let template = parent.join("template.fd");
        std::fs::write(&template, [0xAAu8; 64]).unwrap();
        let mut p = std::fs::metadata(&template).unwrap().permissions();
        p.set_readonly(true);
        std::fs::set_permissions(&template, p).unwrap();

        let a = PrivateVars::copy_from(&template, &parent).unwrap();
        let b = PrivateVars::copy_from(&template, &parent).unwrap();
        assert_ne!(a.path(), b.path());
        assert_eq!(std::fs::read(a.path()).unwrap(), [0xAAu8; 64]);
        std::fs::write(a.path(), b"changed").unwrap();
        assert_eq!(std::fs::read(b.path()).unwrap(), [0xAAu8; 64]);
        let dir = a.path().parent().unwrap().to_path_buf();
        drop(a);
        assert!(!dir.exists());

        let missing = PrivateVars::copy_from(&parent.join("nope.fd"), &parent);
        assert!(matches!(missing, Err(RunError::Io { .. })));
        drop(b);
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
