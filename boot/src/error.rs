//! The one error type of the build steps: each variant says which step failed and on what.
//!
//! The runner maps these onto its own exit codes (missing packages, build failure, missing
//! file), so they are typed rather than strings.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

/// What went wrong while building the kernel or its image.
#[derive(Debug)]
pub enum BootError {
    /// Host tools or files are missing and could not be installed.
    MissingPackages {
        /// What is missing (tool names, file paths).
        missing: Vec<String>,
        /// The Debian packages that provide them.
        packages: Vec<&'static str>,
        /// Why they were not installed automatically.
        why_not_installed: String,
    },
    /// A program could not be started at all.
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: io::Error,
    },
    /// A program ran and failed.
    CommandFailed {
        /// The command line, for the message.
        command: String,
        /// Its exit status.
        status: ExitStatus,
        /// What it printed on stderr (when captured), trimmed.
        stderr: String,
    },
    /// A file could not be read or written.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A file that a step should have produced (or that the user named) does not exist.
    NotFound(PathBuf),
    /// The directory given as the workspace does not look like this workspace.
    NotAWorkspace(PathBuf),
    /// The kernel command line contains a character GRUB's script language would interpret.
    BadCmdlineChar {
        /// The command line.
        cmdline: String,
        /// The offending character.
        ch: char,
    },
}

/// Process exit status of a host tool for bad arguments (shared by `boot` and `kx`).
pub const EXIT_USAGE: i32 = 2;
/// Process exit status when a file the user named (or a step produced) does not exist.
pub const EXIT_NOT_FOUND: i32 = 3;
/// Process exit status when host packages are missing and were not installed.
pub const EXIT_MISSING_PACKAGES: i32 = 4;
/// Process exit status when building the kernel or its image failed.
pub const EXIT_BUILD_FAILED: i32 = 5;

impl BootError {
    /// The exit status a tool ends with when this error stops it.
    #[must_use]
    pub fn exit_status(&self) -> i32 {
        match self {
            BootError::MissingPackages { .. } => EXIT_MISSING_PACKAGES,
            BootError::NotFound(_) | BootError::NotAWorkspace(_) => EXIT_NOT_FOUND,
            BootError::BadCmdlineChar { .. } => EXIT_USAGE,
            BootError::Spawn { .. } | BootError::CommandFailed { .. } | BootError::Io { .. } => {
                EXIT_BUILD_FAILED
            }
        }
    }

    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        BootError::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for BootError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BootError::MissingPackages {
                missing,
                packages,
                why_not_installed,
            } => write!(
                f,
                "missing host tools: {}; install the Debian packages with\n  \
                 sudo apt-get update && sudo apt-get install -y {}\n({why_not_installed})",
                missing.join(", "),
                packages.join(" ")
            ),
            BootError::Spawn { program, source } => {
                write!(f, "could not start `{program}`: {source}")
            }
            BootError::CommandFailed {
                command,
                status,
                stderr,
            } => {
                write!(f, "`{command}` failed ({status})")?;
                if !stderr.is_empty() {
                    write!(f, ":\n{stderr}")?;
                }
                Ok(())
            }
            BootError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            BootError::NotFound(p) => write!(f, "{}: no such file", p.display()),
            BootError::NotAWorkspace(p) => write!(
                f,
                "{} is not the kernel workspace (no Cargo.toml with kernel/ next to it)",
                p.display()
            ),
            BootError::BadCmdlineChar { cmdline, ch } => write!(
                f,
                "kernel command line `{cmdline}` contains {ch:?}, which GRUB's script language \
                 would interpret; use key=value words of letters, digits and , . _ - / : +"
            ),
        }
    }
}

impl std::error::Error for BootError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BootError::Spawn { source, .. } | BootError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
