#!/usr/bin/env python3
"""Checks that the docs name only what exists: every file path, and every public item of
the workspace's crates, named in backticks in the Markdown docs (fenced code blocks aside).

File paths
- A path (`runtime/src/context.rs`, `driver/op/`, `scripts/loom.sh`) must exist from the
  repository root or from one of the source roots below (ARCHITECTURE.md names files
  relative to their crate's `src/`), or as the tail of a path of the repository.

Crate paths (`runtime::ext::raw::splice`, `corering_net::hyper::Builder::tls`)
- The first segment is a workspace library crate (`runtime`, `corering_net`, `corering_fs`,
  `corering_macros`, ...: every member of the workspace's Cargo.toml with a `src/lib.rs`,
  by its `[lib]` name or its package name with `-` as `_`).
- The rest must resolve AT THAT PATH, as a user of the crate would write it: module by
  module from the crate root (`lib.rs`), each segment public in the module before it:
  - `pub mod x;` (file `x.rs` or `x/mod.rs` beside the parent's file, or `#[path]`) and
    inline `pub mod x { ... }`; a module behind `#[cfg(...)]` (a feature) counts as existing;
  - items: `pub fn`, `struct`, `enum`, `union`, `trait`, `type`, `const`, `static`, and
    `macro_rules!` marked `#[macro_export]` (which lives at the crate root);
  - `pub use` re-exports, each followed to where it points: `pub use a::b;`,
    `pub use a::{b, c as d, e::{f, self}};`, globs `pub use a::*` (an explicit name wins
    over a glob, as in Rust); `crate::`, `self::`, `super::`, names in scope (private `use`s
    and items included, since the compiler checks those), other workspace crates
    (`pub use corering_macros::main`, then public items only), and external crates
    (`pub use tokio::sync::*`, `pub use io_uring`): a path that reaches an external crate
    is accepted from there on (its items are not ours to check);
  - `pub(crate)`, `pub(super)` and private items are not reachable from outside;
  - the last segment may instead be a member of the type the path reached: a method,
    associated `const` or `type` (`pub` in an inherent `impl`, any in a trait `impl`, and
    the provided methods of a trait of ours that the type implements; items made by a
    `macro_rules!` of the crate called inside the `impl`, like `read_methods!();`; the
    methods of `#[derive]`d std traits), an enum variant, a `pub` field, or an item of a
    trait. An `impl` names its type as it is in scope where the `impl` is written. A
    `pub type` alias has the members of the type it names (all `impl`s of that type,
    whatever their generic arguments).
- Brace groups (`corering_fs::{read, write}`, `runtime::signal::{ctrl_c, unix::signal}`)
  are checked name by name; a glob (`runtime::sync::*`) checks its module; `...` in a group
  is prose. What follows a path is not checked: call arguments, `.method()` chains, `.await`.

Unqualified names
- `Type::name` (`TcpStream::read_owned`, `Builder::cores`) where `Type` is a public type
  of ours: `name` must be a member (as above) of some type of that name.
- `name()` (`cores()`) must be a function or method (any visibility) declared in the
  modules of some workspace library crate.

ALLOWLIST below lists the spans that read as crate paths but that this static reader cannot
resolve (say, an item made by a macro, or a log target), each with its reason; keep it short.

Run from anywhere: `python3 scripts/docs_check.py`; exits 1 and lists what is missing.
`python3 scripts/docs_check.py --self-test` checks the resolver against known-good and
known-bad paths of this workspace.
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

# Spans that read as crate paths but that the resolver below cannot (or should not) resolve:
# "path": "why". Keep it short.
ALLOWLIST = {
    # README's tracing section names the target of the op events (`trace!(target:
    # "runtime::op", ..)` in runtime/src/trace.rs): a log target, not a Rust path.
    "runtime::op": "a tracing target",
}

PATH_EXT = r"(rs|sh|md|py|toml|txt|json|svg|yml|yaml)"


# ---------------------------------------------------------------------------------------
# File paths


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


# ---------------------------------------------------------------------------------------
# Reading Rust: blank out comments and literals, then cut each module body into items.


def strip_rust(src):
    """`src` with comments removed and string and char literals emptied, so that braces and
    semicolons inside them do not disturb the item scanner. Lifetimes are kept."""
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
                    i += 1
        elif c == "r" or c == "b":
            # Raw and byte strings: r"..", r#".."#, b"..", br#".."#, b'x'.
            m = re.compile(r'b?r(#*)"').match(src, i)
            prev = src[i - 1] if i else " "
            if m and not (prev.isalnum() or prev == "_"):
                end = src.find('"' + m.group(1), m.end())
                out.append('""')
                i = n if end < 0 else end + 1 + len(m.group(1))
            elif src.startswith('b"', i) and not (prev.isalnum() or prev == "_"):
                out.append("b")
                i += 1
            else:
                out.append(c)
                i += 1
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'":
            m = re.compile(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'").match(src, i)
            if m:
                out.append("' '")
                i = m.end()
            else:
                out.append(c)  # a lifetime
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


OPEN, CLOSE = "([{", ")]}"


def split_items(text):
    """The items of a module (or impl, trait) body: [(attrs, rest, body)], where `rest` is the
    item's text without its leading attributes and `body` the inside of its first top-level
    `{...}` (None if it has none). An item ends at a top-level `;`, or at the `}` closing its
    body unless a `;` follows (`pub use a::{b, c};`, `const X: T = T { .. };`)."""
    items, start, depth, body, i, n = [], 0, 0, None, 0, len(text)
    while i < n:
        c = text[i]
        if c in OPEN:
            if depth == 0 and c == "{" and body is None:
                body = i
            depth += 1
        elif c in CLOSE:
            depth -= 1
            if depth == 0 and c == "}" and body is not None:
                j = i + 1
                while j < n and text[j].isspace():
                    j += 1
                if j >= n or text[j] != ";":
                    items.append(make_item(text[start : i + 1], body - start))
                    start, body = i + 1, None
        elif c == ";" and depth == 0:
            items.append(make_item(text[start : i + 1], None))  # the whole text, braces kept
            start, body = i + 1, None
        i += 1
    return [it for it in items if it[1]]


def make_item(chunk, body_at):
    """Splits the leading `#[...]` / `#![...]` attributes off an item's text."""
    attrs, i = [], 0
    while True:
        while i < len(chunk) and chunk[i].isspace():
            i += 1
        m = re.compile(r"#!?\[").match(chunk, i)
        if not m:
            break
        j = group_end(chunk, m.end() - 1)
        attrs.append(chunk[i:j])
        i = j
    if body_at is not None and body_at >= i:
        rest, body = chunk[i:body_at], chunk[body_at + 1 : chunk.rfind("}")]
    else:
        rest, body = chunk[i:].rstrip(";"), None
    return attrs, rest.strip(), body


