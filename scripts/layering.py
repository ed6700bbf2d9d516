#!/usr/bin/env python3
"""The floors of src/lib, checked, not hoped for (issue #28 item 7).

Each component folder's README.md says on its "May call:" line which other
folders it may include (every `NAME/` named there that is a folder of
src/lib). This fails, naming the file and the line, on an
`#include "NAME/..."` of a folder the line does not allow, and on any
cycle between folders (a loop of two or more), so shared code cannot sit in
the folder of its first user. A README may also have a "May not call:" line
naming headers of allowed folders (`NAME/FILE.h`) its folder must not
include (broker/: not forge/audit.h, the key's process runs no audit).
The map of the floors in docs/design.md (its table of rows
"| FLOOR | `folder/` ..., |") is checked too: every folder on exactly one
floor, and every include between folders going to a lower floor.
Usage: scripts/layering.py [SRC_LIB [DESIGN_MD]] (default: src/lib and
docs/design.md of this checkout; a SRC_LIB given without DESIGN_MD skips
the map). Exit 0 clean, 1 on a finding.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"(([a-z_]+)/[^"]*)"', re.M)


FLOOR_ROW = re.compile(r"^\s*\|\s*([0-9]+(?:\.[0-9]+)?)\s*\|(.*)\|\s*$")


def check_map(design, folders, edges):
    """Findings (strings) of design.md's floor table against the includes."""
    floor, out = {}, []
    for ln, line in enumerate(open(design, errors="replace"), 1):
        m = FLOOR_ROW.match(line)
        if not m:
            continue
        for name in re.findall(r"`([a-z_]+)/`", m.group(2)):
            if name not in folders:
                out.append(f"{design}:{ln}: `{name}/` is no folder of src/lib")
            elif name in floor:
                out.append(f"{design}:{ln}: `{name}/` is on two floors")
            else:
                floor[name] = float(m.group(1))
    for d in folders:
        if d not in floor:
            out.append(f"{design}: the floor table does not place `{d}/`")
    for d in folders:
        for to in sorted(edges[d]):
            if d in floor and to in floor and floor[to] >= floor[d]:
                out.append(f"{design}: `{d}/` (floor {floor[d]:g}) includes `{to}/`, which the "
                           f"table puts on floor {floor[to]:g}: not below it")
    return out


def main():
    default_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "lib")
    root = sys.argv[1] if len(sys.argv) > 1 else default_root
    design = sys.argv[2] if len(sys.argv) > 2 else (
        os.path.relpath(os.path.join(default_root, "..", "..", "docs", "design.md"))
        if len(sys.argv) < 2 else None)
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    bad = 0
    edges = {d: set() for d in folders}
    for d in folders:
        readme = os.path.join(root, d, "README.md")
        may = None
        never = set()
        if os.path.exists(readme):
            for line in open(readme, errors="replace"):
                if line.startswith("May call:"):
                    may = {m for m in re.findall(r"\b([a-z_]+)/", line) if m in folders}
                if line.startswith("May not call:"):
                    never = set(re.findall(r"\b([a-z_]+/[a-z_]+\.h)\b", line))
        if may is None:
            print(f"layering: {d}/README.md has no 'May call:' line")
            bad += 1
            may = set()
        for dp, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dp, f)
                text = open(path, errors="replace").read()
                for m in INCLUDE.finditer(text):
                    hdr, to = m.group(1), m.group(2)
                    if hdr in never:
                        ln = text.count("\n", 0, m.start()) + 1
                        rel = os.path.relpath(path, root)
                        print(f"layering: {rel}:{ln}: includes {hdr}, which {d}/README.md's "
                              f"'May not call:' line forbids")
                        bad += 1
                    if to == d or to not in folders:
                        continue
                    edges[d].add(to)
                    if to not in may:
                        ln = text.count("\n", 0, m.start()) + 1
                        rel = os.path.relpath(path, root)
                        print(f"layering: {rel}:{ln}: includes {to}/, which {d}/README.md's "
                              f"'May call:' line does not allow")
                        bad += 1
    # cycles between folders (Tarjan's strongly connected components)
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in folders:
        if v not in index:
            visit(v)
    for comp in sccs:
        print("layering: include loop between folders: " + " <-> ".join(comp) +
              " (move what they share to a folder below them)")
        bad += 1
    if design:
        for finding in check_map(design, folders, edges):
            print("layering: " + finding)
            bad += 1
    if bad:
        return 1
    print(f"layering: {len(folders)} folders, no loop, every include allowed" +
          (", each on its floor of docs/design.md's map" if design else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
