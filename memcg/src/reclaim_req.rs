//! The `memory.reclaim` request: what a write to the cgroupfs file asks for.
//!
//! Models the parsing in `user_proactive_reclaim()` (mm/vmscan.c, reached from
//! `memory_reclaim()` in mm/memcontrol.c): a size in bytes as `memparse()` reads it (a
//! number, optionally followed by K, M, G, T, P or E, either case), then space-separated
//! options; the only option is `swappiness=N` with N in 0..=200, or `swappiness=max`
//! (anon only). Seed 002's request is `"1024M swappiness=0"`. Bad input is a typed
//! [`ReclaimParseError`] (Linux answers `-EINVAL` to all of them), never a panic.

use core::fmt;

/// Largest `swappiness=` value (`MAX_SWAPPINESS`).
pub const MAX_SWAPPINESS: u16 = 200;

/// A `memory.reclaim` request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReclaimRequest {
    /// Pages to reclaim (the size divided by the page size, rounded down).
    pub nr_pages: u64,
    /// The per-request swappiness, if given: 0..=200, or [`lru::SWAPPINESS_ANON_ONLY`]
    /// for `swappiness=max`.
    pub swappiness: Option<u8>,
}

/// Why a `memory.reclaim` string was refused (all `-EINVAL` in Linux).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimParseError {
    /// Nothing but white space.
    Empty,
    /// The request does not start with a number.
    NoSize,
    /// The size does not fit in 64 bits.
    SizeOverflow,
    /// The size is followed by a character that is neither a unit suffix nor a space.
    BadSuffix(char),
    /// An option other than `swappiness=`.
    UnknownOption,
    /// `swappiness=` without a valid number.
    BadSwappiness,
    /// `swappiness=` above 200.
    SwappinessRange(u64),
    /// `swappiness=` given twice.
    DuplicateSwappiness,
}

impl fmt::Display for ReclaimParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty memory.reclaim request"),
            Self::NoSize => f.write_str("memory.reclaim: the request must start with a size"),
            Self::SizeOverflow => f.write_str("memory.reclaim: size too large"),
            Self::BadSuffix(c) => write!(f, "memory.reclaim: bad size suffix `{c}`"),
            Self::UnknownOption => f.write_str("memory.reclaim: unknown option"),
            Self::BadSwappiness => f.write_str("memory.reclaim: swappiness= needs a number"),
            Self::SwappinessRange(v) => {
                write!(
                    f,
                    "memory.reclaim: swappiness={v} is above {MAX_SWAPPINESS}"
                )
            }
            Self::DuplicateSwappiness => f.write_str("memory.reclaim: swappiness= given twice"),
        }
    }
}

impl core::error::Error for ReclaimParseError {}

const PAGE_SHIFT: u32 = 12;

/// `memparse()`: a number with an optional binary unit suffix; returns the bytes and the
/// rest of the string.
fn memparse(s: &str) -> Result<(u64, &str), ReclaimParseError> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(ReclaimParseError::NoSize);
    }
    let mut v: u64 = 0;
    for b in s[..digits].bytes() {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(ReclaimParseError::SizeOverflow)?;
    }
    let rest = &s[digits..];
    let Some(c) = rest.chars().next() else {
        return Ok((v, rest));
    };
    let shift = match c.to_ascii_uppercase() {
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        'P' => 50,
        'E' => 60,
        c if c.is_ascii_whitespace() => return Ok((v, rest)),
        _ => return Err(ReclaimParseError::BadSuffix(c)),
    };
    let bytes = v
        .checked_mul(1 << shift)
        .ok_or(ReclaimParseError::SizeOverflow)?;
    let rest = &rest[c.len_utf8()..];
    match rest.chars().next() {
        Some(c) if !c.is_ascii_whitespace() => Err(ReclaimParseError::BadSuffix(c)),
        _ => Ok((bytes, rest)),
    }
}

impl ReclaimRequest {
    /// A request for `nr_pages` with the tree's default swappiness.
    #[must_use]
    pub fn pages(nr_pages: u64) -> Self {
        Self {
            nr_pages,
            swappiness: None,
        }
    }