def top_split(s, sep=","):
    """`s` split at `sep` outside brackets."""
    depth, cur, out = 0, "", []
    for i, ch in enumerate(s):
        if ch in OPEN or ch == "<":
            depth += 1
        elif ch in CLOSE or (ch == ">" and s[i - 1 : i] != "-"):
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [p.strip() for p in out if p.strip()]


def use_tree(prefix, tree):
    """`a::{b, c as d, e::*}` -> [(segs, alias)]:
    (['a', 'b'], 'b'), (['a', 'c'], 'd'), (['a', 'e'], '*')."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if m:
        head = [s for s in m.group(1).split("::") if s.strip()]
        head = [s.strip() for s in head]
        out = []
        for part in top_split(m.group(2)):
            out += use_tree(prefix + head, part)
        return out
    m = re.match(r"^(.*?)\s+as\s+(\w+)$", tree, re.S)
    path, alias = (m.group(1), m.group(2)) if m else (tree, None)
    segs = [s.strip() for s in path.split("::")]
    if segs and segs[0] == "":
        segs = ["::"] + segs[1:]  # `::tokio::..`: an external crate
    if segs[-1] == "*":
        return [(prefix + segs[:-1], "*")]
    segs = prefix + segs
    if segs[-1] == "self" and len(segs) > 1:  # `a::{self, ..}`, `a::{self as b}`: `a` itself
        segs = segs[:-1]
    return [(segs, alias or segs[-1])]


VIS = r"^(pub(\s*\(\s*(crate|super|self|in\s[^)]*)\s*\))?\s+)?"
FN_RE = re.compile(VIS + r"((const|async|unsafe|default|extern(\s*\"\")?)\s+)*fn\s+(?P<name>\w+)")
ITEM_RE = re.compile(
    VIS
    + r"(default\s+)?(unsafe\s+)?(auto\s+)?"
    + r"(?P<kind>struct|enum|union|trait|type|const|static|mod)\s+(mut\s+)?(?P<name>\w+)"
)
USE_RE = re.compile(VIS + r"use\s+(?P<tree>.*?);?$", re.S)
IMPL_RE = re.compile(r"^(unsafe\s+)?impl\b(.*)$", re.S)


def is_pub(rest):
    """Plain `pub`: `pub(crate)` and the like are not reachable from outside the crate."""
    return bool(re.match(r"^pub\s", rest))


class Item:
    """A named thing: `kind` is mod, fn, struct, enum, union, trait, type, const, static,
    macro, member (of a type: nothing below it), or extern (somewhere in an external crate:
    anything below it exists)."""

    def __init__(self, kind, name, public, module=None, scope=None):
        self.kind, self.name, self.public = kind, name, public
        self.module = module  # the Module, for kind "mod"
        self.scope = scope  # the Module it is declared in
        self.members = set()  # methods, variants, fields, assoc items
        self.alias_of = None  # for `type X = path::Y<..>`: ["path", "Y"]

    def __repr__(self):
        return f"{self.kind} {self.name}"


class Module:
    """A module of a crate: what it declares, what its `use`s bring in, and its `impl`s."""

    def __init__(self, crate, path, parent, dir):
        self.crate, self.path, self.parent, self.dir = crate, path, parent, dir
        self.items = {}  # name -> [Item]
        self.uses = []  # (public, segs, alias or "*")
        self.impls = []  # (type segs, trait segs or None, body)
        self.impl_members = []  # [(member, public)] of each impl, once `attach_impls` ran

    def add(self, item):
        item.scope = self
        self.items.setdefault(item.name, []).append(item)


def members_of(body, trait_like, crate=None, depth=0):
    """Names of a trait's or impl's items, as [(name, public)]: inherent impls make only their
    `pub` ones public. A call of one of the crate's `macro_rules!` among them (`read_methods!();`
    in `impl StreamSocket<F>`) brings the items of the macro's expansions."""
    out = []
    for _, rest, _ in split_items(body):
        m = FN_RE.match(rest) or ITEM_RE.match(rest)
        if m:
            out.append((m.group("name"), trait_like or is_pub(rest)))
        m = re.match(r"^(\w+)\s*!", rest)
        if m and m.group(1) in MACROS.get(crate, {}) and depth < 8:  # 8: no runaway recursion
            for expansion in macro_expansions(MACROS[crate][m.group(1)]):
                out += members_of(expansion, trait_like, crate, depth + 1)
    return out


