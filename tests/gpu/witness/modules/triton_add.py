# SPDX-License-Identifier: MIT
# A Triton kernel (its module handed to the driver from memory); TRITON_CACHE_DIR says where
# its cache entry goes.
import torch, triton, triton.language as tl

@triton.jit
def pvg_triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

x = torch.ones(4096, device="cuda")
y = torch.ones(4096, device="cuda")
out = torch.empty_like(x)
for _ in range(5):
    pvg_triton_add[(4,)](x, y, out, 4096, BLOCK=1024)
torch.cuda.synchronize()
print("triton ok", float(out[0]))
