//! Print the pahole-style layout report of every key `lru` struct.
//!
//! `cargo run -p lru --example layout`. The host runner's `layout` subcommand and the
//! kernel call the same [`lru::layout_report::report`].

fn main() {
    let mut s = String::new();
    if let Err(e) = lru::layout_report::report(&mut s) {
        eprintln!("layout report failed: {e}");
        std::process::exit(2);
    }
    print!("{s}");
}
