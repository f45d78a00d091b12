#!/usr/bin/env python3
"""Where emulated time goes: a sampling profile of the kernel under QEMU's TCG.

Boots the release kernel (the one `cargo run --release -p qemu` builds) directly in QEMU,
the machine `kx` uses, with the HMP monitor on a private Unix socket, and samples every
vCPU's instruction pointer (`info registers -a`) at a fixed rate while the kernel runs its
command line (by default one CPU faulting and freeing anonymous pages: the benchmark's
seed001 `anon` config). Each sample is charged to the kernel function whose symbol
(`nm -n` of the 64-bit kernel ELF) covers it; the table lists the hottest functions with
their share of the samples.

Each sample stops the VM (`stop`), reads the registers and continues (`cont`): stopped,
every vCPU has left TCG's translation loop at a block boundary with its RIP written back,
so a sample names the translation block the vCPU was about to run (a function profile, not
an instruction one). Samples of a vCPU that is idle (`hlt`) or spinning for work are
charged to those functions like any other, so read the table for the busy CPU's share.
The stops slow the guest; the shares, not the run's rates, are the result.

Known limit: a sample is charged to the block that runs after the stop took effect, and
QEMU does not always take it at the next block. In a loop of page faults it may take it
only at the next exception delivery, and then nearly every sample lands on the #PF entry
stub (`trap_stubs_start`; the tool says so when one stub holds most samples). The shares
are then shares of stops, not of time. Use the tool to find a hot leaf function (it found
the byte-wise page zeroing that once cost half of every fault), and confirm every finding
with the benchmark's rates.

The unbiased mode, `--apic`: the kernel samples itself. The command line gets
`profile=HZ` (with run=bench; the kernel's key, 1..=10000): every vCPU's local APIC timer
fires periodically at HZ per second of guest time and its handler records the interrupted
RIP; at the end the kernel prints the samples (`KPROF <cpu> <rip> <count>` lines, after a
`KPROFILE` header per CPU with its sample and dropped counts). A timer interrupt is taken
at the next translation-block boundary wherever the vCPU is, so the samples follow where
guest time goes (to the block: a sample names a block's first instruction); what runs with
interrupts disabled is charged to where they are enabled again. No monitor, no stops: the
guest runs at full emulated speed but for the interrupts themselves. `--log FILE` reads the
KPROF lines of a serial log instead of booting (e.g. the output of `kx bench ... --append
profile=1000`, which echoes serial), and `--inlined` charges each sample to the innermost
inlined function (`addr2line -i`, from the release kernel's debug info) instead of the
symbol that contains it.

Usage: scripts/tcg-profile.py [--apic [--log FILE] [--inlined]] [--smp N] [--mem MIB]
                              [--hz HZ] [--top K] [--timeout SECS] [--append CMDLINE]
                              [--kernel DIR]
Exit status: 0 done; 2 bad arguments; 3 kernel not built (the message says how); 4 QEMU
or nm missing; 5 (--apic) no KPROF lines in the log; 6 QEMU failed; 7 timeout (the partial
profile is still printed); 8 (--apic) the log comes from another kernel build than the ELF.
"""

import argparse
import bisect
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter

DEFAULT_APPEND = (
    "run=bench scenarios=seed001-faultfree bench_cpus=1 rounds=1 instances=1 seconds=1"
)
RIP = re.compile(rb"RIP=([0-9a-f]{16})")


