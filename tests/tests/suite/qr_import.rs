//! The results as QR codes, end to end: a quick bench run (one scenario) boots from the GRUB
//! image under BIOS with `qr=on`; at every page of codes the kernel announces on serial the
//! test takes QEMU's `screendump` through the monitor and presses Space (`sendkey`). Then
//! `kx import --qr` of the screenshots must give the same results directory as `kx import`
//! of the same run's serial log, and so must the screenshots scaled down, turned a few
//! degrees and with noise added; without one screenshot the import names the missing codes
//! (status 12) and writes nothing. Under UEFI (GOP framebuffer) the screenshots import too.
use qemu::Mode;
use qemu::bench::qr::picture::{noise, rotate, scale};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tests::{MEM_MIB, SMP, kernel, workspace};

const CMDLINE: &str = "run=bench quick=1 scenarios=seed003-pft qr=on";
const TIMEOUT: Duration = Duration::from_secs(400);

/// Sends one monitor command and waits for the prompt after its echo.
fn monitor(sock: &mut UnixStream, cmd: &str) {
    sock.write_all(format!("{cmd}\n").as_bytes()).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen);
        if let Some(i) = text.rfind(cmd)
            && text[i..].contains("(qemu) ")
        {
            return;
        }
        let n = sock.read(&mut buf).expect("monitor answers");
        assert!(n > 0, "monitor closed");
        seen.extend_from_slice(&buf[..n]);
    }
}

