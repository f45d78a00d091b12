//! Which accelerator QEMU runs under: what the user asked for ([`AccelRequest`], `--accel`)
//! and what a launch uses ([`Accel`]), decided by the KVM probe ([`probe`]).
//!
//! The two types sit below the QEMU command line ([`crate::launch`]) and the placement
//! record, which name the accelerator; the probe sits above them, since it boots a launch.

pub mod probe;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What the user asked for (`--accel`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccelRequest {
    /// KVM when the probe says it works, TCG otherwise.
    #[default]
    Auto,
    /// KVM, or an error saying why not.
    Kvm,
    /// TCG, without probing.
    Tcg,
}

impl FromStr for AccelRequest {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(AccelRequest::Auto),
            "kvm" => Ok(AccelRequest::Kvm),
            "tcg" => Ok(AccelRequest::Tcg),
            _ => Err(format!("--accel: `{s}` is not one of auto, kvm, tcg")),
        }
    }
}

/// The accelerator a launch uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// QEMU's emulator.
    #[default]
    Tcg,
    /// The host's KVM.
    Kvm,
}

impl Accel {
    /// QEMU's name for it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }

    /// `-accel NAME -cpu MODEL`: the host's CPU with its PMU under KVM, `max` under TCG.
    #[must_use]
    pub fn args(self) -> [&'static str; 4] {
        match self {
            Accel::Tcg => ["-accel", "tcg", "-cpu", "max"],
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host,pmu=on"],
        }
    }
}

impl fmt::Display for Accel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