def die(code, msg):
    print(f"tcg-profile: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(
        description="Sampling profile of the kernel under QEMU TCG (see the module doc)."
    )
    p.add_argument("--smp", type=int, default=1, help="vCPUs (default 1)")
    p.add_argument("--mem", type=int, default=1024, help="guest MiB (default 1024)")
    p.add_argument(
        "--hz", type=float, default=None,
        help="samples/s (default 500; --apic: the timer's rate, default 1000)",
    )
    p.add_argument(
        "--apic", action="store_true",
        help="the guest samples itself on the APIC timer (profile=HZ): unbiased",
    )
    p.add_argument("--log", help="--apic: read KPROF lines from this serial log, no boot")
    p.add_argument(
        "--inlined", action="store_true",
        help="--apic: charge samples to the innermost inlined function (addr2line -i)",
    )
    p.add_argument("--top", type=int, default=40, help="functions listed (default 40)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    p.add_argument("--append", default=DEFAULT_APPEND, help="kernel command line")
    p.add_argument(
        "--callers",
        default="memset,memcpy,trap_stubs_start",
        help="functions whose callers are counted too (comma list; from the return "
        "address at [rsp], right for leaf functions such as memset; for the trap stubs, "
        "the interrupted RIP the CPU pushed above the error code)",
    )
    p.add_argument(
        "--exact",
        default="trap_stubs_start",
        help="functions whose samples are also listed by offset (comma list)",
    )
    p.add_argument(
        "--kernel",
        default="target-kernel/x86_64-unknown-linux-gnu/kernel",
        help="directory with `kernel` (ELF64) and `kernel32.elf`",
    )
    try:
        a = p.parse_args()
    except SystemExit as e:
        sys.exit(0 if e.code == 0 else 2)
    if not 1 <= a.smp <= 256:
        die(2, f"--smp {a.smp}: expected 1..=256")
    if not 32 <= a.mem <= 65536:
        die(2, f"--mem {a.mem}: expected 32..=65536")
    if a.hz is None:
        a.hz = 1000.0 if a.apic else 500.0
    if (a.log or a.inlined) and not a.apic:
        die(2, "--log and --inlined go with --apic")
    if a.apic and a.hz != int(a.hz):
        die(2, f"--hz {a.hz}: --apic takes a whole number of Hz")
    if not 1 <= a.hz <= 10000:
        die(2, f"--hz {a.hz}: expected 1..=10000")
    if a.top < 1:
        die(2, f"--top {a.top}: expected at least 1")
    if not 1 <= a.timeout <= 86400:
        die(2, f"--timeout {a.timeout}: expected 1..=86400")
    return a


def symbols(elf):
    """Sorted (address, name) of the ELF's text symbols."""
    out = subprocess.run(
        ["nm", "-C", "--defined-only", "-n", elf], capture_output=True, check=True
    ).stdout.decode(errors="replace")
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names


def short(name):
    """A Rust symbol without its hash and generic arguments, for the table."""
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
            if depth == 1:
                out.append("<..>")
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    s = "".join(out).replace("<..><..>", "<..>")
    return s if len(s) <= 100 else s[:97] + "..."


def monitor(sock, cmd):
    sock.sendall(cmd + b"\n")
    buf = b""
    while not buf.endswith(b"(qemu) "):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("monitor closed")
        buf += chunk
    return buf


KPROF = re.compile(r"^KPROF (\d+) ([0-9a-f]+) (\d+)\s*$")
KPROFILE_CPU = re.compile(r"^KPROFILE cpu=(\d+) samples=(\d+) dropped=(\d+)")
KPROFILE_ANCHOR = re.compile(r"^KPROFILE hz=.* anchor=([0-9a-f]+)")
ANCHOR_SYMBOL = "kernel::arch::x86_64::profile::stop_and_dump"


def inlined_names(elf, rips):
    """{rip: innermost inlined function} from addr2line -f -i -C over the debug info."""
    rips = sorted(rips)
    if not rips or shutil.which("addr2line") is None:
        return {}
    out = subprocess.run(
        ["addr2line", "-f", "-i", "-C", "-a", "-e", elf] + [f"{r:#x}" for r in rips],
        capture_output=True, check=True,
    ).stdout.decode(errors="replace").splitlines()
    names, rip, first = {}, None, False
    for line in out:
        if line.startswith("0x"):
            rip, first = int(line, 16), True
        elif rip is not None and first and not line.startswith(("/", "??:")):
            # The first function name after an address is the innermost inlined frame.
            names[rip] = short(line)
            first = False
    return names


def after_sti(elf):
    """Addresses where a maskable interrupt pending since before an `sti` is taken: the
    instruction after the one in the sti's shadow. Samples there are time spent with
    interrupts off before it (the trap entry up to the #PF handler's sti, cli sections), or
    halted when the shadow instruction is `hlt` (the idle loop's `sti; hlt`)."""
    if shutil.which("objdump") is None:
        return set()
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", elf], capture_output=True, check=True
    ).stdout.decode(errors="replace")
    insns = []
    for line in out.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2)))
    # {address: whether the shadow instruction is hlt (idle, not interrupts-off time)}
    return {
        insns[i + 2][0]: insns[i + 1][1] == "hlt"
        for i, (_, op) in enumerate(insns[:-2])
        if op == "sti"
    }


