#!/usr/bin/env python3
"""Per operation, what the kernel's own machine code executes in a benchmark run under TCG.

Boots the release kernel (ELF32 copy of the `kernel` profile's ELF) in QEMU's TCG with one
vCPU and one scenario (`run=bench scenarios=S bench_cpus=1 rounds=1 instances=1
seconds=SECS`), with QEMU logging each translated block's disassembly and each block
execution (`-d in_asm,exec,nochain`, streamed through a pipe, never written to disk). The
measured window is what runs between an execution of `kx_measured_window_begin` and the next of
`kx_measured_window_end` (kernel/src/bench/window.rs: where the engine starts and stops a
CPU's hardware counters, so the window a PMU counts on real hardware), less what runs between
an execution of `kx_measured_window_pause` and the next of `kx_measured_window_resume` (the
untimed work the engine runs with the CPU's clock paused: pft's unmap). For each window it
sums, over the blocks executed in it:
  insn   guest instructions
  calls  call instructions (each one a call/return pair)
  lock   locked read-modify-writes (lock-prefixed instructions and xchg with memory)
  div    integer divisions (div / idiv)
  tb     translated blocks executed
  unch   block-to-block transitions TCG cannot chain: a block ending in a return, an
         indirect jump or call, or `iretq`, or one followed by a block in another 4 KiB
         page than its own start (QEMU links a jump to its target's code only within the
         page its block starts in); each goes through `helper_lookup_tb_ptr` or the
         execution loop, which a real CPU's branch predictors make nearly free (the
         entry into an exception handler counts as one; QEMU may end a block for other
         reasons than a jump, and such a block chains when its successor is in its page)
and divides by the operations of the run record (KRESULT) of the same window: the n-th
window is the n-th run record. Deterministic for one kernel build and command line up to
where the timed run stops (its length is guest time), so per-operation figures are stable
to a fraction of a percent; no timing is involved.

Known limits: a block that faults part-way (the touch that raises #PF) is counted whole,
which adds the few instructions after the touch in its block once per fault; interrupts
taken inside the window are counted, as a PMU would count them. Needs QEMU's exec log,
which Debian's QEMU 7.2 has (it ships no TCG plugins).

With --functions N, each scenario's line is followed by the N functions whose blocks
execute the most instructions per operation (a block is charged to the symbol it starts
in; inlined code to the function it was inlined into).

With --locks N, each scenario's line is followed by its N most executed locked RMWs per
operation, each with the chain of (inlined) functions and source lines it was compiled from.

With --inlined N, each scenario's line is followed by the N source functions, inlined or
not, that execute the most instructions per operation: each executed instruction is charged
to every function of its chain of inlined frames (addr2line -i over the ELF's line tables;
the standard library's frames left out), once each, as its inclusive count, and to the
innermost of them as its self count, so `do_anonymous_page` inlined into `handle_mm_fault`
gets its own line. A frame's name is as addr2line gives it (generic parameters elided).

With --lines N, each scenario's line is followed by the N source lines that execute the
most instructions per operation, each instruction charged to the innermost line of its
chain (the line a reader edits), with the function it is in.

With --transitions N, each scenario's line is followed by the N unchained transitions (the
`unch` column's) executed most per operation: the source line of the jump and of its
target, and whether the block ends in a return or indirect branch (`exit`) or jumps to
another page (`page`).

With --calls N, each scenario's line is followed by its N most frequent call targets per
operation (direct calls by the kernel symbol they land on, indirect ones by the function
that makes them).

Usage: scripts/guest-insn-count.py [--kernel DIR] [--seconds S] [--timeout T] [--calls N]
                                   [--functions N] [--inlined N] [--locks N]
                                   [--lines N] [--transitions N]
                                   SCENARIO:CONFIG:VARIANT ...
  e.g. limit:anon:floor seed001-faultfree:anon:base@+0 seed001-faultfree:shmem:base@+0
       seed003-pft:anon:A (the default). The kernel is built first unless --no-build
  (`cargo build -p kernel --profile kernel`, the recipe of boot/src/kernel_build.rs); wrap
  the command in the shared build lock on a shared machine.
Exit status: 0 done; 2 bad arguments; 3 no kernel; 4 a tool missing; 6 QEMU failed or
timed out; 7 the windows and run records do not pair up, or a requested run is missing.
"""

