//! `libkx_coherence.so`: the QEMU TCG plugin that feeds every guest memory access to the
//! coherence model (the `coherence` crate).
//!
//! Built with `cargo build --release -p coherence-plugin` (the runner does it for
//! `kx bench --coherence` and the known-answer tests) and loaded with
//! `qemu-system-x86_64 -plugin target/release/libkx_coherence.so,mark=0x...,out=PATH`
//! (the arguments are `coherence::Config`'s). It declares plugin API version 1, which
//! Debian 12's QEMU 7.2 loads (it offers versions 0 to 1, as the report's header records); a
//! QEMU whose oldest supported version is newer refuses to load it with its own message, and
//! the runner reports that QEMU exit as a QEMU without a usable plugin interface.
//!
//! At translation time every instruction of a block gets a memory callback whose user data
//! is the instruction's address, with a flag when the instruction is a locked
//! read-modify-write (a `lock` prefix, or `xchg` with memory, which locks implicitly): the
//! model must see it as one RFO, whether QEMU reports it once as a store or as a load and a
//! store. At run
//! time the callback asks QEMU for the access's physical address (I/O accesses are left
//! out) and calls `coherence::Tracker::access`.
//!
//! Every block also gets an execution callback whose user data is the block packed into a
//! word (`coherence::Block`: its first instruction's page, its instruction count, whether
//! its last instruction leaves through a lookup), for the window's instructions, blocks and
//! the transitions QEMU cannot chain.
//!
//! With `model=off` (`kx bench`'s cost boot) the memory callbacks are registered for stores
//! only: enough for the marks (stores) and the locked RMWs (counted on their store), and the
//! loads, most of a kernel's accesses, cost no callback.
//!
//! Licence: the workspace's (MIT OR Apache-2.0); the FFI declarations in `ffi.rs` are written
//! from the API's documentation, not taken from a GPL crate.
//!
//! Unsafe code here, and why: this module and `ffi` are the boundary with QEMU (exported
//! `#[unsafe(no_mangle)]` entry points, callbacks receiving raw pointers, calls into the
//! plugin API); `insn`, which decodes instruction bytes, denies it.

mod ffi;
mod insn;

use coherence::{Block, Config, Tracker};
use ffi::{Info, MemInfo, PluginId, Tb};
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// The plugin API version this plugin is written against.
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = 1;

static TRACKER: OnceLock<Tracker> = OnceLock::new();

/// Which accesses get a memory callback: `MEM_RW` with the model, `MEM_W` without.
static MEM_FILTER: OnceLock<c_int> = OnceLock::new();

/// Bit flipped in an instruction's (canonical) address to mark a locked RMW: bits 48-63 of
/// a canonical address are equal, so a flipped bit 56 is never an address.
const RMW_FLAG: u64 = 1 << 56;

/// Says `text` where a user sees it: QEMU's stderr (QEMU's own plugin log, `qemu_plugin_outs`,
/// is shown only with `-d plugin`) and the plugin log.
fn outs(text: &str) {
    eprintln!("kx_coherence: {text}");
    if let Ok(c) = CString::new(format!("kx_coherence: {text}\n")) {
        // SAFETY: `c` is a NUL-terminated string that lives across the call.
        unsafe { ffi::qemu_plugin_outs(c.as_ptr()) };
    }
}

/// QEMU calls this once when it loads the plugin; non-zero refuses the load.
///
/// # Safety
///
/// QEMU passes a valid `info` for the duration of the call and `argc` valid C strings in
/// `argv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qemu_plugin_install(
    id: PluginId,
    info: *const Info,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: QEMU's contract above.
    let (info, args) = unsafe { (&*info, args(argc, argv)) };
    match install(id, info, &args) {
        Ok(()) => 0,
        Err(e) => {
            outs(&e);
            -1
        }
    }
}

