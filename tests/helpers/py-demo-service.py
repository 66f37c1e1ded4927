#!/usr/bin/python3
# The demo's stand-in vLLM service (tests/helpers/fake-service.c --server --workers 2) in
# Python, for images whose libc cannot run this machine's programs (Debian 11: tests/scenario
# t-bundle.sh runs it with Debian 11's python3). Each role is a Python process of its own, its
# command line starting with the title vLLM gives it (argv[0]) and its comm set with prctl:
#   "vllm serve fixture TAG"  holds PORT, starts the engine, writes PIDFILE once all is ready
#   "VLLM::EngineCore TAG"    maps LIB, holds DEVICE, starts two workers, writes ENGINE-PIDFILE,
#                             logs vLLM-format lines "(EngineCore_DP0 pid=N) INFO MM-DD HH:MM:SS"
#                             to LOG; on SIGUSR1 one marker per "M N DTYPE" line of LOG.request
#   "VLLM::Worker_I TAG"      maps LIB
# LIB is loaded with ctypes when the image can load it; the demo's hipcc build needs this
# machine's ROCm runtime, which an older image lacks, and then LIB is mapped read-only
# (mmap, as the loader's first mapping of it) and a line on stderr says so.
#   py-demo-service.py --port P --lib LIB --device DEVICE --log LOG --pidfile F
#                      --engine-pidfile F --tag TAG [--host ADDR] [--multiple K]
import argparse
import ctypes
import mmap
import os
import signal
import socket
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--role", default="start")
ap.add_argument("--worker", type=int, default=0)
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--lib", required=True)
ap.add_argument("--device", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--pidfile", required=True)
ap.add_argument("--engine-pidfile", required=True)
ap.add_argument("--tag", required=True)
ap.add_argument("--multiple", type=int, default=256)
ap.add_argument("--python", default=sys.executable or "/usr/bin/python3")
args = ap.parse_args()
libc = ctypes.CDLL(None)


def set_comm(name):
    libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)  # PR_SET_NAME


def start(title, role, *extra):
    argv = [title + " " + args.tag, os.path.abspath(__file__), "--role", role] + list(extra)
    for k in ("port", "host", "lib", "device", "log", "pidfile", "engine_pidfile", "tag",
              "multiple", "python"):
        argv += ["--" + k.replace("_", "-"), str(getattr(args, k))]
    return subprocess.Popen(argv, executable=args.python)


def write_pidfile(path, pid):
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % pid)
    os.rename(path + ".tmp", path)


def log_line(text):
    t = time.localtime()
    with open(args.log, "a") as f:
        f.write("(EngineCore_DP0 pid=%d) INFO %02d-%02d %02d:%02d:%02d [py_demo_service.py:1] %s\n"
                % (os.getpid(), t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, text))


def load_lib():
    try:
        return ctypes.CDLL(args.lib)
    except OSError as e:
        print("py-demo-service: %s cannot be loaded here (%s): mapped read-only" % (args.lib, e),
              file=sys.stderr)
        with open(args.lib, "rb") as f:
            return mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)


def wait_forever(on_usr1=None):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if on_usr1:
        signal.signal(signal.SIGUSR1, on_usr1)
    while True:
        signal.pause()


requests = [0]


def serve_request(*_):
    try:
        with open(args.log + ".request") as f:
            shapes = [line.split() for line in f if line.strip()]
    except OSError:
        shapes = []
    for m, n, dtype in shapes:
        fast = int(n) % args.multiple == 0
        log_line("DCU_KERNEL_DIAG selected=%s shape=(%s, %s) dtype=%s kernel=%s"
                 % (fast, m, n, dtype, "wvSplitK" if fast else "none"))
        if not fast:
            log_line("shape (%s, %s) not supported by wvSplitK: fallback to unified triton" % (m, n))
    requests[0] += 1
    log_line("request %d done" % requests[0])


if args.role == "start":
    # the API server's title too: this process again, under it
    os.execv(args.python, ["vllm serve fixture " + args.tag, os.path.abspath(__file__)]
             + sys.argv[1:] + ["--role", "server", "--python", args.python])
if args.role == "server":
    set_comm("vllm serve fixture")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(16)
    engine = start("VLLM::EngineCore", "engine")
    for _ in range(600):
        if os.path.exists(args.engine_pidfile):
            break
        time.sleep(0.02)
    write_pidfile(args.pidfile, os.getpid())
    signal.signal(signal.SIGTERM, lambda *_: (engine.terminate(), sys.exit(0)))
    while True:
        signal.pause()
elif args.role == "engine":
    set_comm("VLLM::EngineCore")
    lib = load_lib()
    workers = [start("VLLM::Worker_%d" % i, "worker", "--worker", str(i)) for i in range(2)]
    for i in range(2):  # each worker says when it has mapped LIB
        for _ in range(600):
            if os.path.exists("%s.w%d" % (args.engine_pidfile, i)):
                break
            time.sleep(0.02)
    device = os.open(args.device, os.O_RDONLY)
    log_line("Initializing an engine with config: block size = 832, prefix caching = False")
    write_pidfile(args.engine_pidfile, os.getpid())
    signal.signal(signal.SIGTERM, lambda *_: ([w.terminate() for w in workers], sys.exit(0)))
    signal.signal(signal.SIGUSR1, serve_request)
    while True:
        signal.pause()
else:
    set_comm("VLLM::Worker_%d" % args.worker)
    lib = load_lib()
    open("%s.w%d" % (args.engine_pidfile, args.worker), "w").close()
    wait_forever()
