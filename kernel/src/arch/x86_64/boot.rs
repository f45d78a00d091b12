//! The boot stub: multiboot1 and multiboot2 headers and the 32-bit entry into long mode.
//!
//! Both loaders we support leave the CPU in 32-bit protected mode with paging off: QEMU's
//! `-kernel` (multiboot1, EAX = 0x2BADB002) and GRUB's `multiboot2` (EAX = 0x36D76289), EBX
//! pointing at the boot information in both cases. The stub zeroes BSS, identity-maps the
//! first 4 GiB with 2 MiB pages (enough for the image, the boot information and the first
//! stack), enables PAE, NX (when CPUID has it), long mode and paging, turns on SSE (libcore
//! uses it: CR4.OSFXSR|OSXMMEXCPT, CR0.MP set, CR0.EM|TS clear), loads a minimal 64-bit GDT
//! and jumps to [`crate::kernel_entry`] with `(magic, info)` in `(edi, esi)`. Rust code replaces
//! these page tables and this GDT right away (`paging`, `gdt`); they only live in `.bss`.
//!
//! The multiboot2 header asks for a linear framebuffer (optional tag): UEFI machines have no
//! VGA text mode, and a screen is the only console on a real machine without a serial port.
//!
//! Unsafe code here, and why: the 32-bit multiboot entry stub and the switch to long mode
//! are assembly (`global_asm!`).
#![allow(unsafe_code)]

core::arch::global_asm!(
    r#"
    .section .multiboot1, "a"
    .balign 4
    .long 0x1BADB002                   /* magic */
    .long 0x00000003                   /* flags: page-align modules, memory info */
    .long -(0x1BADB002 + 0x00000003)   /* checksum */

    .section .multiboot2, "a"
    .balign 8
mb2_header_start:
    .long 0xE85250D6                   /* magic */
    .long 0                            /* architecture: i386 protected mode */
    .long mb2_header_end - mb2_header_start
    .long -(0xE85250D6 + 0 + (mb2_header_end - mb2_header_start))
    /* framebuffer tag (type 5), optional (flags = 1): no preferred size, 32 bpp */
    .balign 8
    .short 5
    .short 1
    .long 20
    .long 0
    .long 0
    .long 32
    /* end tag */
    .balign 8
    .short 0
    .short 0
    .long 8
mb2_header_end:

    .section .boot.text, "ax"
    .code32
    .global _start32
_start32:
    cli
    cld
    mov ebp, eax                       /* multiboot magic */
    mov esp, ebx                       /* boot information (kept in esp until the stack is set) */

    /* Zero .bss (the page tables and the boot stack live there). */
    mov edi, offset __bss_start
    mov ecx, offset __bss_end
    sub ecx, edi
    xor eax, eax
    rep stosb

    mov [{info}], esp                  /* CPUID below clobbers EBX: park the pointer */
    mov esp, offset {stack} + {stack_size}

    /* Long mode present? CPUID 0x80000001 EDX bit 29. Otherwise stop. */
    mov eax, 0x80000000
    cpuid
    cmp eax, 0x80000001
    jb 9f
    mov eax, 0x80000001
    cpuid
    test edx, 1 << 29
    jz 9f
    mov esi, edx                       /* keep EDX: bit 20 is NX */

    /* PML4[0] -> PDPT; PDPT[0..4] -> PD0..PD3; PDn[i] = (n*512 + i) * 2 MiB, PS|RW|P. */
    mov eax, offset {pdpt}
    or eax, 3
    mov [{pml4}], eax
    mov edi, offset {pdpt}
    mov eax, offset {pd}
    or eax, 3
    mov ecx, 4
2:
    mov [edi], eax
    add eax, 4096
    add edi, 8
    loop 2b
    mov edi, offset {pd}
    xor eax, eax                       /* low 32 bits of the physical address */
    xor edx, edx                       /* high 32 bits */
    mov ecx, 2048
3:
    mov [edi], eax
    or dword ptr [edi], 0x83
    mov [edi + 4], edx
    add eax, 0x200000
    adc edx, 0
    add edi, 8
    loop 3b

    /* CR4: PAE | OSFXSR | OSXMMEXCPT */
    mov eax, cr4
    or eax, (1 << 5) | (1 << 9) | (1 << 10)
    mov cr4, eax
    mov eax, offset {pml4}
    mov cr3, eax

    /* EFER: LME, and NXE when the CPU has NX. */
    mov ecx, 0xC0000080
    rdmsr
    or eax, 1 << 8
    test esi, 1 << 20
    jz 4f
    or eax, 1 << 11
4:
    wrmsr

    /* CR0: PG | PE | MP, clear EM and TS. */
    mov eax, cr0
    and eax, ~((1 << 2) | (1 << 3))
    or eax, (1 << 31) | (1 << 0) | (1 << 1)
    mov cr0, eax

    lgdt [boot_gdtr]
    mov eax, offset boot_long_mode
    push 0x08
    push eax
    retf

9:
    hlt
    jmp 9b

    .code64
boot_long_mode:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor eax, eax
    mov fs, ax
    mov gs, ax
    mov rsp, offset {stack} + {stack_size}
    mov edi, ebp                       /* magic */
    mov esi, [{info}]                  /* boot information, physical */
    xor ebp, ebp
    call {entry}
6:
    hlt
    jmp 6b

    .balign 8
boot_gdt:
    .quad 0
    .quad 0x00AF9B000000FFFF           /* 0x08: 64-bit code, accessed */
    .quad 0x00CF93000000FFFF           /* 0x10: data, accessed */
boot_gdtr:
    .short boot_gdtr - boot_gdt - 1
    .long boot_gdt
    "#,
    stack = sym BOOT_STACK,
    info = sym BOOT_INFO_ADDR,
    stack_size = const BOOT_STACK_SIZE,
    pml4 = sym BOOT_PML4,
    pdpt = sym BOOT_PDPT,
    pd = sym BOOT_PD,
    entry = sym crate::kernel_entry,
);

/// Size of the stack the stub hands to Rust. Rust moves to a guarded stack once paging is up.
pub const BOOT_STACK_SIZE: usize = 64 * 1024;

#[repr(C, align(4096))]
struct PageAligned<const N: usize>([u8; N]);

// The boot page tables and stack are written only by the stub (before Rust runs) and by the
// CPU; Rust never takes references to them. `static mut` keeps them in .bss (writable).
static mut BOOT_INFO_ADDR: u32 = 0;
static mut BOOT_STACK: PageAligned<BOOT_STACK_SIZE> = PageAligned([0; BOOT_STACK_SIZE]);
static mut BOOT_PML4: PageAligned<4096> = PageAligned([0; 4096]);
static mut BOOT_PDPT: PageAligned<4096> = PageAligned([0; 4096]);
static mut BOOT_PD: PageAligned<{ 4 * 4096 }> = PageAligned([0; 4 * 4096]);
