//! The kernel reads the benchmark's command-line keys with the same strict parser as every
//! other key: a benchmark key without `run=bench`, or a value it does not accept, stops the
//! kernel with the bad-command-line code and a message naming the key (the runner's `kx
//! bench` validates through the same parser before it boots); so does a CPU count above the
//! CPUs that came online.
use abi::ExitCode;
use std::time::Duration;
use tests::{assert_exit, boot_direct, describe};

const TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn bench_keys_need_run_bench() {
    let out = boot_direct("run=summary rounds=3", TIMEOUT);
    assert_exit(&out, ExitCode::BadCmdline);
    assert!(
        out.serial.contains("`rounds=` needs `run=bench`"),
        "{}",
        describe(&out)
    );
}

#[test]
fn bad_bench_values_name_the_key() {
    for (line, msg) in [
        (
            "run=bench bench_cpus=2,1",
            "bad value `2,1` for `bench_cpus`",
        ),
        (
            "run=bench scenarios=seed001-faultfree,Bogus",
            "bad value `seed001-faultfree,Bogus` for `scenarios`",
        ),
        // Well formed, but not in the catalog: the benchmark's request refuses it.
        (
            "run=bench scenarios=seed001-faultfree,bogus",
            "bad command line: scenarios: no scenario `bogus` (there are: seed001-faultfree, ",
        ),
        (
            "run=bench rounds=6",
            "rounds=6 is not a multiple of instances=4",
        ),
        ("run=bench instances=0", "bad value `0` for `instances`"),
    ] {
        let out = boot_direct(line, TIMEOUT);
        assert_exit(&out, ExitCode::BadCmdline);
        assert!(out.serial.contains(msg), "{line}: {}", describe(&out));
    }
}

#[test]
fn more_cpus_than_online_is_a_bad_command_line() {
    let out = boot_direct("run=bench scenarios=limit bench_cpus=1,4 quick=1", TIMEOUT);
    assert_exit(&out, ExitCode::BadCmdline);
    assert!(
        out.serial
            .contains("bad command line: bench_cpus asks for 4 CPUs, but only 2 are online"),
        "{}",
        describe(&out)
    );
}
