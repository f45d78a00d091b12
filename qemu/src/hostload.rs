//! How much CPU time other processes take on the host while the benchmark runs.
//!
//! The load of "others" over an interval is the host's busy CPU time (`/proc/stat`'s `cpu`
//! line: user, nice, system, irq, softirq and steal; guest time is inside user) minus what
//! QEMU took (`/proc/PID/stat`: utime + stime of all its threads) minus what the runner
//! itself took (`/proc/self/stat`), divided by the interval's length per CPU (the `cpu`
//! line's total over the number of `cpuN` lines): a number of cores, e.g. `0.03`. Steal
//! (time a hypervisor gave to other guests) counts as others' time. Ticks are `USER_HZ`
//! (10 ms), so an interval of 0.1 s on 2 CPUs resolves about 0.05 core; small negative
//! results (per-process times are exact, the host's are sampled) are clamped to 0.
//!
//! [`Monitor`] samples when each `run` record arrives on the serial stream (and at every
//! other record, so a run's interval starts at the record before it: for the rounds of one
//! point, the previous run) and gives each run the load of its interval; runs above
//! [`BUSY_CORES`] by more than the interval can resolve ([`busy`]) are flagged, and the
//! runner excludes them from every statistic. [`before`] samples the host for about a second before the
//! benchmark starts.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Others' load above which a run is flagged, and the host called busy: a tenth of a core.
pub const BUSY_CORES: f64 = 0.1;

/// Whether others' load of `cores` over an interval of `ticks` per CPU is above
/// [`BUSY_CORES`] by more than the measurement can resolve: `/proc/stat` counts whole ticks,
/// so an interval of `ticks` cannot tell loads apart by less than `1 / ticks` core, and two
/// ticks of margin keep a 0.1 s run's one stray tick (0.07 core) and a sampling
/// misalignment from excluding it.
#[must_use]
pub fn busy(cores: f64, ticks: u64) -> bool {
    ticks > 0 && cores > BUSY_CORES + 2.0 / ticks as f64
}

/// How long [`before`] samples.
pub const BEFORE: Duration = Duration::from_secs(1);

/// The `cpu` line of `/proc/stat`, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal.
    pub busy: u64,
    /// busy + idle + iowait.
    pub total: u64,
    /// `cpuN` lines: the online CPUs.
    pub cpus: u32,
}

/// Parses `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Result<CpuTimes, String> {
    let line = text
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or("/proc/stat: no `cpu` line")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("/proc/stat: `{line}`: {e}"))?;
    if v.len() < 4 {
        return Err(format!("/proc/stat: `{line}`: too few fields"));
    }
    let f = |i: usize| v.get(i).copied().unwrap_or(0);
    let (user, nice, system, idle, iowait, irq, softirq, steal) =
        (f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7));
    let busy = user + nice + system + irq + softirq + steal;
    let cpus = text
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count() as u32;
    Ok(CpuTimes {
        busy,
        total: busy + idle + iowait,
        cpus: cpus.max(1),
    })
}

/// utime + stime (ticks) of a `/proc/PID/stat` line. The command name, in parentheses, may
/// hold spaces and parentheses itself: the fields are counted after the last `)`.
pub fn parse_pid_stat(text: &str) -> Result<u64, String> {
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| format!("not a /proc/PID/stat line: `{}`", text.trim()))?;
    // Field 3 (state) is the first after `)`; utime and stime are fields 14 and 15.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| -> Result<u64, String> {
        fields
            .get(i)
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| format!("/proc/PID/stat: no field {} in `{}`", i + 3, text.trim()))
    };
    Ok(num(11)? + num(12)?)
}

/// One look at the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The host's CPU times.
    pub host: CpuTimes,
    /// QEMU's utime + stime (0 when there is none, or it is gone).
    pub qemu: u64,
    /// The runner's own utime + stime.
    pub own: u64,
}

/// Others' load between two samples, in cores, and the interval's length per CPU in ticks.
#[must_use]
pub fn load_between(a: &Sample, b: &Sample) -> (f64, u64) {
    let per_cpu = b.host.total.saturating_sub(a.host.total) / u64::from(b.host.cpus.max(1));
    if per_cpu == 0 {
        return (0.0, 0);
    }
    let busy = b.host.busy.saturating_sub(a.host.busy) as i64;
    let ours = b.qemu.saturating_sub(a.qemu) as i64 + b.own.saturating_sub(a.own) as i64;
    ((busy - ours).max(0) as f64 / per_cpu as f64, per_cpu)
}

