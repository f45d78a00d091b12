//! ksync's host integration tests, one binary: the loom model of the ticket lock, built
//! only with `--cfg loom` (`RUSTFLAGS="--cfg loom" cargo test -p ksync --release --test
//! suite`; the lock's host tests are unit tests beside it in src/), and, without loom, the
//! per-class switch of the lock statistics, which needs a process where no other test turns
//! them on for every class.
#[cfg(not(loom))]
mod recording;
#[cfg(loom)]
mod ticket;
