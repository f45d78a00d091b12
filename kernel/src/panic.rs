//! The panic handler: report on the console without waiting for its lock, then exit.
//!
//! A panic inside the panic path (e.g. while formatting) must not recurse forever: the second
//! one skips straight to the exit.

use core::sync::atomic::{AtomicBool, Ordering};

static PANICKING: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    x86_64::instructions::interrupts::disable();
    if !PANICKING.swap(true, Ordering::SeqCst) {
        let cpu = crate::arch::cpu_index();
        crate::console::emergency_write(format_args!("\nPANIC on cpu {cpu}: {info}\n"));
    }
    crate::exit::exit(abi::ExitCode::Panic)
}
