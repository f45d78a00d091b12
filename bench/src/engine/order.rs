//! In which order a round runs its variants: a Williams design.
//!
//! Inside a round the variants run one after another, so a position effect (the run after
//! a given variant slower because it left the caches cold, the first run of a round faster
//! because the previous point's teardown finished) becomes a difference between variants
//! when one variant always runs first, middle or last. A Williams square (E. J. Williams,
//! "Experimental designs balanced for the estimation of residual effects of treatments",
//! Australian Journal of Scientific Research 2, 1949) is a set of orders in which every
//! variant takes every position equally often and every variant directly follows every
//! other equally often (first-order carry-over balance): `n` orders for an even number `n`
//! of variants, `2n` for an odd one (the `n` orders and their reverses). Round `r` (from 1)
//! runs order `(r - 1) mod rows`, so the balance is exact when the measured rounds are a
//! multiple of the square's rows and close otherwise; the warm-up rounds run in the plan's
//! order (they are in no statistic).
//!
//! The first order is `0, 1, n-1, 2, n-2, 3, ...`; order `i` adds `i` to each entry modulo
//! `n`. With two variants that is `A B`, `B A`: the alternation this engine used before.

use alloc::vec::Vec;

/// How the variants of a round are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOrder {
    /// Every round in the plan's order (A B, A B, ...): a position effect inside a round
    /// becomes a difference between the variants. Kept for the test that shows it.
    Fixed,
    /// The rows of a Williams square, one per round (module doc).
    Williams,
}

impl RunOrder {
    /// The positions of `n` variants in measured round `round` (from 1): entry `k` is the
    /// index of the variant that runs `k`-th.
    #[must_use]
    pub fn order(self, n: usize, round: u32) -> Vec<usize> {
        match self {
            RunOrder::Fixed => (0..n).collect(),
            RunOrder::Williams => {
                let rows = williams_rows(n);
                let row = (round.max(1) - 1) as usize % rows;
                williams_row(n, row)
            }
        }
    }
}

/// Rows of the Williams square of `n` variants: `n` when `n` is even (or 1), else `2n`.
#[must_use]
pub fn williams_rows(n: usize) -> usize {
    if n <= 1 {
        1
    } else if n.is_multiple_of(2) {
        n
    } else {
        2 * n
    }
}

/// Row `row` of the Williams square of `n` variants.
fn williams_row(n: usize, row: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    // 0, 1, n-1, 2, n-2, ...
    let first: Vec<usize> = (0..n)
        .map(|k| {
            if k == 0 {
                0
            } else if k % 2 == 1 {
                k.div_ceil(2)
            } else {
                n - k / 2
            }
        })
        .collect();
    let shift = row % n;
    let mut out: Vec<usize> = first.iter().map(|&v| (v + shift) % n).collect();
    if row >= n {
        out.reverse();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant in every position equally often, every ordered pair of neighbours
    /// equally often, over one full square.
    fn check_balance(n: usize) {
        let rows = williams_rows(n);
        let mut position = alloc::vec![alloc::vec![0u32; n]; n];
        let mut follows = alloc::vec![alloc::vec![0u32; n]; n];
        for r in 1..=rows as u32 {
            let o = RunOrder::Williams.order(n, r);
            let mut seen = o.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "row {r} of {n}: {o:?}");
            for (pos, &v) in o.iter().enumerate() {
                position[v][pos] += 1;
            }
            for w in o.windows(2) {
                follows[w[0]][w[1]] += 1;
            }
        }
        let per_position = rows as u32 / n as u32;
        for (v, p) in position.iter().enumerate() {
            assert!(
                p.iter().all(|&c| c == per_position),
                "n={n} variant {v}: {p:?}"
            );
        }
        let per_pair = rows as u32 / n as u32;
        for (a, row) in follows.iter().enumerate() {
            for (b, &c) in row.iter().enumerate() {
                let want = if a == b { 0 } else { per_pair };
                assert_eq!(c, want, "n={n}: {a} then {b}");
            }
        }
    }

    #[test]
    fn williams_squares_balance_positions_and_neighbours() {
        for n in 1..=9 {
            check_balance(n);
        }
    }

    #[test]
    fn two_variants_alternate_and_three_use_six_orders() {
        let o = |n, r| RunOrder::Williams.order(n, r);
        assert_eq!([o(2, 1), o(2, 2), o(2, 3)], [[0, 1], [1, 0], [0, 1]]);
        assert_eq!(williams_rows(3), 6);
        assert_eq!(o(3, 1), [0, 1, 2]);
        assert_eq!(o(3, 7), o(3, 1));
        // No variant always runs first, middle or last over the six rounds.
        for v in 0..3 {
            for pos in 0..3 {
                assert_eq!((1..=6).filter(|&r| o(3, r)[pos] == v).count(), 2);
            }
        }
        assert_eq!(RunOrder::Fixed.order(3, 2), [0, 1, 2]);
    }
}
