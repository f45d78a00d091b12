//! Every way a run can go wrong is reported as itself: a panic as the panic code, a page
//! fault and a stack overflow as the exception code with their details on the console, a bad
//! command line as the bad-command-line code with its message, and a hang as the runner's
//! timeout (never as a kernel code); `exit=halt` halts with the outcome on the console.
use abi::ExitCode;
use qemu::Outcome;
use std::time::Duration;
use tests::{assert_exit, boot_direct, describe};

const CRASH_TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn panic_gives_the_panic_code() {
    let out = boot_direct("run=panic", CRASH_TIMEOUT);
    assert_exit(&out, ExitCode::Panic);
}

#[test]
fn page_fault_gives_the_exception_code_and_cr2() {
    let out = boot_direct("run=pagefault", CRASH_TIMEOUT);
    assert_exit(&out, ExitCode::Exception);
    assert!(out.serial.contains("CR2"), "{}", describe(&out));
}

#[test]
fn stack_overflow_is_a_reported_double_fault() {
    let out = boot_direct("run=overflow", CRASH_TIMEOUT);
    assert_exit(&out, ExitCode::Exception);
    assert!(
        out.serial.to_ascii_lowercase().contains("double fault"),
        "{}",
        describe(&out)
    );
}

#[test]
fn bad_command_line_gives_its_code_and_message() {
    let out = boot_direct("bogus=1", CRASH_TIMEOUT);
    assert_exit(&out, ExitCode::BadCmdline);
    // What was wrong (the abi's own wording) and what is accepted.
    assert!(
        out.serial.contains("unknown key `bogus`"),
        "{}",
        describe(&out)
    );
    for (key, _) in abi::cmdline::ACCEPTED {
        assert!(
            out.serial.contains(key),
            "`{key}` not listed\n{}",
            describe(&out)
        );
    }
}

#[test]
fn bad_value_names_the_key() {
    let out = boot_direct("run=test cpus=0", CRASH_TIMEOUT);
    assert_exit(&out, ExitCode::BadCmdline);
    assert!(
        out.serial.contains("bad value `0` for `cpus`"),
        "{}",
        describe(&out)
    );
}

#[test]
fn hang_is_killed_by_the_timeout() {
    let timeout = Duration::from_secs(5);
    let out = boot_direct("run=hang", timeout);
    assert_eq!(out.outcome, Outcome::Timeout(timeout), "{}", describe(&out));
    // It did boot: the hang is the kernel's, not a QEMU that never started.
    assert!(!out.serial.is_empty(), "{}", describe(&out));
}

/// `exit=halt` (what a real machine does): under QEMU too the kernel prints its outcome and
/// halts instead of writing the exit device, so QEMU runs until the runner's deadline, with
/// the outcome readable on the console; `exit=qemu` and the default write the device.
#[test]
fn exit_halt_prints_the_outcome_and_halts() {
    let timeout = Duration::from_secs(15);
    let out = boot_direct("run=summary exit=halt", timeout);
    assert_eq!(out.outcome, Outcome::Timeout(timeout), "{}", describe(&out));
    assert!(
        out.serial.contains(
            "kernel finished: success (exit code 0x10). The CPU is halted; reset or power off."
        ),
        "{}",
        describe(&out)
    );
    assert!(out.serial.contains("KEXIT success"), "{}", describe(&out));
    let out = boot_direct("run=summary exit=qemu", CRASH_TIMEOUT);
    assert_exit(&out, ExitCode::Success);
    assert!(
        !out.serial.contains("The CPU is halted"),
        "{}",
        describe(&out)
    );
}