# `macro_rules!` bodies of each crate, by name, for `members_of`.
MACROS = {}


def macro_expansions(body):
    """The transcribers of a `macro_rules!` body: `(matcher) => { these };` ..."""
    out, i = [], 0
    while True:
        m = re.compile(r"[\s;]*[({\[]").match(body, i)
        if not m:
            return out
        i = group_end(body, m.end() - 1)  # past the matcher
        m = re.compile(r"\s*=>\s*[({\[]").match(body, i)
        if not m:
            return out
        i = group_end(body, m.end() - 1)
        out.append(body[m.end() : i - 1])


def group_end(text, i):
    """The index just past the bracket group that opens at `text[i]`."""
    depth = 0
    while i < len(text):
        if text[i] in OPEN:
            depth += 1
        elif text[i] in CLOSE:
            depth -= 1
        i += 1
        if depth == 0:
            break
    return i


def type_path(text):
    """`&'a mut Foo<T>` / `crate::x::Foo<T>` -> ['crate', 'x', 'Foo']; None for tuples etc."""
    text = re.sub(r"^(&\s*('\w+\s+)?(mut\s+)?|dyn\s+|!)", "", text.strip())
    m = re.match(r"^((::)?\w+(::\w+)*)", text)
    return [s for s in m.group(1).split("::") if s] if m else None


