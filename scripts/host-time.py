#!/usr/bin/env python3
"""Where the host's time goes per operation while QEMU's TCG runs a benchmark scenario.

guest-insn-count.py counts what the guest executes; this tool measures what the host spends
on it, split by the part of QEMU that spends it. It boots the release kernel in QEMU
(`run=bench scenarios=S bench_cpus=B rounds=R instances=1 seconds=SECS`, B of the --smp
vCPUs running it), and while a run is under way attaches `perf record` (cpu-clock samples
of every QEMU thread) for a window in the middle of it. The window's run is the one whose
progress line (`KPROGRESS ... ops/s`) comes next; its rate turns the window's samples into
host nanoseconds per operation, by category:

  jit        translated code (perf's [JIT] map: the guest's instructions as TCG compiled them)
  atomic     the helpers that emulate a locked read-modify-write with a host atomic
             (`cpu_atomic_*`: TCG calls them only with more than one vCPU, and inlines a
             plain load and store with one)
  softmmu    the emulated MMU's slow paths: TLB misses, page walks, TLB fills, the memory
             helpers that exception delivery and `iretq` use (cputlb, the page walker)
  execloop   the execution loop between blocks: block lookups for a return, an indirect
             branch or a jump into another page (`helper_lookup_tb_ptr`, `cpu_exec`, the
             block hash table)
  exception  delivering interrupts and exceptions (`do_interrupt_all` and the x86 helpers
             around it)
  other      the rest of QEMU, the C library, glib and the host kernel

Only the B busiest threads' samples count: the vCPUs that run the scenario (QEMU's main
loop and an idle vCPU's thread take little, and a spinning one would be someone else's
time). The rate is the run's (every CPU's operations over the slowest CPU's time), so at
B > 1 a figure is host time summed over the B vCPUs per operation: where it exceeds the
figure at B = 1, the CPUs pay for each other (waits, shootdowns, lines moving between host
cores).

Debian's QEMU is stripped of its static symbols: a sample in a static function is charged
to the nearest exported symbol below it (`nm -D`; listed as "after NAME"), and the
categories are chosen from those names, so a few static functions may land in a
neighbour's category. One is placed by what it does: the static code right before the
exported atomic helpers (`cpu_atomic_*_mmu`) counts as theirs, as samples land there only
with more than one vCPU and grow with the locked RMWs a path takes (at --smp 2, 29.7 ns
per page for seed001's anonymous path and its 10.56 RMWs, 53.5 for shmem's 16.01; nothing
at --smp 1). The split is a guide to which cost a change can move, not a measurement of
one function.

Runs are 3 s by default so that a 1.5 s window fits inside one; windows whose progress
line is missing or during which QEMU exited are dropped, and so are the warm-up round's:
at a fault scenario's point the engine measures the `limit` floor for a quarter of a
run's length before a block's first run (and after every run, before its progress line,
so the next run starts as the line appears), and the window after the previous point's
last line could catch it. A host
that is not idle spreads the figures (run it alone).

Usage: scripts/host-time.py [--kernel ELF32] [--seconds S] [--window W] [--rounds R]
                            [--smp N] [--bench-cpus B] [--symbols N] [--timeout T]
                            SCENARIO [CONFIG:VARIANT ...]
  e.g. scripts/host-time.py limit; scripts/host-time.py seed001-faultfree anon:base@+0
  CONFIG:VARIANT pairs select the runs reported (default: every run measured).
Exit status: 0 done; 2 bad arguments; 3 no kernel; 4 perf, QEMU or nm missing; 5 perf
cannot sample (perf_event_paranoid); 6 QEMU failed or timed out; 7 no window fell inside
a selected run.
"""

import argparse
import bisect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

KERNEL = "target-kernel/x86_64-unknown-linux-gnu/kernel/kernel32.elf"
QEMU = "qemu-system-x86_64"
FREQ = 4000
PROGRESS = re.compile(
    r"^KPROGRESS \d+/\d+ (\S+) (\S+) (\S+) cpus=(\d+) round=(\S+) (\d+) ops/s")
REPORT = re.compile(
    r"^\s*([\d.]+)%\s+(\d+)\s+(\d+):\S*\s+(\S+(?: tid \d+)?)\s+\[.\]\s+(\S+)")
SOFTMMU = ("tlb", "mmu", "helper_le_", "helper_be_", "probe_access", "get_pg_mode",
           "address_space_translate", "qemu_ram_", "cpu_ld", "cpu_st", "x86_cpu_tlb_fill",
           "get_page_addr_code", "qemu_plugin_vcpu_mem_cb", "plugin_gen_tb_end",
           "cpu_loop_exit_atomic")