/// Where the samples come from: a `/proc` (the real one, or a recorded tree in tests).
#[derive(Clone, Debug)]
pub struct Source {
    /// `/proc`.
    pub proc_root: PathBuf,
    /// The runner's pid.
    pub own: u32,
    /// QEMU's pid, once started.
    pub qemu: Option<u32>,
}

impl Source {
    /// The real `/proc`, this process.
    #[must_use]
    pub fn host() -> Source {
        Source {
            proc_root: PathBuf::from("/proc"),
            own: std::process::id(),
            qemu: None,
        }
    }

    /// A sample now.
    pub fn sample(&self) -> Result<Sample, String> {
        let read =
            |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
        let host = parse_proc_stat(&read(&self.proc_root.join("stat"))?)?;
        let own = parse_pid_stat(&read(&self.proc_root.join(format!("{}/stat", self.own)))?)?;
        // QEMU may have exited (its last run record can come after): count nothing for it.
        let qemu = self
            .qemu
            .and_then(|p| read(&self.proc_root.join(format!("{p}/stat"))).ok())
            .and_then(|t| parse_pid_stat(&t).ok())
            .unwrap_or(0);
        Ok(Sample { host, qemu, own })
    }
}

/// Others' load before the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Before {
    /// Seconds sampled.
    pub seconds: f64,
    /// Others' load, cores.
    pub cores: f64,
    /// The host's online CPUs.
    pub host_cpus: u32,
    /// Whether it is above [`BUSY_CORES`].
    pub busy: bool,
}

impl Before {
    /// `kx: host load before the run: others used 0.02 of 2 CPUs over 1.0 s`, and when busy
    /// what it means.
    #[must_use]
    pub fn line(&self) -> String {
        let mut s = format!(
            "host load before the run: other processes used {:.2} of {} CPUs over {:.1} s",
            self.cores, self.host_cpus, self.seconds
        );
        if self.busy {
            s.push_str(&format!(
                ": the host is BUSY (more than {BUSY_CORES} core); they will take time from \
                 the benchmark's CPUs (--strict refuses to start)"
            ));
        }
        s
    }
}

/// Samples `source` over `span` (QEMU not running yet: only the runner is subtracted).
pub fn before(source: &Source, span: Duration) -> Result<Before, String> {
    let t0 = Instant::now();
    let a = source.sample()?;
    std::thread::sleep(span);
    let b = source.sample()?;
    let (cores, _) = load_between(&a, &b);
    Ok(Before {
        seconds: (t0.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        cores: (cores * 1000.0).round() / 1000.0,
        host_cpus: b.host.cpus,
        busy: cores > BUSY_CORES,
    })
}

/// What `kx bench` does before it starts, in QEMU and on host threads alike: samples the
/// host for [`BEFORE`], says how busy it is, and with `strict` refuses a busy host
/// (`Err`: the runner exits [`crate::RunnerExit::HostBusy`]). A host that cannot be sampled
/// is said so and not refused.
pub fn before_start(source: &Source, strict: bool) -> Result<Option<Before>, crate::RunnerExit> {
    let before = match before(source, BEFORE) {
        Ok(b) => {
            eprintln!("kx: {}", b.line());
            Some(b)
        }
        Err(e) => {
            eprintln!("kx: host load: cannot sample the host: {e}");
            None
        }
    };
    if strict && before.as_ref().is_some_and(|b| b.busy) {
        eprintln!("kx: --strict: not starting on a busy host (exit status 15)");
        return Err(crate::RunnerExit::HostBusy);
    }
    Ok(before)
}

/// Others' load during one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunLoad {
    /// The run's position among the log's `run` records (results.json's `runs`, when no
    /// record was malformed).
    pub run: usize,
    /// Which run: scenario, config, variant, CPUs, round, position in its round.
    pub scenario: String,
    /// Config.
    pub config: String,
    /// Variant.
    pub variant: String,
    /// CPUs.
    pub cpus: u32,
    /// Round (0: warm-up).
    pub round: u32,
    /// Position in its round.
    pub order: u32,
    /// Others' load over the interval that ended with this run's record, cores; `None`
    /// where it could not be measured (a sample failed, or no interval had started): missing,
    /// never 0.
    pub host_load: Option<f64>,
    /// The interval, seconds of one CPU's time.
    pub interval_s: f64,
    /// Whether `host_load` is above [`BUSY_CORES`] by more than the interval resolves
    /// ([`busy`]).
    pub flagged: bool,
}

