#!/usr/bin/env python3
"""Module circles: the strongly connected components of each crate's file-level imports.

A file depends on another file of the same crate when it names an item of it by a path that
starts with `crate::`, `super::` or `self::` (in a `use` or inline in code). Paths through a
re-export (`pub use foo::Bar;` in lib.rs or a mod.rs) are followed to the file that defines
the item, so a parent that only re-exports its children does not close a circle; a
re-export is not itself an edge; nor is an exported macro (`$crate::println!` names the
file that defines the macro, not the crate root). Comments, strings and `#[cfg(test)]` modules are ignored
(a test module may reach anywhere without making the code a circle); `--tests` counts them.

Prints, per crate, every component with more than one file, largest first, and with
`--edges` the imports inside each component (who imports whom), which is what to cut.
Exit status 0 always: this is a report, not a gate (pass `--max N` to fail when a crate has
a component of more than N files).

    scripts/module-circles.py                # every crate of the workspace
    scripts/module-circles.py mm            # one crate
    scripts/module-circles.py --edges kernel
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["abi", "kernel", "ksync", "kernel/ktest", "page", "page_alloc", "mm", "bench",
          "qrpayload", "kernel/hw", "lru", "memcg", "coherence", "coherence/plugin",
          "boot", "qemu", "tests"]


def strip(src):
    """Source with comments, string and char literals blanked (line structure kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if src[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:i + 8]) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = src.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * src.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", src[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def use_paths(tree, prefix=()):
    """The full paths of a `use` tree (`a::{b, c::{d as e}}`), as segment tuples."""
    tree = tree.strip()
    m = re.match(r"^((?:\w+\s*::\s*)*)\{(.*)\}$", tree, re.S)
    if m:
        head = tuple(s.strip() for s in m.group(1).split("::") if s.strip())
        body, parts, depth, cur = m.group(2), [], 0, ""
        for ch in body:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        res = []
        for p in parts:
            if p.strip():
                res += use_paths(p, prefix + head)
        return res
    tree = re.sub(r"\s+as\s+\w+$", "", tree)
    segs = tuple(s.strip() for s in tree.split("::") if s.strip())
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    return [prefix + segs]


