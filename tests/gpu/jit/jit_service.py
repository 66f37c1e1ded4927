# SPDX-License-Identifier: MIT
"""What record-jit.sh runs with the witness: MODE triton runs pvgjit.kern.scale (Triton
compiles it, or loads it from TRITON_CACHE_DIR); MODE aot compiles the same kernel for
sm_80 into the cache without running it (an entry for another arch); MODE compile runs a
torch.compile'd function (Inductor emits Triton kernels; its caches under
TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR), printing vLLM-style lines."""
import sys
import time

import torch

mode = sys.argv[1]
if mode == "triton":
    from pvgjit import kern
    x = torch.ones(8192, device="cuda")
    for _ in range(5):
        y = kern.scale(x, 3.0)
    torch.cuda.synchronize()
    print("triton ok", float(y[0]), flush=True)
elif mode == "aot":
    import triton
    from triton.backends.compiler import GPUTarget
    from pvgjit import kern
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "s": "fp32", "n": "i32", "BLOCK": "constexpr"}
    k = None
    # the constexprs' keys changed across Triton versions: by name, then by argument path
    for consts in ({"BLOCK": 1024}, {(4,): 1024}):
        try:
            src = triton.compiler.ASTSource(fn=kern.pvg_jit_scale, signature=sig,
                                            constexprs=consts)
            k = triton.compile(src, target=GPUTarget("cuda", 80, 32))
            break
        except Exception as e:  # noqa: BLE001
            print("aot attempt failed:", repr(e)[:300], flush=True)
    print("aot sm_80 ok", k.metadata.hash if hasattr(k.metadata, "hash") else "", flush=True)
else:
    def f(x):
        return torch.softmax(x * 2.0, dim=-1) + 1.0
    g = torch.compile(f)
    x = torch.randn(64, 4096, device="cuda")
    t0 = time.time()
    y = g(x)
    torch.cuda.synchronize()
    print(f"compile ok {time.time() - t0:.2f} s", bool(torch.allclose(y, f(x), atol=1e-5)), flush=True)
