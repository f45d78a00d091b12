#!/usr/bin/env bash
# The full host-thread benchmark on this machine: builds `kx` (release) and runs
# `kx bench --host` on 1, 2, 4, ... up to every core this shell may use, with the Linux
# reference beside our scenarios, and leaves the results directory (results.json,
# results.csv, one SVG per scenario, index.html) in one folder, whose path it prints last.
#
# Needs nothing but Rust (no QEMU: nothing boots). Run it on a many-core machine; as root on
# a cgroup v2 host the Linux reference runs in a fresh memcg of its own, otherwise the
# results say why it did not.
#
# Usage: scripts/bench-host.sh [OUT_DIR] [kx bench options...]
#   OUT_DIR defaults to results/host-<hostname>-<UTC time>; the options are kx bench's
#   (--rounds 10, --seconds 1, --cpus 1,8,16, --scenarios ..., --quick).
# Environment: KX=path/to/kx runs that binary instead of building one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=${1:-results/host-$(hostname -s 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ)}
shift $(($# > 0 ? 1 : 0))

if [[ -n ${KX-} ]]; then
    kx=$KX
else
    cargo build --release -p qemu --bin kx
    kx=target/release/kx
fi

echo "host: $(nproc) cores usable, $(uname -sr)"
status=0
"$kx" bench --host --out "$out" "$@" || status=$?
echo
echo "results: $out"
exit "$status"
