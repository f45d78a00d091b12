//! `bench`: the seeds' experiments as A/B scenarios, platform neutral.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate alloc;
