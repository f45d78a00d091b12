#!/usr/bin/env python3
"""The unsafe fence: every crate denies unsafe code, and every module that allows it says why.

Rust's `unsafe_code` lint does the enforcing once a crate root says `#![deny(unsafe_code)]`
(or `forbid`): a module can then use unsafe code only under its own
`#![allow(unsafe_code)]`. This check keeps the fence itself in place:
  - each workspace crate's root (src/lib.rs or src/main.rs) denies or forbids unsafe code,
    or is listed in FFI_ROOTS with the reason its root cannot (its root is the FFI);
  - each file that allows unsafe code (`#![allow(unsafe_code)]`) explains it in its module
    documentation with a line starting "Unsafe code here, and why", before the allow.
Prints each violation as FILE: what is wrong, and the count of fenced-in modules per crate.

Usage: scripts/unsafe-fence.py [ROOT]   (ROOT: the repository, default the parent of scripts/)
Exit status: 0 the fence holds; 1 a violation; 2 bad arguments.
"""

import os
import re
import sys

# Crate roots that are themselves the foreign-function boundary, so they cannot deny unsafe
# code at the root; their modules that need none deny it one by one.
FFI_ROOTS = {
    "coherence/plugin/src/lib.rs": "the QEMU plugin's exported entry points and callbacks",
}

ALLOW = re.compile(r"^#!\[allow\(unsafe_code\)\]", re.M)
DENY = re.compile(r"^#!\[(deny|forbid)\(unsafe_code\)\]", re.M)
WHY = "Unsafe code here, and why"


def crates(root):
    """Directories (relative to root) holding a Cargo.toml with a [package], not under target."""
    out = []
    for d, subdirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        subdirs[:] = [s for s in subdirs
                      if not s.startswith(".") and not s.startswith("target") and s != "shared"]
        if "Cargo.toml" in files:
            with open(os.path.join(d, "Cargo.toml")) as f:
                if "[package]" in f.read():
                    out.append(rel)
    return sorted(out)


def main():
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__)
        sys.exit(0)
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        usage = next(p for p in __doc__.split("\n\n") if p.startswith("Usage:"))
        print(f"unsafe-fence: bad arguments {sys.argv[1:]}\n{usage}", file=sys.stderr)
        sys.exit(2)
    root = sys.argv[1] if len(sys.argv) == 2 else os.path.join(os.path.dirname(__file__), "..")
    if not os.path.isdir(root):
        print(f"unsafe-fence: {root}: not a directory", file=sys.stderr)
        sys.exit(2)
    bad = []
    for crate in crates(root):
        roots = [os.path.join(crate, "src", n) for n in ("lib.rs", "main.rs")]
        roots = [r for r in roots if os.path.isfile(os.path.join(root, r))]
        for r in roots:
            text = open(os.path.join(root, r)).read()
            rel = os.path.normpath(r)
            if not DENY.search(text) and rel not in FFI_ROOTS:
                bad.append(f"{rel}: the crate root neither denies nor forbids unsafe_code")
        fenced = 0
        src = os.path.join(root, crate, "src")
        for d, _, files in os.walk(src):
            for n in files:
                if not n.endswith(".rs"):
                    continue
                path = os.path.join(d, n)
                text = open(path).read()
                m = ALLOW.search(text)
                if not m:
                    continue
                fenced += 1
                if WHY not in text[: m.start()]:
                    bad.append(f"{os.path.relpath(path, root)}: allows unsafe code without "
                               f"saying why (a module doc line \"{WHY} ...\" above the allow)")
        if fenced:
            print(f"{crate}: {fenced} module(s) allow unsafe code")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
