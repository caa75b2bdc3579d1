#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# tests/arch/check_deps.py - the architecture of docs/README.md, checked.
#
# docs/README.md opens with a table, one row per top-level component (and per
# runtime module): `| `NAME` | what it is | may use |`, the last column the
# components NAME may depend on ("-": none; "*": any), and a list of known
# exceptions (`- exception: `A` -> `B`: why`).  This test reads that table
# (so the document cannot drift from what is checked) and checks:
#   includes    every #include "x" of every tracked C/C++/CUDA file resolves
#               to a file of its own component or of one it may use
#   symbols     with nm, every undefined symbol of each runtime module's
#               archive (build/lib/libddp_<m>.a) and of each component's
#               objects (build/<component>/**.o) that another component's
#               objects define is defined by one it may use (the driver,
#               libc and cuBLAS names libddp.so exports are APIs, not
#               interpose/'s own)
#   controls    negative controls: the include check on a copy of the tree
#               with an upward include added, and the symbol check with an
#               object of runtime/base that calls into runtime/grad, must fail
#   exceptions  every declared exception is still real (else: delete it)
# Prints TAP-like "ok - / not ok -" lines (tests/run_tests.sh).
import collections, glob, os, re, shutil, subprocess, sys, tempfile

B = os.environ.get("BUILD", "build")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|[^|]*\|\s*([^|]*)\|\s*$")
EXC = re.compile(r"^- exception: `([^`]+)` -> `([^`]+)`")


def out(ok, name, why=()):
    print(("ok - " if ok else "not ok - ") + name)
    for w in () if ok else why:
        print("# " + w)


def read_table(path):
    allowed, exceptions, order = {}, set(), []
    for line in open(path):
        m = ROW.match(line)
        if m:
            name = m.group(1).rstrip("/")
            uses = m.group(2).replace("`", "").replace(",", " ").split()
            allowed[name] = set(u.rstrip("/") for u in uses if u != "-")
            order.append(name)
        m = EXC.match(line)
        if m:
            exceptions.add((m.group(1).rstrip("/"), m.group(2).rstrip("/")))
    return allowed, exceptions, order


def component(path, names):
    parts = path.split("/")
    if parts[0] == "runtime" and len(parts) > 2 and "runtime/" + parts[1] in names:
        return "runtime/" + parts[1]
    return parts[0] if parts[0] in names else None


def may_use(a, b, allowed, exceptions):
    if a == b or (a, b) in exceptions:
        return True
    uses = allowed.get(a, set())
    return "*" in uses or b in uses


def include_edges(root, files, names):
    """(from component, to component, 'file: include') for every include
    crossing components."""
    byname = collections.defaultdict(list)
    for f in files:
        byname[os.path.basename(f)].append(f)
    fileset = set(files)
    inc = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
    edges = []
    for f in files:
        a = component(f, names)
        if not a:
            continue
        try:
            text = open(os.path.join(root, f), errors="replace").read()
        except OSError:
            continue
        for h in inc.findall(text):
            rel = os.path.normpath(os.path.join(os.path.dirname(f), h))
            if rel in fileset:
                owner = rel
            elif h in fileset:
                owner = h
            else:
                cands = byname.get(os.path.basename(h), [])
                if not cands:
                    continue  # a generated or system header
                same = [c for c in cands if component(c, names) == a]
                owner = same[0] if same else sorted(cands)[0]
            b = component(owner, names)
            if b and b != a:
                edges.append((a, b, f + ": " + h))
    return edges


def nm(paths, flags):
    if not paths:
        return []
    r = subprocess.run(["nm", "-A"] + flags + paths, capture_output=True, text=True)
    return r.stdout.splitlines()


def symbol_sets(groups):
    """groups: component -> object/archive paths.  Returns (defined: symbol
    -> components, undefined: component -> symbols)."""
    defined, undefined = collections.defaultdict(set), collections.defaultdict(set)
    for c, paths in groups.items():
        for line in nm(paths, ["--defined-only"]):
            f = line.split()
            if len(f) >= 3 and f[-2] in "TDBRVW":
                defined[f[-1]].add(c)
        for line in nm(paths, ["-u"]):
            f = line.split()
            if f:
                undefined[c].add(f[-1].split("@")[0])
    return defined, undefined


