//! One QEMU invocation: the machine (vCPUs, memory), the mode and what it boots, rendered as
//! QEMU's argument list.
//!
//! Every mode shares: `-machine q35 -accel A -cpu C -m M -smp N -display none -serial stdio
//! -monitor none -nic none -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04`
//! (A and C: `tcg` and `max`, or `kvm` and `host,pmu=on` where [`crate::accel`]'s probe
//! found KVM working; `-no-reboot` turns a triple fault into an exit instead of a boot
//! loop). Then per mode:
//!
//! * direct: `-kernel kernel32.elf -append "<cmdline>"`;
//! * bios / uefi: the image as a disk; usb-*: `-device qemu-xhci -drive if=none,id=stick,...
//!   -device usb-storage,drive=stick`;
//! * uefi / usb-uefi: OVMF code read-only as pflash 0 and a private vars copy as pflash 1.
//!
//! With `nodes` (`kx --nodes N`) the machine gets N NUMA nodes, which QEMU describes to the
//! guest in an ACPI SRAT and SLIT: memory split evenly (whole MiB, the first nodes taking
//! the remainder) as one `memory-backend-ram` per node (`-numa node,mem=` is refused by
//! q35 since QEMU 5.1), vCPU `i` on node `i % N` (`-numa cpu,node-id=..,socket-id=0,
//! core-id=i,thread-id=0` with the topology made explicit as one socket of N cores, what
//! `-smp N` means on QEMU 7.2), and distances `10 + 10 * |i - j|`, nodes on a line, so
//! that with three or more nodes the fallback order by distance is visible.
//!
//! With `--nodes host` ([`NodeMirror`]) guest node `i` mirrors a host node: memory is split
//! over the guest nodes whose host node has memory, and where the host has several nodes each
//! backend is bound to its host node (`host-nodes=H,policy=bind`); a guest node mirroring a
//! memoryless host node is memoryless too (`-numa node,nodeid=i` without a memdev, which
//! QEMU 7.2 accepts beside memdev nodes).
//!
//! With `qmp` the machine gets a QMP socket (`-qmp unix:PATH,server=on,wait=off`), through
//! which the runner learns the vCPUs' thread ids to pin them ([`crate::placement`]).
//!
//! Images are opened with `snapshot=on`, so a run never writes the image and several runs can
//! share one.

use crate::accel::Accel;
use crate::mode::{Firmware, Mode};
use crate::placement::NodeMirror;
use std::ffi::OsString;
use std::path::PathBuf;

/// The exit device QEMU's status comes from (`isa-debug-exit`: status = value * 2 + 1).
pub const EXIT_DEVICE: &str = "isa-debug-exit,iobase=0xf4,iosize=0x04";

/// What the machine boots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Medium {
    /// The ELF32 kernel with its command line (direct mode).
    Kernel {
        /// `kernel32.elf`.
        elf32: PathBuf,
        /// The kernel command line (after the image path QEMU puts first).
        cmdline: String,
    },
    /// A GRUB image (its command line is inside its grub.cfg).
    Image(PathBuf),
}

/// A complete QEMU invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// How to boot.
    pub mode: Mode,
    /// Number of vCPUs (`-smp`).
    pub smp: u32,
    /// Memory in MiB (`-m`).
    pub mem_mib: u32,
    /// NUMA nodes (`None`: no NUMA description, the guest sees one node and no SRAT).
    pub nodes: Option<u32>,
    /// What to boot; must match the mode.
    pub medium: Medium,
    /// OVMF code (read-only pflash), for UEFI modes.
    pub ovmf_code: PathBuf,
    /// The private OVMF vars copy, for UEFI modes.
    pub ovmf_vars: Option<PathBuf>,
    /// TCG or KVM ([`crate::accel`] decides).
    pub accel: Accel,
    /// A QMP socket to create (`None`: none).
    pub qmp: Option<PathBuf>,
    /// `--nodes host`: which host node each guest node mirrors.
    pub mirror: Option<NodeMirror>,
    /// A TCG plugin to load (`kx bench --coherence`).
    pub plugin: Option<PluginLoad>,
    /// Under TCG, one host thread for all vCPUs, run round-robin (`-accel tcg,thread=single`)
    /// instead of one thread per vCPU: the vCPUs interleave at the emulator's time slices,
    /// not the host scheduler's (`kx bench --coherence --tcg-single`).
    pub tcg_single: bool,
    /// Under TCG, QEMU's instruction counter (`-icount shift=N`): the guest's virtual clock
    /// advances 2^N nanoseconds per guest instruction executed (its TSC, HPET and PIT with
    /// it), so a guest's own clock counts its instructions and a run of fixed guest time is
    /// a fixed number of instructions; the vCPUs then share one host thread. The cost boot
    /// uses it (its runs the same length in every boot), and the Linux reference's counted
    /// boot with shift 0.
    pub icount: Option<u8>,
}

