//! The `machine` record of a host-thread run, and what else the results say about the host:
//! the CPU model (`/proc/cpuinfo`), the cores the run may use (its affinity mask), memory
//! (`/proc/meminfo`), NUMA nodes (`/sys/devices/system/node`), the hypervisor (CPUID leaf
//! 0x40000000, empty on bare metal), the TSC rate (lock statistics count TSC cycles; measured
//! against `CLOCK_MONOTONIC` over 20 ms) and the kernel version (`/proc/sys/kernel`).

use super::sys;
use bench::{Machine, Platform};

/// The `machine` record for a run on `cores` cores with the equivalent kernel `cmdline`.
#[must_use]
pub fn machine(cores: u32, cmdline: &str) -> Machine {
    Machine {
        cpu_model: crate::bench::host::host_cpu().unwrap_or_else(|| "unknown".into()),
        vcpus: cores,
        memory_mib: memory_mib().unwrap_or(0),
        nodes: nodes(),
        platform: Platform::HostThreads,
        hypervisor: hypervisor(),
        tsc_hz: tsc_hz(),
        boot_protocol: match kernel_version() {
            Some(k) => format!("host process ({k})"),
            None => "host process".into(),
        },
        cmdline: cmdline.into(),
    }
}

/// `Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1` (uname -srv).
#[must_use]
pub fn kernel_version() -> Option<String> {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    Some(format!(
        "{} {} {}",
        read("ostype")?,
        read("osrelease")?,
        read("version").unwrap_or_default()
    ))
    .map(|s| s.trim_end().to_owned())
}

fn memory_mib() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024)
}

fn nodes() -> u32 {
    let n = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.strip_prefix("node")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                .count()
        })
        .unwrap_or(0);
    (n as u32).max(1)
}

#[cfg(target_arch = "x86_64")]
fn hypervisor() -> String {
    use raw_cpuid::{CpuId, Hypervisor};
    let cpuid = CpuId::new();
    if !cpuid.get_feature_info().is_some_and(|f| f.has_hypervisor()) {
        return String::new();
    }
    let Some(info) = cpuid.get_hypervisor_info() else {
        return "unknown".into();
    };
    match info.identify() {
        Hypervisor::QEMU => "TCGTCGTCGTCG".into(),
        Hypervisor::KVM => "KVMKVMKVM".into(),
        Hypervisor::VMware => "VMwareVMware".into(),
        Hypervisor::HyperV => "Microsoft Hv".into(),
        Hypervisor::Xen => "XenVMMXenVMM".into(),
        Hypervisor::Bhyve => "bhyve bhyve ".into(),
        Hypervisor::QNX => "QNXQVMBSQG".into(),
        Hypervisor::ACRN => "ACRNACRNACRN".into(),
        Hypervisor::Unknown(b, c, d) => [b, c, d]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .filter(|x| x.is_ascii_graphic() || *x == b' ')
            .map(char::from)
            .collect(),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn hypervisor() -> String {
    String::new()
}

fn tsc_hz() -> u64 {
    let (c0, t0) = (ksync::stat::cycles(), sys::monotonic_ns());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (c1, t1) = (ksync::stat::cycles(), sys::monotonic_ns());
    let ns = t1.saturating_sub(t0).max(1);
    ((c1.saturating_sub(c0) as u128 * 1_000_000_000) / ns as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_this_host() {
        let m = machine(2, "run=bench quick=1");
        assert_eq!(m.platform, Platform::HostThreads);
        assert_eq!((m.vcpus, m.cmdline.as_str()), (2, "run=bench quick=1"));
        assert!(m.memory_mib > 0 && m.nodes >= 1);
        assert!(
            m.boot_protocol.starts_with("host process (Linux "),
            "{}",
            m.boot_protocol
        );
        assert!(kernel_version().is_some_and(|k| k.starts_with("Linux ")));
    }
}
