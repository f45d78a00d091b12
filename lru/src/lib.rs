//! placeholder
#![cfg_attr(not(test), no_std)]
