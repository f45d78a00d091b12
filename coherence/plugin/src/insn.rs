//! What the plugin needs to know of an x86 instruction, from its bytes: whether it is a
//! locked read-modify-write, and whether a block ending in it leaves through a lookup of
//! its target.
//!
//! A locked RMW has a `lock` prefix (0xF0) among the legacy prefixes, or is `xchg` with a
//! memory operand (opcode 0x86/0x87 with ModRM.mod != 3), which the CPU locks without a
//! prefix. A lookup follows a return (`ret`, `lret`), an interrupt return (`iret`), `sysret`
//! and an indirect jump or call (0xFF with ModRM.reg 2 to 5): their targets are not in the
//! instruction, so QEMU cannot chain the block to its successor. The prefixes are skipped
//! as the decoder does: legacy prefixes in any order, then at most one REX byte.
#![deny(unsafe_code)]

/// The legacy prefixes, `lock` (0xF0) among them.
fn legacy_prefix(b: u8) -> bool {
    matches!(
        b,
        0xf0 | 0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65 | 0x66 | 0x67
    )
}

/// The index of the opcode's first byte: after the legacy prefixes and one REX byte; and
/// whether a `lock` prefix was among them.
fn opcode_at(bytes: &[u8]) -> (usize, bool) {
    let mut i = 0;
    let mut lock = false;
    while let Some(&b) = bytes.get(i).filter(|&&b| legacy_prefix(b)) {
        lock |= b == 0xf0;
        i += 1;
    }
    if bytes.get(i).is_some_and(|b| b & 0xf0 == 0x40) {
        i += 1;
    }
    (i, lock)
}

/// Whether `bytes` (one instruction) is a locked read-modify-write.
pub fn locked_rmw(bytes: &[u8]) -> bool {
    let (i, lock) = opcode_at(bytes);
    lock || (matches!(bytes.get(i), Some(0x86 | 0x87))
        && bytes.get(i + 1).is_some_and(|m| m >> 6 != 3))
}

/// Whether `bytes` (one instruction) leaves through a lookup of its target: a return, an
/// interrupt return, `sysret`, an indirect jump or call.
pub fn exits_by_lookup(bytes: &[u8]) -> bool {
    let (i, _) = opcode_at(bytes);
    match bytes.get(i) {
        Some(0xc2 | 0xc3 | 0xca | 0xcb | 0xcf) => true,
        Some(0x0f) => bytes.get(i + 1) == Some(&0x07),
        Some(0xff) => bytes
            .get(i + 1)
            .is_some_and(|m| (2..=5).contains(&(m >> 3 & 7))),
        _ => false,
    }
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
    fn returns_and_indirect_branches_exit_by_lookup() {
        use super::exits_by_lookup;
        // ret, ret 8, lret, iretq, sysretq
        for b in [
            &[0xc3][..],
            &[0xc2, 0x08, 0x00],
            &[0xcb],
            &[0x48, 0xcf],
            &[0x48, 0x0f, 0x07],
        ] {
            assert!(exits_by_lookup(b), "{b:02x?}");
        }
        // call *rax, jmp *rax, call *[rip+8], notrack jmp *[rax+rcx*8], jmp *r11
        for b in [
            &[0xff, 0xd0][..],
            &[0xff, 0xe0],
            &[0xff, 0x15, 0x08, 0, 0, 0],
            &[0x3e, 0xff, 0x24, 0xc8],
            &[0x41, 0xff, 0xe3],
        ] {
            assert!(exits_by_lookup(b), "{b:02x?}");
        }
        // call rel32, jmp rel8, jne rel32, inc [rax] (0xff /0), push [rax] (0xff /6),
        // syscall (0f 05), nothing
        for b in [
            &[0xe8, 0, 0, 0, 0][..],
            &[0xeb, 0x10],
            &[0x0f, 0x85, 0, 0, 0, 0],
            &[0xff, 0x00],
            &[0xff, 0x30],
            &[0x0f, 0x05],
            &[],
        ] {
            assert!(!exits_by_lookup(b), "{b:02x?}");
        }
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