def impl_parts(rest):
    """`impl<T: X> Tr<T> for Foo<T> where ..` -> (['Foo'], ['Tr'])."""
    text = IMPL_RE.match(rest).group(2).strip()
    if text.startswith("<"):  # skip the impl's generics (`->` is no closing bracket)
        depth, i = 0, 0
        while i < len(text):
            if text[i] == "<":
                depth += 1
            elif text[i] == ">" and text[i - 1] != "-":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        text = text[i + 1 :]
    text = re.split(r"\bwhere\b", text)[0]
    parts = re.split(r"\s+for\s+", text, maxsplit=1)
    # `for` inside the trait's generics (`impl Fn(&u8) for`) is rare enough to ignore.
    if len(parts) == 2:
        return type_path(parts[1]), type_path(parts[0])
    return type_path(parts[0]), None


# The methods a `#[derive(..)]` gives a type (`runtime::Stats::default`).
DERIVED = {
    "Clone": ["clone", "clone_from"],
    "Debug": ["fmt"],
    "Default": ["default"],
    "Hash": ["hash"],
    "PartialEq": ["eq", "ne"],
    "PartialOrd": ["partial_cmp", "lt", "le", "gt", "ge"],
    "Ord": ["cmp", "max", "min", "clamp"],
}


def parse_module(mod, text, file):
    """Fills `mod` from its (stripped) source `text`, read from `file`; recurses into its
    submodules, inline or in their own files."""
    for attrs, rest, body in split_items(text):
        public = is_pub(rest)
        if rest.startswith("macro_rules!"):
            m = re.match(r"macro_rules!\s*(\w+)", rest)
            if m and body is not None:
                MACROS.setdefault(mod.crate, {})[m.group(1)] = body
            if m and any("macro_export" in a for a in attrs):
                root = mod
                while root.parent:
                    root = root.parent
                root.add(Item("macro", m.group(1), True))
            continue
        m = USE_RE.match(rest)
        if m:
            for segs, alias in use_tree([], m.group("tree")):
                mod.uses.append((public, segs, alias))
            continue
        if IMPL_RE.match(rest):
            if body is not None:
                ty, tr = impl_parts(rest)
                if ty:
                    mod.impls.append((ty, tr, body))
            continue
        m = FN_RE.match(rest)
        if m:
            # A `#[proc_macro*]` function is a macro of its crate's root.
            kind = "macro" if any(a.startswith("#[proc_macro") for a in attrs) else "fn"
            mod.add(Item(kind, m.group("name"), public))
            continue
        m = ITEM_RE.match(rest)
        if not m:
            continue  # a macro call, `extern` block, `const _`: nothing nameable
        kind, name = m.group("kind"), m.group("name")
        if kind == "mod":
            child_dir = os.path.join(mod.dir, name)
            child = Module(mod.crate, mod.path + [name], mod, child_dir)
            if body is not None:
                parse_module(child, body, file)
            else:
                candidates = [os.path.join(mod.dir, f"{name}.rs")]
                candidates.append(os.path.join(child_dir, "mod.rs"))
                for a in attrs:
                    pm = re.match(r'#\[path\s*=\s*"(.*)"\]', a)
                    if pm:
                        candidates = [os.path.join(os.path.dirname(file), pm.group(1))]
                for f in candidates:
                    if os.path.exists(f):
                        parse_file(child, f)
                        break
            mod.add(Item("mod", name, public, module=child))
            continue
        item = Item(kind, name, public)
        for a in attrs:
            for derived in re.findall(r"\w+", a[a.find("(") :] if a.startswith("#[derive") else ""):
                item.members |= set(DERIVED.get(derived, ()))
        if kind == "struct" and body is not None:
            for field in top_split(body):
                fm = re.match(r"^(#\[.*?\]\s*)*pub\s+(\w+)\s*:", field, re.S)
                if fm:
                    item.members.add(fm.group(2))
        elif kind == "enum" and body is not None:
            for variant in top_split(body):
                vm = re.match(r"^(#\[.*?\]\s*)*(\w+)", variant, re.S)
                if vm:
                    item.members.add(vm.group(2))
        elif kind == "trait" and body is not None:
            item.members |= {name for name, _ in members_of(body, True)}
        elif kind == "type":
            am = re.search(r"=\s*(.*)$", rest, re.S)
            item.alias_of = type_path(am.group(1)) if am else None
        mod.add(item)


