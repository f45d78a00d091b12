//! Errors that stop a run before QEMU reports an outcome (bad input, missing tools, I/O).
//!
//! A QEMU run that starts and ends, however badly, is not an error: it is an
//! [`crate::Outcome`]. These are the failures before or around it.

use boot::BootError;
use qrpayload::AssembleError;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a run could not be carried out.
#[derive(Debug)]
pub enum RunError {
    /// Building the kernel or image, or checking host packages, failed.
    Boot(BootError),
    /// QEMU could not be started.
    Spawn(io::Error),
    /// Reading QEMU's output or waiting for it failed.
    Wait(io::Error),
    /// A file could not be copied or created.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A file named on the command line does not exist.
    NotFound(PathBuf),
    /// The mode needs a file the launch does not have (e.g. an image for `uefi`).
    MediumMismatch(String),
    /// A path names the wrong kind of thing (a directory where a file is expected): a
    /// usage error, not a failed build or bad results.
    NotAFile(PathBuf),
    /// An input file that is not what it should be (a `results.json` that does not parse,
    /// a log without a single benchmark record).
    BadInput {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// `--accel kvm` on a host where KVM does not work: what the probe saw.
    KvmUnavailable(String),
    /// `kx import --qr`: the images do not give the whole payload.
    Qr(QrError),
    /// `--coherence` or the cost boot: QEMU cannot load the coherence plugin, or the run
    /// cannot use it (the message says which).
    Plugin(String),
}

impl RunError {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        RunError::Io {
            path: path.into(),
            source,
        }
    }
}

impl From<BootError> for RunError {
    fn from(e: BootError) -> Self {
        RunError::Boot(e)
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Boot(e) => e.fmt(f),
            RunError::Spawn(e) => write!(f, "could not start {}: {e}", boot::host_deps::QEMU),
            RunError::Wait(e) => write!(f, "lost track of QEMU: {e}"),
            RunError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            RunError::NotFound(p) => write!(f, "{}: no such file", p.display()),
            RunError::MediumMismatch(msg) => f.write_str(msg),
            RunError::NotAFile(p) => write!(
                f,
                "{}: is a directory; a file is expected here",
                p.display()
            ),
            RunError::BadInput { path, why } => write!(f, "{}: {why}", path.display()),
            RunError::KvmUnavailable(why) => write!(f, "--accel kvm: {why}"),
            RunError::Qr(e) => e.fmt(f),
            RunError::Plugin(why) => write!(f, "TCG plugin: {why}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Boot(e) => Some(e),
            RunError::Spawn(e) | RunError::Wait(e) | RunError::Io { source: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// Why the images of `kx import --qr` do not give the records (`crate::bench::qr`).
#[derive(Debug)]
pub enum QrError {
    /// An image that cannot be read, or has no readable code of ours.
    Unreadable {
        /// The image.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Codes of the sequence that no image holds.
    Missing(AssembleError),
    /// Codes that contradict each other or a payload that fails its check.
    Corrupt {
        /// The image with the contradicting code (`None`: the payload as a whole).
        path: Option<PathBuf>,
        /// What is wrong.
        why: String,
    },
}

impl fmt::Display for QrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QrError::Unreadable { path, why } => write!(f, "{}: {why}", path.display()),
            QrError::Missing(e) => write!(
                f,
                "{e}: photograph the missing codes (the kernel shows their numbers) and import \
                 again with every image"
            ),
            QrError::Corrupt {
                path: Some(path),
                why,
            } => write!(f, "{}: {why}", path.display()),
            QrError::Corrupt { path: None, why } => f.write_str(why),
        }
    }
}
