# SPDX-License-Identifier: MIT
# One process of run-overhead.sh: times four PyTorch loops and prints one line per loop,
#   LOOP LAUNCHES_PER_STEP US_PER_STEP_BLOCK1 US_PER_STEP_BLOCK2 ...
# The loops (bf16 on the GPU, weights from torch.randn):
#   small      softmax(x @ w + 1), x 8x4096, w 4096x4096: four small kernels, launch-bound
#   eager-1b   one decode step of a Llama-3.2-1B-shaped model (16 layers, hidden 2048,
#              MLP 8192, 32 query / 8 KV heads of 64), batch 8, KV cache 2048: eager
#   eager-8b   the same for Llama-3-8B shapes (32 layers, hidden 4096, MLP 14336, 32/8 heads
#              of 128), batch 8, KV cache 2048: eager
#   graph-8b   eager-8b's step captured once in a torch.cuda.CUDAGraph and replayed (how vLLM
#              runs decode by default): one graph launch a step
# Each loop warms up, then runs BLOCKS blocks, synchronises after each and prints its host
# time per step, then a line "clocks LOOP MHz..." with the SM clock (NVML) after each block
# and a line "steps LOOP N" with the steps it ran, warm-up included (the caller checks a
# witness file's graph launches against graph-8b's). Before each loop, a second of large
# matrix products brings the GPU to the clock it runs at when busy.
import ctypes
import os
import sys
import time

import torch
import torch.nn.functional as F

blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 10
which = sys.argv[2].split(",") if len(sys.argv) > 2 else ["small", "eager-1b", "eager-8b", "graph-8b"]
dev = "cuda"
dt = torch.bfloat16
torch.manual_seed(0)

if not hasattr(F, "rms_norm"):  # before PyTorch 2.4
    def _rms_norm(x, shape, w, eps=1e-6):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * w
    F.rms_norm = _rms_norm


def attention(q, k, v):
    try:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    except TypeError:  # before PyTorch 2.5: the KV heads repeated by hand
        n = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(n, 1), v.repeat_interleave(n, 1))
    except AttributeError:  # before PyTorch 2.0 (a check of this script off the GPU)
        n = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(n, 1), v.repeat_interleave(n, 1)
        return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5, dim=-1) @ v


class Decoder:
    def __init__(self, layers, hidden, mlp, heads, kv_heads, head_dim, batch, ctx, vocab):
        self.b, self.h, self.heads, self.kvh, self.hd = batch, hidden, heads, kv_heads, head_dim
        q, kv = heads * head_dim, kv_heads * head_dim
        self.split = [q, kv, kv]
        s = hidden ** -0.5
        self.layers = []
        for _ in range(layers):
            self.layers.append(dict(
                n1=torch.ones(hidden, device=dev, dtype=dt),
                qkv=torch.randn(hidden, q + 2 * kv, device=dev, dtype=dt) * s,
                o=torch.randn(q, hidden, device=dev, dtype=dt) * s,
                n2=torch.ones(hidden, device=dev, dtype=dt),
                gu=torch.randn(hidden, 2 * mlp, device=dev, dtype=dt) * s,
                d=torch.randn(mlp, hidden, device=dev, dtype=dt) * mlp ** -0.5,
                k=torch.randn(batch, kv_heads, ctx, head_dim, device=dev, dtype=dt),
                v=torch.randn(batch, kv_heads, ctx, head_dim, device=dev, dtype=dt),
            ))
        self.embed = torch.randn(vocab, hidden, device=dev, dtype=dt)
        self.nf = torch.ones(hidden, device=dev, dtype=dt)
        self.lm = torch.randn(hidden, vocab, device=dev, dtype=dt) * s
        self.tokens = torch.randint(0, vocab, (batch,), device=dev)
        self.pos = ctx - 1  # the new token's slot in the cache (fixed: the step is replayable)

    def step(self):
        b = self.b
        h = self.embed.index_select(0, self.tokens)
        for L in self.layers:
            x = F.rms_norm(h, (self.h,), L["n1"])
            q, k, v = (x @ L["qkv"]).split(self.split, dim=-1)
            L["k"][:, :, self.pos] = k.view(b, self.kvh, self.hd)
            L["v"][:, :, self.pos] = v.view(b, self.kvh, self.hd)
            a = attention(q.view(b, self.heads, 1, self.hd), L["k"], L["v"])
            h = h + a.reshape(b, -1) @ L["o"]
            x = F.rms_norm(h, (self.h,), L["n2"])
            g, u = (x @ L["gu"]).chunk(2, dim=-1)
            h = h + (F.silu(g) * u) @ L["d"]
        logits = F.rms_norm(h, (self.h,), self.nf) @ self.lm
        self.tokens.copy_(logits.argmax(dim=-1))


