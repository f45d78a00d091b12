//! Ending a run: print the outcome, then leave through QEMU's exit device or halt.
//!
//! Under QEMU (recognised by CPUID's hypervisor vendor, or forced with `exit=qemu`) the
//! outcome becomes QEMU's exit status (see [`abi::ExitCode`]). On a real machine there is no
//! such device: the outcome is printed on serial and screen and the CPU halts, so the result
//! stays readable (`exit=halt` forces this under QEMU too).

use crate::arch::cpu;
use abi::ExitCode;
use abi::cmdline::ExitMethod;
use core::sync::atomic::{AtomicU8, Ordering};

static METHOD: AtomicU8 = AtomicU8::new(0);

/// Sets how [`exit`] reports (from the command line).
pub fn set_method(m: ExitMethod) {
    let v = match m {
        ExitMethod::Auto => 0,
        ExitMethod::Qemu => 1,
        ExitMethod::Halt => 2,
    };
    METHOD.store(v, Ordering::Relaxed);
}

/// Reports `code` and stops the machine. Safe to call from panic and exception paths: it
/// never waits for the console lock.
pub fn exit(code: ExitCode) -> ! {
    crate::console::emergency_write(format_args!("{} {}\n", abi::report::EXIT_TAG, code.name()));
    let use_qemu = match METHOD.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => cpu::platform().is_qemu(),
    };
    if use_qemu {
        cpu::qemu_exit(code.port_value());
    }
    crate::console::emergency_write(format_args!(
        "\nkernel finished: {} (exit code {:#x}). The CPU is halted; reset or power off.\n",
        code.name(),
        code.port_value()
    ));
    cpu::halt_forever()
}
