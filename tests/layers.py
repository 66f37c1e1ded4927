#!/usr/bin/env python3
"""Checks the layering of lib/, checks/ and cmd/ (lib/README):

  layers.py includes SRC        every #include "..." points down or sideways as allowed
  layers.py words SRC           nothing in lib/formats or lib/sys names a gate, a status or
                                the run context
  layers.py cycles SRC BUILD    no two source files call each other, directly or round a loop
                                (from the symbols each object file of BUILD defines and uses)

Each prints one line per violation and exits 1 when there is one.
"""
import os
import re
import subprocess
import sys

# what each layer may include (besides itself); provgate.h is the public API, anyone's
ALLOWED = {
    "util": {"util"},
    "formats": {"util", "formats"},
    "sys": {"util", "formats", "sys"},
    "core": {"util", "formats", "sys", "core"},
    "checks": {"util", "formats", "sys", "core", "checks"},
    "cmd": {"util", "formats", "sys", "core", "checks", "cmd"},
    # libprovgate-witness.so, loaded into the GPU service: the witness format and the AQL
    # decoder of formats/ (libc only), nothing that needs libprovgate's dependencies
    "witness": {"formats", "witness"},
}
PUBLIC = {"provgate.h", "pvg-version.h"}


def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "lib" and len(parts) > 2:
        return parts[1]
    if parts[0] in ("checks", "cmd"):
        return parts[0]
    return None


def sources(src):
    for top in ("lib", "checks", "cmd"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(root, f), src)


def resolve(src, rel, inc):
    """The repository path an #include "inc" in file rel names."""
    here = os.path.dirname(rel)
    for base in (here, "lib", "checks", "cmd", "."):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(src, cand)):
            return cand
    return None


def check_includes(src):
    bad = 0
    for rel in sources(src):
        layer = layer_of(rel)
        if layer is None:
            if rel != "lib/provgate.h":
                print(f"{rel}: not in a layer (lib/util, lib/formats, lib/sys, lib/core, checks, cmd)")
                bad += 1
            continue
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                if os.path.basename(inc) in PUBLIC:
                    continue
                target = resolve(src, rel, inc)
                if target is None:
                    print(f"{rel}:{n}: includes \"{inc}\", which is not in the tree")
                    bad += 1
                    continue
                tl = layer_of(target)
                if tl not in ALLOWED[layer]:
                    print(f"{rel}:{n}: {layer} includes {target} ({tl}): arrows point down only")
                    bad += 1
    return bad


# Words of the run: the context, results and statuses, and gates themselves.
RUN_WORDS = re.compile(
    r"\b(pvg_ctx|pvg_result|pvg_problem|pvg_summary|pvg_status|pvg_run|pvg_check|pvg_config|"
    r"PVG_PASS|PVG_FAIL|PVG_UNVERIFIABLE|PVG_BLOCKED|PVG_SKIPPED|PVG_SLOT_\w+|gates?)\b",
    re.IGNORECASE)


def check_words(src):
    bad = 0
    for rel in sources(src):
        if layer_of(rel) not in ("formats", "sys"):
            continue
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = RUN_WORDS.search(line)
                if m:
                    print(f"{rel}:{n}: mentions \"{m.group(0)}\": formats/ and sys/ know no run")
                    bad += 1
    return bad


def objects(build):
    """Object files of the library, keyed by their source path."""
    out = {}
    for root, _, files in os.walk(build):
        if "libprovgate.so" not in root or not root.endswith(".p"):
            continue
        for f in files:
            if f.endswith(".c.o"):
                # meson names lib/sys/procs.c's object lib_sys_procs.c.o
                out[f[:-2]] = os.path.join(root, f)
    return out


def symbols(path):
    res = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True,
                         check=True)
    defined = {l.split()[-1] for l in res.stdout.splitlines() if len(l.split()) >= 3
               and l.split()[1] in "TDBRVW"}
    res = subprocess.run(["nm", "-u", path], capture_output=True, text=True, check=True)
    used = {l.split()[-1] for l in res.stdout.splitlines() if l.split()}
    return defined, used


def check_cycles(src, build):
    objs = objects(build)
    if not objs:
        print(f"no library objects under {build}")
        return 1
    defs, uses, owner = {}, {}, {}
    for name, path in objs.items():
        defs[name], uses[name] = symbols(path)
        for s in defs[name]:
            owner[s] = name
    graph = {n: {owner[s] for s in uses[n] if s in owner and owner[s] != n} for n in objs}
    # strongly connected components (Tarjan), iterative enough for this size
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    # meson names lib/sys/procs.c's object lib_sys_procs.c.o: name loops by source path
    path_of = {rel.replace("/", "_"): rel for rel in sources(src)}
    name = lambda o: path_of.get(o, o)
    bad = 0
    for comp in comps:
        if len(comp) > 1:
            names = sorted(name(c) for c in comp)
            edges = sorted(f"{name(a)} -> {name(b)}" for a in comp for b in graph[a] if b in comp)
            print("call loop between " + ", ".join(names) + ": " + "; ".join(edges))
            bad += 1
    return bad


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    what, src = argv[1], argv[2]
    if what == "includes":
        bad = check_includes(src)
    elif what == "words":
        bad = check_words(src)
    elif what == "cycles" and len(argv) == 4:
        bad = check_cycles(src, argv[3])
    else:
        print(__doc__)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
