# SPDX-License-Identifier: MIT
"""A stand-in for vLLM's torch.compile path, for run-jit.sh: real torch.compile (Dynamo and
Inductor, which emits Triton kernels), with the cache folder laid out and the lines logged
as vLLM lays out and logs them (vllm/compilation/backends.py, VllmBackend.__call__ and
CompilerManager):

    vllm_compile_service.py CACHE_DIR

CACHE_DIR is the compilation config's own cache_dir (vLLM then keeps it, instead of the
folder under $VLLM_CACHE_ROOT/torch_compile_cache/HASH whose name hashes the traced files).
The graph's folder is CACHE_DIR/rank_0_0/backbone, holding computation_graph.py (written
once, when absent: the graph's print_readable(), whose nodes' "# File: PATH:LINE" comments
name the traced files), vllm_compile_cache.py (the handles), inductor_cache/ and
triton_cache/ (TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR, set through os.environ at run
time as vLLM sets them). Where vllm_compile_cache.py is there, vLLM loads the graph from
it and logs "Directly load the compiled graph(s) for dynamic shape from the cache"; this
stand-in logs that line in that case too, but compiles the graph itself (Inductor's own
caches make it quick): it shows what provgate reads, the line and the folder, not vLLM's
loading. The model is pvgmodel.layers.forward (from PYTHONPATH, as installed). Lines go to
stdout in vLLM's format, "(EngineCore_DP0 pid=N) INFO MM-DD HH:MM:SS [FILE:LINE] TEXT",
with one marker line per call ("PVG_DIAG selected=True"). Stays alive until killed."""
import ctypes
import os
import pprint
import sys
import time

try:
    ctypes.CDLL(None).prctl(15, b"VLLM::EngineCor", 0, 0, 0)  # PR_SET_NAME, 15 bytes
except OSError:
    pass

cache_dir = os.path.abspath(sys.argv[1])
local = os.path.join(cache_dir, "rank_0_0", "backbone")
os.makedirs(local, exist_ok=True)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(local, "inductor_cache")
os.environ["TRITON_CACHE_DIR"] = os.path.join(local, "triton_cache")

import torch  # noqa: E402

from pvgmodel import layers  # noqa: E402


def log(where, text):
    print(f"(EngineCore_DP0 pid={os.getpid()}) INFO {time.strftime('%m-%d %H:%M:%S')} "
          f"[{where}] {text}", flush=True)


log("backends.py:540", f"Using cache directory: {local} for vLLM's torch.compile")
cache_file = os.path.join(local, "vllm_compile_cache.py")
loading = os.path.exists(cache_file)


def vllm_backend(gm, example_inputs):
    from torch._inductor.compile_fx import compile_fx
    graph_file = os.path.join(local, "computation_graph.py")
    if not os.path.exists(graph_file):
        text = gm.print_readable(print_output=False)
        with open(graph_file, "w") as f:
            f.write("from __future__ import annotations\nimport torch\n" + text)
    t0 = time.time()
    compiled = compile_fx(gm, example_inputs)
    if loading:
        log("backends.py:161", "Directly load the compiled graph(s) for dynamic shape from "
            f"the cache, took {time.time() - t0:.3f} s")
    else:
        with open(cache_file, "w") as f:
            f.write(pprint.PrettyPrinter(indent=4).pformat(
                {("general", 0, "inductor"): ("pvg-standin", os.path.join(local, "inductor_cache"))}))
        log("backends.py:215", f"Compiling a graph for dynamic shape takes {time.time() - t0:.2f} s")
    return compiled


fwd = torch.compile(layers.forward, backend=vllm_backend, dynamic=True)
print("layers from", layers.__file__, flush=True)
x = torch.randn(16, 1024, device="cuda")
for _ in range(3):
    y = fwd(x)
    log("custom_ops.py:31", "PVG_DIAG selected=True")
torch.cuda.synchronize()
print("matches eager:", bool(torch.allclose(y, layers.forward(x), atol=1e-4)), flush=True)
print("ready", flush=True)
while True:
    time.sleep(3600)
