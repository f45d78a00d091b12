//! Architecture support. Only x86_64 exists; everything arch-specific lives below here.

pub mod x86_64;