/// `-plugin file=PATH,key=value,...`: a TCG plugin and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginLoad {
    /// The shared object.
    pub path: PathBuf,
    /// `key=value` arguments.
    pub args: Vec<String>,
}

impl PluginLoad {
    /// The option's value, with commas in the path and arguments doubled as QEMU's option
    /// syntax wants.
    #[must_use]
    pub fn arg(&self) -> String {
        let mut s = format!("file={}", self.path.to_string_lossy().replace(',', ",,"));
        for a in &self.args {
            s.push(',');
            s.push_str(&a.replace(',', ",,"));
        }
        s
    }
}

impl Launch {
    /// QEMU's arguments, or why this launch is inconsistent.
    pub fn args(&self) -> Result<Vec<OsString>, String> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |s: &str| a.push(s.into());
        push("-machine");
        push("q35");
        for arg in self.accel.args() {
            if arg == "tcg" && self.tcg_single {
                push("tcg,thread=single");
            } else {
                push(arg);
            }
        }
        push("-m");
        push(&self.mem_mib.to_string());
        push("-smp");
        match self.nodes {
            None => push(&self.smp.to_string()),
            Some(_) => push(&format!(
                "{},sockets=1,cores={},threads=1",
                self.smp, self.smp
            )),
        }
        for a in numa_args(self.nodes, self.smp, self.mem_mib, self.mirror.as_ref()) {
            push(&a);
        }
        if let Some(q) = &self.qmp {
            push("-qmp");
            push(&format!(
                "unix:{},server=on,wait=off",
                q.to_string_lossy().replace(',', ",,")
            ));
        }
        for s in [
            "-display",
            "none",
            "-serial",
            "stdio",
            "-monitor",
            "none",
            "-nic",
            "none",
            "-no-reboot",
            "-device",
            EXIT_DEVICE,
        ] {
            push(s);
        }
        if let Some(p) = &self.plugin {
            a.push("-plugin".into());
            a.push(p.arg().into());
        }
        if let Some(shift) = self.icount {
            if self.accel != Accel::Tcg {
                return Err(format!(
                    "QEMU's instruction counter (-icount) needs TCG, not {}",
                    self.accel
                ));
            }
            a.push("-icount".into());
            a.push(format!("shift={shift}").into());
        }
        if self.mode.firmware() == Firmware::Uefi {
            let vars = self
                .ovmf_vars
                .as_ref()
                .ok_or_else(|| format!("mode {} needs a private OVMF vars copy", self.mode))?;
            a.push("-drive".into());
            a.push(drive_arg(
                "if=pflash,format=raw,readonly=on,file=",
                &self.ovmf_code,
            ));
            a.push("-drive".into());
            a.push(drive_arg("if=pflash,format=raw,file=", vars));
        }
        match (&self.medium, self.mode) {
            (Medium::Kernel { elf32, cmdline }, Mode::Direct) => {
                a.push("-kernel".into());
                a.push(elf32.into());
                a.push("-append".into());
                a.push(cmdline.into());
            }
            (Medium::Image(img), Mode::Bios | Mode::Uefi) => {
                a.push("-drive".into());
                a.push(drive_arg("format=raw,snapshot=on,file=", img));
            }
            (Medium::Image(img), Mode::UsbBios | Mode::UsbUefi) => {
                a.push("-device".into());
                a.push("qemu-xhci".into());
                a.push("-drive".into());
                a.push(drive_arg(
                    "if=none,id=stick,format=raw,snapshot=on,file=",
                    img,
                ));
                a.push("-device".into());
                a.push("usb-storage,drive=stick".into());
            }
            (Medium::Kernel { .. }, m) => {
                return Err(format!("mode {m} boots a GRUB image, not a bare kernel"));
            }
            (Medium::Image(_), Mode::Direct) => {
                return Err("mode direct boots the kernel ELF, not an image".into());
            }
        }
        Ok(a)
    }
}