/// Waits until `path` exists and its size stays the same for 100 ms.
fn settled(path: &Path) {
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < Duration::from_secs(20) {
        let len = std::fs::metadata(path).map(|m| m.len()).ok();
        if len.is_some() && len == last {
            return;
        }
        last = len;
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{} was not written", path.display());
}

struct Capture {
    serial: String,
    /// (page screenshot as PNG, the codes it shows "a-b")
    pages: Vec<(PathBuf, String)>,
    status: Option<i32>,
}

/// Boots the bench with `qr=on` from the GRUB image in `mode` and screenshots every page of
/// codes.
fn capture(dir: &Path, mode: Mode) -> Capture {
    let medium = qemu::booting::medium_for(workspace(), kernel(), mode, CMDLINE)
        .unwrap_or_else(|e| panic!("image: {e}"));
    let mut launch = qemu::booting::launch(mode, SMP, MEM_MIB, None, medium);
    // UEFI: a private copy of the firmware's variable store, alive until QEMU exits.
    let _vars = (mode == Mode::Uefi).then(|| {
        let v = qemu::firmware::PrivateVars::copy_from(Path::new(boot::host_deps::OVMF_VARS), dir)
            .expect("OVMF vars copy");
        launch.ovmf_vars = Some(v.path().to_path_buf());
        v
    });
    let serial = dir.join("serial.log");
    let sock = dir.join("monitor.sock");
    let mut args: Vec<String> = launch
        .args()
        .unwrap()
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    for (from, to) in [
        ("stdio", format!("file:{}", serial.display())),
        (
            "none",
            format!("unix:{},server=on,wait=off", sock.display()),
        ),
    ] {
        let flag = if from == "stdio" {
            "-serial"
        } else {
            "-monitor"
        };
        let i = args.iter().position(|a| a == flag).unwrap();
        assert_eq!(args[i + 1], from);
        args[i + 1] = to;
    }
    // Held until QEMU has exited and every page was captured (the end of this function).
    let _one_at_a_time = tests::one_qemu_at_a_time();
    let mut child = Command::new(boot::host_deps::QEMU)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("qemu starts");
    let start = Instant::now();
    let mut mon: Option<UnixStream> = None;
    let mut pages = Vec::new();
    let mut done_lines = 0;
    let status = loop {
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        let text = std::fs::read_to_string(&serial).unwrap_or_default();
        let kqr: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("KQR page "))
            .collect();
        if kqr.len() > done_lines {
            let line = kqr[done_lines];
            done_lines += 1;
            let m = mon.get_or_insert_with(|| {
                let s = UnixStream::connect(&sock).expect("monitor socket");
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                s
            });
            let ppm = dir.join(format!("page-{done_lines}.ppm"));
            monitor(m, &format!("screendump {}", ppm.display()));
            settled(&ppm);
            let png = dir.join(format!("page-{done_lines}.png"));
            image::open(&ppm).expect("screendump").save(&png).unwrap();
            let codes = line.split_whitespace().nth(6).unwrap_or("").to_owned();
            pages.push((png, codes));
            monitor(m, "sendkey spc");
            continue;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Capture {
        serial: std::fs::read_to_string(&serial).unwrap_or_default(),
        pages,
        status,
    }
}

/// `results.json` without what differs between two imports (the host block: time, source).
fn results(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_object_mut().unwrap().remove("host");
    v
}

fn same_results(a: &Path, b: &Path) {
    assert_eq!(results(a), results(b), "{} vs {}", a.display(), b.display());
    for f in ["results.csv", "seed003-pft.svg"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
}

fn import_qr(images: &[PathBuf], out: &Path) -> Result<qemu::RunnerExit, qemu::RunError> {
    qemu::bench::qr::import(workspace().root(), images, Some(out))
}

/// Boots the bench in `mode` into a fresh scratch directory named for `name`, screenshots
/// its codes, imports its serial log and the screenshots and checks that both give the same
/// results: the directory, the capture, the log's results and the screenshots.
fn screenshots_and_log(name: &str, mode: Mode) -> (PathBuf, Capture, PathBuf, Vec<PathBuf>) {
    let dir = std::env::temp_dir().join(format!("kx-qr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cap = capture(&dir, mode);
    let tail: Vec<&str> = cap.serial.lines().rev().take(30).collect();
    assert_eq!(cap.status, Some(33), "QEMU status; serial tail: {tail:#?}");
    assert!(!cap.pages.is_empty(), "no KQR page lines: {tail:#?}");
    let from_log = dir.join("from-log");
    let exit =
        qemu::bench::run::import(workspace().root(), &dir.join("serial.log"), Some(&from_log))
            .unwrap();
    assert_eq!(exit, qemu::RunnerExit::Success);
    let shots: Vec<PathBuf> = cap.pages.iter().map(|(p, _)| p.clone()).collect();
    let from_qr = dir.join("from-qr");
    assert_eq!(
        import_qr(&shots, &from_qr).unwrap(),
        qemu::RunnerExit::Success
    );
    same_results(&from_log, &from_qr);
    (dir, cap, from_log, shots)
}

#[test]
fn screenshots_of_the_codes_import_like_the_serial_log() {
    let (dir, cap, from_log, shots) = screenshots_and_log("import", Mode::Bios);
    // Two pages at least, or the missing-page check below would have nothing left to import.
    assert!(cap.pages.len() >= 2, "{} KQR pages", cap.pages.len());
    eprintln!("{} pages: {:?}", cap.pages.len(), cap.pages);

    // Photos rather than screenshots: smaller, turned, noisy; in reverse order.
    let distorted: Vec<PathBuf> = shots
        .iter()
        .rev()
        .enumerate()
        .map(|(i, p)| {
            let img = image::open(p).unwrap().to_luma8();
            let img = match i % 3 {
                0 => scale(&img, 0.6),
                1 => rotate(&img, 3.0),
                _ => noise(&img, 50, i as u64),
            };
            let out = dir.join(format!("photo-{i}.png"));
            img.save(&out).unwrap();
            out
        })
        .collect();
    let from_photos = dir.join("from-photos");
    assert_eq!(
        import_qr(&distorted, &from_photos).unwrap(),
        qemu::RunnerExit::Success
    );
    same_results(&from_log, &from_photos);

    // Every distortion alone, on every page.
    for (name, f) in [
        (
            "scaled",
            &(|i: &image::GrayImage| scale(i, 0.6))
                as &dyn Fn(&image::GrayImage) -> image::GrayImage,
        ),
        ("rotated", &|i: &image::GrayImage| rotate(i, -4.0)),
        ("noisy", &|i: &image::GrayImage| noise(i, 60, 7)),
    ] {
        let files: Vec<PathBuf> = shots
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let out = dir.join(format!("{name}-{i}.png"));
                f(&image::open(p).unwrap().to_luma8()).save(&out).unwrap();
                out
            })
            .collect();
        let out = dir.join(format!("from-{name}"));
        assert_eq!(
            import_qr(&files, &out).unwrap(),
            qemu::RunnerExit::Success,
            "{name}"
        );
        same_results(&from_log, &out);
    }

    // One page missing: its codes are named, status 12, nothing written.
    let (dropped, codes) = cap.pages.last().unwrap().clone();
    let rest: Vec<PathBuf> = shots.iter().filter(|p| **p != dropped).cloned().collect();
    let partial = dir.join("partial");
    let err = import_qr(&rest, &partial).unwrap_err();
    assert_eq!(qemu::RunnerExit::for_error(&err).status(), 12, "{err}");
    let (a, b) = codes.split_once('-').unwrap();
    let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
    let named: Vec<String> = (a..=b).map(|i| i.to_string()).collect();
    assert!(err.to_string().contains(&named.join(", ")), "{err}");
    assert!(
        !partial.exists(),
        "nothing is written for a partial payload"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under UEFI the codes are drawn on the GOP framebuffer GRUB hands over (under BIOS, on the
/// VGA one): the bench runs there too, and its screenshots import to the same results as the
/// run's serial log.
#[test]
fn uefi_screenshots_import_like_the_serial_log() {
    let (dir, _, from_log, _) = screenshots_and_log("uefi", Mode::Uefi);
    assert_eq!(
        results(&from_log)["machine"]["boot_protocol"],
        "multiboot2-uefi",
        "booted through GRUB under UEFI"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
