//! The benchmark on the host side: `kx bench` (boot, progress bar, table, results
//! directory), `kx import` (the same from a serial log captured on a real machine) and
//! `kx compare` (result directories side by side).
//!
//! - [`collect`]: the records of a serial log and everything wrong with them;
//! - [`results_file`]: `results.json`; [`csv`]: `results.csv`; [`plot`]: one SVG per
//!   scenario (plotters); [`forest`]: one forest plot per scenario; [`html`]: `index.html`;
//!   [`output`]: writes the directory;
//! - [`host`]: git revision, host CPU, command line, QEMU version, timestamps, the
//!   placement and the host's load; [`platform_note`]: the table's note on what the
//!   platform (TCG or KVM, pinned or not, SMT siblings or not) can show;
//! - [`cost`]: the cost boot, each variant's instructions and locked RMWs per operation;
//! - [`run`]: `kx bench` and `kx import`; [`qr`]: `kx import --qr`, the same from the QR
//!   codes the kernel shows; [`compare`]: `kx compare`;
//! - [`linux_qemu`]: the `linux` reference of `kx bench` in QEMU (Debian's Linux booted in
//!   the same QEMU after the benchmark);
//! - [`threads`]: `kx bench --host`, the engine on pinned host threads, with the Linux
//!   reference.

pub mod collect;
pub mod compare;
pub mod cost;
pub mod csv;
pub mod forest;
pub mod host;
pub mod html;
pub mod linux_qemu;
pub mod output;
pub mod platform_note;
pub mod plot;
pub mod qr;
pub mod results_file;
pub mod rmw_sites;
pub mod run;
pub mod threads;
