//! A cache-coherence model of the emulated CPUs: *perf c2c for the emulator*.
//!
//! Every seed this project reproduces is about cache lines moving between CPUs. Under QEMU's
//! TCG those moves cost next to nothing beside the emulation itself, so timings cannot show
//! them; but every guest memory access passes through QEMU, so they can be *counted*
//! exactly. This crate is the counting: [`model`] keeps, per vCPU, a finite private cache of
//! MESI-state lines and says which transaction each access makes (read HITM, RFO HITM,
//! upgrade); [`tracker`] sorts the accesses into the kernel's runs and measured windows
//! (marked by stores to a page, see `abi::coherence`) and writes per run one JSON line
//! ([`report`]) with each vCPU's loads, stores, locked RMWs (and the instructions that made
//! them) and transactions, how much the windows overlapped, and the lines with the most
//! transactions with the instructions that made them.
//!
//! The QEMU side is the `coherence-plugin` crate (`coherence/plugin`, a `cdylib` built as
//! `libkx_coherence.so`), which declares the few functions of QEMU's plugin API version 1 it
//! uses and calls [`tracker::Tracker::access`] from its memory callback. The runner
//! (`kx bench --coherence`) builds it, passes it [`config::Config`]'s arguments and reads the
//! lines back with [`report::read`]. This crate has no unsafe code and no QEMU dependency,
//! so its logic is tested on the host with synthetic access streams.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod block;
pub mod config;
pub mod model;
pub mod report;
pub mod tracker;

pub use block::Block;
pub use config::Config;
pub use report::{HotLine, ModelReport, RmwSite, RunReport, Transactions};
pub use tracker::Tracker;