def parse_file(mod, path):
    with open(path, encoding="utf-8") as fh:
        parse_module(mod, strip_rust(fh.read()), path)


def workspace_crates():
    """{lib name: its src/lib.rs} for every workspace member with a library."""
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as fh:
        members = re.search(r"members\s*=\s*\[(.*?)\]", fh.read(), re.S).group(1)
    crates = {}
    for member in re.findall(r'"([^"]+)"', members):
        lib = os.path.join(ROOT, member, "src", "lib.rs")
        if not os.path.exists(lib):
            continue
        names, section = {}, None
        with open(os.path.join(ROOT, member, "Cargo.toml"), encoding="utf-8") as fh:
            for line in fh:
                m = re.match(r"^\[(\w+)\]\s*$", line)
                section = m.group(1) if m else section
                m = re.match(r'^name\s*=\s*"([^"]+)"', line)
                if m and section in ("package", "lib"):
                    names.setdefault(section, m.group(1))
        crates[names.get("lib") or names["package"].replace("-", "_")] = lib
    return crates


CRATE_LIBS = workspace_crates()
ROOTS = {}
for _name, _lib in CRATE_LIBS.items():
    ROOTS[_name] = Module(_name, [_name], None, os.path.dirname(_lib))
    parse_file(ROOTS[_name], _lib)


# ---------------------------------------------------------------------------------------
# Resolving paths


EXTERN = "extern"
TYPE_KINDS = ("struct", "enum", "union", "trait", "type")


def lookup(mod, name, public_only, seen):
    """The items named `name` in `mod`: declared there, or brought in by a `use` (an explicit
    one first; globs only where no explicit one names it)."""
    key = (id(mod), name, public_only)
    if key in seen:
        return []
    seen = seen | {key}
    out = [it for it in mod.items.get(name, []) if it.public or not public_only]
    for public, segs, alias in mod.uses:
        if alias == name and (public or not public_only):
            if len(segs) == 1 and segs[0] not in ("self", "super", "crate"):
                # `use x;` / `use x as y;`: an item of this module, or else a crate.
                out += mod.items.get(segs[0]) or [crate_item(segs[0])]
            else:
                out += resolve_use(mod, segs, seen)
    if out:
        return out
    for public, segs, alias in mod.uses:
        if alias == "*" and (public or not public_only):
            for t in resolve_use(mod, segs, seen):
                out += step(t, name, public_only, mod.crate, seen)
    return out


def step(t, name, public_only, from_crate, seen):
    """`name` under the item `t`: in a module, under an external item, or a type's member."""
    if t.kind == EXTERN:
        return [Item(EXTERN, name, True)]
    if t.kind == "mod":
        return lookup(t.module, name, public_only or t.module.crate != from_crate, seen)
    if t.kind in TYPE_KINDS:
        if name in type_members(t, seen):
            return [Item("member", name, True)]
        if t.kind == "type" and any(a.kind == EXTERN for a in alias_targets(t, seen)):
            return [Item(EXTERN, name, True)]
    return []


