//! The `kx` binary's own exit codes for bad arguments and missing files (no QEMU, no build):
//! each kind of mistake ends with its documented status and a message on stderr.

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
        (&["--frobnicate"][..], "unknown option `--frobnicate`"),
        (&["fly"][..], "unknown command `fly`"),
        (
            &["run", "--smp", "many"][..],
            "--smp: `many` is not a number",
        ),
        (&["run", "--mem"][..], "--mem needs a value"),
        (&["run", "--mode", "floppy"][..], "unknown mode `floppy`"),
        (&["run", "--image", "x.img"][..], "--image does not apply"),
        (
            &["bench", "--cpus", "2,1"][..],
            "--cpus: `2,1` is not accepted",
        ),
        (
            &["bench", "--smp", "2", "--cpus", "1,2,4"][..],
            "--cpus: 4 CPUs asked for",
        ),
        (
            &["bench", "--rounds", "0"][..],
            "--rounds: `0` is not accepted (expected 1..=100",
        ),
        (
            &["bench", "--seconds", "1e3"][..],
            "--seconds: `1e3` is not accepted",
        ),
        (
            &["bench", "--memcgs", "0"][..],
            "--memcgs: `0` is not accepted",
        ),
        (
            &["bench", "--scenarios", "seed9"][..],
            "--scenarios: `seed9` is not accepted",
        ),
        (&["bench", "--rounds"][..], "--rounds needs a value"),
        (&["run", "--quick"][..], "--quick is not used by `kx run`"),
        (
            &["compare"][..],
            "compare needs at least one results directory",
        ),
        (&["import"][..], "import needs the serial log"),
        (
            &["import", "a.log", "--smp", "2"][..],
            "--smp is not used by `kx import`",
        ),
        (
            &["run", "--nodes", "0"][..],
            "--nodes: `0` is not a number in 1..=64",
        ),
        (
            &["test", "--smp", "2", "--nodes", "4"][..],
            "--nodes 4: more nodes than vCPUs (--smp 2)",
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
        assert!(!err.contains("usage: kx"), "{args:?}: {err}");
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

/// `kx bench --strict` on a busy host stops before booting, with its own status: a busy
/// loop (a child of this test, so another process to `kx`) keeps a core busy while `kx`
/// samples the host. The kernel file is never booted (any existing file passes the check).
#[test]
fn strict_refuses_a_busy_host() {
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
