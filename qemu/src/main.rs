//! `kx`: build the kernel, boot it in QEMU, report what happened (see `kx help`).
#![deny(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The Linux reference's worker process of `kx bench --host` (not a user command).
    if args.first().map(String::as_str) == Some(qemu::bench::threads::linux_ref::worker::COMMAND) {
        return ExitCode::from(qemu::bench::threads::linux_ref::worker::main(&args[1..]) as u8);
    }
    let exit = match qemu::commands::parse(args) {
        Ok(command) => qemu::commands::execute(&command),
        Err(e) => {
            eprintln!(
                "kx: {e}\nkx: `kx help` lists the commands and exit codes, `kx help COMMAND` a \
                 command's options"
            );
            qemu::RunnerExit::Usage
        }
    };
    ExitCode::from(exit.status() as u8)
}