/// `results.json`'s `host_load`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLoadRecord {
    /// [`BUSY_CORES`].
    pub threshold_cores: f64,
    /// Before the run.
    pub before: Option<Before>,
    /// Per run.
    pub runs: Vec<RunLoad>,
    /// Measured (not warm-up) runs flagged: each is excluded from the statistics.
    pub flagged: usize,
    /// The largest run's load, cores.
    pub max_cores: f64,
    /// Why nothing could be measured, when so.
    pub error: Option<String>,
}

impl HostLoadRecord {
    /// One line for the terminal and the notes.
    #[must_use]
    pub fn line(&self) -> String {
        let measured: Vec<&RunLoad> = self.runs.iter().filter(|r| r.round > 0).collect();
        let loads: Vec<f64> = measured.iter().filter_map(|r| r.host_load).collect();
        if let Some(e) = self.error.as_ref().filter(|_| loads.is_empty()) {
            return format!("host load: not measured: {e}");
        }
        let mean = if loads.is_empty() {
            0.0
        } else {
            loads.iter().sum::<f64>() / loads.len() as f64
        };
        let mut s = format!(
            "host load during the runs: other processes used {mean:.2} cores on average, at \
             most {:.2}; {} of {} measured runs above {BUSY_CORES} core",
            self.max_cores,
            self.flagged,
            measured.len()
        );
        let missing = measured.len() - loads.len();
        if missing > 0 {
            s.push_str(&format!(
                " ({missing} not measured{})",
                self.error
                    .as_ref()
                    .map_or(String::new(), |e| format!(": {e}"))
            ));
        }
        if self.flagged > 0 {
            let which: Vec<String> = measured
                .iter()
                .filter(|r| r.flagged)
                .take(6)
                .map(|r| {
                    format!(
                        "{} {} {} cpus={} round={} ({:.2})",
                        r.scenario,
                        r.config,
                        r.variant,
                        r.cpus,
                        r.round,
                        r.host_load.unwrap_or(f64::NAN)
                    )
                })
                .collect();
            s.push_str(&format!(
                "; excluded from the statistics: {}{}",
                which.join(", "),
                if self.flagged > which.len() {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        s
    }
}

/// Samples at every record of a serial stream and gives each run its interval's load.
pub struct Monitor {
    source: Source,
    last: Option<Sample>,
    runs: usize,
    /// What was measured so far.
    pub record: HostLoadRecord,
}

impl Monitor {
    /// A monitor on `source`; `before`, the pre-run sample.
    #[must_use]
    pub fn new(source: Source, before: Option<Before>) -> Monitor {
        Monitor {
            source,
            last: None,
            runs: 0,
            record: HostLoadRecord {
                threshold_cores: BUSY_CORES,
                before,
                ..HostLoadRecord::default()
            },
        }
    }

    /// QEMU started as `pid`: from now on its time is subtracted; the first interval starts.
    pub fn qemu_started(&mut self, pid: u32) {
        self.source.qemu = Some(pid);
        self.last = self.source.sample().ok();
    }

    /// One serial line.
    pub fn line(&mut self, line: &str) {
        let line = line.trim_end_matches('\r');
        let record = match bench::record::parse_line(line) {
            Some(Ok(r)) => r,
            // Not a record, or a malformed one (the collector reports it).
            _ => return,
        };
        let now = match self.source.sample() {
            Ok(s) => Some(s),
            Err(e) => {
                self.record.error.get_or_insert(e);
                None
            }
        };
        if let bench::Record::Run(r) = record {
            // Missing, not 0, where either end of the interval has no sample.
            let measured = match (&self.last, &now) {
                (Some(prev), Some(now)) => Some(load_between(prev, now)),
                _ => None,
            };
            let cores = measured.map(|m| m.0);
            let flagged = measured.is_some_and(|(c, ticks)| busy(c, ticks));
            if flagged && !r.warmup {
                self.record.flagged += 1;
            }
            if let Some(c) = cores {
                self.record.max_cores = self.record.max_cores.max(c);
            }
            self.record.runs.push(RunLoad {
                run: self.runs,
                scenario: r.scenario,
                config: r.config,
                variant: r.variant,
                cpus: r.cpus,
                round: r.round,
                order: r.order,
                host_load: cores.map(|c| (c * 1000.0).round() / 1000.0),
                interval_s: measured.map_or(0.0, |m| m.1 as f64 / 100.0),
                flagged,
            });
            self.runs += 1;
        }
        self.last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/stat` of a 2-CPU host (recorded), with `busy`/`idle` user and idle ticks.
    fn stat(user: u64, idle: u64) -> String {
        format!(
            "cpu  {user} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\n\
             intr 1 2 3\nctxt 100\nbtime 1700000000\n"
        )
    }

    fn pid_stat(comm: &str, utime: u64, stime: u64) -> String {
        format!(
            "4242 ({comm}) S 1 4242 4242 0 -1 4194560 2000 0 0 0 {utime} {stime} 0 0 20 0 5 0 \
             100 1000000 500 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"
        )
    }

    #[test]
    fn proc_stat_parses() {
        let real = "cpu  4705 356 584 3699 23 23 0 5 0 0\ncpu0 2000 100 300 1800 10 10 0 2 0 0\n\
                    cpu1 2705 256 284 1899 13 13 0 3 0 0\nintr 114930548 113199788 3\n";
        let t = parse_proc_stat(real).unwrap();
        assert_eq!(t.busy, 4705 + 356 + 584 + 23 + 5);
        assert_eq!(t.total, t.busy + 3699 + 23);
        assert_eq!(t.cpus, 2);
        assert!(parse_proc_stat("intr 1\n").is_err());
        assert!(parse_proc_stat("cpu  1 x 3 4\n").is_err());
    }

    #[test]
    fn pid_stat_parses_a_command_with_spaces_and_parentheses() {
        assert_eq!(
            parse_pid_stat(&pid_stat("qemu-system-x86", 1234, 56)).unwrap(),
            1290
        );
        assert_eq!(parse_pid_stat(&pid_stat("a) (b c", 7, 8)).unwrap(), 15);
        assert!(parse_pid_stat("4242 (x) S 1").is_err());
        assert!(parse_pid_stat("garbage").is_err());
        // This process's own line parses.
        let own = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(parse_pid_stat(&own).is_ok());
    }

    #[test]
    fn others_are_the_busy_time_minus_qemu_and_the_runner() {
        let s = |busy, total, qemu, own| Sample {
            host: CpuTimes {
                busy,
                total,
                cpus: 2,
            },
            qemu,
            own,
        };
        // 1 s on 2 CPUs (200 ticks): 190 busy, QEMU 180, runner 4: others 6 ticks = 0.06.
        let (c, per_cpu) = load_between(&s(0, 0, 0, 0), &s(190, 200, 180, 4));
        assert!((c - 0.06).abs() < 1e-9, "{c}");
        assert_eq!(per_cpu, 100);
        // QEMU alone keeps the host busy: others 0, and rounding never goes negative.
        assert_eq!(load_between(&s(0, 0, 0, 0), &s(190, 200, 195, 1)).0, 0.0);
        // No time passed: nothing.
        assert_eq!(load_between(&s(5, 5, 0, 0), &s(5, 5, 0, 0)), (0.0, 0));
    }

    /// A recorded /proc tree that a test advances between records.
    struct FakeProc {
        root: PathBuf,
    }

    impl FakeProc {
        fn new(name: &str) -> FakeProc {
            let root = std::env::temp_dir().join(format!("kx-proc-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(root.join("1/")).unwrap();
            std::fs::create_dir_all(root.join("2/")).unwrap();
            FakeProc { root }
        }

        fn set(&self, busy: u64, idle: u64, qemu: u64, own: u64) {
            std::fs::write(self.root.join("stat"), stat(busy, idle)).unwrap();
            std::fs::write(self.root.join("1/stat"), pid_stat("kx", own, 0)).unwrap();
            std::fs::write(self.root.join("2/stat"), pid_stat("qemu", qemu, 0)).unwrap();
        }

        fn source(&self) -> Source {
            Source {
                proc_root: self.root.clone(),
                own: 1,
                qemu: None,
            }
        }
    }

    impl Drop for FakeProc {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    fn run_line(variant: &str, round: u32) -> String {
        let r = bench::Run::new("limit", "anon", variant, 2, round, round == 0, 100, 1000).unwrap();
        bench::KResult::line(&r)
    }

    /// Each run gets the load of the interval since the record before it, and a busy one
    /// is flagged; progress lines and boot messages take no sample.
    #[test]
    fn runs_get_their_intervals_load() {
        let p = FakeProc::new("attr");
        p.set(0, 0, 0, 0);
        let mut m = Monitor::new(p.source(), None);
        m.qemu_started(2);
        // Warm-up: 20 ticks per CPU, QEMU took all 40 busy ticks.
        p.set(40, 0, 40, 0);
        m.line(&format!("{}\r", run_line("floor", 0)));
        // A boot message and a progress line in between: no sample.
        p.set(1000, 0, 40, 0);
        m.line("KPROGRESS 1/4 limit anon floor cpus=2 round=0/2 100 ops/s");
        m.line("booting...");
        // Round 1: 1000 busy ticks since the warm-up's record (500 per CPU), QEMU 30, the
        // runner 2: others 968 ticks = 1.94 cores.
        p.set(1040, 0, 70, 2);
        m.line(&run_line("floor", 1));
        // Round 2: idle host: QEMU 39 of 40, others 1 tick = 0.05.
        p.set(1080, 0, 109, 2);
        m.line(&run_line("floor", 2));
        let r = &m.record;
        assert_eq!(r.runs.len(), 3);
        assert_eq!(r.runs[0].host_load, Some(0.0));
        assert!(!r.runs[0].flagged);
        // The interval before round 1 started at the warm-up's record, not at the progress
        // line: its 960 foreign ticks are counted.
        assert!(
            r.runs[1].host_load.unwrap() > 1.9 && r.runs[1].flagged,
            "{:?}",
            r.runs[1]
        );
        assert_eq!(r.runs[2].host_load, Some(0.05));
        assert!(!r.runs[2].flagged);
        assert_eq!((r.runs[2].run, r.runs[2].round), (2, 2));
        assert_eq!(r.flagged, 1);
        let line = r.line();
        assert!(
            line.contains("1 of 2 measured runs above 0.1 core"),
            "{line}"
        );
        assert!(line.contains("limit anon floor cpus=2 round=1"), "{line}");
    }

    /// A sample that fails leaves the run's load missing (and the next run's, whose interval
    /// starts there), never 0.
    #[test]
    fn a_failed_sample_is_missing_not_zero() {
        let p = FakeProc::new("missing");
        p.set(0, 0, 0, 0);
        let mut m = Monitor::new(p.source(), None);
        m.qemu_started(2);
        p.set(40, 0, 40, 0);
        m.line(&run_line("floor", 0));
        std::fs::remove_file(p.root.join("stat")).unwrap();
        m.line(&run_line("floor", 1));
        p.set(80, 0, 80, 0);
        m.line(&run_line("floor", 2));
        p.set(120, 0, 120, 0);
        m.line(&run_line("floor", 3));
        let loads: Vec<Option<f64>> = m.record.runs.iter().map(|r| r.host_load).collect();
        assert_eq!(loads, [Some(0.0), None, None, Some(0.0)]);
        assert!(m.record.error.is_some());
        let line = m.record.line();
        assert!(
            line.contains("0 of 3 measured runs above 0.1 core (2 not measured: "),
            "{line}"
        );
    }

    #[test]
    fn busy_needs_more_than_the_resolution() {
        // 15 ticks per CPU (a 0.1 s run and its record): 0.2 core is 3 ticks, within 2 of
        // the threshold's 1.5.
        assert!(!busy(0.2, 15));
        assert!(busy(0.3, 15));
        // 100 ticks: 0.2 core is 20, well above 10 + 2.
        assert!(busy(0.2, 100));
        assert!(!busy(0.11, 100));
        assert!(!busy(5.0, 0));
    }

    #[test]
    fn before_measures_and_says_busy() {
        let p = FakeProc::new("before");
        p.set(0, 0, 0, 0);
        let src = p.source();
        // The fake does not move while `before` sleeps: 0 cores, not busy.
        let b = before(&src, Duration::from_millis(10)).unwrap();
        assert_eq!((b.cores, b.busy, b.host_cpus), (0.0, false, 2));
        let busy = Before {
            seconds: 1.0,
            cores: 0.7,
            host_cpus: 2,
            busy: true,
        };
        assert!(
            busy.line()
                .contains("0.70 of 2 CPUs over 1.0 s: the host is BUSY")
        );
        // A real host, a real busy loop: at least some of a core.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let b = before(&Source::host(), Duration::from_millis(500));
        let _ = child.kill();
        let _ = child.wait();
        let b = b.unwrap();
        assert!(b.cores > BUSY_CORES && b.busy, "{b:?}");
    }
}
