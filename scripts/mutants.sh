#!/usr/bin/env bash
# Mutation testing of the core crates with cargo-mutants: every mutant of the files below
# is built and the owning crate's own tests (`cargo test -p CRATE`, debug profile) must fail
# on it. A mutant that survives is either a gap in the tests or an equivalent change; the
# known ones are listed, each with its reason, in docs/mutants.md, so a new survivor stands
# out. Too slow for every change, so not part of .ci/run; it runs on a clean clone.
#
# One crate at a time, one mutant at a time (`--jobs 1`, under `nice`), in a scratch copy of
# the tree (never in place), with a per-mutant timeout. Reports: target/mutants/CRATE/
# mutants.out/{caught,missed,unviable,timeout}.txt and outcomes.json; a summary table of
# every crate's counts per file is printed at the end (and kept in target/mutants/summary.txt).
#
# Usage: scripts/mutants.sh [--loom] [--iterate] [FILE...]
#   FILE...    source files to mutate (paths from the repository root), instead of the default
#              list below; each is assigned to the crate whose Cargo.toml is nearest above it,
#              e.g. `scripts/mutants.sh bench/src/stats.rs`.
#   --loom     a second pass over the lock-free files (LOOM_FILES, or the given FILEs) with
#              `RUSTFLAGS="--cfg loom"`, release profile, the crate's `suite` test binary (which
#              holds only its loom models under that flag);
#              reports under target/mutants/CRATE-loom/.
#   --iterate  skip mutants caught by the previous run into the same output directory.
# Environment: MUTANTS_TIMEOUT (seconds per test run, default 60; the suites take seconds, so
#   only a mutant that hangs runs into it), MUTANTS_JOBS (default 1),
#   VM_SOAK_OPS (mm's soak test length, default here 1500), MUTANTS_OUT (where the
#   reports go, default target/mutants; use another one for a run over other files, so
#   that --iterate over the default list keeps its ledger), MUTANTS_CARGO_TEST_ARGS (words
#   passed to `cargo test` after `--`, e.g. `--lib -- stats two_level` to run only those
#   tests: a narrower suite catches fewer mutants, so a score measured with it is a lower
#   bound; say which filter a score was measured with).
# The whole script is one brace group, so bash reads all of it before it runs any of it:
# editing the file during an hours-long run does not change what that run executes.
{
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO_MUTANTS_VERSION=27.1.0

# The core files: lru's list, reclaim and refault logic; memcg's charge path, hierarchy and
# reclaim; the page allocator and the fault path; the seeds' benchmark scenarios; the
# statistics, the primary comparisons, the summary's marks and the verdicts.
DEFAULT_FILES=(
    lru/src/vmscan.rs
    lru/src/vmscan_classic.rs
    lru/src/memcg_lru.rs
    lru/src/hlist_nulls.rs
    lru/src/swap.rs
    lru/src/workingset.rs
    lru/src/lru_gen.rs
    lru/src/lru_gen_folio.rs
    lru/src/lruvec/mod.rs
    lru/src/lruvec/guard.rs
    memcg/src/charge.rs
    memcg/src/stock.rs
    memcg/src/page_counter.rs
    memcg/src/tree/mod.rs
    memcg/src/reclaim.rs
    memcg/src/reclaim_req.rs
    page_alloc/src/buddy.rs
    page_alloc/src/pcp.rs
    page_alloc/src/page_alloc.rs
    mm/src/fault.rs
    mm/src/mmap.rs
    mm/src/reclaim.rs
    mm/src/page_cache.rs
    mm/src/mmu_gather.rs
    mm/src/fault_inject.rs
    mm/src/check.rs
    bench/src/scenarios/seed000/mod.rs
    bench/src/scenarios/seed001/mod.rs
    bench/src/scenarios/seed002/mod.rs
    bench/src/scenarios/seed003/mod.rs
    bench/src/scenarios/seed004/mod.rs
    bench/src/stats.rs
    bench/src/two_level.rs
    bench/src/primary.rs
    bench/src/summary.rs
    bench/src/verdict.rs
)

# Code whose interleavings only the loom models explore.
LOOM_FILES=(
    lru/src/hlist_nulls.rs
    memcg/src/stock.rs
    memcg/src/page_counter.rs
)

loom=0
iterate=()
files=()
for arg in "$@"; do
    case $arg in
    --loom) loom=1 ;;
    --iterate) iterate=(--iterate) ;;
    -h | --help)
        sed -n '2,/^# The whole script/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    -*)
        echo "unknown option: $arg" >&2
        exit 2
        ;;
    *)
        [[ -f $arg ]] || {
            echo "no such file: $arg" >&2
            exit 2
        }
        files+=("$arg")
        ;;
    esac
