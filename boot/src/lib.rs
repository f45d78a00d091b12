//! Host-side builder for the bootable kernel: everything between `cargo` and a bootable file.
//!
//! The kernel is a freestanding binary for the host triple (stable Rust, no extra target), so it needs
//! its own RUSTFLAGS and its own target dir, and it must be built with a clean environment
//! even when this code runs inside `cargo test` or `cargo run`. From the ELF64 that cargo
//! links this crate makes the two things that boot:
//!
//! * the ELF32 copy that `qemu -kernel` (multiboot1) accepts ([`kernel_build`]), and
//! * a stripped GRUB hybrid image (BIOS + UEFI, protective MBR + GPT + ESP) that can be
//!   written to a USB stick with `dd` ([`image`]), with its SHA-256 ([`sha256`]).
//!
//! It also builds the coherence plugin QEMU loads for `kx bench --coherence` ([`plugin_build`]).
//!
//! [`host_deps`] checks for the Debian packages these steps (and the QEMU runner) need and
//! installs them when it can; [`usage`] is how the workspace's binaries report a usage
//! error. Nothing here uses `unsafe`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cargo_env;
pub mod error;
pub mod grub_cfg;
pub mod host_deps;
pub mod image;
pub mod kernel_build;
pub mod plugin_build;
pub mod sha256;
pub mod tool;
pub mod usage;
pub mod workspace;

pub use error::BootError;
pub use image::{Image, build_image};
pub use kernel_build::{BuildOptions, Kernel, Profile, build_kernel};
pub use workspace::Workspace;
