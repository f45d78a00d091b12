#!/usr/bin/env python3
"""docs/mutants.md's survivor positions, checked against the code and regenerated from git.

Every survivor listed under "## Remaining survivors" is cited by its position, as
cargo-mutants names it: `LINE:COL replace X with Y in FUNCTION` (or a bare `LINE:COL` whose
change the sentence gives), under a `### path/to/file.rs` heading. Code moves, so the
positions would rot if they were kept by hand; this script keeps them:

  --check (the default) reads the source text at every cited position and fails unless it
          is what the citation mutates: the operator `X` of `replace X with Y` (`!` for
          `delete !`, the guard's expression for `replace match guard E with ...`), an
          operator for a bare position, and for a whole-function mutant (`replace F -> T
          with V`, `replace <impl Trait for T>::f with ...`) a line inside `fn F`.
  --fix   moves every citation that fails the check to where its line is now: `git blame`
          gives the commit that last wrote the citation (its positions were that tree's),
          and the file's lines at that commit are matched to today's (following a rename,
          as seed000.rs to seed000/mod.rs); a line that is unchanged keeps its column. The
          moved citation must then pass the check; one that cannot be moved is reported and
          left as it was.

CI runs --check. After a change that moves code a survivor sits in, run --fix and read the
diff.

    scripts/mutants-doc.py            # check
    scripts/mutants-doc.py --fix      # regenerate the positions that moved

Exit status: 0 every citation names its code; 1 a citation does not (after --fix: one that
could not be moved); 2 bad arguments.
"""

import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = "docs/mutants.md"
SECTION = "## Remaining survivors"
CITE = re.compile(r"`(\d+):(\d+)([^`]*)`")
OPERATOR_CHARS = set("+-*/%|&^<>=!")


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def section_files(heading):
    """The source files a `### ...` heading names (`a/b.rs, c.rs`: c.rs beside a/b.rs;
    `a/x/mod.rs, y/mod.rs`: y/mod.rs beside a/x/)."""
    names = re.findall(r"[\w/]+\.rs", heading)
    out = []
    for n in names:
        if os.path.exists(os.path.join(ROOT, n)) or not out:
            out.append(n)
            continue
        base = os.path.dirname(out[0])
        for cand in (os.path.join(base, n), os.path.join(os.path.dirname(base), n)):
            if os.path.exists(os.path.join(ROOT, cand)):
                out.append(cand)
                break
        else:
            out.append(n)
    return out


def citations(lines):
    """(doc line index, files, line, column, description, match) for every citation."""
    start = next((i for i, l in enumerate(lines) if l.startswith(SECTION)), None)
    if start is None:
        return []
    out, files = [], []
    for i in range(start, len(lines)):
        l = lines[i]
        if l.startswith("## ") and i != start:
            break
        if l.startswith("### "):
            files = section_files(l[4:])
            continue
        for m in CITE.finditer(l):
            out.append((i, files, int(m.group(1)), int(m.group(2)), m.group(3).strip(), m))
    return out


