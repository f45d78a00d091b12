//! `profile=HZ` with `run=bench`: every CPU's local APIC timer samples the interrupted RIP,
//! and at the end the kernel prints each CPU's samples counted by address (`KPROFILE` and
//! `KPROF` lines, read by `scripts/tcg-profile.py --apic`). The counts add up to each CPU's
//! sample count, nothing is dropped, the busy CPU has about HZ samples per second it ran,
//! and every sampled address lies in the kernel's text (from `nm`), so it is an interrupted
//! instruction of the kernel, not a stray value. A bad rate is a bad command line.
use abi::ExitCode;
use std::collections::BTreeMap;
use std::time::Duration;
use tests::{assert_exit, boot_direct, describe};

const TIMEOUT: Duration = Duration::from_secs(300);

/// The lowest and highest text symbol address of the kernel ELF.
fn text_range() -> (u64, u64) {
    let out = std::process::Command::new("nm")
        .args(["--defined-only", "-n"])
        .arg(&tests::kernel().elf64)
        .output()
        .expect("nm runs");
    let addrs: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split(' ');
            let a = u64::from_str_radix(w.next()?, 16).ok()?;
            matches!(w.next()?, "t" | "T").then_some(a)
        })
        .collect();
    (*addrs.first().unwrap(), *addrs.last().unwrap())
}

#[test]
fn the_apic_timer_samples_every_cpu() {
    let hz = 2000;
    let out = boot_direct(
        &format!("run=bench scenarios=limit bench_cpus=1,2 quick=1 profile={hz}"),
        TIMEOUT,
    );
    assert_exit(&out, ExitCode::Success);
    let mut header: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    let mut counted: BTreeMap<u32, u64> = BTreeMap::new();
    let mut rips = Vec::new();
    for line in out.serial.lines().map(|l| l.trim_end_matches('\r')) {
        if let Some(rest) = line.strip_prefix("KPROFILE cpu=") {
            let f: Vec<u64> = rest
                .split(' ')
                .map(|w| w.rsplit('=').next().unwrap().parse().unwrap())
                .collect();
            header.insert(f[0] as u32, (f[1], f[2]));
        } else if let Some(rest) = line.strip_prefix("KPROF ") {
            let w: Vec<&str> = rest.split(' ').collect();
            let n: u64 = w[2].parse().unwrap();
            *counted.entry(w[0].parse().unwrap()).or_default() += n;
            rips.push(u64::from_str_radix(w[1], 16).unwrap());
        }
    }
    assert!(
        out.serial
            .contains(&format!("KPROFILE hz={hz} period_ticks=")),
        "{}",
        describe(&out)
    );
    assert_eq!(header.len(), tests::SMP as usize, "{}", describe(&out));
    for (cpu, (samples, dropped)) in &header {
        assert_eq!(*dropped, 0);
        assert_eq!(
            counted.get(cpu).copied().unwrap_or(0),
            *samples,
            "cpu {cpu}"
        );
    }
    // CPU 0 runs the benchmark from start to end: about HZ samples per second of it.
    let (cpu0, _) = header[&0];
    let secs = out.elapsed.as_secs_f64();
    assert!(
        cpu0 as f64 > 0.2 * f64::from(hz) && (cpu0 as f64) < 1.5 * f64::from(hz) * secs,
        "{cpu0} samples in a {secs:.1} s boot at {hz} Hz"
    );
    let (lo, hi) = text_range();
    for rip in rips {
        assert!(
            (lo..=hi).contains(&rip),
            "{rip:#x} outside {lo:#x}..={hi:#x}"
        );
    }
}

#[test]
fn a_bad_rate_is_a_bad_command_line() {
    for (line, msg) in [
        ("run=bench profile=0", "bad value `0` for `profile`"),
        ("run=bench profile=20000", "bad value `20000` for `profile`"),
        ("run=summary profile=100", "`profile=` needs `run=bench`"),
    ] {
        let out = boot_direct(line, TIMEOUT);
        assert_exit(&out, ExitCode::BadCmdline);
        assert!(out.serial.contains(msg), "{line}: {}", describe(&out));
    }
}
