//! `#[ktest]`: an in-kernel test registers itself, as Asterinas's `#[ktest]` does.
//!
//! Stable Rust has no `custom_test_frameworks`, and a hand-kept table of tests is one more
//! place to forget. The attribute goes on a test function of the kernel crate
//! (`fn name() -> TestResult`) and keeps the function as it is; beside it, it emits
//!
//! - a `kernel::ktest::Test` descriptor (the name, the function, whether it is slow) in the
//!   linker section `.ktests`, which the kernel's linker script keeps between
//!   `__start_ktests` and `__stop_ktests`, where `kernel::ktest` finds every test;
//! - the test's name and kind as one text line (`name\n`, or `name slow\n`) in the section
//!   `.ktest_names`, which the runner reads from the kernel ELF to list tests and to refuse
//!   a name that does not exist before it boots anything.
//!
//! The test's name is the function's. `#[ktest(slow)]` marks a test that runs only when
//! named (a long soak, or one meaningful only under the coherence plugin).
//!
//! Written on `proc_macro` alone (no `syn`): the input is a function item, and all the
//! macro needs from it is the identifier after `fn`.
//!
//! ```
//! # extern crate ktest as macros;
//! # mod ktest { pub struct Test { pub name: &'static str, pub run: fn() -> Result<(), String>, pub slow: bool } }
//! #[macros::ktest]
//! fn mm_example() -> Result<(), String> {
//!     Ok(())
//! }
//!
//! #[macros::ktest(slow)]
//! fn vm_example_long() -> Result<(), String> {
//!     Ok(())
//! }
//!
//! fn main() {
//!     // The descriptors the kernel reads, and the lines the runner reads.
//!     assert_eq!(__KTEST_MM_EXAMPLE.name, "mm_example");
//!     assert!(!__KTEST_MM_EXAMPLE.slow && __KTEST_VM_EXAMPLE_LONG.slow);
//!     assert!((__KTEST_MM_EXAMPLE.run)().is_ok());
//!     assert_eq!(&__KTEST_NAME_MM_EXAMPLE, b"mm_example\n");
//!     assert_eq!(&__KTEST_NAME_VM_EXAMPLE_LONG, b"vm_example_long slow\n");
//! }
//! ```
//!
//! Anything but nothing or `slow` is refused at compile time:
//!
//! ```compile_fail
//! # extern crate ktest as macros;
//! # mod ktest { pub struct Test { pub name: &'static str, pub run: fn() -> Result<(), String>, pub slow: bool } }
//! #[macros::ktest(fast)]
//! fn mm_example() -> Result<(), String> {
//!     Ok(())
//! }
//! # fn main() {}
//! ```
#![forbid(unsafe_code)]

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// Registers the function it is put on as an in-kernel test (see the crate doc).
#[proc_macro_attribute]
pub fn ktest(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr, item.clone()) {
        Ok(out) => out,
        Err(msg) => {
            let mut out = compile_error(&msg);
            out.extend(item);
            out
        }
    }
}

fn expand(attr: TokenStream, item: TokenStream) -> Result<TokenStream, String> {
    let slow = match attr.into_iter().collect::<Vec<_>>().as_slice() {
        [] => false,
        [TokenTree::Ident(i)] if i.to_string() == "slow" => true,
        other => {
            return Err(format!(
                "#[ktest] takes nothing or `slow`, not `{}`",
                other.iter().map(ToString::to_string).collect::<String>()
            ));
        }
    };
    let name = fn_name(&item).ok_or("#[ktest] goes on a function: `fn name() -> TestResult`")?;
    let upper = name.to_uppercase();
    let line = format!("{name}{}\n", if slow { " slow" } else { "" });
    let bytes = line.len();
    let generated = format!(
        "#[used] #[unsafe(link_section = \".ktests\")] \
         static __KTEST_{upper}: crate::ktest::Test = crate::ktest::Test {{ \
             name: \"{name}\", run: {name}, slow: {slow} }}; \
         #[used] #[unsafe(link_section = \".ktest_names\")] \
         static __KTEST_NAME_{upper}: [u8; {bytes}] = *{lit};",
        lit = Literal::byte_string(line.as_bytes())
    );
    let mut out = item;
    out.extend(
        generated
            .parse::<TokenStream>()
            .map_err(|e| format!("#[ktest] generated bad code: {e}"))?,
    );
    Ok(out)
}

/// The identifier after the item's `fn` keyword.
fn fn_name(item: &TokenStream) -> Option<String> {
    let mut tokens = item.clone().into_iter();
    while let Some(t) = tokens.next() {
        if let TokenTree::Ident(i) = &t
            && i.to_string() == "fn"
        {
            return match tokens.next() {
                Some(TokenTree::Ident(name)) => Some(name.to_string()),
                _ => None,
            };
        }
    }
    None
}

/// `compile_error!("msg");` at the call site.
fn compile_error(msg: &str) -> TokenStream {
    let span = Span::call_site();
    let mut bang = Punct::new('!', Spacing::Alone);
    bang.set_span(span);
    let mut args = Group::new(
        Delimiter::Parenthesis,
        TokenStream::from(TokenTree::Literal(Literal::string(msg))),
    );
    args.set_span(span);
    [
        TokenTree::Ident(Ident::new("compile_error", span)),
        TokenTree::Punct(bang),
        TokenTree::Group(args),
        TokenTree::Punct(Punct::new(';', Spacing::Alone)),
    ]
    .into_iter()
    .collect()
}
