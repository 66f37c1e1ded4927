#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compares `provgate inspect --json` with `cuobjdump --list-elf` and `--list-ptx` on the same
files: per file, the multiset of (kind, arch) entries must be equal (same archs, same counts).
cuobjdump lists the loadable image of a linked file (.nv_fatbin); the relocatable cubins of
-rdc units that inspect also lists (section __nv_relfatbin) are compared apart: they are
counted, not matched.
Usage: compare-inspect.py DIR   where DIR holds, per file NAME, NAME.inspect.json,
NAME.list-elf.txt and NAME.list-ptx.txt (as tests/gpu/run-h200.sh writes them).
Prints a table and exits 1 on any disagreement."""
import collections
import gzip
import json
import os
import re
import sys

LINE = re.compile(r"^(ELF|PTX) file\s+\d+:\s+(\S+)$")
ARCH = re.compile(r"\.(sm_\d+[a-z]?)\.(cubin|ptx)$")


def opened(path):
    """path, or path.gz as the committed results keep the big files."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt", errors="replace")
    return open(path, errors="replace")


def exists(path):
    return os.path.exists(path) or os.path.exists(path + ".gz")


def cuobjdump_entries(path):
    c = collections.Counter()
    if not exists(path):
        return None
    for line in opened(path):
        m = LINE.match(line.strip())
        if not m:
            continue
        a = ARCH.search(m.group(2))
        arch = a.group(1) if a else "?"
        kind = "cubin" if m.group(1) == "ELF" else "ptx"
        c[(kind, arch)] += 1
    return c


def inspect_entries(path, skip_sections=()):
    doc = json.load(opened(path))
    c = collections.Counter()
    problems = []
    for f in doc.get("files", []):
        problems += [p.get("message", "") for p in f.get("problems", [])]
        if f.get("error"):
            problems.append(f["error"])
        for co in f.get("code_objects", []):
            kind = co.get("kind")
            if kind not in ("cubin", "ptx") or co.get("section") in skip_sections:
                continue
            arch = co.get("arch") or "?"
            # cuobjdump names a PTX entry for compute_NN "....sm_NN.ptx"
            if kind == "ptx" and arch.startswith("compute_"):
                arch = "sm_" + arch[len("compute_"):]
            c[(kind, arch)] += 1
            for key in ("error", "mismatch"):
                if co.get(key):
                    problems.append(f"entry {co.get('entry')}: {key}: {co[key]}")
    return c, problems


def resource_usage(path):
    """(arch, functions) per cubin from cuobjdump --dump-resource-usage, None without the file."""
    if not exists(path):
        return None
    out, arch, n = collections.Counter(), None, 0
    for line in opened(path):
        t = line.strip()
        if t.startswith("Fatbin elf code") or t.startswith("Fatbin ptx code"):
            if arch:
                out[(arch, n)] += 1
            arch, n = None, 0
            elf = t.startswith("Fatbin elf code")
        elif t.startswith("arch = ") and elf:
            arch = t.split("=", 1)[1].strip()
        elif t.startswith("Function ") and arch:
            n += 1
    if arch:
        out[(arch, n)] += 1
    return out


def inspect_kernels(path):
    c = collections.Counter()
    for f in json.load(opened(path)).get("files", []):
        for co in f.get("code_objects", []):
            if co.get("kind") == "cubin" and co.get("section") != "__nv_relfatbin":
                c[(co.get("arch"), co.get("kernel_count") if co.get("kernels_known") else "?")] += 1
    return c


def fmt(c):
    return ", ".join(f"{k}:{a}x{n}" for (k, a), n in sorted(c.items())) or "(none)"


def main():
    d = sys.argv[1]
    names = sorted(n.split(".inspect.json")[0] for n in os.listdir(d)
                   if n.endswith(".inspect.json") or n.endswith(".inspect.json.gz"))
    bad = 0
    print(f"{'file':40} {'result':8} provgate inspect / cuobjdump")
    for name in names:
        path = os.path.join(d, name + ".inspect.json")
        ins, problems = inspect_entries(path, ("__nv_relfatbin",))
        everything, _ = inspect_entries(path)
        reloc = sum(everything.values()) - sum(ins.values())
        elf = cuobjdump_entries(os.path.join(d, name + ".list-elf.txt")) or collections.Counter()
        ptx = cuobjdump_entries(os.path.join(d, name + ".list-ptx.txt")) or collections.Counter()
        cu = elf + ptx
        same = ins == cu
        bad += not same
        print(f"{name:40} {'agree' if same else 'DISAGREE':8} "
              f"{sum(ins.values())} entries / {sum(cu.values())} entries"
              + (f" (inspect also lists {reloc} relocatable __nv_relfatbin entries)" if reloc else ""))
        print(f"    inspect:   {fmt(ins)}")
        if not same:
            print(f"    cuobjdump: {fmt(cu)}")
            for k in sorted(set(ins) | set(cu)):
                if ins[k] != cu[k]:
                    print(f"    differs: {k[0]} {k[1]}: inspect {ins[k]}, cuobjdump {cu[k]}")
        ru = resource_usage(os.path.join(d, name + ".resource-usage.txt"))
        if ru is not None:
            ik = inspect_kernels(os.path.join(d, name + ".inspect.json"))
            print(f"    kernels per cubin (arch, count): inspect and cuobjdump --dump-resource-usage "
                  f"{'agree' if ik == ru else 'differ'} (informational: cuobjdump also lists "
                  f"non-inlined device functions)")
            if ik != ru:
                print(f"      inspect:   {sorted(ik.items(), key=str)[:12]}")
                print(f"      cuobjdump: {sorted(ru.items(), key=str)[:12]}")
        for p in problems[:10]:
            print(f"    inspect problem: {p}")
    print(f"{len(names)} files, {len(names) - bad} agree, {bad} disagree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