/// Memory of each of `nodes` nodes sharing `mem_mib` MiB: even, the first nodes taking
/// one MiB more each until the remainder is used up.
#[must_use]
pub fn node_sizes(nodes: u32, mem_mib: u32) -> Vec<u32> {
    let n = nodes.max(1);
    (0..n)
        .map(|i| mem_mib / n + u32::from(i < mem_mib % n))
        .collect()
}

/// The `-object`/`-numa` arguments of a machine with `nodes` nodes (none for `None`),
/// mirroring host nodes with `mirror`.
fn numa_args(
    nodes: Option<u32>,
    smp: u32,
    mem_mib: u32,
    mirror: Option<&NodeMirror>,
) -> Vec<String> {
    let Some(n) = nodes else { return Vec::new() };
    let mut a = Vec::new();
    // Per guest node: whether it has memory, and the host node to bind it to.
    let per_node: Vec<(bool, Option<u32>)> = (0..n as usize)
        .map(
            |i| match mirror.and_then(|m| m.nodes.get(i).map(|g| (g, m.bind))) {
                Some((g, bind)) => (g.memory, bind.then_some(g.host)),
                None => (true, None),
            },
        )
        .collect();
    let with_memory = per_node.iter().filter(|(m, _)| *m).count().max(1) as u32;
    let mut sizes = node_sizes(with_memory, mem_mib).into_iter();
    for (i, (memory, host)) in per_node.into_iter().enumerate() {
        if !memory {
            a.push("-numa".into());
            a.push(format!("node,nodeid={i}"));
            continue;
        }
        let size = sizes.next().unwrap_or(0);
        a.push("-object".into());
        a.push(match host {
            Some(h) => {
                format!("memory-backend-ram,id=ram-node{i},size={size}M,host-nodes={h},policy=bind")
            }
            None => format!("memory-backend-ram,id=ram-node{i},size={size}M"),
        });
        a.push("-numa".into());
        a.push(format!("node,nodeid={i},memdev=ram-node{i}"));
    }
    for cpu in 0..smp {
        a.push("-numa".into());
        a.push(format!(
            "cpu,node-id={},socket-id=0,core-id={cpu},thread-id=0",
            cpu % n
        ));
    }
    for i in 0..n {
        for j in 0..n {
            if i != j {
                a.push("-numa".into());
                a.push(format!(
                    "dist,src={i},dst={j},val={}",
                    10 + 10 * i.abs_diff(j)
                ));
            }
        }
    }
    a
}