def source(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read().split("\n")


def operator_of(desc):
    """What the citation says sits at its position: ('op', text), ('fn', name) or None."""
    if desc.startswith("delete "):
        return ("op", desc[len("delete "):].split()[0])
    m = re.match(r"replace match guard (.+) with (true|false)\b", desc)
    if m:
        return ("op", m.group(1))
    m = re.match(r"replace (\S+) with \S+", desc)
    if m and all(ch in OPERATOR_CHARS for ch in m.group(1)):
        return ("op", m.group(1))
    m = re.match(r"replace (?:<impl [^>]*(?:<[^>]*>)?[^>]*>::)?(\w+)\b", desc)
    if m:
        return ("fn", m.group(1))
    return None


def holds(src, line, col, desc):
    """Whether the source (a list of lines) has at `line:col` what `desc` mutates."""
    if not 1 <= line <= len(src):
        return False
    text = src[line - 1]
    at = text[col - 1:] if col >= 1 else ""
    what = operator_of(desc) if desc else None
    if what is None:
        return bool(at) and at[0] in OPERATOR_CHARS
    kind, value = what
    if kind == "op":
        return at.startswith(value)
    # A whole-function mutant: the position lies in `fn value`'s body.
    for back in range(line - 1, max(-1, line - 80), -1):
        m = re.search(r"\bfn (\w+)", src[back])
        if m:
            return m.group(1) == value
    return False


def check_all(lines):
    bad = []
    cache = {}
    for i, files, line, col, desc, _ in citations(lines):
        ok = False
        for f in files:
            if f not in cache:
                cache[f] = source(f) if os.path.exists(os.path.join(ROOT, f)) else None
            if cache[f] is not None and holds(cache[f], line, col, desc):
                ok = True
        if not ok:
            bad.append((i, files, line, col, desc))
    return bad


def old_path(commit, path):
    """`path`'s name at `commit` (following renames since)."""
    log = git("log", "--follow", "--name-only", "--format=%H", f"{commit}..HEAD", "--", path)
    names = [l for l in log.split("\n") if l and not re.fullmatch(r"[0-9a-f]{40}", l)]
    # The oldest name in the range is the one the file had just after `commit`.
    candidate = names[-1] if names else path
    try:
        git("cat-file", "-e", f"{commit}:{candidate}")
        return candidate
    except subprocess.CalledProcessError:
        return path


def line_map(old, new):
    """Old line number -> new line number, for lines in unchanged runs."""
    sm = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    out = {}
    for a, b, size in sm.get_matching_blocks():
        for k in range(size):
            out[a + k + 1] = b + k + 1
    return out


def fix(lines):
    blame = git("blame", "--porcelain", DOC)
    commit_of = {}
    cur = None
    for l in blame.split("\n"):
        m = re.match(r"^([0-9a-f]{40}) \d+ (\d+)", l)
        if m:
            cur = (m.group(1), int(m.group(2)))
            commit_of[cur[1]] = cur[0]
    bad = {(i, line, col) for i, _, line, col, _ in check_all(lines)}
    maps = {}
    moved, stuck = 0, []
    for i, files, line, col, desc, m in reversed(citations(lines)):
        if (i, line, col) not in bad:
            continue
        commit = commit_of.get(i + 1)
        new_pos = None
        for f in files:
            if commit is None or commit.startswith("0000000"):
                continue
            key = (commit, f)
            if key not in maps:
                try:
                    before = git("show", f"{commit}:{old_path(commit, f)}").split("\n")
                except subprocess.CalledProcessError:
                    maps[key] = None
                else:
                    maps[key] = line_map(before, source(f))
            mp = maps[key]
            if mp and line in mp and holds(source(f), mp[line], col, desc):
                new_pos = (mp[line], col)
                break
        if new_pos is None:
            stuck.append((files, line, col, desc))
            continue
        s, e = m.span()
        lines[i] = lines[i][:s] + f"`{new_pos[0]}:{new_pos[1]}{m.group(3)}`" + lines[i][e:]
        moved += 1
    return moved, stuck


def main():
    args = sys.argv[1:]
    if args in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if args not in ([], ["--check"], ["--fix"]):
        print(f"mutants-doc: bad arguments {args}; usage: scripts/mutants-doc.py [--check | --fix]",
              file=sys.stderr)
        return 2
    path = os.path.join(ROOT, DOC)
    with open(path) as f:
        lines = f.read().split("\n")
    if args == ["--fix"]:
        moved, stuck = fix(lines)
        with open(path, "w") as f:
            f.write("\n".join(lines))
        print(f"mutants-doc: moved {moved} citation(s)")
        for files, line, col, desc in stuck:
            print(f"mutants-doc: cannot place {', '.join(files)} `{line}:{col} {desc}`".rstrip(),
                  file=sys.stderr)
        return 1 if stuck else 0
    bad = check_all(lines)
    for i, files, line, col, desc in bad:
        print(f"{DOC}:{i + 1}: {', '.join(files)} `{line}:{col} {desc}`".rstrip()
              + ": the code there is not what the citation mutates (scripts/mutants-doc.py --fix)",
              file=sys.stderr)
    total = len(citations(lines))
    print(f"mutants-doc: {total - len(bad)} of {total} survivor citations name their code")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
