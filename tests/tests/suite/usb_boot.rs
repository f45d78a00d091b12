//! The GRUB hybrid image boots from an emulated USB stick (xHCI + usb-storage) under BIOS
//! (SeaBIOS) and under UEFI (OVMF), through GRUB's multiboot2 loader, and the in-kernel suite
//! passes there too. This is the path a real machine takes.
use abi::ExitCode;
use qemu::{Mode, Outcome, TestReport};
use std::time::Duration;
use tests::{boot_image, describe};

/// UEFI firmware alone takes ~6 s to the first serial line under TCG; leave room for load.
const USB_TIMEOUT: Duration = Duration::from_secs(300);

fn boots_to_success(mode: Mode) {
    let out = boot_image(mode, "run=test", USB_TIMEOUT);
    let report = TestReport::parse(&out.serial);
    let problems = report.problems(out.outcome, None);
    assert!(
        problems.is_empty(),
        "{mode}: {problems:#?}\n{}",
        describe(&out)
    );
    assert_eq!(out.outcome, Outcome::Kernel(ExitCode::Success));
}

#[test]
fn usb_stick_boots_under_bios() {
    boots_to_success(Mode::UsbBios);
}

#[test]
fn usb_stick_boots_under_uefi() {
    boots_to_success(Mode::UsbUefi);
}
