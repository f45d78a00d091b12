//! Link the kernel binary with its own linker script, freestanding.
//!
//! The arguments go to the `kernel` binary only (`rustc-link-arg-bins`), so build scripts and
//! proc-macros of dependencies still link normally for the host.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let script = format!("{dir}/src/arch/x86_64/linker.ld");
    println!("cargo:rerun-if-changed={script}");
    for arg in [
        format!("-T{script}"),
        "-nostartfiles".into(),
        "-nostdlib".into(),
        "-static".into(),
        "-no-pie".into(),
        "-Wl,--build-id=none".into(),
        "-Wl,-n".into(),
    ] {
        println!("cargo:rustc-link-arg-bins={arg}");
    }
}
