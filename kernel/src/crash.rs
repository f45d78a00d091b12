//! Deliberate failures (`run=panic|pagefault|overflow|hang`), so the host tests can prove
//! that each kind of failure is reported with the right exit code and message.
//!
//! Unsafe code here, and why: the deliberate crashes (for the crash tests) write to an
//! unmapped address.
#![allow(unsafe_code)]

use abi::{Crash, ExitCode};

/// Address the `pagefault` crash writes to: below 4 GiB, unmapped once the kernel's own page
/// tables replace the boot identity map.
pub const UNMAPPED: u64 = 0xdead_0000;

/// Fails in the requested way. Returns only if the failure did not happen (a bug).
pub fn crash(kind: Crash) -> ExitCode {
    match kind {
        Crash::Panic => panic!("deliberate panic (run=panic)"),
        Crash::PageFault => {
            crate::println!("writing to unmapped address {UNMAPPED:#x} (run=pagefault)");
            // SAFETY: not safe at all, on purpose: the write must fault. The page-fault
            // handler reports it and exits; control never comes back here.
            unsafe { core::ptr::write_volatile(UNMAPPED as *mut u64, 1) };
            crate::println!("the write to an unmapped page did not fault");
            ExitCode::TestFailure
        }
        Crash::StackOverflow => {
            crate::println!("recursing until the stack hits its guard page (run=overflow)");
            let depth = recurse(0);
            crate::println!("recursion returned at depth {depth} without faulting");
            ExitCode::TestFailure
        }
        Crash::Hang => {
            crate::println!("hanging with interrupts off (run=hang)");
            x86_64::instructions::interrupts::disable();
            loop {
                core::hint::spin_loop();
            }
        }
    }
}

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let mut frame = [0u8; 512];
    frame[0] = depth as u8;
    core::hint::black_box(&mut frame);
    if depth == u64::MAX {
        return depth;
    }
    recurse(depth + 1) + u64::from(core::hint::black_box(frame[0]))
}