    /// Parses what a write to `memory.reclaim` says (`"1024M swappiness=0"`).
    pub fn parse(s: &str) -> Result<Self, ReclaimParseError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ReclaimParseError::Empty);
        }
        let (bytes, rest) = memparse(s)?;
        let mut swappiness = None;
        for opt in rest.split_ascii_whitespace() {
            let Some(val) = opt.strip_prefix("swappiness=") else {
                return Err(ReclaimParseError::UnknownOption);
            };
            if swappiness.is_some() {
                return Err(ReclaimParseError::DuplicateSwappiness);
            }
            swappiness = Some(if val == "max" {
                lru::SWAPPINESS_ANON_ONLY
            } else {
                if val.is_empty() || !val.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(ReclaimParseError::BadSwappiness);
                }
                let v: u64 = val
                    .parse()
                    .map_err(|_| ReclaimParseError::SwappinessRange(u64::MAX))?;
                if v > u64::from(MAX_SWAPPINESS) {
                    return Err(ReclaimParseError::SwappinessRange(v));
                }
                v as u8
            });
        }
        Ok(Self {
            nr_pages: bytes >> PAGE_SHIFT,
            swappiness,
        })
    }
}

impl core::str::FromStr for ReclaimRequest {
    type Err = ReclaimParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn seed_002s_request() {
        assert_eq!(
            ReclaimRequest::parse("1024M swappiness=0"),
            Ok(ReclaimRequest {
                nr_pages: 262_144,
                swappiness: Some(0)
            })
        );
        assert_eq!(
            ReclaimRequest::parse("  4k\n"),
            Ok(ReclaimRequest::pages(1))
        );
        assert_eq!(
            ReclaimRequest::parse("1G swappiness=max"),
            Ok(ReclaimRequest {
                nr_pages: 1 << 18,
                swappiness: Some(lru::SWAPPINESS_ANON_ONLY)
            })
        );
        assert_eq!(ReclaimRequest::parse("8191"), Ok(ReclaimRequest::pages(1)));
        assert_eq!(
            ReclaimRequest::parse("2t  swappiness=200").map(|r| r.swappiness),
            Ok(Some(200))
        );
        // Every unit, either case: K, M, G, T, P, E are 2^10 apart.
        for (i, unit) in "kmgtpe".chars().enumerate() {
            for u in [unit, unit.to_ascii_uppercase()] {
                let shift = 10 * (i as u32 + 1);
                assert_eq!(
                    ReclaimRequest::parse(&format!("3{u}")).map(|r| r.nr_pages),
                    Ok((3u64 << shift) >> PAGE_SHIFT),
                    "3{u}"
                );
            }
        }
        // A plain number of bytes, then options.
        assert_eq!(
            ReclaimRequest::parse("8192 swappiness=5"),
            Ok(ReclaimRequest {
                nr_pages: 2,
                swappiness: Some(5)
            })
        );
    }

    #[test]
    fn bad_requests_are_typed_errors() {
        use ReclaimParseError::*;
        assert_eq!(ReclaimRequest::parse("   "), Err(Empty));
        assert_eq!(ReclaimRequest::parse("swappiness=0"), Err(NoSize));
        assert_eq!(ReclaimRequest::parse("12Q"), Err(BadSuffix('Q')));
        assert_eq!(ReclaimRequest::parse("12MB"), Err(BadSuffix('B')));
        assert_eq!(ReclaimRequest::parse("1M swap=0"), Err(UnknownOption));
        assert_eq!(ReclaimRequest::parse("1M swappiness="), Err(BadSwappiness));
        assert_eq!(
            ReclaimRequest::parse("1M swappiness=-1"),
            Err(BadSwappiness)
        );
        assert_eq!(
            ReclaimRequest::parse("1M swappiness=201"),
            Err(SwappinessRange(201))
        );
        assert_eq!(
            ReclaimRequest::parse("1M swappiness=1 swappiness=2"),
            Err(DuplicateSwappiness)
        );
        assert_eq!(
            ReclaimRequest::parse("99999999999999999999"),
            Err(SizeOverflow)
        );
        assert_eq!(ReclaimRequest::parse("16E"), Err(SizeOverflow));
        assert!(Empty.to_string().contains("empty"));
    }
}