done
if ((${#files[@]} == 0)); then
    if ((loom)); then files=("${LOOM_FILES[@]}"); else files=("${DEFAULT_FILES[@]}"); fi
fi

if ! cargo mutants --version 2>/dev/null | grep -qx "cargo-mutants $CARGO_MUTANTS_VERSION"; then
    echo "installing cargo-mutants $CARGO_MUTANTS_VERSION from crates.io"
    cargo install --locked "cargo-mutants@$CARGO_MUTANTS_VERSION"
fi

# The package that owns FILE: the `name` of the nearest Cargo.toml above it.
crate_of() {
    local dir
    dir=$(dirname "$1")
    while [[ $dir != . && ! -f $dir/Cargo.toml ]]; do dir=$(dirname "$dir"); done
    sed -n '/^\[package\]/,/^\[/{s/^name *= *"\(.*\)"/\1/p}' "$dir/Cargo.toml" | head -n 1
}

declare -A crate_files=()
crates=()
for f in "${files[@]}"; do
    c=$(crate_of "$f")
    [[ -n $c ]] || {
        echo "no crate owns $f" >&2
        exit 2
    }
    [[ -v crate_files[$c] ]] || crates+=("$c")
    crate_files[$c]+=" $f"
done

export VM_SOAK_OPS=${VM_SOAK_OPS:-1500}
timeout=${MUTANTS_TIMEOUT:-60}
jobs=${MUTANTS_JOBS:-1}
base=${MUTANTS_OUT:-target/mutants}
mkdir -p "$base"
status=0
for c in "${crates[@]}"; do
    read -r -a fs <<<"${crate_files[$c]}"
    sel=(--package "$c")
    for f in "${fs[@]}"; do sel+=(--file "$f"); done
    args=("${sel[@]}" --jobs "$jobs" --timeout "$timeout" --build-timeout 600 --no-shuffle
        "${iterate[@]}")
    out=$base/$c
    test_args=()
    if [[ -n ${MUTANTS_CARGO_TEST_ARGS-} ]]; then
        read -r -a extra <<<"$MUTANTS_CARGO_TEST_ARGS"
        test_args=(-- "${extra[@]}")
    fi
    flags=${RUSTFLAGS-}
    if ((loom)); then
        out+=-loom
        sel+=(--profile release)
        args+=(--profile release)
        # For the build as well as the test run (`--cargo-arg`): the crate's other suites
        # do not compile with `--cfg loom`.
        test_args=(--cargo-arg=--test=suite)
        flags="--cfg loom"
    fi
    mkdir -p "$out"
    # --iterate retests only what the last run did not catch; keep a ledger of what earlier
    # runs caught or found unviable, so the summary still counts every mutant.
    if ((${#iterate[@]})); then
        for kind in caught unviable; do
            cat "$out/mutants.out/$kind.txt" "$out/ledger-$kind.txt" 2>/dev/null |
                sort -u >"$out/ledger-$kind.tmp" || true
            mv "$out/ledger-$kind.tmp" "$out/ledger-$kind.txt"
        done
    else
        rm -f "$out"/ledger-*.txt
    fi
    # Every mutant of this tree, to drop ledger entries of code that has since changed.
    RUSTFLAGS=$flags cargo mutants --list "${sel[@]}" >"$out/all.txt"
    # cargo-mutants finds files by following `mod` items: a file it does not reach (a module
    # declared by a macro) would be "tested" with no mutant at all, and score 100%.
    for f in "${fs[@]}"; do
        grep -q "^$f:" "$out/all.txt" || {
            echo "scripts/mutants.sh: cargo-mutants finds no mutant in $f (it follows plain" \
                "\`mod\` items only: is the module declared by a macro?)" >&2
            exit 2
        }
    done
    echo "=== $c${flags:+ ($flags)}: ${fs[*]}"
    RUSTFLAGS=$flags nice -n 10 cargo mutants --output "$out" "${args[@]}" "${test_args[@]}" ||
        status=$?
done

# Per-file counts from every report present: caught, missed, unviable, timeout, and the
# score: caught over viable (caught + missed + timeout; a timeout is not counted as caught, a
# loop that spins forever should fail a bounded test instead).
summary() {
    local d kind rep
    for d in "$base"/*/mutants.out; do
        rep=${d%/mutants.out}
        for kind in caught missed unviable timeout; do
            {
                [[ -f $d/$kind.txt ]] && cat "$d/$kind.txt"
                if [[ -f $rep/ledger-$kind.txt && -f $rep/all.txt ]]; then
                    grep -Fxf "$rep/all.txt" "$rep/ledger-$kind.txt" || true
                fi
            } | sort -u | sed -n "s|^\([^:]*\):.*|${rep##*/} \1 $kind|p"
        done
    done | awk '
        { key = $1 " " $2; n[key, $3]++; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
        END {
            printf "%-44s %6s %6s %6s %6s %7s\n", "report file", "caught", "missed", "unviab", "tmout", "score"
            for (i = 1; i <= k; i++) {
                key = order[i]; split(key, p, " ")
                c = n[key, "caught"] + 0; m = n[key, "missed"] + 0
                u = n[key, "unviable"] + 0; t = n[key, "timeout"] + 0
                v = c + m + t
                printf "%-44s %6d %6d %6d %6d %6.1f%%\n", p[1] ":" p[2], c, m, u, t, v ? 100 * c / v : 100
                C += c; M += m; U += u; T += t
            }
            v = C + M + T
            printf "%-44s %6d %6d %6d %6d %6.1f%%\n", "total", C, M, U, T, v ? 100 * C / v : 100
        }'
}
summary | tee "$base/summary.txt"
exit "$status"
}
