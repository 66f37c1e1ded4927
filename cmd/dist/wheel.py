#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Makes provgate's wheel (meson compile -C BUILD wheel runs it), without the network and
without a Python build backend: the zip is written here, as the wheel spec (PEP 427, the
binary distribution format) describes it.

    wheel.py OUT.whl BUNDLE.tar.gz VERSION SRC

    provgate/                       SRC/python/provgate (pure Python; _version.py added)
    provgate/_bundle/               the relocatable bundle of `meson compile bundle`, whole
    provgate-VERSION.dist-info/     METADATA, WHEEL, entry_points.txt (console script
                                    provgate), RECORD (sha256 of every file)

The tag is py3-none-manylinux_2_17_x86_64: no Python ABI (the package is pure Python and
runs provgate as a program), and of the host only the kernel and, for the witness loaded
into a service, glibc 2.17. Before it writes anything it checks that this is so: the
launcher is static, provgate names the bundle's loader and finds every library it needs in
the bundle, and the witness needs no glibc symbol newer than GLIBC_2.17.
"""
import base64
import csv
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

TAG = "py3-none-manylinux_2_17_x86_64"
WITNESS_GLIBC_MAX = (2, 17)


def die(msg):
    sys.stderr.write(f"wheel.py: {msg}\n")
    sys.exit(1)


def readelf(flags, path):
    try:
        return subprocess.run(["readelf", "-W"] + flags + [path], check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        die(f"readelf {' '.join(flags)} {path}: {e}")


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", readelf(["-d"], path))


def check_bundle(root):
    """The claims the manylinux_2_17 tag rests on, read from the ELF files themselves."""
    launcher = os.path.join(root, "bin/provgate")
    heads = readelf(["-l"], launcher)
    if re.search(r"^\s*(INTERP|DYNAMIC)\s", heads, re.M):
        die("bin/provgate is not static: it has a loader or a dynamic section")
    program = os.path.join(root, "libexec/provgate/provgate")
    interp = re.findall(r"Requesting program interpreter: (.*)\]", readelf(["-l"], program))
    if interp != ["ld-linux-x86-64.so.2"]:
        die(f"libexec/provgate/provgate names the loader {interp}, not the bundle's "
            "ld-linux-x86-64.so.2")
    dyn = readelf(["-d"], program)
    if not re.search(r"\(RPATH\)\s+Library rpath: \[\$ORIGIN/lib\]", dyn) or "(RUNPATH)" in dyn:
        die("libexec/provgate/provgate: its libraries are not found by DT_RPATH $ORIGIN/lib")
    libdir = os.path.join(root, "libexec/provgate/lib")
    if not os.path.isfile(os.path.join(libdir, "ld-linux-x86-64.so.2")):
        die("the bundle has no loader")
    # every library the program needs, and what those need in turn, is in the bundle
    todo, seen = [program], set()
    while todo:
        obj = todo.pop()
        for lib in needed(obj):
            if lib in seen:
                continue
            seen.add(lib)
            path = os.path.join(libdir, lib)
            if not os.path.isfile(path):
                die(f"{os.path.relpath(obj, root)} needs {lib}, which is not in the bundle")
            todo.append(path)
    if len(seen) < 5:
        die(f"only {len(seen)} libraries needed: not the bundle's program?")
    witness = os.path.join(root, "lib/provgate/libprovgate-witness.so")
    versions = {tuple(int(x) for x in v.split("."))
                for v in re.findall(r"GLIBC_([0-9]+(?:\.[0-9]+)+)", readelf(["-V"], witness))}
    if not versions or max(versions) > WITNESS_GLIBC_MAX:
        die(f"libprovgate-witness.so needs GLIBC_{'.'.join(map(str, max(versions or {(0,)})))}, "
            "newer than manylinux_2_17 allows")


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def main():
    if len(sys.argv) != 5:
        die("usage: wheel.py OUT.whl BUNDLE.tar.gz VERSION SRC")
    out, tarball, version, src = sys.argv[1:]
    name = f"provgate-{version}-x86_64-linux"
    dist_info = f"provgate-{version}.dist-info"

    # (path in the wheel, bytes, executable)
    files = []
    pkg = os.path.join(src, "python", "provgate")
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py") or f == "py.typed":
            with open(os.path.join(pkg, f), "rb") as fh:
                files.append((f"provgate/{f}", fh.read(), False))
    files.append(("provgate/_version.py",
                  f'# written by cmd/dist/wheel.py\n__version__ = "{version}"\n'.encode(), False))

    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tarball) as tar:
        for m in tar.getmembers():
            if not (m.name == name or m.name.startswith(name + "/")):
                die(f"{m.name}: not under {name}/")
            if not (m.isfile() or m.isdir()):
                die(f"{m.name}: only files and folders go into a wheel")
        # (members checked above; the filter where this Python has it)
        tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        root = os.path.join(tmp, name)
        check_bundle(root)
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            if m.isfile():
                with open(os.path.join(tmp, m.name), "rb") as fh:
                    files.append(("provgate/_bundle" + m.name[len(name):], fh.read(),
                                  bool(m.mode & 0o111)))

    metadata = f"""Metadata-Version: 2.1
Name: provgate
Version: {version}
Summary: Proves that a GPU benchmark's number came from the kernel just modified, built and installed
License: MIT
Requires-Python: >=3.9
Platform: Linux
Classifier: Programming Language :: Python :: 3
Classifier: Operating System :: POSIX :: Linux
Classifier: License :: OSI Approved :: MIT License
Description-Content-Type: text/plain

provgate walks the chain from a changed kernel source to the kernel the live service
dispatches (build log, install scope, artifact hash, process maps, stale services, device
code objects, dispatch markers or the dispatch witness) and refuses to certify unless every
link closes. This wheel holds provgate's relocatable bundle for x86-64 Linux (its own loader
and libraries: nothing of the host but the kernel) and a Python API: provgate.certify(),
provgate.benchmark() (provgate exec around a block of Python code), provgate.witness_env()
and provgate.load_report(). The console script provgate is the bundle's provgate.
"""
    wheel = f"""Wheel-Version: 1.0
Generator: provgate cmd/dist/wheel.py
Root-Is-Purelib: false
Tag: {TAG}
"""
    entry_points = "[console_scripts]\nprovgate = provgate._cli:main\n"
    files += [(f"{dist_info}/METADATA", metadata.encode(), False),
              (f"{dist_info}/WHEEL", wheel.encode(), False),
              (f"{dist_info}/entry_points.txt", entry_points.encode(), False)]
    rec = io.StringIO()
    w = csv.writer(rec, lineterminator="\n")
    for path, data, _ in files:
        w.writerow([path, record_hash(data), len(data)])
    w.writerow([f"{dist_info}/RECORD", "", ""])
    files.append((f"{dist_info}/RECORD", rec.getvalue().encode(), False))

    # one time for every entry, as the bundle's tarball: the same build gives the same bytes
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        r = subprocess.run(["git", "-C", src, "log", "-1", "--format=%ct"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        epoch = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else str(int(time.time()))
    stamp = max(time.gmtime(int(epoch))[:6], (1980, 1, 1, 0, 0, 0))
    tmp_out = out + ".tmp"
    with zipfile.ZipFile(tmp_out, "w") as z:
        for path, data, executable in files:
            info = zipfile.ZipInfo(path, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix: installers take the mode from external_attr
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            z.writestr(info, data, compresslevel=9)
    os.replace(tmp_out, out)


if __name__ == "__main__":
    main()
