#!/usr/bin/env python3
"""Checks that the docs name only what exists: every file path, and every public item of
the workspace's crates, named in backticks in the Markdown docs.

- A path (`runtime/src/context.rs`, `driver/op/`, `scripts/loom.sh`) must exist from the
  repository root or from one of the source roots below (ARCHITECTURE.md names files
  relative to their crate's `src/`).
- A crate path (`runtime::ext::SharedFd`, `corering_net::hyper::serve`, `runtime::sync::*`,
  `corering_fs::{read, write}`) must name items declared `pub` (or re-exported) in that
  crate's sources, segment by segment.
- `Type::name` (`TcpStream::read_owned`, `Builder::cores`) and `name()` (`cores()`) must be
  a function or item declared in some crate's sources.

Run from anywhere: `python3 scripts/docs_check.py`; exits 1 and lists what is missing.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DOCS = [
    "README.md",
    "ARCHITECTURE.md",
    "benches/README.md",
    "runtime/README.md",
    "runtime/macros/README.md",
    "net/README.md",
    "fs/README.md",
]
DOCS += sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")
)

# Where a relative path in the docs may start.
PATH_ROOTS = [
    "",
    "runtime/src",
    "runtime",
    "net/src",
    "net",
    "fs/src",
    "fs",
    "benches",
    "benches/src",
    "tests",
    "tests/src",
    "examples",
    "examples/src",
    "scripts",
]

CRATES = {
    "runtime": ["runtime/src", "runtime/macros/src"],
    "corering_net": ["net/src"],
    "corering_fs": ["fs/src"],
}

PATH_EXT = r"(rs|sh|md|py|toml|txt|json|svg|yml|yaml)"


def rust_sources(dirs):
    text = []
    for d in dirs:
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if f.endswith(".rs"):
                    with open(os.path.join(base, f), encoding="utf-8") as fh:
                        text.append(fh.read())
    return "\n".join(text)


SOURCES = {k: rust_sources(v) for k, v in CRATES.items()}


def repo_paths():
    """Every file and folder of the repository (target/ and .git/ aside), relative."""
    files, dirs = set(), set()
    for base, dnames, fnames in os.walk(ROOT):
        dnames[:] = [d for d in dnames if d not in (".git", "target") and not d.startswith("target")]
        rel = os.path.relpath(base, ROOT)
        if rel != ".":
            dirs.add(rel)
        for f in fnames:
            files.add(f if rel == "." else f"{rel}/{f}")
    return files, dirs


FILES, DIRS = repo_paths()


def path_exists(span):
    """`span` from a root, or as the tail of a path (a file named within its folder's row)."""
    if any(os.path.exists(os.path.join(ROOT, r, span)) for r in PATH_ROOTS):
        return True
    tail = span.rstrip("/")
    pool = DIRS if span.endswith("/") else FILES | DIRS
    return any(p == tail or p.endswith("/" + tail) for p in pool)
ALL_SOURCES = "\n".join(SOURCES.values())


def declared(name, src, public=True):
    """Whether `name` is declared (pub, when asked) or re-exported in `src`."""
    n = re.escape(name)
    vis = r"pub(\([^)]*\))?\s+" if public else r"(pub(\([^)]*\))?\s+)?"
    patterns = [
        rf"{vis}(const\s+|async\s+|unsafe\s+|extern\s+\"C\"\s+)*fn\s+{n}\b",
        rf"{vis}(struct|enum|trait|type|mod|const|static|union)\s+{n}\b",
        rf"macro_rules!\s+{n}\b",
        rf"pub\s+use\s+[^;]*\b{n}\b[^;]*;",
        rf"pub\s+use\s+[^;]*\bas\s+{n}\s*;",
        rf"#\[proc_macro_attribute\]\s*pub\s+fn\s+{n}\b",
    ]
    return any(re.search(p, src) for p in patterns)


def expand(path):
    """`a::{b, c::d}` -> [`a::b`, `a::c::d`]; `a::*` -> [`a`]."""
    m = re.match(r"^(.*?)::\{(.*)\}$", path)
    if m:
        out = []
        for part in split_top(m.group(2)):
            part = part.strip()
            if part and part != "self":
                out += expand(f"{m.group(1)}::{part}")
            elif part == "self":
                out.append(m.group(1))
        return out
    if path.endswith("::*"):
        return [path[:-3]]
    return [path]


def split_top(s):
    depth, cur, out = 0, "", []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def check_crate_path(path):
    segs = [s for s in path.split("::") if s]
    krate, rest = segs[0], segs[1:]
    src = SOURCES[krate]
    missing = []
    for seg in rest:
        if not re.match(r"^[A-Za-z_]\w*$", seg):
            break
        # A method of a type (`Type::method`) is declared without `pub` in a trait impl.
        if not declared(seg, src) and not declared(seg, ALL_SOURCES, public=False):
            missing.append(seg)
    return missing


def main():
    problems = []
    for doc in DOCS:
        full = os.path.join(ROOT, doc)
        if not os.path.exists(full):
            problems.append(f"{doc}: the doc itself is missing")
            continue
        with open(full, encoding="utf-8") as fh:
            text = fh.read()
        # Leave fenced code blocks out (they are examples, often of other crates).
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for lineno, line in enumerate(prose.splitlines(), 1):
            for span in re.findall(r"`([^`]+)`", line):
                span = span.strip()
                where = f"{doc}: `{span}`"
                # File paths.
                if re.match(rf"^[\w.-]+(/[\w.*-]+)*/?$", span) and (
                    "/" in span or re.search(rf"\.{PATH_EXT}$", span)
                ):
                    if span.startswith(("http", "/", "~")) or "*" in span:
                        continue
                    if re.match(r"^[\w-]+/[\w-]+$", span) and not os.path.exists(
                        os.path.join(ROOT, span)
                    ):
                        # `owner/name`, `tokio/macros`: not a path of ours unless it exists.
                        if not path_exists(span):
                            continue
                    if not path_exists(span):
                        problems.append(f"{where}: no such file or folder")
                    continue
                # Crate paths.
                m = re.match(r"^((runtime|corering_net|corering_fs)(::(\{[^`]*\}|\*|\w+))+)", span)
                if m:
                    for p in expand(m.group(1)):
                        miss = check_crate_path(p)
                        if miss:
                            krate = p.split("::")[0]
                            problems.append(f"{where}: {', '.join(miss)} not found in {krate}")
                    continue
                # `Type::name` of ours.
                m = re.match(r"^([A-Z]\w*)::([a-z_]\w*)(\(.*\))?$", span)
                if m and declared(m.group(1), ALL_SOURCES):
                    if not declared(m.group(2), ALL_SOURCES, public=False):
                        problems.append(f"{where}: no `{m.group(2)}` declared in the crates")
                    continue
                # `name()`: a function of ours that the docs call by name.
                m = re.match(r"^([a-z_][a-z0-9_]*)\(\)$", span)
                if m and not declared(m.group(1), ALL_SOURCES, public=False):
                    problems.append(f"{where}: no function `{m.group(1)}` in the crates")
    if problems:
        print("docs name things that do not exist:")
        for p in problems:
            print("  " + p)
        sys.exit(1)
    print(f"docs check: {len(DOCS)} files, every path and item they name exists")


if __name__ == "__main__":
    main()