/// `prefix` + path, with QEMU's option escaping (a `,` in a path is written `,,`).
fn drive_arg(prefix: &str, path: &std::path::Path) -> OsString {
    let mut s = OsString::from(prefix);
    s.push(path.to_string_lossy().replace(',', ",,"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::GuestNode;

    fn launch(mode: Mode, medium: Medium) -> Launch {
        Launch {
            mode,
            smp: 4,
            mem_mib: 512,
            nodes: None,
            medium,
            ovmf_code: "/fw/CODE.fd".into(),
            ovmf_vars: Some("/tmp/x/VARS.fd".into()),
            accel: Accel::Tcg,
            qmp: None,
            mirror: None,
            plugin: None,
            tcg_single: false,
            icount: None,
        }
    }

    #[test]
    fn a_plugin_and_single_threaded_tcg_render_as_qemu_options() {
        let mut l = launch(
            Mode::Direct,
            Medium::Kernel {
                elf32: "/k".into(),
                cmdline: String::new(),
            },
        );
        assert!(joined(&l).contains(" -accel tcg -cpu max "));
        assert!(!joined(&l).contains("-plugin"));
        l.tcg_single = true;
        l.plugin = Some(PluginLoad {
            path: "/p,q/libkx_coherence.so".into(),
            args: vec!["mark=0x1000".into(), "out=/o,ut".into()],
        });
        let j = joined(&l);
        assert!(j.contains(" -accel tcg,thread=single -cpu max "), "{j}");
        assert!(
            j.contains(" -plugin file=/p,,q/libkx_coherence.so,mark=0x1000,out=/o,,ut "),
            "{j}"
        );
        assert!(!j.contains("-icount"), "{j}");
        l.icount = Some(0);
        assert!(joined(&l).contains(" -icount shift=0 "), "{}", joined(&l));
        l.icount = Some(4);
        assert!(joined(&l).contains(" -icount shift=4 "), "{}", joined(&l));
        l.accel = Accel::Kvm;
        assert!(l.args().unwrap_err().contains("needs TCG"));
    }

    #[test]
    fn qmp_socket_and_mirrored_host_nodes() {
        let mut l = launch(
            Mode::Direct,
            Medium::Kernel {
                elf32: "/k".into(),
                cmdline: String::new(),
            },
        );
        l.qmp = Some("/tmp/kx-qmp-1/qmp.sock".into());
        assert!(joined(&l).contains(" -qmp unix:/tmp/kx-qmp-1/qmp.sock,server=on,wait=off "));
        // Two host nodes, the second memoryless: all memory on node 0, bound there.
        l.nodes = Some(2);
        l.mem_mib = 256;
        l.mirror = Some(NodeMirror {
            nodes: vec![
                GuestNode {
                    guest: 0,
                    host: 0,
                    memory: true,
                },
                GuestNode {
                    guest: 1,
                    host: 1,
                    memory: false,
                },
            ],
            bind: true,
        });
        let s = joined(&l);
        assert!(
            s.contains(
                "-object memory-backend-ram,id=ram-node0,size=256M,host-nodes=0,policy=bind \
             -numa node,nodeid=0,memdev=ram-node0 -numa node,nodeid=1 -numa cpu"
            ),
            "{s}"
        );
        assert!(s.contains("-numa cpu,node-id=1,socket-id=0,core-id=1,thread-id=0"));
        // Two nodes with memory, mirrored on a 2-node host: split and each bound.
        l.mirror = Some(NodeMirror {
            nodes: vec![
                GuestNode {
                    guest: 0,
                    host: 0,
                    memory: true,
                },
                GuestNode {
                    guest: 1,
                    host: 1,
                    memory: true,
                },
            ],
            bind: true,
        });
        let s = joined(&l);
        assert!(s.contains("size=128M,host-nodes=0,policy=bind"), "{s}");
        assert!(
            s.contains("id=ram-node1,size=128M,host-nodes=1,policy=bind"),
            "{s}"
        );
        // A 1-node host: one node, nothing bound.
        l.nodes = Some(1);
        l.mirror = Some(NodeMirror {
            nodes: vec![GuestNode {
                guest: 0,
                host: 0,
                memory: true,
            }],
            bind: false,
        });
        let s = joined(&l);
        assert!(s.contains("-object memory-backend-ram,id=ram-node0,size=256M -numa node,nodeid=0,memdev=ram-node0"), "{s}");
        assert!(!s.contains("host-nodes"));
    }

    #[test]
    fn kvm_gets_the_host_cpu_with_its_pmu() {
        let mut l = launch(
            Mode::Direct,
            Medium::Kernel {
                elf32: "/k.elf".into(),
                cmdline: String::new(),
            },
        );
        l.accel = Accel::Kvm;
        assert!(joined(&l).starts_with("-machine q35 -accel kvm -cpu host,pmu=on -m 512"));
    }

    fn joined(l: &Launch) -> String {
        l.args()
            .unwrap()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn direct() {
        let l = launch(
            Mode::Direct,
            Medium::Kernel {
                elf32: "/k/kernel32.elf".into(),
                cmdline: "run=test test=a".into(),
            },
        );
        let args = l.args().unwrap();
        let s = joined(&l);
        assert!(s.starts_with(
            "-machine q35 -accel tcg -cpu max -m 512 -smp 4 -display none -serial stdio"
        ));
        assert!(s.contains("-no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04"));
        assert!(!s.contains("pflash"));
        // The command line stays one argument.
        assert_eq!(args.last().unwrap(), "run=test test=a");
        assert_eq!(args[args.len() - 3], "/k/kernel32.elf");
    }

    #[test]
    fn numa_nodes_split_memory_and_cpus() {
        let mut l = launch(
            Mode::Direct,
            Medium::Kernel {
                elf32: "/k".into(),
                cmdline: String::new(),
            },
        );
        l.nodes = Some(3);
        l.mem_mib = 256;
        let s = joined(&l);
        assert!(s.contains("-smp 4,sockets=1,cores=4,threads=1 "));
        for want in [
            "-object memory-backend-ram,id=ram-node0,size=86M -numa node,nodeid=0,memdev=ram-node0",
            "-object memory-backend-ram,id=ram-node1,size=85M",
            "-object memory-backend-ram,id=ram-node2,size=85M -numa node,nodeid=2,memdev=ram-node2",
            "-numa cpu,node-id=0,socket-id=0,core-id=0,thread-id=0",
            "-numa cpu,node-id=1,socket-id=0,core-id=1,thread-id=0",
            "-numa cpu,node-id=0,socket-id=0,core-id=3,thread-id=0",
            "-numa dist,src=0,dst=2,val=30",
            "-numa dist,src=2,dst=1,val=20",
        ] {
            assert!(s.contains(want), "no `{want}` in {s}");
        }
        assert!(!s.contains("dist,src=1,dst=1"));
        assert_eq!(node_sizes(3, 256).iter().sum::<u32>(), 256);
        assert_eq!(node_sizes(2, 256), [128, 128]);
        l.nodes = None;
        assert!(!joined(&l).contains("-numa"));
    }

    #[test]
    fn uefi_usb_has_both_pflash_and_the_stick() {
        let s = joined(&launch(Mode::UsbUefi, Medium::Image("/i/a,b.img".into())));
        assert!(s.contains("-drive if=pflash,format=raw,readonly=on,file=/fw/CODE.fd"));
        assert!(s.contains("-drive if=pflash,format=raw,file=/tmp/x/VARS.fd"));
        assert!(s.contains(
            "-device qemu-xhci -drive if=none,id=stick,format=raw,snapshot=on,file=/i/a,,b.img \
             -device usb-storage,drive=stick"
        ));
    }

    #[test]
    fn bios_disk_has_no_firmware_files() {
        let s = joined(&launch(Mode::Bios, Medium::Image("/i/a.img".into())));
        assert!(s.ends_with("-drive format=raw,snapshot=on,file=/i/a.img"));
        assert!(!s.contains("pflash") && !s.contains("usb-storage"));
    }

    #[test]
    fn inconsistent_launches_are_rejected() {
        let k = Medium::Kernel {
            elf32: "/k".into(),
            cmdline: String::new(),
        };
        assert!(launch(Mode::Uefi, k).args().is_err());
        assert!(
            launch(Mode::Direct, Medium::Image("/i".into()))
                .args()
                .is_err()
        );
        let mut l = launch(Mode::Uefi, Medium::Image("/i".into()));
        l.ovmf_vars = None;
        assert!(l.args().unwrap_err().contains("OVMF"));
    }
}
