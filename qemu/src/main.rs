//! `kx`: build the kernel, boot it in QEMU, report what happened (see `kx help`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let exit = match qemu::cli::parse(std::env::args().skip(1)) {
        Ok(cli) => qemu::commands::execute(&cli),
        Err(e) => {
            eprintln!("kx: {e}\n\n{}", qemu::cli::USAGE);
            qemu::RunnerExit::Usage
        }
    };
    ExitCode::from(exit.status() as u8)
}