def resolve_use(mod, segs, seen=frozenset()):
    """What a path written in `mod` (a `use`, an `impl`'s type) points at."""
    first, rest = segs[0], segs[1:]
    if first == "::":
        return walk([crate_item(rest[0])], rest[1:], mod.crate, seen)
    if first == "crate":
        root = mod
        while root.parent:
            root = root.parent
        cur = [Item("mod", "crate", True, module=root)]
    elif first == "self":
        cur = [Item("mod", "self", True, module=mod)]
    elif first == "super":
        target = mod.parent
        while rest and rest[0] == "super":
            target, rest = target.parent, rest[1:]
        cur = [Item("mod", "super", True, module=target)]
    else:
        cur = lookup(mod, first, False, seen)
        if not cur and first not in mod.items and all(alias != first for _, _, alias in mod.uses):
            cur = [crate_item(first)]
    return walk(cur, rest, mod.crate, seen)


def crate_item(name):
    """The crate `name`: ours (its root module), or an external one (the compiler checked that
    it exists; what is under it is not ours to check)."""
    if name in ROOTS:
        return Item("mod", name, True, module=ROOTS[name])
    return Item(EXTERN, name, True)


def walk(cur, segs, from_crate, seen):
    """Where `segs` lead from the items `cur`, for a path written in `from_crate`."""
    for seg in segs:
        cur = [n for t in cur for n in step(t, seg, False, from_crate, seen)]
    return cur


def alias_targets(t, seen):
    """What the `type` alias `t` names (an external item, where the type is not ours)."""
    return resolve_use(t.scope, t.alias_of, seen) if t.alias_of else []


def type_members(t, seen):
    """A type's members: its own (fields, variants, trait items, and the items of the `impl`s
    that name it: `attach_impls`), and for an alias those of the type it names."""
    out = set(t.members)
    if t.kind == "type":
        for a in alias_targets(t, seen):
            if a is not t and a.kind in TYPE_KINDS:
                out |= type_members(a, seen)
    return out


def all_modules():
    """Every module of every crate of the workspace."""
    stack = list(ROOTS.values())
    while stack:
        m = stack.pop()
        yield m
        stack += [it.module for its in m.items.values() for it in its if it.kind == "mod"]


def attach_impls():
    """Adds every `impl`'s items to the types it names; a trait impl also brings the provided
    methods of the trait, where the trait is ours."""
    for mod in all_modules():
        for ty, tr, body in mod.impls:
            # After parsing, so that every macro of the crate is known, wherever it is defined.
            members = members_of(body, tr is not None, mod.crate)
            mod.impl_members.append(members)
            types = [t for t in resolve_use(mod, ty) if t.kind in TYPE_KINDS and t.kind != "trait"]
            if tr:
                for trait in resolve_use(mod, tr):
                    if trait.kind == "trait":
                        members = members + [(n, True) for n in trait.members]
            for t in types:
                t.members |= {name for name, public in members if public}


attach_impls()


def resolve(path):
    """Resolves a crate path of the docs (`runtime::ext::raw::splice`) as a user of the crate
    would write it; returns None when it exists, else why not."""
    if path in ALLOWLIST:
        return None
    segs = path.split("::")
    cur = [crate_item(segs[0])]
    for i, seg in enumerate(segs[1:], 1):
        # A member (method, variant, field) has nothing under it: `step` gives nothing.
        cur = [n for t in cur for n in step(t, seg, True, None, frozenset())]
        if not cur:
            return f"no public `{seg}` in `{'::'.join(segs[:i])}`"
    return None


