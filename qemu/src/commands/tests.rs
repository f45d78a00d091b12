//! The command line, parsed: each subcommand's options, defaults and refusals.
use super::*;
use crate::accel::AccelRequest;
use crate::cli::{BENCH_MEM_MIB, NodesProblem, coherence_scenarios, host_cores};
use crate::mode::Mode;
use boot::Profile;
use std::path::PathBuf;
use std::time::Duration;

/// Clap's one-line message for arguments it refuses.
fn refused<const N: usize>(args: [&str; N]) -> String {
    match parse(args) {
        Err(CliError::Arguments(msg)) => msg,
        other => panic!("{args:?}: {other:?}"),
    }
}

fn help<const N: usize>(args: [&str; N]) -> String {
    match parse(args) {
        Ok(Command::Help(text)) => text,
        other => panic!("{args:?}: {other:?}"),
    }
}

#[test]
fn the_coherence_model_is_set_from_the_command_line_and_checked_there() {
    let c = parse([
        "bench",
        "--coherence",
        "--cache-kib",
        "256",
        "--cache-ways",
        "4",
        "--hot-lines",
        "64",
    ])
    .unwrap();
    let mut model = coherence::Config::new(0x1000, PathBuf::from("/x"));
    c.boot_options().unwrap().bench.coherence_model(&mut model);
    assert_eq!((model.cache_kib, model.ways, model.top), (256, 4, 64));
    let args = model.to_args();
    let back = coherence::Config::parse(args.iter().map(String::as_str)).unwrap();
    assert_eq!(back, model, "the plugin reads back what the runner passes");
    let mut default = coherence::Config::new(0x1000, PathBuf::from("/x"));
    parse(["bench", "--coherence"])
        .unwrap()
        .boot_options()
        .unwrap()
        .clone()
        .bench
        .coherence_model(&mut default);
    assert_eq!(default, coherence::Config::new(0x1000, PathBuf::from("/x")));
    assert!(
        refused(["bench", "--coherence", "--cache-kib", "1000"]).contains("power-of-two"),
        "a geometry the model cannot have is refused before anything is built"
    );
    assert!(refused(["bench", "--coherence", "--cache-ways", "33"]).contains("33"));
    assert!(refused(["bench", "--cache-kib", "256"]).contains("--coherence"));
    assert!(refused(["bench", "--coherence", "--hot-lines", "0"]).contains("0"));
}

#[test]
fn coherence_runs_the_mechanism_scenarios_unless_told_otherwise() {
    let c = parse(["bench", "--coherence", "--quick"]).unwrap();
    let keys = c.boot_options().unwrap().bench.kernel_keys();
    let want = format!("scenarios={}", coherence_scenarios());
    assert_eq!(
        keys,
        [
            want.as_str(),
            "quick=1",
            "objects=1",
            "instances=1",
            "rounds=1"
        ]
    );
    assert!(want.contains("limit") && want.contains("seed001-faultfree"));
    assert!(!want.contains("seed002"), "{want}");
    let c = parse(["bench", "--coherence", "--scenarios", "seed002-reclaim"]).unwrap();
    assert_eq!(
        c.boot_options().unwrap().bench.kernel_keys(),
        [
            "scenarios=seed002-reclaim",
            "memcgs=10,1500",
            "objects=1",
            "instances=1",
            "rounds=1"
        ],
        "one instance of one round: counts need no timing interval"
    );
    assert!(refused(["bench", "--coherence", "--host"]).contains("--host"));
    assert!(refused(["bench", "--coherence", "--linux"]).contains("--linux"));
}

#[test]
fn the_clap_definition_is_consistent() {
    // Every id named in a conflict or override exists, no two options share a name.
    command().debug_assert();
}

#[test]
fn default_is_the_benchmark() {
    assert!(matches!(
        parse(Vec::<String>::new()).unwrap(),
        Command::Bench(_)
    ));
    let c = parse(["--smp", "4"]).unwrap();
    assert!(matches!(&c, Command::Bench(o) if o.smp == 4));
    let c = parse(["--host", "--quick"]).unwrap();
    assert!(matches!(&c, Command::Bench(o) if o.bench.host));
    let c = parse(["--quiet"]).unwrap();
    assert!(matches!(&c, Command::Bench(o) if o.quiet));
}

