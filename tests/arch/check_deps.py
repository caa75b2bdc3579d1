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
#   order       the runtime modules' order, declared once (RUNTIME_MODULES
#               in runtime/module.mk, lowest first; the link takes their
#               archives top first, without --start-group): the table's
#               runtime rows show it (top first, every module, each using
#               only modules below it), and every undefined symbol of each
#               runtime archive that another runtime archive defines is
#               defined by a LOWER one (no exceptions: a back-edge fails)
#   controls    negative controls: the include check on a copy of the tree
#               with an upward include added, and the symbol check with an
#               object of runtime/base that calls into runtime/grad, must fail;
#               the order check on a scratch copy of libddp_base.a with such
#               an object added must fail, and so must a link of that copy in
#               the declared order
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


def read_modules(path="runtime/module.mk"):
    """RUNTIME_MODULES, lowest first: the one declaration of the order."""
    for line in open(path):
        m = re.match(r"^RUNTIME_MODULES\s*:?=\s*(.*?)\s*$", line)
        if m:
            return m.group(1).split()
    return []


def order_violations(archives, modules):
    """archives: module -> archive path; modules: lowest first.  Every
    undefined symbol of an archive that another runtime archive defines
    must be defined by a lower module.  Returns 'a -> b (symbol)' lines."""
    rank = dict((m, i) for i, m in enumerate(modules))
    defined, undefined = symbol_sets(dict((m, [p]) for m, p in archives.items()))
    bad = set()
    for a, syms in undefined.items():
        for s in syms:
            owners = defined.get(s, set()) - {a}
            if owners and a not in defined.get(s, ()) and min(rank[b] for b in owners) > rank[a]:
                for b in owners:
                    bad.add("runtime/%s -> runtime/%s (%s)" % (a, b, s))
    return sorted(bad)


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

    # the module order: declared once, shown by the table, kept by the archives
    modules = read_modules()
    rows = [c for c in order if c.startswith("runtime/")]
    want = ["runtime/" + m for m in reversed(modules)]
    why = [] if rows == want else ["docs/README.md's runtime rows: %s; runtime/module.mk's RUNTIME_MODULES, "
                                   "top first: %s" % (" ".join(rows), " ".join(want))]
    for i, c in enumerate(rows):
        up = sorted(u for u in allowed.get(c, ()) if u in rows[:i + 1])
        if up:
            why.append("%s may use %s, not below it" % (c, " ".join(up)))
    out(len(modules) >= 8 and not why, "table_shows_the_module_order", why)
    archives = dict((m, B + "/lib/libddp_%s.a" % m) for m in modules)
    if not all(os.path.exists(a) for a in archives.values()):
        print("skip - archives_follow_the_module_order: not built (make all)")
        archives = {}
    else:
        bad = order_violations(archives, modules)
        out(not bad, "archives_follow_the_module_order", bad[:30])

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
        # negative control 3: a scratch copy of libddp_base.a holding that
        # object: the order check must name the back-edge, and a link of the
        # archives in the declared order must fail on it
        if archives:
            with open(t + "/main.c", "w") as f:
                f.write("void bad(void);\nint main(void) { bad(); return 0; }\n")
            r1 = subprocess.run(["cc", "-c", t + "/bad.c", "-o", t + "/bad.o"], capture_output=True)
            r2 = subprocess.run(["cc", "-c", t + "/main.c", "-o", t + "/main.o"], capture_output=True)
            shutil.copy(archives["base"], t + "/libddp_base.a")
            r3 = subprocess.run(["ar", "rcs", t + "/libddp_base.a", t + "/bad.o"], capture_output=True)
            g = dict(archives, base=t + "/libddp_base.a")
            built = r1.returncode == r2.returncode == r3.returncode == 0
            caught = built and "runtime/base -> runtime/grad (ddp_sync_init)" in order_violations(g, modules)
            out(caught, "order_check_catches_a_back_edge",
                ["a copy of libddp_base.a calling ddp_sync_init went unnoticed" if built else "could not build the copy"])
            link = [g[m] for m in reversed(modules)]
            r = subprocess.run(["cc", t + "/main.o"] + link + ["-o", t + "/a.out"], capture_output=True, text=True)
            failed = built and r.returncode != 0 and "ddp_sync_init" in r.stderr
            out(failed, "ordered_link_refuses_a_back_edge",
                ["linking %s in the declared order succeeded or failed for another reason: %s"
                 % (" ".join(os.path.basename(x) for x in link), r.stderr.strip()[-300:])])
    finally:
        shutil.rmtree(t)


main()