def doc_paths(span):
    """The crate paths a span of the docs names: `a::{b, c::d}` -> [a::b, a::c::d],
    `a::*` -> [a], `a::b(x).c()` -> [a::b]; `...` in a group is prose."""
    out = []

    def parse(i, prefix):
        m = re.compile(r"\w+").match(span, i)
        if not m:
            return i
        segs, i = prefix + [m.group(0)], m.end()
        while span.startswith("::", i):
            i += 2
            if span.startswith("*", i):
                out.append("::".join(segs))
                return i + 1
            if span.startswith("{", i):
                i += 1
                while i < len(span) and span[i] != "}":
                    while i < len(span) and span[i] in " \n\t,":
                        i += 1
                    if span.startswith("self", i) and not re.match(r"\w", span[i + 4 : i + 5]):
                        out.append("::".join(segs))
                        i += 4
                    elif span.startswith("...", i) or span.startswith("..", i):
                        i += 3 if span.startswith("...", i) else 2
                    elif span[i : i + 1] != "}":
                        j = parse(i, segs)
                        i = skip_to_next(span, j) if j > i else i + 1
                return i + 1
            m = re.compile(r"\w+").match(span, i)
            if not m:
                break
            segs, i = segs + [m.group(0)], m.end()
        out.append("::".join(segs))
        return i

    parse(0, [])
    return out


def skip_to_next(span, i):
    """From the end of a path inside a `{ .. }` group, past its arguments to the next `,` or `}`."""
    depth = 0
    while i < len(span):
        c = span[i]
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth -= 1
        elif c in ",}" and depth <= 0:
            return i
        i += 1
    return i


def public_types(name):
    """Every public struct, enum, union, trait or type alias of the workspace named `name`."""
    return [
        it
        for mod in all_modules()
        for it in mod.items.get(name, [])
        if it.public and it.kind in TYPE_KINDS
    ]


def declared_fns():
    """The names of every function and method of the workspace (any visibility)."""
    names = set()
    for mod in all_modules():
        names |= {n for n, its in mod.items.items() if any(i.kind in ("fn", "macro") for i in its)}
        for members in mod.impl_members:
            names |= {n for n, _ in members}
        for its in mod.items.values():
            names |= {m for i in its if i.kind == "trait" for m in i.members}
    return names


# ---------------------------------------------------------------------------------------
# The docs


CRATE_SPAN = re.compile(r"^(%s)::" % "|".join(map(re.escape, sorted(ROOTS))))


def check_span(span, fns):
    """What is wrong with one backticked span of the docs (a list of messages)."""
    # File paths.
    if re.match(r"^[\w.-]+(/[\w.*-]+)*/?$", span) and (
        "/" in span or re.search(rf"\.{PATH_EXT}$", span)
    ):
        if span.startswith(("http", "/", "~")) or "*" in span:
            return []
        if re.match(r"^[\w-]+/[\w-]+$", span) and not path_exists(span):
            return []  # `owner/name`, `tokio/macros`: not a path of ours unless it exists
        return [] if path_exists(span) else ["no such file or folder"]
    # Crate paths.
    if CRATE_SPAN.match(span):
        out = []
        for p in doc_paths(span):
            why = resolve(p)
            if why:
                out.append(why if p == span else f"`{p}`: {why}")
        return out
    # `Type::name` of ours.
    m = re.match(r"^([A-Z]\w*)::([a-z_]\w*)(\(.*\))?$", span)
    if m:
        types = public_types(m.group(1))
        if types and not any(m.group(2) in type_members(t, frozenset()) for t in types):
            return [f"no `{m.group(2)}` in any `{m.group(1)}` of the crates"]
        return []
    # `name()`: a function of ours that the docs call by name.
    m = re.match(r"^([a-z_][a-z0-9_]*)\(\)$", span)
    if m and m.group(1) not in fns:
        return [f"no function `{m.group(1)}` in the crates"]
    return []


def check_docs():
    problems, fns = [], declared_fns()
    for doc in DOCS:
        full = os.path.join(ROOT, doc)
        if not os.path.exists(full):
            problems.append(f"{doc}: the doc itself is missing")
            continue
        with open(full, encoding="utf-8") as fh:
            text = fh.read()
        # Leave fenced code blocks out (they are examples, often of other crates), keeping
        # their lines so that line numbers stay right.
        prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        # A code span may wrap onto the next line, never past a paragraph.
        lineno = 1
        for para in re.split(r"(\n\s*\n)", prose):
            for m in re.finditer(r"`([^`]+)`", para):
                span = " ".join(m.group(1).split())
                for why in check_span(span, fns):
                    line = lineno + para.count("\n", 0, m.start())
                    problems.append(f"{doc}:{line}: `{span}`: {why}")
            lineno += para.count("\n")
    return problems


