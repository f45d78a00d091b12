//! Option values checked as they are parsed: whole numbers in a range, the boot mode, the
//! accelerator, and the benchmark's kernel keys ([`KernelValue`]), each checked by the
//! kernel's own command-line parser (`abi::cmdline`), so the runner accepts exactly what
//! the kernel does. A kernel key is named once, in its option's `value_parser`
//! (`kernel_value("key")`), and travels with the value to the kernel's command line.

use crate::accel::AccelRequest;
use crate::mode::Mode;
use std::borrow::Cow;
use std::fmt;

/// A whole number in `lo..=hi`.
pub(crate) fn number_in(
    lo: u32,
    hi: u32,
) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync {
    move |s: &str| match s.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("not a number in {lo}..={hi}")),
    }
}

/// One `key=value` of the kernel's command line, the value as written and accepted by the
/// kernel's parser. The key is named once, in the option's `value_parser`
/// (`kernel_value("key")`), and travels with the value to the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelValue {
    key: &'static str,
    value: Cow<'static, str>,
}

impl KernelValue {
    /// A value fixed in the runner's source (a default of its own), not parsed: the caller
    /// knows the kernel accepts it (a test checks each such constant).
    pub(crate) const fn fixed(key: &'static str, value: &'static str) -> Self {
        KernelValue {
            key,
            value: Cow::Borrowed(value),
        }
    }

    /// `key=value`, if the kernel's parser accepts `value` for `key` on its own.
    pub fn new(key: &'static str, value: &str) -> Result<Self, String> {
        kernel_value(key)(value)
    }

    /// The kernel's key.
    #[must_use]
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The value as written.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for KernelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// A value the kernel's command-line parser accepts for `key` (kept as written: it becomes
/// `key=value` on the kernel's command line).
pub(crate) fn kernel_value(
    key: &'static str,
) -> impl Fn(&str) -> Result<KernelValue, String> + Clone + Send + Sync {
    move |value: &str| {
        // The value alone: how it combines with other keys is checked once all are known
        // (`BenchOptions::check`).
        let line = format!("run=bench {key}={value}");
        let parsed = abi::cmdline::parse(&line, false);
        if let Ok(cfg) = &parsed {
            // The kernel's parser checks a scenario list's shape; its names are the
            // catalog's to check (as the kernel's benchmark does), before anything boots.
            bench::catalog::check_selection(&cfg.bench.scenarios)?;
        }
        if matches!(
            parsed,
            Ok(_) | Err(abi::cmdline::CmdlineError::RoundsPerInstance { .. })
        ) {
            return Ok(KernelValue {
                key,
                value: Cow::Owned(value.to_owned()),
            });
        }
        let accepted = abi::cmdline::ACCEPTED
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v);
        Err(format!("not accepted (expected {accepted})"))
    }
}

pub(crate) fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
        .map_err(|e: crate::mode::UnknownMode| e.to_string())
}

pub(crate) fn parse_accel(s: &str) -> Result<AccelRequest, String> {
    s.parse()
        .map_err(|_| "not one of auto, kvm, tcg".to_owned())
}
