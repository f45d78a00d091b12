//! Which x86 instructions are locked read-modify-writes, from their bytes.
//!
//! A `lock` prefix (0xF0) among the legacy prefixes, or `xchg` with a memory operand (opcode
//! 0x86/0x87 with ModRM.mod != 3), which the CPU locks without a prefix. The prefixes are
//! skipped as the decoder does: legacy prefixes in any order, then at most one REX byte.
#![deny(unsafe_code)]

/// Whether `bytes` (one instruction) is a locked read-modify-write.
pub fn locked_rmw(bytes: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            0xf0 => return true,
            0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65 | 0x66 | 0x67 => i += 1,
            _ => break,
        }
    }
    if bytes.get(i).is_some_and(|b| b & 0xf0 == 0x40) {
        i += 1;
    }
    matches!(bytes.get(i), Some(0x86 | 0x87)) && bytes.get(i + 1).is_some_and(|m| m >> 6 != 3)
}

#[cfg(test)]
mod tests {
    use super::locked_rmw;

    #[test]
    fn lock_prefixes_and_memory_xchg_are_rmws() {
        // lock xadd [rdi], eax
        assert!(locked_rmw(&[0xf0, 0x0f, 0xc1, 0x07]));
        // lock cmpxchg [rdi], rsi (REX.W after the lock prefix)
        assert!(locked_rmw(&[0xf0, 0x48, 0x0f, 0xb1, 0x37]));
        // operand-size prefix before lock: lock inc word [rdi]
        assert!(locked_rmw(&[0x66, 0xf0, 0xff, 0x07]));
        // xchg [rdi], eax and xchg [rdi], rax
        assert!(locked_rmw(&[0x87, 0x07]));
        assert!(locked_rmw(&[0x48, 0x87, 0x07]));
    }

    #[test]
    fn plain_accesses_are_not() {
        // xchg eax, ecx (registers only)
        assert!(!locked_rmw(&[0x87, 0xc8]));
        // mov [rdi], eax; add [rdi], eax; cmpxchg without lock
        assert!(!locked_rmw(&[0x89, 0x07]));
        assert!(!locked_rmw(&[0x01, 0x07]));
        assert!(!locked_rmw(&[0x0f, 0xb1, 0x37]));
        assert!(!locked_rmw(&[]));
    }
}
