//! The fault-injection keys `fail_page_alloc=` and `fail_charge=` (Linux's `fault_attr`
//! boot parameters, `failslab=` / `fail_page_alloc=`, in a simpler grammar):
//!
//! - `every:N` fails every Nth call (N >= 1);
//! - `prob:P` fails each call with probability P percent (0 < P <= 100, decimal, kept to
//!   parts per million), from a per-CPU random stream seeded with 1, or `prob:P,seed:S`
//!   with seed S.

/// When an injected failure happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultSpec {
    /// Every `n`th call.
    Every(u64),
    /// Each call with probability `ppm` / 1,000,000.
    Probability {
        /// Parts per million, in 1..=1,000,000.
        ppm: u32,
        /// Seed of the random streams.
        seed: u64,
    },
}

impl FaultSpec {
    /// The probability in percent (0 for `Every`).
    #[must_use]
    pub fn percent(self) -> f64 {
        match self {
            FaultSpec::Every(_) => 0.0,
            FaultSpec::Probability { ppm, .. } => f64::from(ppm) / 10_000.0,
        }
    }
}

/// Parses a key's value; `None` when it does not fit the grammar.
#[must_use]
pub fn parse(value: &str) -> Option<FaultSpec> {
    if let Some(n) = value.strip_prefix("every:") {
        let n: u64 = n.parse().ok()?;
        return (n >= 1).then_some(FaultSpec::Every(n));
    }
    let rest = value.strip_prefix("prob:")?;
    let (p, seed) = match rest.split_once(",seed:") {
        Some((p, s)) => (p, s.parse::<u64>().ok()?),
        None => (rest, 1),
    };
    let percent: f64 = p.parse().ok()?;
    if !(percent.is_finite() && percent > 0.0 && percent <= 100.0) {
        return None;
    }
    let ppm = (percent * 10_000.0) as u32;
    (ppm >= 1).then_some(FaultSpec::Probability { ppm, seed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        assert_eq!(parse("every:7"), Some(FaultSpec::Every(7)));
        assert_eq!(
            parse("prob:2.5"),
            Some(FaultSpec::Probability {
                ppm: 25_000,
                seed: 1
            })
        );
        assert_eq!(
            parse("prob:100,seed:9"),
            Some(FaultSpec::Probability {
                ppm: 1_000_000,
                seed: 9
            })
        );
        assert_eq!(parse("prob:2.5").unwrap().percent(), 2.5);
        for bad in [
            "",
            "every:0",
            "every:",
            "every:x",
            "prob:0",
            "prob:101",
            "prob:-1",
            "prob:nan",
            "prob:0.00001",
            "prob:1,seed:",
            "prob:1,seed:x",
            "7",
            "sometimes",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
