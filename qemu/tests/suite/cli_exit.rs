//! The `kx` binary's own exit codes for bad arguments and missing files (no QEMU, no build):
//! each kind of mistake ends with its documented status and a message on stderr.

use crate::common;
use qemu::RunnerExit;
use std::process::Command;

fn kx(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kx"))
        .args(args)
        .output()
        .expect("kx runs");
    (
        out.status.code().expect("kx exits normally"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_arguments_exit_with_usage() {
    for (args, msg) in [
        (&["--frobnicate"][..], "unexpected argument '--frobnicate'"),
        (&["fly"][..], "unrecognized subcommand 'fly'"),
        (
            &["run", "--smp", "many"][..],
            "invalid value 'many' for '--smp <N>': not a number in 1..=256",
        ),
        (
            &["run", "--mem"][..],
            "a value is required for '--mem <MIB>'",
        ),
        (&["run", "--mode", "floppy"][..], "unknown mode `floppy`"),
        (&["run", "--image", "x.img"][..], "--image does not apply"),
        (
            &["bench", "--cpus", "2,1"][..],
            "invalid value '2,1' for '--cpus <LIST>': not accepted",
        ),
        (
            &["bench", "--smp", "2", "--cpus", "1,2,4"][..],
            "--cpus: 4 CPUs asked for",
        ),
        (
            &["bench", "--rounds", "0"][..],
            "invalid value '0' for '--rounds <N>': not accepted (expected 1..=100",
        ),
        (
            &["bench", "--seconds", "1e3"][..],
            "invalid value '1e3' for '--seconds <S>': not accepted",
        ),
        (
            &["bench", "--memcgs", "0"][..],
            "invalid value '0' for '--memcgs <LIST>': not accepted",
        ),
        (
            &["bench", "--scenarios", "seed9"][..],
            "invalid value 'seed9' for '--scenarios <LIST>': no scenario `seed9` (there are: \
             seed001-faultfree, ",
        ),
        (
            &["bench", "--scenarios", "Seed9"][..],
            "invalid value 'Seed9' for '--scenarios <LIST>': not accepted",
        ),
        (
            &["bench", "--rounds"][..],
            "a value is required for '--rounds <N>'",
        ),
        (&["run", "--quick"][..], "unexpected argument '--quick'"),
        (
            &["compare"][..],
            "required arguments were not provided: <DIR>",
        ),
        (
            &["import"][..],
            "required arguments were not provided: <FILE>",
        ),
        (
            &["import", "a.log", "--smp", "2"][..],
            "unexpected argument '--smp'",
        ),
        (
            &["run", "--nodes", "0"][..],
            "invalid value '0' for '--nodes <N|host>': not a number in 1..=64",
        ),
        (
            &["test", "--smp", "2", "--nodes", "4"][..],
            "--nodes 4: more nodes than vCPUs (--smp 2)",
        ),
        (
            &["bench", "--host", "--smp", "4"][..],
            "the argument '--host' cannot be used with '--smp <N>'",
        ),
        (&["image", "--smp", "2"][..], "unexpected argument '--smp'"),
        (
            &["import", "a.log", "b.log"][..],
            "unexpected argument `b.log`",
        ),
        (
            &["summary", "--smp", "4", "--mem", "32", "--nodes", "4"][..],
            "gives each node 8 MiB, less than the 16 MiB a node needs",
        ),
    ] {
        let (code, err) = kx(args);
        assert_eq!(code, RunnerExit::Usage.status(), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
        // The error and one line pointing at the help, not the whole usage.
        assert!(err.contains("`kx help`"), "{args:?}: {err}");
        assert!(!err.contains("Usage:"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 2, "{args:?}: {err}");
    }
}

#[test]
fn missing_files_exit_with_not_found() {
    for args in [
        &["run", "--kernel", "/no/such/kernel32.elf"][..],
        &["run", "--mode", "usb-uefi", "--image", "/no/such/kx.img"][..],
        &["import", "/no/such/serial.log"][..],
        &["compare", "/no/such/results"][..],
    ] {
        let (code, err) = kx(args);
        assert_eq!(code, RunnerExit::NotFound.status(), "{args:?}: {err}");
        assert!(err.contains("/no/such/"), "{err}");
    }
}

#[test]
fn help_succeeds_and_lists_exit_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_kx"))
        .arg("help")
        .output()
        .expect("kx runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("exit status:") && text.contains("timeout"));
}

#[test]
fn each_command_has_its_own_help() {
    for args in [&["help", "bench"][..], &["bench", "--help"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_kx"))
            .args(args)
            .output()
            .expect("kx runs");
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("--scenarios <LIST>"), "{args:?}: {text}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kx"))
        .args(["run", "--help"])
        .output()
        .expect("kx runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--smp <N>") && !text.contains("--scenarios"),
        "{text}"
    );
}

/// `kx bench --strict` on a busy host stops before booting, with its own status: a busy
/// loop (a child of this test, so another process to `kx`) keeps a core busy while `kx`
/// samples the host. The kernel file is never booted (any existing file passes the check).
#[test]
fn strict_refuses_a_busy_host() {
    let _cores = common::host_to_itself();
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("sh runs");
    // Let the loop get going before kx samples.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let out = Command::new(env!("CARGO_BIN_EXE_kx"))
        .args([
            "bench",
            "--strict",
            "--accel",
            "tcg",
            "--smp",
            "1",
            "--kernel",
            concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
            "--quick",
        ])
        .output();
    let _ = busy.kill();
    let _ = busy.wait();
    let out = out.expect("kx runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(RunnerExit::HostBusy.status()),
        "{err}"
    );
    assert_eq!(RunnerExit::HostBusy.status(), 15);
    assert!(err.contains("the host is BUSY"), "{err}");
    assert!(
        err.contains("--strict: not starting on a busy host"),
        "{err}"
    );
    assert!(!err.contains("pinning:"), "nothing booted: {err}");
}