/// The arguments as strings.
///
/// # Safety
///
/// `argv` holds `argc` valid NUL-terminated strings.
unsafe fn args(argc: c_int, argv: *const *const c_char) -> Vec<String> {
    (0..argc.max(0) as usize)
        .map(|i| {
            // SAFETY: the caller's contract.
            unsafe { CStr::from_ptr(*argv.add(i)) }
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn install(id: PluginId, info: &Info, args: &[String]) -> Result<(), String> {
    if !(info.version.min..=info.version.cur).contains(&1) {
        return Err(format!(
            "this QEMU supports plugin API versions {} to {}; the plugin is written for \
             version 1 (Debian 12's QEMU 7.2 offers 0 to 1)",
            info.version.min, info.version.cur
        ));
    }
    if !info.system_emulation {
        return Err("the coherence model needs full-system emulation".into());
    }
    let config = Config::parse(args.iter().map(String::as_str))?;
    let vcpus = info.system.max_vcpus.max(info.system.smp_vcpus).max(1) as u32;
    let file = std::fs::File::create(&config.out)
        .map_err(|e| format!("cannot create {}: {e}", config.out.display()))?;
    let tracker = Tracker::new(
        &config,
        vcpus,
        (info.version.min, info.version.cur),
        Box::new(std::io::BufWriter::new(file)),
    )?;
    TRACKER
        .set(tracker)
        .map_err(|_| "loaded twice".to_string())?;
    let filter = if config.model {
        ffi::MEM_RW
    } else {
        ffi::MEM_W
    };
    MEM_FILTER
        .set(filter)
        .map_err(|_| "loaded twice".to_string())?;
    // SAFETY: registering callbacks with this plugin's id, as the API expects from install.
    unsafe {
        ffi::qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
        ffi::qemu_plugin_register_atexit_cb(id, at_exit, std::ptr::null_mut());
    }
    Ok(())
}

extern "C" fn at_exit(_id: PluginId, _udata: *mut c_void) {
    if let Some(t) = TRACKER.get() {
        t.exit();
    }
}

extern "C" fn tb_trans(_id: PluginId, tb: *mut Tb) {
    let filter = MEM_FILTER.get().copied().unwrap_or(ffi::MEM_RW);
    // SAFETY: QEMU passes a valid block for the duration of the translation callback; its
    // instructions and their bytes stay valid during it.
    unsafe {
        let n = ffi::qemu_plugin_tb_n_insns(tb);
        let mut first = None;
        let mut exits = false;
        for i in 0..n {
            let insn = ffi::qemu_plugin_tb_get_insn(tb, i);
            let pc = ffi::qemu_plugin_insn_vaddr(insn);
            first.get_or_insert(pc);
            let data = ffi::qemu_plugin_insn_data(insn).cast::<u8>();
            let size = ffi::qemu_plugin_insn_size(insn);
            let bytes = if data.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(data, size)
            };
            exits = insn::exits_by_lookup(bytes);
            let udata = if insn::locked_rmw(bytes) {
                pc ^ RMW_FLAG
            } else {
                pc
            };
            ffi::qemu_plugin_register_vcpu_mem_cb(
                insn,
                mem,
                ffi::CB_NO_REGS,
                filter,
                udata as *mut c_void,
            );
        }
        // The block's instructions, its page and its exit, counted each time it starts
        // (the udata is the packed `Block`).
        let Some(block) = first.and_then(|pc| Block::new(pc, n as u32, exits)) else {
            // QEMU ends a block at 512 instructions, and an empty block has no address:
            // a QEMU that made one would be counted wrong, so it is stopped, loudly.
            outs(&format!(
                "a translated block of {n} instructions at {first:#x?}: more than the \
                 plugin can count"
            ));
            std::process::abort();
        };
        ffi::qemu_plugin_register_vcpu_tb_exec_cb(
            tb,
            tb_exec,
            ffi::CB_NO_REGS,
            block.word() as *mut c_void,
        );
    }
}

extern "C" fn tb_exec(vcpu: c_uint, udata: *mut c_void) {
    if let (Some(t), Some(b)) = (TRACKER.get(), Block::from_word(udata as u64)) {
        t.executed(vcpu, b);
    }
}

extern "C" fn mem(vcpu: c_uint, info: MemInfo, vaddr: u64, udata: *mut c_void) {
    let Some(t) = TRACKER.get() else {
        return;
    };
    // SAFETY: `info` and `vaddr` are the callback's own; QEMU answers for the access being
    // reported.
    let (pa, store) = unsafe {
        let hw = ffi::qemu_plugin_get_hwaddr(info, vaddr);
        if hw.is_null() || ffi::qemu_plugin_hwaddr_is_io(hw) {
            return;
        }
        (
            ffi::qemu_plugin_hwaddr_phys_addr(hw),
            ffi::qemu_plugin_mem_is_store(info),
        )
    };
    let u = udata as u64;
    let rmw = (u >> 56 & 1) != (u >> 63);
    let pc = if rmw { u ^ RMW_FLAG } else { u };
    t.access(vcpu, pa, store, rmw, pc);
}
