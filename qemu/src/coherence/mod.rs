//! `kx bench --coherence`: the benchmark under the coherence plugin, *perf c2c for the
//! emulator*.
//!
//! [`prepare`] builds the plugin (`boot::plugin_build`), finds the kernel's mark page in its
//! ELF ([`symbols`]) and says how QEMU loads the plugin; the boot then runs as any `kx bench`
//! (TCG only: under KVM no access passes through QEMU). Afterwards [`results::attach`] reads
//! the plugin's JSON lines, pairs its n-th run with the n-th `run` record on serial, names
//! each hot line's code from the kernel's symbols, and the result goes into `results.json`
//! (`coherence`), `coherence.csv` and the terminal ([`table`]). Counts, not times: a
//! transfer is a line that moved modified from one vCPU's cache to another's in the model,
//! whatever the host's timing.

pub mod chart;
pub mod projection;
pub mod results;
pub mod symbols;
pub mod table;
pub mod verdict;

use crate::RunError;
use crate::launch::PluginLoad;
use boot::Workspace;
use std::path::{Path, PathBuf};
use symbols::Symbols;

/// What a boot under the plugin needs.
#[derive(Clone, Debug)]
pub struct Setup {
    /// How QEMU loads the plugin.
    pub load: PluginLoad,
    /// Where the plugin writes its JSON lines.
    pub out: PathBuf,
    /// The kernel's symbols (the mark page; functions for the hot lines).
    pub symbols: Symbols,
}

/// Builds the plugin and sets it up for the kernel ELF `elf` (64- or 32-bit, with its
/// symbol table) on a machine of `sockets` sockets, with the model `options` ask for
/// (cache size and ways, hot lines), writing to `out`.
pub fn prepare(
    ws: &Workspace,
    elf: &Path,
    sockets: u32,
    options: &crate::cli::BenchOptions,
    out: &Path,
    quiet: bool,
) -> Result<Setup, RunError> {
    let (symbols, mark) = mark_page(elf, "--coherence")?;
    let path = boot::plugin_build::build_plugin(ws, quiet)?;
    fresh_output(out)?;
    let mut config = coherence::Config::new(mark, out.to_owned());
    config.sockets = sockets.max(1);
    options.coherence_model(&mut config);
    Ok(Setup {
        load: PluginLoad {
            path,
            args: config.to_args(),
        },
        out: out.to_owned(),
        symbols,
    })
}

/// The symbols of the kernel ELF `elf` and the physical address of its mark page, or why
/// not (`what` says which use of the plugin asks).
pub fn mark_page(elf: &Path, what: &str) -> Result<(Symbols, u64), RunError> {
    let symbols = Symbols::read(elf).map_err(|why| RunError::BadInput {
        path: elf.to_owned(),
        why: format!("{what}: {why}"),
    })?;
    let mark = symbols
        .address(abi::coherence::MARK_SYMBOL)
        .ok_or_else(|| RunError::BadInput {
            path: elf.to_owned(),
            why: format!(
                "{what}: no symbol {} (a kernel older than the coherence marks?)",
                abi::coherence::MARK_SYMBOL
            ),
        })?;
    Ok((symbols, mark))
}

/// Makes `out`'s directory and removes an earlier file at `out`: a stale file from an
/// earlier boot must not pass for this boot's output.
pub fn fresh_output(out: &Path) -> Result<(), RunError> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| RunError::io(dir, e))?;
    }
    match std::fs::remove_file(out) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(RunError::io(out, e)),
    }
}

/// Judges the counts paired with their runs ([`results::attach`]): the mechanism verdict
/// lines, and the projection onto the seeds' machines (a model), from the verdicts' rounds
/// at the CPU counts this machine's cores could run at once (the plugin runs under TCG
/// only, on this machine).
pub fn judge(r: &mut results::CoherenceResults) {
    let verdicts = verdict::verdicts(r);
    r.verdicts = verdict::lines(&verdicts);
    let counted: Vec<projection::Counted> = verdicts
        .iter()
        .map(|v| projection::Counted {
            scenario: v.scenario.clone(),
            config: v.config.clone(),
            a: v.a.clone(),
            b: v.b.clone(),
            cpus: v.cpus,
            rounds: (v.rounds[0].clone(), v.rounds[1].clone()),
        })
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    r.projection = Some(projection::project(
        &counted,
        u32::try_from(cores).unwrap_or(u32::MAX),
        verdict::ABSENT,
    ));
}

/// Why QEMU's failure to start is the plugin's, from its stderr: `Some(message)` when QEMU
/// said it could not load it (no plugin support, an API version the plugin does not speak).
#[must_use]
pub fn refused(qemu_stderr: &str) -> Option<String> {
    let lines: Vec<&str> = qemu_stderr
        .lines()
        .filter(|l| l.contains("plugin") || l.contains("kx_coherence"))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}
