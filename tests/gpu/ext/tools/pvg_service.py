# SPDX-License-Identifier: MIT
"""A two-process PyTorch service shaped like vLLM: an API server (comm PVG::APIServer) listens
on a local TCP port and forwards each request "M N [t] [g R | d R]" to its EngineCore child
(comm PVG::EngineCore), which imports pvgext, runs pvgext.rowscale on an M x N fp16 CUDA tensor
and checks the result ("t": a transposed, non-contiguous input; "g R": the call captured in a
torch.cuda.CUDAGraph, without an eager call, and the graph replayed R times; "d R": a
decode-like step, run once eagerly as a warm-up (as vLLM does before it captures), then
captured in a torch.cuda.CUDAGraph and replayed R times: h = x @ W (cuBLAS), rowscale(h, 2),
softmax in fp32, + x; with "t" rowscale gets a non-contiguous view of h and falls back; "v":
the same kernel name launched from another shared object, $PVG_VENDOR_OPS, an older copy of
pvg_rowscale_f16x2 that the engine maps at start as a vendor plugin would; "r": a Triton
kernel, pvg_tri_scale, compiled by Triton in the engine at its first use). The API server also
answers vLLM's profiler endpoints, POST /start_profile and POST /stop_profile: the engine starts
and stops a torch.profiler session whose traces go to $VLLM_TORCH_PROFILER_DIR, named as
vLLM's (torch.profiler.tensorboard_trace_handler, gzip). Both log to stderr in vLLM's format:
    (EngineCore_DP0 pid=N) INFO MM-DD HH:MM:SS [file:line] message
An EngineCore whose API server died keeps running and holding the GPU, as vLLM's orphans do.
Usage: pvg_service.py --port P   (the API server; it starts the engine itself)"""
import argparse
import ctypes
import inspect
import os
import socket
import subprocess
import sys
import time

ROLE_TAG = {"api": "APIServer", "engine": "EngineCore_DP0"}
role = "api"


def log(msg, level="INFO"):
    line = inspect.currentframe().f_back.f_lineno
    ts = time.strftime("%m-%d %H:%M:%S", time.localtime())
    sys.stderr.write(f"({ROLE_TAG[role]} pid={os.getpid()}) {level} {ts} "
                     f"[pvg_service.py:{line}] {msg}\n")
    sys.stderr.flush()


def set_comm(name):
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NAME = 15
    libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def vendor_ops():
    """The vendor plugin: mapped at start when $PVG_VENDOR_OPS names it; its launcher runs
    its own copy of pvg_rowscale_f16x2 on the current stream."""
    path = os.environ.get("PVG_VENDOR_OPS")
    if not path:
        return None
    lib = ctypes.CDLL(path)
    lib.vendor_rowscale.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float,
                                    ctypes.c_long, ctypes.c_void_p]
    lib.vendor_rowscale.restype = ctypes.c_int
    return lib


