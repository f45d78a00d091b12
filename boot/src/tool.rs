//! Running the host programs the build needs (cargo, objcopy, grub-mkrescue) with errors that
//! name the command, and looking programs up on `PATH`.

use crate::BootError;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Shell-like rendering of a command, for messages.
#[must_use]
pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `cmd` with inherited stdout/stderr and fails unless it exits 0.
pub fn run_inherit(cmd: &mut Command) -> Result<(), BootError> {
    let status = cmd.status().map_err(|source| spawn_error(cmd, source))?;
    if status.success() {
        Ok(())
    } else {
        Err(BootError::CommandFailed {
            command: describe(cmd),
            status,
            stderr: String::new(),
        })
    }
}

/// Runs `cmd` with captured output; on failure the error carries its stderr.
pub fn run_captured(cmd: &mut Command) -> Result<(), BootError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| spawn_error(cmd, source))?;
    if out.status.success() {
        Ok(())
    } else {
        let mut stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        if stderr.is_empty() {
            stderr = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        }
        Err(BootError::CommandFailed {
            command: describe(cmd),
            status: out.status,
            stderr,
        })
    }
}

fn spawn_error(cmd: &Command, source: std::io::Error) -> BootError {
    BootError::Spawn {
        program: cmd.get_program().to_string_lossy().into_owned(),
        source,
    }
}

/// The first executable called `name` on `PATH`.
#[must_use]
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_but_not_nonsense() {
        assert!(find_on_path("sh").is_some());
        assert!(find_on_path("no-such-tool-kx-0x5f").is_none());
    }

    #[test]
    fn failing_command_is_reported_with_stderr() {
        let err =
            run_captured(Command::new("sh").args(["-c", "echo oops >&2; exit 3"])).unwrap_err();
        match &err {
            BootError::CommandFailed { stderr, .. } => assert_eq!(stderr, "oops"),
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().contains("sh -c"));
        assert!(matches!(
            run_captured(&mut Command::new("no-such-tool-kx-0x5f")),
            Err(BootError::Spawn { .. })
        ));
    }
}
