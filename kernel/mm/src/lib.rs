//! `mm`: the kernel's memory management, platform neutral so the same code runs in the
//! kernel and on host threads (the host benchmark hands it a memory arena).
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate alloc;

pub mod vm;