try:  # the SM clock after each block: the GPU lowers it when it idles, which slows a loop
    import pynvml
    pynvml.nvmlInit()
    _gpu = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    def sm_clock():
        return pynvml.nvmlDeviceGetClockInfo(_gpu, pynvml.NVML_CLOCK_SM)
except Exception:  # no NVML binding: clocks are reported as 0
    def sm_clock():
        return 0


def heat(seconds=1.0):
    """Keeps the GPU busy for a while, so that a loop starts at the clock a busy GPU runs at."""
    a = torch.randn(8192, 8192, device=dev, dtype=dt)
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
    del a


# PVG_OVH_TOGGLE=1, with libprovgate-witness-bench.so as CUDA_INJECTION64_PATH: every loop
# alternates blocks with the witness's callbacks off and on in this one process (off, on,
# on, off, ...) and prints "LOOP-off ..." and "LOOP-on ..."; "steps" then counts the steps
# run with the callbacks on. PVG_OVH_TOGGLE=detach: "off" detaches CUPTI from the process
# (cuptiFinalize) and "on" attaches it again, so that off is as if the witness was not there.
toggle = None
off_arg = -1 if os.environ.get("PVG_OVH_TOGGLE") == "detach" else 0
if os.environ.get("PVG_OVH_TOGGLE") in ("1", "detach"):
    torch.zeros(1, device=dev)  # the first CUDA call loads the injection library
    toggle = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).pvg_witness_bench_callbacks
    toggle.argtypes = [ctypes.c_int]
    if toggle(1) != 0:
        sys.exit("overhead-loop: the witness's callbacks cannot be switched (is it active?)")


def switch(on):
    if toggle(1 if on else off_arg) != 0:
        sys.exit("overhead-loop: the witness's callbacks could not be switched")


def timed_toggle(name, fn, steps, warm):
    heat()
    switch(True)
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    res = {False: [], True: []}
    for b in range(blocks):
        for on in ((False, True) if b % 2 == 0 else (True, False)):
            switch(on)
            t = time.perf_counter()
            for _ in range(steps):
                fn()
            torch.cuda.synchronize()
            res[on].append((time.perf_counter() - t) / steps * 1e6)
    switch(True)
    print(name + "-off", " ".join(f"{v:.3f}" for v in res[False]), flush=True)
    print(name + "-on", " ".join(f"{v:.3f}" for v in res[True]), flush=True)
    print("steps", name, warm + blocks * steps, flush=True)


def timed(name, fn, steps, warm):
    if toggle:
        return timed_toggle(name, fn, steps, warm)
    heat()
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    out, clk = [], []
    for _ in range(blocks):
        t = time.perf_counter()
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t) / steps * 1e6)
        clk.append(sm_clock())
    print(name, " ".join(f"{v:.3f}" for v in out), flush=True)
    print("clocks", name, " ".join(str(c) for c in clk), flush=True)
    print("steps", name, warm + blocks * steps, flush=True)


if "small" in which:
    x = torch.randn(8, 4096, device=dev, dtype=dt)
    w = torch.randn(4096, 4096, device=dev, dtype=dt)
    timed("small", lambda: torch.softmax(x @ w + 1.0, dim=-1), 500, 2000)

if "eager-1b" in which:
    m1 = Decoder(16, 2048, 8192, 32, 8, 64, 8, 2048, 128256)
    with torch.inference_mode():
        timed("eager-1b", m1.step, 40, 40)
    del m1

if "eager-8b" in which or "graph-8b" in which:
    m8 = Decoder(32, 4096, 14336, 32, 8, 128, 8, 2048, 128256)
    with torch.inference_mode():
        if "eager-8b" in which:
            timed("eager-8b", m8.step, 20, 20)
        if "graph-8b" in which:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    m8.step()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                m8.step()
            timed("graph-8b", g.replay, 20, 20)
