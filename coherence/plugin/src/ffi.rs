//! The part of QEMU's TCG plugin API, version 1 (Debian 12's QEMU 7.2 offers 0 to 1), that the
//! plugin uses, declared by hand from the documented C signatures in QEMU's
//! `include/qemu/qemu-plugin.h`. Writing these few declarations keeps the workspace's
//! MIT/Apache licence: the `qemu-plugin` crate, which would cover them, is GPL.
//!
//! The functions are resolved against the QEMU binary when it `dlopen`s the plugin (a
//! cdylib may leave symbols undefined on Linux). Only functions that exist unchanged in
//! version 1 are declared: `qemu_plugin_insn_data` returns a pointer here (version 3
//! changed it to copy into a buffer), and `qemu_plugin_n_vcpus` (gone in version 2) is not
//! used; the vCPU count comes from `qemu_info_t`.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `qemu_plugin_id_t`.
pub type PluginId = u64;
/// `qemu_plugin_meminfo_t`.
pub type MemInfo = u32;

/// `struct qemu_plugin_tb` (opaque).
#[repr(C)]
pub struct Tb {
    _opaque: [u8; 0],
}

/// `struct qemu_plugin_insn` (opaque).
#[repr(C)]
pub struct Insn {
    _opaque: [u8; 0],
}

/// `struct qemu_plugin_hwaddr` (opaque).
#[repr(C)]
pub struct HwAddr {
    _opaque: [u8; 0],
}

/// `qemu_info_t`'s version pair.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Version {
    /// Oldest API version this QEMU loads.
    pub min: c_int,
    /// The version it implements.
    pub cur: c_int,
}

/// `qemu_info_t.system`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct System {
    /// vCPUs at start.
    pub smp_vcpus: c_int,
    /// vCPUs at most.
    pub max_vcpus: c_int,
}

/// `qemu_info_t` (version 1 layout; the union holds only `system`).
#[repr(C)]
pub struct Info {
    /// Guest architecture.
    pub target_name: *const c_char,
    /// API versions.
    pub version: Version,
    /// Full-system emulation (not user mode).
    pub system_emulation: bool,
    /// Valid when `system_emulation`.
    pub system: System,
}

/// `enum qemu_plugin_cb_flags`: `QEMU_PLUGIN_CB_NO_REGS`.
pub const CB_NO_REGS: c_int = 0;
/// `enum qemu_plugin_mem_rw`: `QEMU_PLUGIN_MEM_W`.
pub const MEM_W: c_int = 2;
/// `enum qemu_plugin_mem_rw`: `QEMU_PLUGIN_MEM_RW`.
pub const MEM_RW: c_int = 3;

/// `qemu_plugin_vcpu_tb_trans_cb_t`.
pub type TbTransCb = extern "C" fn(id: PluginId, tb: *mut Tb);
/// `qemu_plugin_vcpu_mem_cb_t`.
pub type MemCb = extern "C" fn(vcpu: c_uint, info: MemInfo, vaddr: u64, udata: *mut c_void);
/// `qemu_plugin_vcpu_udata_cb_t`.
pub type VcpuUdataCb = extern "C" fn(vcpu: c_uint, udata: *mut c_void);
/// `qemu_plugin_udata_cb_t`.
pub type UdataCb = extern "C" fn(id: PluginId, udata: *mut c_void);

// SAFETY: these are QEMU's exported plugin functions with the signatures of API version 1;
// QEMU resolves them when it loads the plugin, and refuses a plugin whose declared version
// (`qemu_plugin_version`, exported by lib.rs) it does not support.
unsafe extern "C" {
    pub fn qemu_plugin_register_vcpu_tb_trans_cb(id: PluginId, cb: TbTransCb);
    pub fn qemu_plugin_register_atexit_cb(id: PluginId, cb: UdataCb, udata: *mut c_void);
    pub fn qemu_plugin_tb_n_insns(tb: *const Tb) -> usize;
    pub fn qemu_plugin_register_vcpu_tb_exec_cb(
        tb: *mut Tb,
        cb: VcpuUdataCb,
        flags: c_int,
        udata: *mut c_void,
    );
    pub fn qemu_plugin_tb_get_insn(tb: *const Tb, idx: usize) -> *mut Insn;
    pub fn qemu_plugin_insn_data(insn: *const Insn) -> *const c_void;
    pub fn qemu_plugin_insn_size(insn: *const Insn) -> usize;
    pub fn qemu_plugin_insn_vaddr(insn: *const Insn) -> u64;
    pub fn qemu_plugin_register_vcpu_mem_cb(
        insn: *mut Insn,
        cb: MemCb,
        flags: c_int,
        rw: c_int,
        udata: *mut c_void,
    );
    pub fn qemu_plugin_mem_is_store(info: MemInfo) -> bool;
    pub fn qemu_plugin_get_hwaddr(info: MemInfo, vaddr: u64) -> *mut HwAddr;
    pub fn qemu_plugin_hwaddr_is_io(haddr: *const HwAddr) -> bool;
    pub fn qemu_plugin_hwaddr_phys_addr(haddr: *const HwAddr) -> u64;
    pub fn qemu_plugin_outs(string: *const c_char);
}