# Known answers for --self-test: paths of this workspace that must resolve, and ones that
# must not. Update them when the API they name moves.
SELF_TEST_GOOD = [
    "runtime::ext::raw::splice",  # pub mod ext -> pub mod raw -> pub use splice::{splice, ..}
    "runtime::spawn",  # pub use executor::{.., spawn, ..} from a private module
    "runtime::Builder::cores",  # a method of a re-exported type
    "runtime::Backend::IoUring",  # an enum variant
    "runtime::Stats::sqes_submitted",  # a pub field
    "runtime::Stats::default",  # #[derive(Default)]
    "runtime::task::JoinSet",  # an inline `pub mod task { pub use .. }`
    "runtime::sync::mpsc",  # through the glob `pub use tokio::sync::*`
    "runtime::sync::local::Notify",  # an explicit name beside the glob
    "runtime::ext::io_uring::opcode::Nop",  # `pub use io_uring;`: the external crate from there
    "runtime::main",  # pub use macros::main -> pub use corering_macros::main (proc macro)
    "runtime::ext::fd_sqe",  # a #[macro_export] macro, re-exported by `pub use crate::{..}`
    "runtime::ext::error_context",  # `pub use .. as error_context`
    "corering_net::TcpStream::set_nodelay",  # a method through `pub type TcpStream = ..`
    "corering_net::TcpStream::read_owned",  # made by `read_methods!()` in the impl
    "corering_net::OwnedReadHalf::reunite",  # through `use crate::stream::{self as generic}`
    "corering_net::tls::TlsAcceptor",  # a #[cfg(feature = "tls")] module
    "corering_fs::read",
    "corering_macros::main",
]
SELF_TEST_BAD = [
    "runtime::splice",  # it is runtime::ext::raw::splice
    "runtime::nope",
    "corering_net::TcpStream::no_such_method",
    "runtime::driver::Driver",  # a private module
    "runtime::ext::raw::splice::nope",  # nothing under a function
    "runtime::Builder::cores::nope",  # nothing under a method
    "runtime::Stats::nope",
    "corering_fs::nope",
]
SELF_TEST_SPANS = {
    "corering_fs::{read, write}": ["corering_fs::read", "corering_fs::write"],
    "runtime::sync::*": ["runtime::sync"],
    "runtime::signal::{ctrl_c, unix::signal(SignalKind::terminate())}": [
        "runtime::signal::ctrl_c",
        "runtime::signal::unix::signal",
    ],
    "runtime::time::{self, sleep}": ["runtime::time", "runtime::time::sleep"],
    "runtime::Builder::new().cores(n)": ["runtime::Builder::new"],
    "corering_net::{...}": [],
}


def self_test():
    failed = []
    for p in SELF_TEST_GOOD:
        if resolve(p) is not None:
            failed.append(f"`{p}` should resolve: {resolve(p)}")
    for p in SELF_TEST_BAD:
        if resolve(p) is None:
            failed.append(f"`{p}` should be refused, and resolved")
    for span, want in SELF_TEST_SPANS.items():
        if doc_paths(span) != want:
            failed.append(f"`{span}` read as {doc_paths(span)}, not {want}")
    if failed:
        print("docs_check self-test failed:")
        for f in failed:
            print("  " + f)
        sys.exit(1)
    n = len(SELF_TEST_GOOD) + len(SELF_TEST_BAD) + len(SELF_TEST_SPANS)
    print(f"docs_check self-test: {n} cases pass")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1:]:
        sys.exit("usage: docs_check.py [--self-test]")
    problems = check_docs()
    if problems:
        print("docs name things that do not exist:")
        for p in problems:
            print("  " + p)
        sys.exit(1)
    print(f"docs check: {len(DOCS)} files, every path and item they name exists")


if __name__ == "__main__":
    main()
