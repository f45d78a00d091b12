#!/usr/bin/env bash
# Instructions per operation of each fault scenario's core path, counted by callgrind: a
# yardstick that machine noise cannot move (the same binary and inputs give the same counts).
#
# Builds `bench/examples/ops.rs` (the host-thread mode's scenario code on the software
# MMU: the same mm / memcg / lru / ksync code the kernel runs) with the kernel's Cargo
# profile (`kernel`: fat LTO, one codegen unit), runs each scenario for a fixed number of
# operations after a warm-up under `valgrind --tool=callgrind`, collecting only inside the
# timed batch (`--toggle-collect` on `ops::measured`), and prints per operation:
#   Ir     instructions executed
#   calls  calls made (each one a call/return pair)
#   lock   locked read-modify-writes (lock-prefixed instructions and xchg with memory)
#   div    integer divisions (div / idiv)
#   libc   of the Ir, those in the C library (memset/memcpy: the scenarios' page zeroing on
#          the software MMU; the host floor zeroes with its own loop, inside the binary)
# The last two come from callgrind's per-instruction counts (--dump-instr=yes) matched with
# the binary's disassembly (objdump).
#
# With CALLGRIND_LOCKS=1 in the environment, each scenario's line is followed by its locked
# RMWs per operation by function (those with at least 0.01), to find where they are taken.
#
# Usage: scripts/callgrind.sh [OPS] [SCENARIO:CONFIG:VARIANT ...]
#   OPS defaults to 4096; the default scenarios are the floor and the issue-21 fault paths.
# Wrap it in the shared build lock on a shared machine: flock /tmp/kx-build.lock scripts/callgrind.sh
# Exit status: 0 done, 1 a run failed, 2 bad usage or a missing tool.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

OPS=${1:-4096}
if ! [[ $OPS =~ ^[0-9]+$ ]] || ((OPS == 0)); then
    echo "usage: scripts/callgrind.sh [OPS] [SCENARIO:CONFIG:VARIANT ...]" >&2
    exit 2
fi
shift || true
if (($# == 0)); then
    set -- limit:anon:floor \
        seed001-faultfree:anon:base@+0 \
        seed001-faultfree:shmem:base@+0 \
        seed003-pft:anon:A
fi
for tool in valgrind objdump python3; do
    command -v "$tool" >/dev/null || { echo "callgrind.sh: $tool is missing" >&2; exit 2; }
done

PROFILE=${CALLGRIND_PROFILE:-kernel}
cargo build -q -p bench --example ops --profile "$PROFILE"
BIN=target/$PROFILE/examples/ops
[[ -x $BIN ]] || { echo "callgrind.sh: $BIN was not built" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
objdump -d --no-show-raw-insn "$BIN" >"$OUT/dis"

printf '%-36s %9s %9s %8s %8s %7s\n' "scenario config variant" "Ir/op" "libc/op" "calls/op" "lock/op" "div/op"
for spec in "$@"; do
    IFS=: read -r scenario config variant <<<"$spec"
    cg=$OUT/cg.out
    if ! valgrind --tool=callgrind --callgrind-out-file="$cg" --collect-atstart=no \
        --toggle-collect='ops::measured' --dump-instr=yes --compress-pos=no \
        --compress-strings=no "$BIN" "$scenario" "$config" "$variant" "$OPS" \
        >"$OUT/stdout" 2>"$OUT/stderr"; then
        echo "callgrind.sh: $spec failed:" >&2
        tail -5 "$OUT/stderr" >&2
        exit 1
    fi
    ops=$(sed -n 's/^ops=//p' "$OUT/stdout")
    python3 - "$cg" "$OUT/dis" "$ops" "$scenario $config $variant" <<'EOF'
import os, re, sys
cg, dis, ops, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
# Instruction kinds by address, from the disassembly.
kind = {}
func = {}
fn = '?'
ins = re.compile(r'^\s*([0-9a-f]+):\s+(.*)$')
hdr = re.compile(r'^[0-9a-f]+ <(.*)>:$')
for line in open(dis):
    h = hdr.match(line)
    if h:
        fn = h.group(1)
        continue
    m = ins.match(line)
    if not m:
        continue
    text = m.group(2).split('#')[0].strip()
    words = text.split()
    if not words:
        continue
    if words[0] == 'lock' or (words[0].startswith('xchg') and '(' in text):
        kind[int(m.group(1), 16)] = 'lock'
        func[int(m.group(1), 16)] = fn
    elif words[0] in ('div', 'idiv', 'divl', 'divq', 'idivl', 'idivq', 'divb', 'divw'):
        kind[int(m.group(1), 16)] = 'div'
# Callgrind's cost lines: "ADDR LINE? Ir" with absolute addresses (--compress-pos=no);
# after a "calls=" line the next cost line is the call's inclusive cost, not self cost.
total = calls = libc = 0
by = {'lock': 0, 'div': 0}
lock_by_fn = {}
obj = ''
after_call = False
for line in open(cg):
    if line.startswith('ob='):
        obj = line[3:].strip()
        continue
    if line.startswith('calls='):
        calls += int(line.split()[0][6:])
        after_call = True
        continue
    if line.startswith('summary:') or line.startswith('totals:'):
        total = int(line.split()[1])
        continue
    if not line[:1].isdigit():
        continue
    parts = line.split()
    if after_call:  # the call's inclusive cost, counted where it was spent
        after_call = False
        continue
    if len(parts) < 2:
        continue
    if not obj.endswith('/ops'):
        if 'libc' in obj:
            libc += int(parts[-1])
        continue
    addr = int(parts[0], 16) if parts[0].startswith('0x') else int(parts[0])
    ir = int(parts[-1])
    k = kind.get(addr)
    if k:
        by[k] += ir
        if k == 'lock':
            lock_by_fn[func[addr]] = lock_by_fn.get(func[addr], 0) + ir
print(f"{name:36s} {total/ops:9.1f} {libc/ops:9.1f} {calls/ops:8.1f} {by['lock']/ops:8.2f} {by['div']/ops:7.2f}")
if os.environ.get('CALLGRIND_LOCKS'):
    for f, n in sorted(lock_by_fn.items(), key=lambda kv: -kv[1]):
        if n / ops >= 0.01:
            print(f"    {n/ops:6.2f} lock/op  {f}")
EOF
done
