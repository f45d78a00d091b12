#!/usr/bin/env python3
"""The workspace's layers, bottom to top, and the check that no crate depends on a crate of
its own layer or of one above it.

A crate may name another workspace crate (in [dependencies], [dev-dependencies],
[build-dependencies] or a [target.*] table of them) only when that crate sits in a lower
layer: imports run down, never up or sideways, so a reader can take the layers in order
and each is understood from the ones below it. The table is the one docs/design.md opens
with; a crate missing from it, or a workspace member the table does not list, is an error
too, so a new crate has to be placed before it lands. The two places a reader sees the
crates listed, the workspace's `members` and the README's "Workspace layout" tree, must
list every crate bottom to top (never a crate before one of a lower layer): folders on disk
sort alphabetically, so that tree is the folder tree read in dependency order.

    scripts/layers.py            # check; prints the layers and exits 1 on a violation
    scripts/layers.py --graph    # also every crate's workspace dependencies
"""

import argparse
import os
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom first. Each entry: (layer name, [crate folders]).
LAYERS = [
    ("contracts and primitives", ["abi", "ksync", "qrpayload", "boot", "kernel/hw", "kernel/ktest"]),
    ("the page", ["page", "coherence"]),
    ("page allocator, LRU", ["page_alloc", "lru", "coherence/plugin"]),
    ("memory cgroups", ["memcg"]),
    ("fault core", ["mm"]),
    ("benchmark", ["bench"]),
    ("kernel binary, runner", ["kernel", "qemu"]),
    ("integration tests", ["tests"]),
]


def manifest(folder):
    with open(os.path.join(ROOT, folder, "Cargo.toml"), "rb") as f:
        return tomllib.load(f)


def dep_tables(m):
    for key in ("dependencies", "dev-dependencies", "build-dependencies"):
        yield key, m.get(key, {})
    for target, t in m.get("target", {}).items():
        for key in ("dependencies", "dev-dependencies", "build-dependencies"):
            if key in t:
                yield f"target.{target}.{key}", t[key]


def readme_tree():
    """The crate folders the README's "Workspace layout" tree lists, in its order."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.find("## Workspace layout")
    if start < 0:
        return []
    block = text[start:].split("```", 2)
    if len(block) < 3:
        return []
    folders = []
    for line in block[1].splitlines():
        word = line.split(" ", 1)[0]
        if word.endswith("/"):
            folders.append(word.rstrip("/"))
    return folders


def order_problems(where, listed, layer_of):
    """Problems with `listed` (crate folders, other folders ignored) as a bottom-to-top list:
    a crate listed after one of a higher layer, or a crate not listed at all."""
    out = []
    crates = [f for f in listed if f in layer_of]
    for a, b in zip(crates, crates[1:]):
        if layer_of[b] < layer_of[a]:
            out.append(f"{where} lists {b} (layer {layer_of[b]}) after {a} (layer {layer_of[a]}): "
                       "list the crates bottom to top")
    for f in layer_of:
        if f not in crates:
            out.append(f"{where} does not list {f}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", action="store_true", help="print every crate's workspace dependencies")
    args = ap.parse_args()

    members = manifest(".")["workspace"]["members"]
    layer_of, name_of, folder_of = {}, {}, {}
    problems = []
    for i, (_, folders) in enumerate(LAYERS):
        for folder in folders:
            if folder in layer_of:
                problems.append(f"{folder} is listed in two layers")
            layer_of[folder] = i
            name = manifest(folder)["package"]["name"]
            name_of[folder] = name
            folder_of[name] = folder
    for m in members:
        if m not in layer_of:
            problems.append(f"workspace member {m} is in no layer (add it to LAYERS in {sys.argv[0]})")
    for folder in layer_of:
        if folder not in members:
            problems.append(f"{folder} is in LAYERS but not a workspace member")

    problems += order_problems("Cargo.toml's workspace members", members, layer_of)
    problems += order_problems("README.md's Workspace layout", readme_tree(), layer_of)

    for i, (title, folders) in enumerate(LAYERS):
        print(f"{i} {title}: {', '.join(folders)}")
    for folder, i in sorted(layer_of.items(), key=lambda kv: (kv[1], kv[0])):
        deps = set()
        for table, entries in dep_tables(manifest(folder)):
            for dep in entries:
                target = folder_of.get(dep)
                if target is None or target == folder:
                    continue
                deps.add(target)
                j = layer_of[target]
                if j >= i:
                    where = "its own layer" if j == i else f"layer {j}, above"
                    problems.append(
                        f"{folder} (layer {i}) depends on {target} ({where}) in [{table}]: "
                        "imports run down the layers only"
                    )
        if args.graph:
            print(f"  {folder} -> {', '.join(sorted(deps)) or '(nothing of the workspace)'}")

    if problems:
        for p in problems:
            print(f"layers: {p}", file=sys.stderr)
        return 1
    print("layers: every workspace dependency runs down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