class Crate:
    def __init__(self, path, tests):
        self.path, self.tests = path, tests
        self.files = {}      # module path -> file (relative)
        self.modfile = {}    # module path (file or inline) -> file
        self.reexports = {}  # (module path, name) -> full path
        self.refs = []       # (file, module path the ref is in, path segments)
        self.macros = {}     # exported macro name -> file
        src = os.path.join(ROOT, path, "src")
        root = "main.rs" if os.path.exists(os.path.join(src, "main.rs")) and not os.path.exists(
            os.path.join(src, "lib.rs")) else "lib.rs"
        self.root_file = root
        self._load(os.path.join(src, root), ())

    def _child_file(self, fpath, mod, name):
        d = os.path.dirname(fpath)
        base = os.path.basename(fpath)
        if base not in ("lib.rs", "main.rs", "mod.rs"):
            d = os.path.join(d, base[:-3])
        for cand in (os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")):
            if os.path.exists(cand):
                return cand
        return None

    def _load(self, fpath, mod):
        rel = os.path.relpath(fpath, os.path.join(ROOT, self.path, "src"))
        self.files[mod] = rel
        self.modfile[mod] = rel
        with open(fpath, encoding="utf-8") as f:
            text = strip(f.read())
        # `#[macro_export]` macros live at the crate root whatever file defines them:
        # `$crate::name!` names the defining file.
        for m in re.finditer(r"#\s*\[\s*macro_export[^\]]*\]\s*macro_rules!\s*(\w+)", text):
            self.macros[m.group(1)] = rel
        # Walk the text tracking inline `mod x { ... }` blocks.
        stack = [(mod, -1, False)]  # (module path, brace depth it closes at, is a test block)
        depth, i, n = 0, 0, len(text)
        pending_test = False
        tok = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]|#!?\s*\[[^\]]*\]|"
                         r"(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])|"
                         r"(pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]*);|"
                         r"\b(?:crate|super|self)(?:\s*::\s*\w+)+|[{}]")
        for m in tok.finditer(text):
            s = m.group(0)
            cur, _, in_test = stack[-1]
            if re.match(r"#\s*\[\s*cfg\s*\(\s*test", s):
                pending_test = True
                continue
            if s.startswith("#"):
                continue
            if m.group(1):
                name, kind = m.group(1), m.group(2)
                child = cur + (name,)
                is_test = pending_test
                pending_test = False
                if kind == ";":
                    if is_test and not self.tests:
                        continue
                    cf = self._child_file(fpath, cur, name) if cur == mod else None
                    if cf:
                        self._load(cf, child)
                else:
                    depth += 1
                    self.modfile[child] = rel
                    stack.append((child, depth - 1, in_test or is_test))
                continue
            if m.group(4) is not None:
                pending_test = False
                if in_test and not self.tests:
                    continue
                for p in use_paths(m.group(4)):
                    if m.group(3) and p and p[-1] != "*":
                        self.reexports[(cur, p[-1])] = (cur, p)
                        continue
                    self.refs.append((rel, cur, p))
                continue
            if s == "{":
                depth += 1
                pending_test = False
                continue
            if s == "}":
                depth -= 1
                if len(stack) > 1 and depth == stack[-1][1]:
                    stack.pop()
                continue
            pending_test = False
            if in_test and not self.tests:
                continue
            self.refs.append((rel, cur, tuple(x.strip() for x in s.split("::"))))

    def absolute(self, cur, segs):
        """Crate-absolute segments of a path written in module `cur`, or None (external)."""
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        base = list(cur)
        i = 0
        while i < len(segs) and segs[i] in ("super", "self"):
            if segs[i] == "super":
                if not base:
                    return None
                base.pop()
            i += 1
        if i == 0:
            # A plain `use foo::...` is relative to the current module (2018+ uniform paths)
            # when `foo` is a child module of it; otherwise an external crate.
            if tuple(cur) + (segs[0],) in self.modfile:
                return tuple(cur) + tuple(segs)
            return None
        return tuple(base) + tuple(segs[i:])

    def resolve(self, path, seen=()):
        """The file that defines what crate-absolute `path` names."""
        path = tuple(p for p in path if p != "*")
        if len(path) == 1 and path[0] in self.macros:
            return self.macros[path[0]]
        for k in range(len(path), -1, -1):
            mod = path[:k]
            if mod not in self.modfile:
                continue
            if k < len(path) and (mod, path[k]) in self.reexports and (mod, path[k]) not in seen:
                cur, target = self.reexports[(mod, path[k])]
                abs_t = self.absolute(cur, target)
                if abs_t is not None:
                    return self.resolve(tuple(abs_t) + path[k + 1:], seen + ((mod, path[k]),))
            return self.modfile[mod]
        return None

    def edges(self):
        e = {}
        for rel, cur, segs in self.refs:
            if segs and segs[0] not in ("crate", "super", "self") and \
                    tuple(cur) + (segs[0],) not in self.modfile:
                continue
            a = self.absolute(cur, segs)
            if a is None:
                continue
            dst = self.resolve(a)
            if dst and dst != rel:
                e.setdefault(rel, set()).add(dst)
        return e


def sccs(nodes, edges):
    """Tarjan's algorithm (iterative)."""
    index, low, on, st, out, counter = {}, {}, set(), [], [], [0]
    for v0 in sorted(nodes):
        if v0 in index:
            continue
        work = [(v0, iter(sorted(edges.get(v0, ()))))]
        index[v0] = low[v0] = counter[0]
        counter[0] += 1
        st.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    st.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = st.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("crates", nargs="*", help="crate directories (default: the workspace)")
    ap.add_argument("--edges", action="store_true", help="list the imports inside each circle")
    ap.add_argument("--tests", action="store_true", help="count #[cfg(test)] modules too")
    ap.add_argument("--max", type=int, help="exit 1 if a circle has more than MAX files")
    args = ap.parse_args()
    worst = 0
    for c in args.crates or CRATES:
        c = c.rstrip("/")
        if not os.path.isdir(os.path.join(ROOT, c, "src")):
            print(f"{c}: no src/", file=sys.stderr)
            continue
        crate = Crate(c, args.tests)
        edges = crate.edges()
        comps = [s for s in sccs(set(crate.files.values()), edges) if len(s) > 1]
        comps.sort(key=lambda s: (-len(s), s))
        print(f"{c}: {len(crate.files)} files, "
              f"{len(comps)} circle{'s' if len(comps) != 1 else ''}")
        for comp in comps:
            worst = max(worst, len(comp))
            print(f"  {len(comp)} files: {' '.join(comp)}")
            if args.edges:
                inside = set(comp)
                for f in comp:
                    ds = sorted(d for d in edges.get(f, ()) if d in inside)
                    print(f"    {f} -> {' '.join(ds)}")
    if args.max is not None and worst > args.max:
        sys.exit(1)


if __name__ == "__main__":
    main()