EXECLOOP = ("cpu_exec", "curr_cflags", "qht_lookup", "tb_set_jmp_target", "tb_htable",
            "tcg_tb_lookup")
EXCEPTION = ("do_interrupt", "do_smm_enter", "raise_exception", "helper_iret")
ATOMIC = ("cpu_atomic_", "helper_atomic_")
CATEGORIES = ("jit", "atomic", "softmmu", "execloop", "exception", "other")


def die(code, msg):
    print(f"host-time: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("scenario")
    p.add_argument("runs", nargs="*", help="CONFIG:VARIANT (default: every run)")
    p.add_argument("--kernel", default=KERNEL, help="the kernel's ELF32 copy")
    p.add_argument("--seconds", type=float, default=3.0, help="guest seconds per run")
    p.add_argument("--window", type=float, default=1.5, help="seconds sampled per run")
    p.add_argument("--rounds", type=int, default=1, help="measured rounds per variant")
    p.add_argument("--smp", type=int, default=1,
                   help="vCPUs QEMU emulates (default 1; kx bench boots 2: with more than "
                        "one, TCG emulates every locked RMW with a host atomic in a helper)")
    p.add_argument("--bench-cpus", type=int, default=1,
                   help="vCPUs the scenario runs on (1..=--smp; default 1)")
    p.add_argument("--symbols", type=int, default=0,
                   help="also list each run's N costliest symbols (default 0)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds for the boot")
    try:
        a = p.parse_args()
    except SystemExit as e:
        sys.exit(0 if e.code == 0 else 2)
    for r in a.runs:
        if len(r.split(":")) != 2:
            die(2, f"{r}: expected CONFIG:VARIANT")
    if not 0.5 <= a.seconds <= 60 or not 0.1 <= a.window < a.seconds:
        die(2, "expected 0.5 <= --seconds <= 60 and 0.1 <= --window < --seconds")
    if not 1 <= a.rounds <= 20:
        die(2, "--rounds: expected 1..=20")
    if not 1 <= a.smp <= 64:
        die(2, "--smp: expected 1..=64")
    if a.symbols < 0:
        die(2, "--symbols: expected 0 or more")
    if not 1 <= a.bench_cpus <= a.smp:
        die(2, f"--bench-cpus: expected 1..={a.smp} (--smp)")
    return a


def exported_symbols():
    """QEMU's exported functions, sorted: (addresses, ends, names)."""
    out = subprocess.run(["nm", "-D", "-S", "--defined-only", shutil.which(QEMU)],
                         capture_output=True, text=True).stdout
    syms = sorted((int(p[0], 16), int(p[0], 16) + int(p[1], 16), p[3])
                  for p in (line.split() for line in out.splitlines()) if len(p) == 4)
    return [s[0] for s in syms], [s[1] for s in syms], [s[2] for s in syms]


def category(dso, sym, symbols):
    """The category of a sample in `dso` at `sym`, and the name it is charged to: a static
    function's sample is named after the exported one below it ("after NAME"), and one
    that lies right before the atomic helpers is theirs (see the module documentation)."""
    if dso.startswith("[JIT"):
        return "jit", "[JIT]"
    if "qemu-system" not in dso:
        return "other", f"{sym} ({dso})"
    if sym.startswith("0x"):
        addrs, ends, names = symbols
        pc = int(sym, 16)
        i = bisect.bisect_right(addrs, pc) - 1
        if i < 0:
            return "other", sym
        sym = names[i]
        if pc >= ends[i]:
            after = names[i + 1] if i + 1 < len(names) else ""
            if after.startswith(ATOMIC):
                return "atomic", f"before {after}"
            sym = f"after {sym}"
    name = sym.removeprefix("after ")
    if name.startswith(EXECLOOP):
        return "execloop", sym
    if name.startswith(EXCEPTION):
        return "exception", sym
    if name.startswith(ATOMIC):
        return "atomic", sym
    if any(k in name for k in SOFTMMU):
        return "softmmu", sym
    return "other", sym


def split(data, symbols, threads):
    """Samples per (category, symbol) of the `threads` busiest threads together (the vCPUs
    running the scenario; an idle vCPU halts, QEMU's other threads mostly wait) in one perf
    data file."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort",
                          "pid,dso,sym", "-g", "none", "-n", "--percent-limit", "0"],
                         capture_output=True, text=True).stdout
    per_tid = defaultdict(Counter)
    for line in out.splitlines():
        m = REPORT.match(line)
        if m:
            per_tid[m.group(3)][category(m.group(4), m.group(5), symbols)] += \
                int(m.group(2))
    if not per_tid:
        die(6, f"perf report of {data} gave no sample line this tool can read")
    busiest = sorted(per_tid.values(), key=lambda c: sum(c.values()), reverse=True)
    return sum(busiest[:threads], Counter())


def main():
    a = parse_args()
    for tool in (QEMU, "perf", "nm"):
        if shutil.which(tool) is None:
            die(4, f"{tool} not found (Debian: apt-get install qemu-system-x86 linux-perf "
                   "binutils)")
    if not os.path.isfile(a.kernel):
        die(3, f"{a.kernel} not found: build it with `cargo run --release -p qemu -- summary`")
    tmp = tempfile.mkdtemp(prefix="host-time.")
    probe = subprocess.run(["perf", "record", "-q", "-o", os.path.join(tmp, "probe"), "--",
                            "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        die(5, f"perf cannot sample: {probe.stderr.strip()[-300:]}")
    symbols = exported_symbols()
    serial = os.path.join(tmp, "serial.log")
    qemu = subprocess.Popen(
        [QEMU, "-machine", "q35", "-cpu", "max", "-m", "1024", "-smp", str(a.smp),
         "-accel", "tcg",
         "-display", "none", "-serial", f"file:{serial}", "-nic", "none", "-no-reboot",
         "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-kernel", a.kernel,
         "-append", f"run=bench scenarios={a.scenario} bench_cpus={a.bench_cpus} "
                    f"rounds={a.rounds} instances=1 seconds={a.seconds}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    start = time.monotonic()
    seen = 0  # progress lines read so far
    windows = []  # (perf data, progress lines seen when it started)

    def progress():
        with open(serial, errors="replace") as f:
            return [m for m in (PROGRESS.match(line) for line in f) if m]

    while qemu.poll() is None:
        if time.monotonic() - start > a.timeout:
            qemu.kill()
            die(6, f"QEMU did not finish within {a.timeout} s")
        lines = progress() if os.path.exists(serial) else []
        if len(lines) > seen:
            seen = len(lines)
            # A run just ended and the next began: sample the middle of the new one.
            time.sleep((a.seconds - a.window) / 2)
            data = os.path.join(tmp, f"w{len(windows)}.data")
            rec = subprocess.run(["perf", "record", "-q", "-F", str(FREQ), "-p",
                                  str(qemu.pid), "-o", data, "--", "sleep", str(a.window)],
                                 capture_output=True)
            # QEMU exiting inside the window leaves perf a truncated file: not a window.
            if rec.returncode == 0 and qemu.poll() is None:
                windows.append((data, seen))
        time.sleep(0.05)
    if qemu.returncode != 33:
        die(6, f"QEMU exited with status {qemu.returncode}: "
               f"{qemu.stderr.read().decode(errors='replace').strip()[-300:]}")
    lines = progress()
    wanted = {tuple(r.split(":")) for r in a.runs}
    per_run = defaultdict(lambda: [Counter(), 0.0, 0])
    for data, before in windows:
        if before >= len(lines) or not os.path.exists(data):
            continue
        m = lines[before]  # the run the window fell in
        key = (m.group(2), m.group(3))
        if (wanted and key not in wanted) or m.group(5).startswith("0/"):
            continue
        ops = int(m.group(6)) * a.window
        acc = per_run[key]
        acc[0].update(split(data, symbols, a.bench_cpus))
        acc[1] += ops
        acc[2] += 1
    shutil.rmtree(tmp, ignore_errors=True)
    if not per_run:
        die(7, "no sampling window fell inside a selected run")
    print(f"{'config variant':<28} {'windows':>7} " +
          " ".join(f"{c:>9}" for c in CATEGORIES) + f" {'total':>9}   host ns per op")
    for (cfg, var), (c, ops, n) in sorted(per_run.items()):
        ns = Counter()
        for (cat, _), samples in c.items():
            ns[cat] += samples / FREQ / ops * 1e9
        print(f"{cfg + ' ' + var:<28} {n:>7} " +
              " ".join(f"{ns[k]:>9.1f}" for k in CATEGORIES) + f" {sum(ns.values()):>9.1f}")
        for (cat, sym), samples in c.most_common(a.symbols):
            print(f"{'':<28} {samples / FREQ / ops * 1e9:>17.1f}  {cat:<9} {sym}")


if __name__ == "__main__":
    main()
