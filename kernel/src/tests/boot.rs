//! Boot tests: the boot information and the command line as the kernel read them.

use crate::boot_info::{self, BootProtocol, MemKind};
use crate::ensure;
use crate::ktest::TestResult;
use ktest::ktest;

#[ktest]
fn boot_memory_map() -> TestResult {
    let bi = boot_info::get();
    ensure!(!bi.regions().is_empty(), "empty memory map");
    ensure!(
        bi.usable_bytes() >= 16 << 20,
        "only {} bytes usable",
        bi.usable_bytes()
    );
    let above_1m = bi
        .regions()
        .iter()
        .any(|r| r.kind == MemKind::Usable && r.start >= 0x10_0000);
    ensure!(above_1m, "no usable memory above 1 MiB");
    let (k0, k1) = crate::arch::paging::kernel_image();
    let inside = bi
        .regions()
        .iter()
        .any(|r| r.kind == MemKind::Usable && r.start <= k0 && r.end() >= k1);
    ensure!(inside, "kernel image {k0:#x}-{k1:#x} not inside usable RAM");
    Ok(())
}

#[ktest]
fn boot_cmdline() -> TestResult {
    let bi = boot_info::get();
    let skip = bi.protocol == BootProtocol::Multiboot1;
    let cfg = abi::cmdline::parse(bi.cmdline(), skip).map_err(|e| alloc::format!("{e}"))?;
    ensure!(
        matches!(cfg.action, abi::Action::Test(_)),
        "tests are running but the command line says {:?}",
        cfg.action
    );
    Ok(())
}
