//! Exit codes: one enum for the kernel (which writes them) and the runner (which reads them).
//!
//! QEMU's `isa-debug-exit` device turns a write of `v` into the process exit status
//! `(v << 1) | 1`. QEMU itself exits 1 on its own errors, so no kernel outcome may map to 1
//! (that would need `v == 0`), and every kernel status is odd. A runner timeout is not a kernel
//! outcome: the runner reports it separately.

/// How a kernel run ended. The discriminant is the value written to the exit port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ExitCode {
    /// Everything requested ran and passed.
    Success = 0x10,
    /// At least one in-kernel test failed.
    TestFailure = 0x11,
    /// A Rust panic.
    Panic = 0x12,
    /// An unexpected CPU exception (page fault, double fault, ...).
    Exception = 0x13,
    /// The command line was not understood; nothing ran.
    BadCmdline = 0x14,
    /// A requested operation could not get the memory it needed (boot-time).
    OutOfMemory = 0x15,
}

impl ExitCode {
    /// Every code, for tables and exhaustive tests.
    pub const ALL: [ExitCode; 6] = [
        ExitCode::Success,
        ExitCode::TestFailure,
        ExitCode::Panic,
        ExitCode::Exception,
        ExitCode::BadCmdline,
        ExitCode::OutOfMemory,
    ];

    /// The byte the kernel writes to the `isa-debug-exit` port.
    #[must_use]
    pub const fn port_value(self) -> u8 {
        self as u8
    }

    /// The exit status the QEMU process ends with after [`Self::port_value`] is written.
    #[must_use]
    pub const fn qemu_status(self) -> i32 {
        ((self as i32) << 1) | 1
    }

    /// Decodes a QEMU process exit status, if it is one of ours.
    #[must_use]
    pub fn from_qemu_status(status: i32) -> Option<ExitCode> {
        Self::ALL.into_iter().find(|c| c.qemu_status() == status)
    }

    /// Short lower-case name, as printed in result lines and the README table.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ExitCode::Success => "success",
            ExitCode::TestFailure => "test-failure",
            ExitCode::Panic => "panic",
            ExitCode::Exception => "exception",
            ExitCode::BadCmdline => "bad-cmdline",
            ExitCode::OutOfMemory => "out-of-memory",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_code_collides_with_qemu_error_or_each_other() {
        let mut seen = std::collections::HashSet::new();
        for c in ExitCode::ALL {
            assert_ne!(c.qemu_status(), 1, "{c:?} maps to QEMU's own error status");
            assert_ne!(c.qemu_status(), 0);
            assert!(seen.insert(c.qemu_status()));
            assert_eq!(ExitCode::from_qemu_status(c.qemu_status()), Some(c));
        }
        assert_eq!(ExitCode::from_qemu_status(1), None);
        assert_eq!(ExitCode::Success.qemu_status(), 33);
    }
}
