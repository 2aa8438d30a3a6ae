#!/usr/bin/env python3
"""Checks that runtime/src's modules import one way: no import circle among them.

Each top-level module of `runtime/src` (a folder such as `driver/`, or a file such as
`context.rs`) is a node; a mention of `crate::other` in one of its files (a `use`, a path
in code) is an edge to `other`. The graph must have no cycle, so the modules stack in layers
(ARCHITECTURE.md, "Layers"). Exempt: `lib.rs` (the facade that assembles the public API),
comments and doc links, test modules (`#[cfg(test)] mod ...` and what follows it), and
`$crate::` paths in exported macros (the public paths their callers expand them with).

Run from anywhere: `python3 scripts/layers.py` prints the layers bottom-up and exits 1 with
the modules of each cycle and the files behind every edge inside it.
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime", "src")


def modules():
    """The top-level modules: folders and `.rs` files of runtime/src, but lib.rs."""
    names = set()
    for entry in os.listdir(ROOT):
        if os.path.isdir(os.path.join(ROOT, entry)):
            names.add(entry)
        elif entry.endswith(".rs") and entry != "lib.rs":
            names.add(entry[:-3])
    return names


def code_of(text):
    """`text` without comments, without its test modules (a `mod` under `#[cfg(test)]` or
    `#[cfg(all(test, ...))]`, to its closing brace) and without `$crate::` paths."""
    text = re.sub(r"//[^\n]*", "", text)
    pattern = re.compile(
        r"#\[cfg\((?:all\()?test\b[^\n]*\]\s*(?:#\[[^\n]*\]\s*)*(?:pub(?:\([a-z]+\))? )?mod \w+\s*([;{])"
    )
    while m := pattern.search(text):
        end = m.end()
        if m.group(1) == "{":
            depth = 1
            while depth and end < len(text):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                end += 1
        text = text[: m.start()] + text[end:]
    return text.replace("$crate::", "")


def graph(names):
    edges = defaultdict(lambda: defaultdict(set))
    for top in names:
        path = os.path.join(ROOT, top)
        files = []
        if os.path.isdir(path):
            for dirpath, _, fs in os.walk(path):
                files += [os.path.join(dirpath, f) for f in fs if f.endswith(".rs")]
        else:
            files = [path + ".rs"]
        for f in files:
            if os.path.basename(f) == "tests.rs":
                continue
            code = code_of(open(f, encoding="utf-8").read())
            rel = os.path.relpath(f, ROOT)
            found = set(re.findall(r"\bcrate::(\w+)", code))
            for group in re.findall(r"\buse crate::\{([^;]*)\};", code, re.S):
                found |= set(re.findall(r"(?:^|[,{])\s*(\w+)", group))
            for other in found & names - {top}:
                edges[top][other].add(rel)
    return edges


def cycles(names, edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
                out.append(sorted(comp))

    for v in sorted(names):
        if v not in index:
            visit(v)
    return out


def layers(names, edges):
    """Modules by layer: 0 imports none of the others, n imports only layers below n."""
    level = {}

    def depth(v):
        if v not in level:
            level[v] = 1 + max((depth(w) for w in edges[v]), default=-1)
        return level[v]

    for v in names:
        depth(v)
    by = defaultdict(list)
    for v, n in level.items():
        by[n].append(v)
    return [sorted(by[n]) for n in sorted(by)]


def main():
    names = modules()
    edges = graph(names)
    bad = cycles(names, edges)
    if bad:
        print("runtime/src has import circles (ARCHITECTURE.md, \"Layers\"):")
        for comp in bad:
            print("  " + " <-> ".join(comp))
            for a in comp:
                for b in sorted(set(edges[a]) & set(comp)):
                    print(f"    {a} -> {b}: {', '.join(sorted(edges[a][b]))}")
        return 1
    for n, mods in enumerate(layers(names, edges)):
        print(f"layer {n}: {', '.join(mods)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
