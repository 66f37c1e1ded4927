#!/usr/bin/python3
# A stand-in for a Python extension service (a ctypes service over a pip-installed package),
# for the stale-Python and log-format scenarios. It imports the package's dispatch module
# from SITE (a venv-like site-packages folder), loads the extension with ctypes, logs with
# Python logging, writes its pidfile once ready and serves until SIGTERM.
#
#   py-service.py --site SITE --package PKG --module MOD [--function F] --lib PATH --log PATH
#                 --pidfile PATH [--format FMT] [--datefmt FMT] [--utc] [--no-marker] [--tag WORD]
#                 [--partial] [--pad N]
#
# On start (unless --no-marker) and on each SIGUSR1 it logs "DCU_KERNEL_DIAG selected=<MOD.F(4096, 5120)>
# shape=(4096, 5120) dtype=torch.bfloat16": the selection comes from the imported module,
# so a module replaced after the start changes nothing until a restart, as in a real service.
# --partial writes the marker line in two writes half a second apart (a container runtime
# records the first as a partial line); --pad N puts a field of N bytes between the marker's
# selected= and shape= (a line longer than docker's 16 KiB records is split there).
import argparse
import ctypes
import importlib
import logging
import os
import signal
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--site", required=True)
ap.add_argument("--package", required=True)
ap.add_argument("--module", required=True)
ap.add_argument("--function", default="use_kernel")
ap.add_argument("--lib", default="", help="the extension to load (none when empty: a lazy service)")
ap.add_argument("--log", required=True)
ap.add_argument("--pidfile", required=True)
ap.add_argument("--format", default="%(asctime)s %(levelname)s [serve pid=%(process)d] %(message)s")
ap.add_argument("--datefmt", default=None)
ap.add_argument("--tag", default="")
ap.add_argument("--utc", action="store_true", help="timestamps in UTC")
ap.add_argument("--no-marker", action="store_true", help="no marker at start, only on SIGUSR1")
ap.add_argument("--partial", action="store_true", help="the marker line in two writes")
ap.add_argument("--pad", type=int, default=0, help="bytes of padding inside the marker line")
args = ap.parse_args()

sys.dont_write_bytecode = True
sys.path.insert(0, args.site)
ops = importlib.import_module(args.package + "." + args.module)
lib = ctypes.CDLL(args.lib) if args.lib else None

handler = logging.FileHandler(args.log)
fmt = logging.Formatter(args.format, args.datefmt)
if args.utc:
    fmt.converter = time.gmtime
handler.setFormatter(fmt)
log = logging.getLogger("serve")
log.addHandler(handler)
log.setLevel(logging.INFO)

log.info("Initializing an engine with config: block size = 832, prefix caching = False")


def marker(*_):
    sel = getattr(ops, args.function)(4096, 5120)
    pad = " pad=" + "x" * args.pad if args.pad else ""
    msg = "DCU_KERNEL_DIAG selected=%s%s shape=(4096, 5120) dtype=torch.bfloat16" % (sel, pad)
    if args.partial:
        text = handler.format(log.makeRecord(log.name, logging.INFO, __file__, 0, msg, (), None))
        cut = text.index(" shape=")
        handler.stream.write(text[:cut])
        handler.stream.flush()
        time.sleep(0.5)
        handler.stream.write(text[cut:] + "\n")
        handler.stream.flush()
    else:
        log.info("%s", msg)
    log.info("request done")


signal.signal(signal.SIGUSR1, marker)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
if not args.no_marker:
    marker()
tmp = args.pidfile + ".tmp"
with open(tmp, "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(tmp, args.pidfile)
while True:
    time.sleep(3600)
