//! One translated block as the tracker needs it: its instructions, the 4 KiB page it starts
//! in, and whether it leaves through a lookup of its target, packed into the one word a
//! plugin callback carries.
//!
//! Besides its instructions, a TCG timing pays for every block-to-block transition that QEMU
//! cannot chain. QEMU links a block's jump straight to its successor's code (`goto_tb`) only
//! when the target lies in the 4 KiB page the jumping block starts in (QEMU 7.2's
//! `translator_use_goto_tb`); a return, an indirect jump or call and an interrupt return
//! have no fixed target and always look it up (`helper_lookup_tb_ptr`, or the execution
//! loop). On a real CPU the branch predictors make both nearly free; under TCG each costs a
//! few nanoseconds, and where a build happens to place a loop or a call decides how many a
//! path pays (the project's docs/design.md, "Where those page crossings fall"). Counted per
//! operation they are the third deterministic part of a variant's emulated time, beside its
//! instructions and locked RMWs.
//!
//! The rule is the one `scripts/guest-insn-count.py` applies to QEMU's exec log: a
//! transition from block `p` to block `b` is unchained when `p` ends in such an exit or `b`
//! starts in another page than `p` does. A block QEMU ended for another reason (its size,
//! an instruction that must end it) chains to its successor within its page; an exception
//! or interrupt entry counts as a transition like any other.

/// A block: its first instruction's page, its instruction count and whether its last
/// instruction leaves through a lookup, in one word (never 0: a block has an instruction).
///
/// The count sits in the page offset's 12 bits (QEMU ends a block at 512 instructions,
/// `TCG_MAX_INSNS`); the exit flag flips bit 56 of the canonical address, whose bits 48 to
/// 63 are otherwise equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block(u64);

/// The flag bit: flipped in a canonical address, bits 56 and 63 differ.
const EXIT: u64 = 1 << 56;
/// The instruction count's bits.
const COUNT: u64 = 0xfff;

impl Block {
    /// The block starting at `pc` with `insns` instructions (1 to 4095), whose last one
    /// leaves through a lookup when `exits`; `None` outside that range or for a
    /// non-canonical `pc`.
    #[must_use]
    pub fn new(pc: u64, insns: u32, exits: bool) -> Option<Block> {
        let canonical = pc >> 47 == 0 || pc >> 47 == (1 << 17) - 1;
        if !canonical || insns == 0 || u64::from(insns) > COUNT {
            return None;
        }
        let flag = if exits { EXIT } else { 0 };
        Some(Block(((pc & !COUNT) | u64::from(insns)) ^ flag))
    }

    /// The block a word made by [`Block::word`] stands for (`None` for 0).
    #[must_use]
    pub fn from_word(word: u64) -> Option<Block> {
        (word != 0).then_some(Block(word))
    }

    /// The word to carry (a plugin callback's user data).
    #[must_use]
    pub fn word(self) -> u64 {
        self.0
    }

    /// Instructions.
    #[must_use]
    pub fn insns(self) -> u64 {
        self.0 & COUNT
    }

    /// Whether the last instruction leaves through a lookup of its target.
    #[must_use]
    pub fn exits(self) -> bool {
        (self.0 >> 56 & 1) != (self.0 >> 63)
    }

    /// The address of the 4 KiB page the block starts in.
    #[must_use]
    pub fn page(self) -> u64 {
        let w = if self.exits() { self.0 ^ EXIT } else { self.0 };
        w & !COUNT
    }

    /// Whether QEMU cannot chain this block to `next`: this one ends in a lookup, or `next`
    /// starts in another page.
    #[must_use]
    pub fn unchained_to(self, next: Block) -> bool {
        self.exits() || self.page() != next.page()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_keeps_page_count_and_exit() {
        for pc in [0x1c_4540, 0xffff_ffff_8100_0ffe, 0x7fff_ffff_f000] {
            for exits in [false, true] {
                let b = Block::new(pc, 512, exits).unwrap();
                let back = Block::from_word(b.word()).unwrap();
                assert_eq!(back, b);
                assert_eq!(back.insns(), 512);
                assert_eq!(back.exits(), exits, "{pc:#x}");
                assert_eq!(back.page(), pc & !0xfff, "{pc:#x}");
            }
        }
        assert_eq!(Block::from_word(0), None);
    }

    #[test]
    fn counts_and_addresses_it_cannot_carry_are_refused() {
        assert_eq!(Block::new(0x1000, 0, false), None);
        assert_eq!(Block::new(0x1000, 4096, false), None);
        assert!(Block::new(0x1000, 4095, false).is_some());
        assert_eq!(Block::new(0x8000_0000_0000, 1, false), None);
        assert_eq!(Block::new(0x0100_0000_0000_0000, 1, true), None);
    }

    #[test]
    fn chained_only_within_the_page_and_without_an_exit() {
        let a = Block::new(0x1d_3f00, 8, false).unwrap();
        let same_page = Block::new(0x1d_3ff0, 3, false).unwrap();
        let next_page = Block::new(0x1d_4000, 3, false).unwrap();
        let ret = Block::new(0x1d_3f80, 2, true).unwrap();
        assert!(!a.unchained_to(same_page));
        assert!(a.unchained_to(next_page));
        // A return is looked up even when it lands in its own page.
        assert!(ret.unchained_to(same_page));
    }
}