#[test]
fn run_with_everything() {
    let c = parse([
        "run",
        "--mode=usb-uefi",
        "--smp",
        "8",
        "--mem",
        "1024",
        "--timeout",
        "90",
        "--append",
        "run=test cpus=2",
        "--image",
        "x.img",
        "--debug",
        "--quiet",
    ])
    .unwrap();
    let o = c.boot_options().unwrap().clone();
    assert!(matches!(c, Command::Run(_)));
    assert_eq!(o.mode, Mode::UsbUefi);
    assert_eq!((o.smp, o.mem_mib), (8, 1024));
    assert_eq!(o.timeout, Some(Duration::from_secs(90)));
    assert_eq!(o.append, "run=test cpus=2");
    assert_eq!(o.image, Some(PathBuf::from("x.img")));
    assert_eq!(o.profile, Profile::Debug);
    assert!(o.quiet);
    // The last of --debug and --release wins, as does the last of a repeated option.
    let o = parse(["run", "--debug", "--release", "--smp", "1", "--smp", "3"])
        .unwrap()
        .boot_options()
        .unwrap()
        .clone();
    assert_eq!((o.profile, o.smp), (Profile::Release, 3));
}

#[test]
fn test_names_are_positional() {
    let c = parse(["test", "heap", "paging", "--smp", "1"]).unwrap();
    assert!(matches!(
        &c,
        Command::Test(t) if t.names == ["heap", "paging"] && !t.list && t.options.smp == 1
    ));
    assert!(refused(["run", "heap"]).contains("unexpected argument 'heap'"));
}

#[test]
fn bad_arguments_say_what_is_wrong() {
    assert!(refused(["fly"]).contains("unrecognized subcommand 'fly'"));
    assert!(refused(["run", "--fast"]).contains("unexpected argument '--fast'"));
    assert!(refused(["run", "--smp"]).contains("a value is required for '--smp <N>'"));
    assert!(refused(["run", "--smp", "0"]).contains("not a number in 1..=256"));
    assert!(refused(["run", "--mem", "lots"]).contains("not a number in 32..=65536"));
    assert!(refused(["run", "--timeout=-1"]).contains("not a number in 1..=86400"));
    assert!(refused(["run", "--mode", "floppy"]).contains("unknown mode `floppy`"));
    assert!(refused(["run", "--accel", "hvf"]).contains("not one of auto, kvm, tcg"));
    assert!(refused(["run", "--debug=yes"]).contains("unexpected value 'yes'"));
    assert_eq!(
        refused(["run", "--smp", "x"]),
        "invalid value 'x' for '--smp <N>': not a number in 1..=256"
    );
    assert_eq!(
        parse(["summary", "--accel=kvm"])
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .accel,
        AccelRequest::Kvm
    );
    assert_eq!(
        parse(["test"])
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .accel,
        AccelRequest::Auto
    );
    assert!(matches!(
        parse(["run", "--image", "x.img"]),
        Err(CliError::NotForMode {
            flag: "--image",
            ..
        })
    ));
    assert!(matches!(
        parse(["run", "--mode", "bios", "--kernel", "k.elf"]),
        Err(CliError::NotForMode {
            flag: "--kernel",
            ..
        })
    ));
}

#[test]
fn a_command_takes_only_its_own_options() {
    for (args, flag) in [
        (&["image", "--accel", "tcg"][..], "--accel"),
        (&["compare", "a", "--accel", "tcg"], "--accel"),
        (&["image", "--smp", "2"], "--smp"),
        (&["image", "--nodes", "2"], "--nodes"),
        (&["run", "--out", "x.img"], "--out"),
        (&["run", "--host"], "--host"),
        (&["run", "--quick"], "--quick"),
        (&["run", "--smt"], "--smt"),
        (&["run", "--strict"], "--strict"),
        (&["test", "--rounds", "2"], "--rounds"),
        (&["test", "--linux"], "--linux"),
        (&["summary", "--linux-kernel", "k"], "--linux-kernel"),
        (&["bench", "--qr"], "--qr"),
        (&["import", "--qr", "a.png", "--smp", "2"], "--smp"),
        (&["compare", "a", "--smp", "2"], "--smp"),
    ] {
        let msg = match parse(args.iter().copied()) {
            Err(CliError::Arguments(msg)) => msg,
            other => panic!("{args:?}: {other:?}"),
        };
        assert!(
            msg.contains(&format!("unexpected argument '{flag}'")),
            "{args:?}: {msg}"
        );
    }
}