def apic_profile(a, elf64, elf32, addrs, names):
    """--apic: boot with profile=HZ (or read --log), symbolise the KPROF lines."""
    start = time.monotonic()
    status, timed_out, log = None, False, a.log
    if log is None:
        if shutil.which("qemu-system-x86_64") is None:
            die(4, "qemu-system-x86_64 not found (Debian: apt-get install qemu-system-x86)")
        tmp = tempfile.mkdtemp(prefix="tcg-profile.")
        log = os.path.join(tmp, "serial.log")
        append = f"{a.append} profile={int(a.hz)}"
        args = [
            "qemu-system-x86_64", "-machine", "q35", "-cpu", "max", "-m", str(a.mem),
            "-smp", str(a.smp), "-display", "none", "-serial", f"file:{log}",
            "-monitor", "none", "-nic", "none", "-no-reboot",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
            "-kernel", elf32, "-append", append,
        ]
        try:
            status = subprocess.run(
                args, stdin=subprocess.DEVNULL, capture_output=True, timeout=a.timeout
            ).returncode
        except subprocess.TimeoutExpired:
            timed_out = True
    elif not os.path.isfile(log):
        die(2, f"--log {log}: no such file")
    per_cpu, header, anchor = {}, {}, None
    with open(log, "rb") as f:
        for raw in f:
            line = raw.decode(errors="replace").strip("\r\n")
            m = KPROF.match(line)
            if m:
                cpu, rip, n = int(m.group(1)), int(m.group(2), 16), int(m.group(3))
                per_cpu.setdefault(cpu, Counter())[rip] += n
                continue
            m = KPROFILE_CPU.match(line)
            if m:
                header[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
            m = KPROFILE_ANCHOR.match(line)
            if m:
                anchor = int(m.group(1), 16)
    if not header:
        print(f"tcg-profile: no KPROFILE lines in {log}", file=sys.stderr)
        sys.exit(7 if timed_out else 5)
    want = [ad for ad, n in zip(addrs, names) if short(n) == ANCHOR_SYMBOL]
    if anchor is None or anchor not in want:
        die(8, f"the log's kernel is not {elf64}: its {ANCHOR_SYMBOL} is at "
            f"{'?' if anchor is None else hex(anchor)}, the ELF's at "
            f"{', '.join(hex(w) for w in want) or 'nowhere'} (profile the same build)")
    inl = inlined_names(elf64, {r for c in per_cpu.values() for r in c}) if a.inlined else {}
    sti = after_sti(elf64)

    def name_of(rip):
        if rip in sti:
            i = bisect.bisect_right(addrs, rip) - 1
            where = short(names[i]) if i >= 0 else f"?{rip:#x}"
            if sti[rip]:
                return f"[idle: sti; hlt in {where}]"
            return f"[interrupts off until {where}'s sti]"
        if rip in inl:
            return inl[rip]
        i = bisect.bisect_right(addrs, rip) - 1
        return short(names[i]) if i >= 0 else f"?{rip:#x}"

    total = sum(n for n, _ in header.values())
    dropped = sum(d for _, d in header.values())
    print(f"tcg-profile --apic: {total} samples ({dropped} dropped) over {len(header)} vCPU(s) "
          f"at {int(a.hz)} Hz of guest time; {time.monotonic() - start:.1f} s; "
          f"{'log ' + log if a.log else 'command line: ' + a.append}")
    for cpu in sorted(header):
        funcs = Counter()
        for rip, k in per_cpu.get(cpu, Counter()).items():
            funcs[name_of(rip)] += k
        n = sum(funcs.values())
        print(f"\nvCPU {cpu}: {n} samples ({header[cpu][1]} dropped)")
        if n == 0:
            continue
        print(f"  {'share':>6}  {'samples':>7}  function")
        for name, k in funcs.most_common(a.top):
            print(f"  {100.0 * k / n:5.1f}%  {k:7d}  {name}")
    print("\n[interrupts off until F's sti]: samples taken right after an sti, i.e. time with "
          "interrupts disabled before it (for the #PF handler: the exception's delivery and "
          "the trap entry up to its sti; TCG delivers the timer at the next block with IF set)")
    if a.log is None:
        print(f"\nserial log: {log}")
    if timed_out:
        sys.exit(7)
    sys.exit(0 if status in (None, 33) else 6)


def main():
    a = parse_args()
    if a.apic:
        elf64 = os.path.join(a.kernel, "kernel")
        elf32 = os.path.join(a.kernel, "kernel32.elf")
        for f in (elf64,) if a.log else (elf64, elf32):
            if not os.path.isfile(f):
                die(3, f"{f} not found: build it with `cargo run --release -p qemu -- summary`")
        if shutil.which("nm") is None:
            die(4, "nm not found (Debian: apt-get install binutils)")
        addrs, names = symbols(elf64)
        if not addrs:
            die(3, f"{elf64} has no text symbols")
        apic_profile(a, elf64, elf32, addrs, names)
    elf64 = os.path.join(a.kernel, "kernel")
    elf32 = os.path.join(a.kernel, "kernel32.elf")
    for f in (elf64, elf32):
        if not os.path.isfile(f):
            die(3, f"{f} not found: build it with `cargo run --release -p qemu -- summary`")
    for tool in ("qemu-system-x86_64", "nm"):
        if shutil.which(tool) is None:
            die(4, f"{tool} not found (Debian: apt-get install qemu-system-x86 binutils)")
    addrs, names = symbols(elf64)
    if not addrs:
        die(3, f"{elf64} has no text symbols")

    tmp = tempfile.mkdtemp(prefix="tcg-profile.")
    sock_path = os.path.join(tmp, "mon.sock")
    serial = os.path.join(tmp, "serial.log")
    args = [
        "qemu-system-x86_64", "-machine", "q35", "-cpu", "max", "-m", str(a.mem),
        "-smp", str(a.smp), "-display", "none", "-serial", f"file:{serial}",
        "-monitor", f"unix:{sock_path},server=on,wait=off", "-nic", "none",
        "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
        "-kernel", elf32, "-append", a.append,
    ]
    qemu = subprocess.Popen(args, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    start = time.monotonic()
    sock = None
    while sock is None and time.monotonic() - start < 10 and qemu.poll() is None:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock_path)
            sock = s
        except OSError:
            time.sleep(0.02)
    if sock is None:
        qemu.kill()
        die(6, f"QEMU did not open its monitor: {qemu.stderr.read().decode(errors='replace')}")
    monitor(sock, b"")  # the banner and first prompt

    callers_of = {c for c in a.callers.split(",") if c}
    callers = Counter()
    exact_of = {c for c in a.exact.split(",") if c}
    exact = Counter()
    per_cpu = {}
    samples = Counter()
    period = 1.0 / a.hz
    timed_out = False
    next_t = time.monotonic()
    while qemu.poll() is None:
        if time.monotonic() - start > a.timeout:
            timed_out = True
            qemu.kill()
            break
        try:
            # Stopping the VM makes every vCPU leave its translation loop at a block
            # boundary with its RIP written back; without it `info registers` reads the RIP
            # of the vCPU's last exception or indirect jump, which chained blocks leave
            # stale.
            monitor(sock, b"stop")
            out = monitor(sock, b"info registers -a")
            for cpu, m in enumerate(RIP.finditer(out)):
                rip = int(m.group(1), 16)
                i = bisect.bisect_right(addrs, rip) - 1
                name = short(names[i]) if i >= 0 else f"?{rip:#x}"
                samples[name] += 1
                per_cpu.setdefault(cpu, Counter())[name] += 1
                if name in exact_of:
                    exact[(name, rip - addrs[i])] += 1
                if name in callers_of:
                    monitor(sock, f"cpu {cpu}".encode())
                    at = b"x /1gx $esp+8" if name == "trap_stubs_start" else b"x /1gx $esp"
                    word = re.search(rb": 0x([0-9a-f]+)", monitor(sock, at))
                    if word:
                        ret = int(word.group(1), 16)
                        j = bisect.bisect_right(addrs, ret) - 1
                        caller = short(names[j]) if j >= 0 else f"?{ret:#x}"
                        callers[(name, caller)] += 1
            monitor(sock, b"cont")
        except (ConnectionError, OSError):
            break
        next_t += period
        delay = next_t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_t = time.monotonic()
    qemu.wait()
    status = qemu.returncode

    total = sum(samples.values())
    print(f"tcg-profile: {total} samples over {len(per_cpu)} vCPU(s), "
          f"{time.monotonic() - start:.1f} s, QEMU status {status}; command line: {a.append}")
    for cpu in sorted(per_cpu):
        c = per_cpu[cpu]
        n = sum(c.values())
        print(f"\nvCPU {cpu}: {n} samples")
        print(f"  {'share':>6}  {'samples':>7}  function")
        for name, k in c.most_common(a.top):
            print(f"  {100.0 * k / n:5.1f}%  {k:7d}  {name}")
    stub = samples.get("trap_stubs_start", 0)
    if total and stub * 2 > total:
        print(
            f"\nwarning: {100.0 * stub / total:.0f}% of the samples are at the trap entry stubs: "
            "QEMU took most stops at exception delivery, so these shares are not time "
            "(see the module doc)"
        )
    for callee in sorted(callers_of):
        rows = [(c, k) for (f, c), k in callers.items() if f == callee]
        if not rows:
            continue
        n = sum(k for _, k in rows)
        print(f"\ncallers of {callee} (return address at [rsp]): {n} samples")
        for c, k in sorted(rows, key=lambda r: -r[1])[: a.top]:
            print(f"  {100.0 * k / n:5.1f}%  {k:7d}  {c}")
    for fn in sorted(exact_of):
        rows = sorted(((o, k) for (f, o), k in exact.items() if f == fn), key=lambda r: -r[1])
        if rows:
            print(f"\n{fn} by offset: " + ", ".join(f"+{o:#x}: {k}" for o, k in rows[: a.top]))
    print(f"\nserial log: {serial}")
    if timed_out:
        sys.exit(7)
    # isa-debug-exit: status = code * 2 + 1; the kernel's success is 0x10 (status 33).
    sys.exit(0 if status == 33 else 6)


if __name__ == "__main__":
    main()