def triton_scale():
    """pvg_tri_scale: y = x * s, as a Triton kernel (compiled at its first call)."""
    import triton
    import triton.language as tl

    @triton.jit
    def pvg_tri_scale(x_ptr, y_ptr, s, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * s, mask=m)

    def run(x, s):
        y = x.new_empty(x.shape)
        n = x.numel()
        pvg_tri_scale[((n + 1023) // 1024,)](x, y, s, n, BLOCK=1024)
        return y
    return run


def engine():
    set_comm("PVG::EngineCore")
    import torch
    import pvgext
    dev = torch.device("cuda", 0)
    torch.cuda.init()
    vendor = vendor_ops()
    tri = None
    prof = None
    log(f"engine ready: torch {torch.__version__} device {torch.cuda.get_device_name(0)} "
        f"pvgext {pvgext.__file__} kernel version {pvgext.KERNEL_VERSION}")
    out = sys.stdout
    for req in sys.stdin:
        try:
            f = req.split()
            if f and f[0] == "P":  # the profiler endpoints
                pdir = os.environ.get("VLLM_TORCH_PROFILER_DIR")
                if not pdir:
                    raise RuntimeError("profiling is off: VLLM_TORCH_PROFILER_DIR is not set")
                if f[1] == "start" and prof is None:
                    log(f"Profiling enabled. Traces will be saved to: {pdir}")
                    prof = torch.profiler.profile(
                        activities=[torch.profiler.ProfilerActivity.CPU,
                                    torch.profiler.ProfilerActivity.CUDA],
                        on_trace_ready=torch.profiler.tensorboard_trace_handler(
                            pdir, worker_name=f"EngineCore_DP0_pid{os.getpid()}",
                            use_gzip=True))
                    prof.start()
                elif f[1] == "stop" and prof is not None:
                    prof.stop()
                    prof = None
                    log("Profiler stopped")
                out.write(f"ok profile {f[1]}\n")
                out.flush()
                continue
            m, n = int(f[0]), int(f[1])
            if "t" in f[2:]:  # the same shape, but a transposed (non-contiguous) view
                x = torch.randn(n, m, dtype=torch.float16, device=dev).t()
            else:
                x = torch.randn(m, n, dtype=torch.float16, device=dev)
            if "d" in f[2:]:  # a decode-like step: warmed up eagerly, captured, replayed
                replays = int(f[f.index("d") + 1]) if len(f) > f.index("d") + 1 else 1
                w = torch.randn(n, n, dtype=torch.float16, device=dev) / n ** 0.5
                xs = x.contiguous()

                def step():
                    h = xs @ w
                    hin = h.t().contiguous().t() if "t" in f[2:] else h
                    h = pvgext.rowscale(hin, 2.0)
                    return torch.softmax(h.float(), dim=-1).half() + xs

                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    step()  # the warm-up: one eager step
                torch.cuda.current_stream().wait_stream(s)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = step()
                for _ in range(replays):
                    g.replay()
                torch.cuda.synchronize()
                ref = torch.softmax((xs @ w).float() * 2.0, dim=-1).half() + xs
                ok = torch.allclose(y.float(), ref.float(), atol=2e-2, rtol=2e-2)
                log(f"request shape=({m}, {n}): decode step captured in a CUDA graph, {replays} "
                    f"replays, contiguous rowscale input={'t' not in f[2:]} result "
                    f"{'ok' if ok else 'WRONG'}")
                out.write(f"{'ok' if ok else 'wrong'} {m} {n} decode replays={replays}\n")
                out.flush()
                continue
            if "g" in f[2:]:  # one call captured in a CUDA graph (no eager call), replayed
                replays = int(f[f.index("g") + 1]) if len(f) > f.index("g") + 1 else 1
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = pvgext.rowscale(x, 2.0)
                for _ in range(replays):
                    g.replay()
                log(f"request shape=({m}, {n}): rowscale captured in a CUDA graph, {replays} replays")
            elif "v" in f[2:]:  # the vendor plugin's copy of the kernel
                if vendor is None:
                    raise RuntimeError("no vendor plugin: PVG_VENDOR_OPS is not set")
                y = torch.empty_like(x)
                rc = vendor.vendor_rowscale(x.data_ptr(), y.data_ptr(), 2.0, x.numel() // 2,
                                            torch.cuda.current_stream().cuda_stream)
                if rc:
                    raise RuntimeError(f"vendor_rowscale failed: {rc}")
                log(f"request shape=({m}, {n}): rowscale by the vendor plugin")
            elif "r" in f[2:]:  # the Triton kernel
                tri = tri or triton_scale()
                y = tri(x.contiguous(), 2.0)
                log(f"request shape=({m}, {n}): scaled by Triton's pvg_tri_scale")
            else:
                y = pvgext.rowscale(x, 2.0)
            torch.cuda.synchronize()
            ok = torch.equal(y, x * 2.0)
            log(f"request shape=({m}, {n}) contiguous={x.is_contiguous()} result {'ok' if ok else 'WRONG'}")
            out.write(f"{'ok' if ok else 'wrong'} {m} {n} contiguous={x.is_contiguous()}\n")
        except Exception as e:  # a bad request must not kill the engine
            log(f"request {req.strip()!r} failed: {e}", "ERROR")
            out.write(f"error {e}\n")
        out.flush()
    log("API server gone; engine keeps running", "WARNING")
    while True:
        time.sleep(3600)


def api(port):
    set_comm("PVG::APIServer")
    eng = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--role", "engine"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    log(f"API server listening on 127.0.0.1:{port}, engine pid {eng.pid}")
    while True:
        c, _ = s.accept()
        with c:
            req = c.makefile().readline()
            http = req.startswith(("POST ", "GET "))
            if http:  # vLLM's profiler endpoints
                path = req.split()[1] if len(req.split()) > 1 else ""
                what = {"/start_profile": "start", "/stop_profile": "stop"}.get(path)
                if not what:
                    c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    continue
                log(f"{path}")
                req = f"P {what}"
            eng.stdin.write(req.strip() + "\n")
            eng.stdin.flush()
            reply = eng.stdout.readline()
            if http:
                code = "200 OK" if reply.startswith("ok") else "500 Internal Server Error"
                c.sendall(f"HTTP/1.1 {code}\r\nContent-Length: {len(reply)}\r\n"
                          f"Connection: close\r\n\r\n{reply}".encode())
            else:
                c.sendall(reply.encode())


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", default="api", choices=["api", "engine"])
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args()
    role = a.role
    engine() if role == "engine" else api(a.port)
