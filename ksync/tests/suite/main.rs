//! ksync's host integration tests, one binary. Its only suite is the loom model of the
//! ticket lock, built only with `--cfg loom` (`RUSTFLAGS="--cfg loom" cargo test -p ksync
//! --release --test suite`); the lock's host tests are unit tests beside it in src/.
#[cfg(loom)]
mod ticket;