def api_symbols():
    """What libddp.so exports: the driver, libc and cuBLAS entry points it
    interposes.  interpose/ defines them, but a call to cuMemAlloc_v2 is a
    call to the driver's API, not a dependency on interpose/."""
    r = subprocess.run(["nm", "-D", "--defined-only", B + "/lib/libddp.so"], capture_output=True, text=True)
    return set(l.split()[-1].split("@")[0] for l in r.stdout.splitlines() if l.split())


def symbol_edges(groups, api=frozenset()):
    defined, undefined = symbol_sets(groups)
    edges = []
    for a, syms in undefined.items():
        for s in syms:
            if s in api:
                continue
            for b in defined.get(s, ()):
                edges.append((a, b, s))  # a == b too: it satisfies the symbol
    return edges


def violations(edges, allowed, exceptions):
    """Edges (a, b, what) that the table forbids.  A symbol two components
    define (ddp_libc_: runtime/port's plain filling and interpose/'s own, by
    design) is fine when one of them is allowed."""
    ok = set((a, w) for a, b, w in edges if may_use(a, b, allowed, exceptions))
    return sorted(set("%s -> %s (%s)" % (a, b, w) for a, b, w in edges if (a, w) not in ok))


def main():
    allowed, exceptions, order = read_table("docs/README.md")
    names = set(order)
    need = {"launcher", "interpose", "runtime/port", "cpudev", "samples", "tools", "tests", "bench"}
    missing = sorted(need - names)
    out(not missing and len(order) >= 12, "table_read", ["docs/README.md lacks rows for: %s" % missing] if missing else [])
    files = subprocess.run(["git", "ls-files", "*.c", "*.h", "*.cpp", "*.cu", "*.cuh", "*.def", "*.inc"],
                           capture_output=True, text=True).stdout.split()

    inc = include_edges(".", files, names)
    bad = violations(inc, allowed, exceptions)
    out(not bad, "includes_follow_the_table", bad[:30])

    groups = {"runtime/" + os.path.basename(a)[len("libddp_"):-2]: [a]
              for a in glob.glob(B + "/lib/libddp_*.a")}
    groups = {c: p for c, p in groups.items() if c in names}
    for c in ("interpose", "launcher", "cpudev", "tools"):
        objs = [o for o in glob.glob(B + "/" + c + "/**/*.o", recursive=True)
                if "/tests/" not in o and not os.path.basename(o).startswith("test_")]
        if objs:
            groups[c] = objs
    if len(groups) < 10:
        print("skip - symbols_follow_the_table: not built (make all)")
        sym = []
    else:
        api = api_symbols()
        sym = symbol_edges(groups, api)
        bad = violations(sym, allowed, exceptions)
        out(not bad, "symbols_follow_the_table", bad[:30])

    # every exception still needed
    seen = set((a, b) for a, b, _ in inc) | set((a, b) for a, b, _ in sym)
    stale = sorted("%s -> %s" % e for e in exceptions if e not in seen)
    out(not stale, "exceptions_are_real", ["no longer needed, delete from docs/README.md: " + s for s in stale])

    # negative control 1: an upward include in a copy of runtime/base
    t = tempfile.mkdtemp(prefix="ddp-arch.")
    try:
        os.makedirs(t + "/runtime/base")
        os.makedirs(t + "/runtime/grad")
        shutil.copy("runtime/grad/ddp_sync.h", t + "/runtime/grad/ddp_sync.h")
        with open(t + "/runtime/base/ddp_bad.c", "w") as f:
            f.write('#include "ddp_sync.h"\n')
        edges = include_edges(t, ["runtime/base/ddp_bad.c", "runtime/grad/ddp_sync.h"], names)
        out(bool(violations(edges, allowed, exceptions)), "include_check_catches_an_upward_include",
            ["runtime/base including ddp_sync.h went unnoticed"])
        # negative control 2: an object of runtime/base calling runtime/grad
        if sym:
            with open(t + "/bad.c", "w") as f:
                f.write("void ddp_sync_init(int, int);\nvoid bad(void) { ddp_sync_init(0, 0); }\n")
            r = subprocess.run(["cc", "-c", t + "/bad.c", "-o", t + "/bad.o"], capture_output=True)
            g = dict(groups)
            g["runtime/base"] = g["runtime/base"] + [t + "/bad.o"]
            edges = symbol_edges(g, api) if r.returncode == 0 else []
            caught = any(v.startswith("runtime/base -> runtime/grad (ddp_sync_init)")
                         for v in violations(edges, allowed, exceptions))
            out(caught, "symbol_check_catches_an_upward_call", ["runtime/base calling ddp_sync_init went unnoticed"])
    finally:
        shutil.rmtree(t)


main()
