#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A folder of vLLM's torch.compile cache, laid out as vLLM lays it out, for gate 7's
compile-cache tests.

    vllm-compile-cache.py ROOT HASH RANK DP PREFIX EPOCH TRACED.py...

makes ROOT/torch_compile_cache/HASH/rank_RANK_DP/PREFIX/ (vllm/compilation/backends.py,
VllmBackend.__call__: local_cache_dir = os.path.join(cache_dir, f"rank_{rank}_{dp_rank}",
self.prefix), cache_dir = os.path.join(envs.VLLM_CACHE_ROOT, "torch_compile_cache", hash_key))
holding what CompilerManager writes there:

  computation_graph.py   "from __future__ import annotations\\nimport torch\\n" +
                         split_gm.print_readable(), "<lambda>" replaced by "GraphModule"; here
                         the graph is traced by torch.fx itself (Debian's torch), with stack
                         traces recorded, from one function per TRACED file whose code object
                         carries that file's name, so that each node's "# File: PATH:LINE"
                         comment names it as a graph Dynamo traced from the file would;
  vllm_compile_cache.py  pprint.PrettyPrinter(indent=4).pformat(cache), the cache mapping
                         (compile_range, graph_index, compiler name) to InductorAdaptor's
                         handle (hash, path of the compiled module in inductor_cache);
  inductor_cache/, triton_cache/  (InductorAdaptor.initialize_cache).

Every file and folder gets mtime EPOCH (when the cache was written). Prints the folder.
"""
import contextlib
import io
import linecache
import os
import pprint
import sys

import torch
import torch.fx as fx


def graph_text(traced):
    fns = []
    for i, path in enumerate(traced):
        src = f"def op_{i}(x):\n    return x * {i + 2} + 1\n"
        # the source as the file's, for the "code:" part of the comment
        linecache.cache[path] = (len(src), None, src.splitlines(True), path)
        g = {"torch": torch}
        exec(compile(src, path, "exec"), g)
        fns.append(g[f"op_{i}"])

    class Model(torch.nn.Module):
        def forward(self, x):
            for f in fns:
                x = f(x)
            return x.relu()

    tracer = fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(Model())
    gm = fx.GraphModule(tracer.root, graph)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        text = gm.print_readable()  # torch 1.13 prints it; later versions return it
    text = text if isinstance(text, str) else out.getvalue()
    return ("from __future__ import annotations\nimport torch\n" + text).replace(
        "<lambda>", "GraphModule")


def main():
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    root, hash_key, rank, dp, prefix, epoch = sys.argv[1:7]
    traced = sys.argv[7:]
    base = os.path.join(root, "torch_compile_cache", hash_key)
    local = os.path.join(base, f"rank_{rank}_{dp}", prefix)
    os.makedirs(os.path.join(local, "inductor_cache", "fx"), exist_ok=True)
    os.makedirs(os.path.join(local, "triton_cache"), exist_ok=True)
    module = os.path.join(local, "inductor_cache", "fx", "c3kqbuogwn2x.py")
    with open(module, "w") as f:
        f.write("# compiled module (stand-in)\n")
    with open(os.path.join(local, "computation_graph.py"), "w") as f:
        f.write(graph_text(traced))
    cache = {(None, 0, "inductor"): ("fwhr3tbwqzkt4gfyqxkpkeovbsle6xfx5qs6thwvbmwrzrd6swjr",
                                     module)}
    with open(os.path.join(local, "vllm_compile_cache.py"), "w") as f:
        f.write(pprint.PrettyPrinter(indent=4).pformat(cache))
    t = float(epoch)
    for d, dirs, files in os.walk(base, topdown=False):
        for n in files + dirs:
            os.utime(os.path.join(d, n), (t, t))
        os.utime(d, (t, t))
    print(local)


if __name__ == "__main__":
    main()