import argparse
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter, defaultdict

DEFAULT_SPECS = [
    "limit:anon:floor",
    "seed001-faultfree:anon:base@+0",
    "seed001-faultfree:shmem:base@+0",
    "seed003-pft:anon:A",
]
KERNEL_DIR = "target-kernel/x86_64-unknown-linux-gnu/kernel"
RUSTFLAGS = "-C relocation-model=static -C no-redzone=yes --cfg ksync_gs_cpu_id"
# "0xADDR:  bytes  mnemonic operands"; a continuation line (the bytes of a long instruction
# past the eighth) has no mnemonic and does not match.
INSN = re.compile(r"^0x([0-9a-f]+):  (?:[0-9a-f]{2} )*[0-9a-f]{2} +([a-z][a-z0-9.]*)\s*(.*)$")
TRACE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")
DIVS = {"div", "idiv", "divb", "divw", "divl", "divq", "idivb", "idivw", "idivl", "idivq"}


def die(code, msg):
    print(f"guest-insn-count: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("specs", nargs="*", help="SCENARIO:CONFIG:VARIANT")
    p.add_argument("--kernel", default=KERNEL_DIR, help="directory of the `kernel` ELF64")
    p.add_argument("--no-build", action="store_true", help="use the kernel as it is")
    p.add_argument("--seconds", type=float, default=0.05,
                   help="guest seconds per run (default 0.05; the log slows the guest)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per boot")
    p.add_argument("--calls", type=int, default=0, metavar="N",
                   help="also print the N most frequent call targets per operation")
    p.add_argument("--functions", type=int, default=0, metavar="N",
                   help="also print the N functions executing the most instructions per op")
    p.add_argument("--inlined", type=int, default=0, metavar="N",
                   help="also print the N source functions (inlined ones too) executing the "
                        "most instructions per op, inclusive and self")
    p.add_argument("--lines", type=int, default=0, metavar="N",
                   help="also print the N source lines executing the most instructions per op "
                        "(the innermost inlined frame's line)")
    p.add_argument("--transitions", type=int, default=0, metavar="N",
                   help="also print the N unchained block-to-block transitions executed most "
                        "per op, each with why TCG cannot chain it and the source lines of "
                        "the jump and its target")
    p.add_argument("--locks", type=int, default=0, metavar="N",
                   help="also print the N locked RMWs executed most per op, with the source "
                        "line (and the functions inlined into it) they were compiled from")
    try:
        a = p.parse_args()
    except SystemExit as e:
        sys.exit(0 if e.code == 0 else 2)
    a.specs = a.specs or DEFAULT_SPECS
    for s in a.specs:
        if len(s.split(":")) != 3:
            die(2, f"{s}: expected SCENARIO:CONFIG:VARIANT")
    if not 0.01 <= a.seconds <= 10:
        die(2, f"--seconds {a.seconds}: expected 0.01..=10")
    return a


def unchainable(mnemonic, operands):
    """Whether a block ending in this instruction leaves it through a lookup of its target
    (a return, an indirect jump or call, an interrupt return), whatever page it lands in."""
    if mnemonic.startswith(("ret", "iret", "sysret")):
        return True
    return mnemonic.startswith(("jmp", "call")) and "*" in operands


def kind(mnemonic, operands):
    """'call', 'lock', 'div' or None for one instruction."""
    if mnemonic.startswith("call"):
        return "call"
    if mnemonic == "lock" or (mnemonic.startswith("xchg") and "(" in operands):
        return "lock"
    if mnemonic in DIVS:
        return "div"
    return None


CALL_TARGET = re.compile(r"^(0x[0-9a-f]+)$")


def count_windows(log, begin, end, pause, resume):
    """Per window: ([insn, call, lock, div, tb, unch] summed over the blocks executed in it
    (see the module doc for the last two), Counter
    of call targets: an address, or ("site", address of the call) for an indirect call,
    Counter of instructions by block start, Counter of locked RMWs by their address,
    Counter of executions by block start, Counter of unchained transitions by (block, next
    block)), and block start -> its instructions' addresses, and block start -> whether its
    last instruction is unchainable()."""
    blocks = {}  # block start -> [insn, call, lock, div]
    insn_addrs = {}  # block start -> addresses of its instructions
    targets = {}  # block start -> call targets in it
    locks = {}  # block start -> addresses of its locked RMWs
    exits = {}  # block start -> whether its last instruction is unchainable()
    prev = None  # the block executed last in the open window
    cur = None  # [insn, call, lock, div] of the block being read
    cur_targets = None
    cur_locks = None
    windows = []
    open_w = None
    open_t = None
    open_b = None
    open_l = None
    open_e = None
    open_x = None
    paused = False
    for line in log:
        if line.startswith("Trace "):
            m = TRACE.match(line)
            if not m:
                continue
            pc = int(m.group(1), 16)
            if pc == pause:
                paused = True
                prev = None
                continue
            if pc == resume:
                paused = False
                continue
            if pc == begin:
                paused = False
                prev = None
                open_w = [0, 0, 0, 0, 0, 0]
                open_t = Counter()
                open_b = Counter()
                open_l = Counter()
                open_e = Counter()
                open_x = Counter()
                continue
            if pc == end:
                if open_w is not None:
                    windows.append((open_w, open_t, open_b, open_l, open_e, open_x))
                open_w = None
                continue
            if open_w is not None and not paused:
                b = blocks.get(pc)
                if b is None:
                    die(7, f"block {pc:#x} executed before its disassembly was logged")
                for i in range(4):
                    open_w[i] += b[i]
                open_w[4] += 1
                if prev is not None and (exits[prev] or (prev ^ pc) >> 12):
                    open_w[5] += 1
                    open_x[(prev, pc)] += 1
                prev = pc
                for t in targets[pc]:
                    open_t[t] += 1
                open_b[pc] += b[0]
                open_e[pc] += 1
                for site in locks[pc]:
                    open_l[site] += 1
        elif line.startswith("IN:"):
            cur = None
        elif line.startswith("0x"):
            m = INSN.match(line)
            if not m:
                continue
            addr = int(m.group(1), 16)
            if cur is None:
                cur = [0, 0, 0, 0]
                cur_targets = []
                cur_locks = []
                blocks[addr] = cur
                insn_addrs[addr] = []
                cur_start = addr
                targets[addr] = cur_targets
                locks[addr] = cur_locks
            cur[0] += 1
            insn_addrs[cur_start].append(addr)
            exits[cur_start] = unchainable(m.group(2), m.group(3))
            k = kind(m.group(2), m.group(3))
            if k:
                cur[("insn", "call", "lock", "div").index(k)] += 1
            if k == "lock":
                cur_locks.append(addr)
            if k == "call":
                t = CALL_TARGET.match(m.group(3).strip())
                cur_targets.append(int(t.group(1), 16) if t else ("site", addr))
        elif not line.strip():
            cur = None
    return windows, insn_addrs, exits


def symbol_table(elf):
    """Sorted (address, name) of the ELF's symbols, names demangled."""
    out = subprocess.run(["nm", "-C", "-n", elf], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    return syms


def name_of(syms, addr):
    if isinstance(addr, tuple):
        return "*indirect, from " + name_of(syms, addr[1])
    i = bisect.bisect_right(syms, (addr, "\uffff")) - 1
    return syms[i][1] if i >= 0 else hex(addr)


def source_lines(elf, addrs, names_only=False):
    """Address -> ["function at file:line", ...] from the innermost inlined frame out, by
    addr2line over the ELF's line tables (empty when it has none or addr2line is missing),
    leaving out the standard library's frames (the atomics' own wrappers); with
    `names_only`, the functions' names alone."""
    if not addrs or shutil.which("addr2line") is None:
        return {}
    out = subprocess.run(["addr2line", "-e", elf, "-f", "-i", "-C", "-a"]
                         + [hex(a) for a in addrs], capture_output=True, text=True).stdout
    where = {}
    cur = None
    lines = out.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            cur = where.setdefault(int(lines[i], 16), [])
            i += 1
            continue
        fn = lines[i]
        loc = lines[i + 1] if i + 1 < len(lines) else "??"
        if "/rustc/" not in loc:
            loc = re.sub(r"^.*/(kernel|lru|memcg|abi|boot)/", r"\1/", loc)
            cur.append(fn if names_only else f"{fn[:70]} at {loc}")
        i += 2
    return where


def executions(hits, insn_addrs):
    """Instruction address -> executions, over the measured windows."""
    executed = Counter()
    for _, w in hits:
        for pc, n in w[4].items():
            for addr in insn_addrs[pc]:
                executed[addr] += n
    return executed


def inlined_profile(elf, syms, hits, insn_addrs, ops, top):
    """Prints the `top` source functions by inclusive instructions per op (see --inlined)."""
    executed = executions(hits, insn_addrs)
    chains = source_lines(elf, sorted(executed), names_only=True)
    incl, own = Counter(), Counter()
    for addr, n in executed.items():
        # No line table for it (hand-written assembly): its symbol stands in.
        chain = chains.get(addr) or [name_of(syms, addr)]
        own[chain[0]] += n
        for f in set(chain):
            incl[f] += n
    print(f"    {'incl/op':>9} {'self/op':>9}   source function (inlined frames included)")
    for f, n in incl.most_common(top):
        print(f"    {n / ops:9.1f} {own[f] / ops:9.1f}   {f[:100]}")


def line_profile(elf, hits, insn_addrs, ops, top):
    """Prints the `top` source lines by instructions per op (see --lines)."""
    executed = executions(hits, insn_addrs)
    chains = source_lines(elf, sorted(executed))
    per_line = Counter()
    for addr, n in executed.items():
        chain = chains.get(addr)
        per_line[chain[0] if chain else "(no line table)"] += n
    print(f"    {'insn/op':>9}   innermost source line")
    for where, n in per_line.most_common(top):
        print(f"    {n / ops:9.1f}   {where[:120]}")


def transition_profile(elf, syms, hits, insn_addrs, exits, ops, top):
    """Prints the `top` unchained transitions by executions per op (see --transitions): the
    source line of the block's last instruction (the jump, call or return) and of the
    block it lands in, and why TCG looks the target up: the block ends in a return, an
    indirect jump or call, or an interrupt return (`exit`), or it jumps to another 4 KiB
    page than the one it starts in (`page`)."""
    moves = Counter()
    for _, w in hits:
        moves.update(w[5])
    best = moves.most_common(top)
    addrs = sorted({insn_addrs[b][-1] for (b, _), _ in best} | {t for (_, t), _ in best})
    where = source_lines(elf, addrs)

    def at(addr):
        chain = where.get(addr)
        return chain[0] if chain else name_of(syms, addr)

    print(f"    {'unch/op':>9}   why   from (the block's last instruction) -> to")
    for (b, t), n in best:
        last = insn_addrs[b][-1]
        why = "exit" if exits[b] else "page"
        print(f"    {n / ops:9.2f}   {why:<4}  {last:#x} {at(last)[:90]}")
        print(f"    {'':9}   {'':4}  -> {t:#x} {at(t)[:90]}")


def symbol(elf, name):
    out = subprocess.run(["nm", elf], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    die(3, f"{elf} has no symbol {name} (a kernel before the measured-window markers?)")


def boot(a, elf32, scenario):
    tmp = tempfile.mkdtemp(prefix="guest-insn-count.")
    fifo = os.path.join(tmp, "log")
    os.mkfifo(fifo)
    serial = os.path.join(tmp, "serial.log")
    append = (f"run=bench scenarios={scenario} bench_cpus=1 rounds=1 instances=1 "
              f"seconds={a.seconds}")
    args = [
        "qemu-system-x86_64", "-machine", "q35", "-cpu", "max", "-m", "1024", "-smp", "1",
        "-accel", "tcg", "-display", "none", "-serial", f"file:{serial}", "-nic", "none",
        "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
        "-kernel", elf32, "-append", append, "-d", "in_asm,exec,nochain", "-D", fifo,
    ]
    qemu = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    timer = threading.Timer(a.timeout, qemu.kill)
    timer.start()
    return qemu, timer, fifo, serial, tmp


def main():
    a = parse_args()
    for tool in ("qemu-system-x86_64", "nm", "objcopy"):
        if shutil.which(tool) is None:
            die(4, f"{tool} not found")
    if not a.no_build:
        env = dict(os.environ, RUSTFLAGS=RUSTFLAGS)
        r = subprocess.run(["cargo", "build", "-q", "-p", "kernel", "--target",
                            "x86_64-unknown-linux-gnu", "--target-dir", "target-kernel",
                            "--profile", "kernel"], env=env)
        if r.returncode != 0:
            die(3, "the kernel build failed")
    elf64 = os.path.join(a.kernel, "kernel")
    if not os.path.isfile(elf64):
        die(3, f"{elf64} not found")
    begin = symbol(elf64, "kx_measured_window_begin")
    end = symbol(elf64, "kx_measured_window_end")
    pause = symbol(elf64, "kx_measured_window_pause")
    resume = symbol(elf64, "kx_measured_window_resume")
    tmp = tempfile.mkdtemp(prefix="guest-insn-count.")
    elf32 = os.path.join(tmp, "kernel32.elf")
    subprocess.run(["objcopy", "-O", "elf32-i386", elf64, elf32], check=True)

    syms = (symbol_table(elf64)
            if a.calls or a.functions or a.locks or a.inlined or a.transitions else [])
    wanted = defaultdict(list)
    for s in a.specs:
        sc, cfg, var = s.split(":")
        wanted[sc].append((cfg, var))
    print(f"{'scenario config variant':<36} {'ops':>6} {'insn/op':>9} {'calls/op':>9} "
          f"{'lock/op':>8} {'div/op':>7} {'tb/op':>7} {'unch/op':>8}")
    for sc, runs in wanted.items():
        qemu, timer, fifo, serial, btmp = boot(a, elf32, sc)
        with open(fifo, errors="replace") as log:
            windows, insn_addrs, exits = count_windows(log, begin, end, pause, resume)
        qemu.wait()
        timer.cancel()
        err = qemu.stderr.read().decode(errors="replace")
        with open(serial, errors="replace") as f:
            lines = f.readlines()
        records = [json.loads(line[len("KRESULT "):]) for line in lines
                   if line.startswith("KRESULT ")]
        records = [r for r in records if r.get("type") == "run"]
        # What the kernel said, without the indented lists (the accepted keys, the tests).
        tail = "".join(line for line in lines if not line.startswith("  "))[-1200:]
        shutil.rmtree(btmp, ignore_errors=True)
        if not records:
            die(6, f"{sc}: no run records (QEMU status {qemu.returncode}): {err.strip()[-400:]}"
                   f"\nthe kernel said:\n{tail}")
        if len(records) != len(windows):
            die(7, f"{sc}: {len(windows)} measured windows but {len(records)} run records")
        for cfg, var in runs:
            hits = [(r, w) for r, w in zip(records, windows)
                    if r["config"] == cfg and r["variant"] == var and not r["warmup"]]
            if not hits:
                die(7, f"{sc}:{cfg}:{var}: no measured run of it in the log")
            ops = sum(r["ops"] for r, _ in hits)
            tot = [sum(w[0][i] for _, w in hits) for i in range(6)]
            print(f"{sc + ' ' + cfg + ' ' + var:<36} {ops:>6} {tot[0] / ops:>9.1f} "
                  f"{tot[1] / ops:>9.2f} {tot[2] / ops:>8.2f} {tot[3] / ops:>7.2f} "
                  f"{tot[4] / ops:>7.1f} {tot[5] / ops:>8.1f}", flush=True)
            if a.functions:
                insns = Counter()
                for _, w in hits:
                    for pc, n in w[2].items():
                        insns[name_of(syms, pc)] += n
                for f, n in insns.most_common(a.functions):
                    print(f"    {n / ops:7.1f} insn/op   {f[:110]}")
            if a.inlined:
                inlined_profile(elf64, syms, hits, insn_addrs, ops, a.inlined)
            if a.lines:
                line_profile(elf64, hits, insn_addrs, ops, a.lines)
            if a.locks:
                sites = Counter()
                for _, w in hits:
                    sites.update(w[3])
                top = sites.most_common(a.locks)
                where = source_lines(elf64, [site for site, _ in top])
                for site, n in top:
                    print(f"    {n / ops:7.2f} locks/op  {site:#x} {name_of(syms, site)[:80]}")
                    for frame in where.get(site, []):
                        print(f"                       {frame}")
            if a.transitions:
                transition_profile(elf64, syms, hits, insn_addrs, exits, ops, a.transitions)
            if a.calls:
                calls = Counter()
                for _, w in hits:
                    calls.update(w[1])
                for t, n in calls.most_common(a.calls):
                    print(f"    {n / ops:7.2f} calls/op  {name_of(syms, t)[:110]}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