#[test]
fn bench_options_become_kernel_keys() {
    let c = parse([
        "bench",
        "--quick",
        "--scenarios",
        "seed004-readtwice,limit",
        "--cpus=1,2",
        "--rounds",
        "4",
        "--seconds",
        "0.5",
        "--memcgs",
        "10,1500",
        "--smp",
        "2",
        "--out",
        "/tmp/r",
    ])
    .unwrap();
    assert_eq!(c.boot_options().unwrap().smp, 2);
    assert_eq!(c.boot_options().unwrap().out, Some(PathBuf::from("/tmp/r")));
    assert_eq!(
        c.boot_options().unwrap().bench.kernel_keys(),
        [
            "scenarios=seed004-readtwice,limit",
            "bench_cpus=1,2",
            "rounds=4",
            "seconds=0.5",
            "memcgs=10,1500",
            "quick=1"
        ]
    );
    // Without --smp, bench gets every host core.
    assert_eq!(
        parse(["bench"])
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .smp,
        host_cores()
    );
    assert_eq!(
        parse(["run"]).unwrap().boot_options().unwrap().clone().smp,
        2
    );
    // ... and room for seed002's memcgs; an explicit --mem wins.
    assert_eq!(
        parse(["bench"])
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .mem_mib,
        BENCH_MEM_MIB
    );
    assert_eq!(
        parse(["bench", "--mem", "512"])
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .mem_mib,
        512
    );
    assert_eq!(
        parse(["summary"])
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .mem_mib,
        256
    );
    // In QEMU seed002 leaves out 10,000 memcgs unless asked; quick and host runs keep
    // their own defaults.
    let memcgs = |a: &[&str]| {
        let o = parse(a.iter().copied())
            .unwrap()
            .boot_options()
            .unwrap()
            .clone();
        o.bench.memcgs.map(|v| v.to_string())
    };
    assert_eq!(memcgs(&["bench"]).as_deref(), Some("memcgs=10,1500"));
    assert_eq!(memcgs(&[]).as_deref(), Some("memcgs=10,1500"));
    assert_eq!(
        memcgs(&["bench", "--memcgs", "10,1500,10000"]).as_deref(),
        Some("memcgs=10,1500,10000")
    );
    assert_eq!(memcgs(&["bench", "--quick"]), None);
    assert_eq!(memcgs(&["bench", "--host"]), None);
    // The default run in QEMU runs a fixed number of instances (the kernel's defaults);
    // instance blocks are added only when --ci-width or --budget asks.
    let keys = |a: &[&str]| {
        parse(a.iter().copied())
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .bench
            .kernel_keys()
    };
    assert_eq!(keys(&["bench"]), ["memcgs=10,1500"]);
    assert_eq!(keys(&["bench", "--quick"]), ["quick=1"]);
    assert_eq!(keys(&["bench", "--host"]), Vec::<String>::new());
    assert_eq!(
        keys(&["bench", "--ci-width", "1.5"]),
        ["memcgs=10,1500", "ci_width=1.5"]
    );
    assert_eq!(
        keys(&["bench", "--budget", "60"]),
        ["memcgs=10,1500", "budget=60"]
    );
    for bad in ["0", "100.01", "1.234", "x"] {
        assert!(parse(["bench", "--ci-width", bad]).is_err(), "{bad}");
    }
    assert!(parse(["bench", "--budget", "0"]).is_err());
    assert_eq!(
        keys(&["bench", "--quick", "--lock-stat", "all"]),
        ["lock_stat=all", "quick=1"]
    );
    assert!(parse(["bench", "--lock-stat", "some"]).is_err());
    // Rounds and instances together: the rounds must split evenly.
    assert_eq!(
        keys(&["bench", "--rounds", "6", "--instances", "3"]),
        ["rounds=6", "instances=3", "memcgs=10,1500"]
    );
    let e = parse(["bench", "--rounds", "6"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("rounds=6 is not a multiple of instances=4"),
        "{e}"
    );
    assert!(parse(["bench", "--instances", "0"]).is_err());
    assert!(parse(["bench", "--host", "--rounds", "3", "--instances", "2"]).is_err());
    // --coherence counts with one instance of one round unless asked.
    assert_eq!(
        keys(&["bench", "--coherence", "--scenarios", "limit"]),
        [
            "scenarios=limit",
            "memcgs=10,1500",
            "objects=1",
            "instances=1",
            "rounds=1"
        ]
    );
}

#[test]
fn the_linux_reference_flags() {
    let c = parse(["bench", "--quick", "--linux"]).unwrap();
    assert!(
        c.boot_options().unwrap().bench.linux
            && c.boot_options().unwrap().bench.linux_kernel.is_none()
    );
    assert_eq!(c.boot_options().unwrap().bench.kernel_keys(), ["quick=1"]);
    let c = parse(["bench", "--linux-kernel", "/boot/vmlinuz"]).unwrap();
    assert_eq!(
        c.boot_options().unwrap().bench.linux_kernel,
        Some(PathBuf::from("/boot/vmlinuz"))
    );
    assert!(
        refused(["bench", "--linux-kernel"])
            .contains("a value is required for '--linux-kernel <FILE>'")
    );
    let msg = refused(["bench", "--host", "--linux"]);
    assert!(
        msg.contains("'--host' cannot be used with '--linux'"),
        "{msg}"
    );
}

#[test]
fn host_mode_takes_the_bench_options_but_not_qemus() {
    let c = parse(["bench", "--host", "--quick", "--rounds", "4", "--out", "x"]).unwrap();
    assert!(c.boot_options().unwrap().bench.host && c.boot_options().unwrap().bench.quick);
    assert_eq!(
        c.boot_options().unwrap().bench.kernel_keys(),
        ["rounds=4", "quick=1"]
    );
    assert_eq!(c.boot_options().unwrap().out, Some(PathBuf::from("x")));
    for flag in [
        "--mode",
        "--smp",
        "--mem",
        "--nodes",
        "--timeout",
        "--accel",
        "--append",
        "--kernel",
        "--image",
        "--linux-kernel",
    ] {
        let value = match flag {
            "--mode" => "direct",
            "--accel" => "tcg",
            _ => "64",
        };
        // In either order.
        for args in [
            ["bench", "--host", flag, value],
            ["bench", flag, value, "--host"],
        ] {
            let msg = refused(args);
            assert!(
                msg.contains("cannot be used with") && msg.contains(flag),
                "{args:?}: {msg}"
            );
        }
    }
    assert!(refused(["bench", "--host", "--cpus", "1,100000"]).contains("not accepted"));
    let too_many = (host_cores() + 1).to_string();
    assert_eq!(
        parse(["bench", "--host", "--cpus", &too_many]),
        Err(CliError::CpusAboveHost {
            cpus: host_cores() + 1,
            cores: host_cores()
        })
    );
}

#[test]
fn bad_bench_options() {
    for (args, flag) in [
        (&["bench", "--cpus", "2,1"][..], "--cpus <LIST>"),
        (&["bench", "--cpus", "0"][..], "--cpus <LIST>"),
        (&["bench", "--rounds", "0"][..], "--rounds <N>"),
        (&["bench", "--rounds", "101"][..], "--rounds <N>"),
        (&["bench", "--seconds", "fast"][..], "--seconds <S>"),
        (&["bench", "--seconds", "0.001"][..], "--seconds <S>"),
        (&["bench", "--memcgs", "99999"][..], "--memcgs <LIST>"),
        (
            &["bench", "--scenarios", "Seed001"][..],
            "--scenarios <LIST>",
        ),
    ] {
        match parse(args.iter().copied()) {
            Err(CliError::Arguments(msg)) => assert!(
                msg.contains(&format!("for '{flag}': not accepted (expected ")),
                "{args:?}: {msg}"
            ),
            other => panic!("{args:?}: {other:?}"),
        }
    }
    assert_eq!(
        parse(["bench", "--smp", "2", "--cpus", "1,4"]),
        Err(CliError::CpusAboveSmp { cpus: 4, smp: 2 })
    );
    let msg = refused(["bench", "--rounds", "0"]);
    assert!(
        msg.starts_with("invalid value '0' for '--rounds <N>': not accepted (expected 1..=100"),
        "{msg}"
    );
    // A well-formed name the catalog lacks is refused before booting, with the names there
    // are.
    let msg = refused(["bench", "--scenarios", "limit,seed999"]);
    assert!(
        msg.starts_with(
            "invalid value 'limit,seed999' for '--scenarios <LIST>': no scenario `seed999` \
             (there are: seed001-faultfree, "
        ),
        "{msg}"
    );
}

#[test]
fn import_qr_takes_images() {
    let c = parse(["import", "--qr", "a.jpg", "b.png", "--out", "r"]).unwrap();
    let want = |out: Option<&str>| {
        Command::Import(import::Import {
            source: import::Source::Qr(vec!["a.jpg".into(), "b.png".into()]),
            out: out.map(PathBuf::from),
        })
    };
    assert_eq!(c, want(Some("r")));
    assert_eq!(c.name(), "import");
    let c = parse(["import", "a.jpg", "--qr", "b.png"]).unwrap();
    assert_eq!(c, want(None));
    assert!(refused(["import", "--qr"]).contains("required arguments were not provided"));
}

#[test]
fn compare_and_import_take_paths() {
    let c = parse(["compare", "a", "b", "--out", "x.html"]).unwrap();
    assert_eq!(
        c,
        Command::Compare(compare::Compare {
            dirs: vec!["a".into(), "b".into()],
            out: Some(PathBuf::from("x.html")),
        })
    );
    assert_eq!(c.boot_options(), None, "compare boots nothing");
    let c = parse(["import", "serial.log"]).unwrap();
    assert_eq!(
        c,
        Command::Import(import::Import {
            source: import::Source::Log("serial.log".into()),
            out: None,
        })
    );
    let msg = refused(["compare"]);
    assert!(
        msg.contains("required arguments were not provided: <DIR>..."),
        "{msg}"
    );
    let msg = refused(["import"]);
    assert!(
        msg.contains("required arguments were not provided: <FILE>..."),
        "{msg}"
    );
    assert_eq!(
        parse(["import", "a.log", "b.log"]),
        Err(CliError::UnexpectedArgument("b.log".into()))
    );
}

#[test]
fn nodes_must_fit_the_machine() {
    let c = parse(["test", "--smp", "4", "--nodes", "2"]).unwrap();
    assert_eq!(c.boot_options().unwrap().nodes, Some(2));
    assert_eq!(
        parse(["summary"])
            .unwrap()
            .boot_options()
            .unwrap()
            .clone()
            .nodes,
        None
    );
    for bad in ["0", "65", "hosts"] {
        let msg = refused(["run", "--nodes", bad]);
        assert!(
            msg.contains("not a number in 1..=64, or `host`"),
            "{bad}: {msg}"
        );
    }
    let e = parse(["run", "--smp", "2", "--nodes", "3"]).unwrap_err();
    assert_eq!(
        e,
        CliError::Nodes {
            nodes: 3,
            why: NodesProblem::MoreThanCpus(2)
        }
    );
    assert_eq!(
        e.to_string(),
        "--nodes 3: more nodes than vCPUs (--smp 2); every node needs a CPU"
    );
    let e = parse(["run", "--smp", "8", "--mem", "64", "--nodes", "8"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--nodes 8: 64 MiB of memory (--mem) gives each node 8 MiB, less than the 16 MiB a \
         node needs"
    );
    // The order of the options does not matter.
    assert!(parse(["run", "--nodes", "4", "--smp", "4"]).is_ok());
}

#[test]
fn placement_and_noise_options() {
    let c = parse(["bench", "--smt", "--strict", "--nodes", "host"]).unwrap();
    assert!(
        c.boot_options().unwrap().bench.smt
            && c.boot_options().unwrap().bench.strict
            && c.boot_options().unwrap().nodes_host
    );
    // `host` becomes the host's node count (at least 1: this machine has one).
    assert!(c.boot_options().unwrap().nodes.is_some_and(|n| n >= 1));
    let c = parse(["bench", "--host", "--smt", "--strict"]).unwrap();
    assert!(c.boot_options().unwrap().bench.smt && c.boot_options().unwrap().bench.strict);
    // No kernel keys for these.
    assert_eq!(
        c.boot_options().unwrap().bench.kernel_keys(),
        Vec::<String>::new()
    );
    // A number after `host` wins, and the other way round.
    let c = parse(["summary", "--nodes", "host", "--nodes", "1"]).unwrap();
    assert!(!c.boot_options().unwrap().nodes_host && c.boot_options().unwrap().nodes == Some(1));
    let c = parse(["summary", "--nodes", "1", "--nodes", "host"]).unwrap();
    assert!(c.boot_options().unwrap().nodes_host);
}

#[test]
fn help_for_kx_and_for_each_command() {
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let text = match parse(args.iter().copied()) {
            Ok(Command::Help(text)) => text,
            other => panic!("{args:?}: {other:?}"),
        };
        assert!(text.contains("exit status:"), "{args:?}: {text}");
        for command in [
            "bench", "summary", "test", "run", "compare", "import", "layout",
        ] {
            assert!(text.contains(command), "{args:?}: {command}");
        }
    }
    // A command's help lists its own options and no other's.
    let bench = help(["help", "bench"]);
    assert_eq!(bench, help(["bench", "--help"]));
    assert!(bench.contains("--scenarios <LIST>") && bench.contains("(bench_cpus=)"));
    let run = help(["help", "run"]);
    assert_eq!(run, help(["run", "--help"]));
    assert!(run.contains("--smp <N>") && !run.contains("--scenarios") && !run.contains("--out"));
    assert!(help(["run", "-h"]).contains("--append <CMDLINE>"));
    let import = help(["import", "--help"]);
    assert!(import.contains("--qr") && !import.contains("--smp"));
}
