# SPDX-License-Identifier: MIT
"""A service whose engine runs a Triton kernel from an installed .py, for run-jit.sh.

    triton_service.py MODE N

MODE run: imports pvgjit.kern (from PYTHONPATH, as installed), runs kern.scale N times,
checks the result, prints "ready", and stays alive (the witness keeps its file) until
killed. MODE idle: imports the module and never calls its kernel (the change's kernel not
run). The process names itself PVG::EngineCore (comm) so that provgate's service match can
find it as it finds the extension's service."""
import ctypes
import sys
import time

try:
    ctypes.CDLL(None).prctl(15, b"PVG::EngineCore", 0, 0, 0)  # PR_SET_NAME
except OSError:
    pass

import torch  # noqa: E402

from pvgjit import kern  # noqa: E402

mode, n = sys.argv[1], int(sys.argv[2])
print("kern from", kern.__file__, flush=True)
if mode == "run":
    x = torch.arange(8192, device="cuda", dtype=torch.float32)
    for _ in range(n):
        y = kern.scale(x, 3.0)
    torch.cuda.synchronize()
    want = x * 3.0
    print("kernel result", "matches x*3" if torch.equal(y, want) else
          f"differs from x*3 (y[1]={float(y[1])})", flush=True)
else:
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
print("ready", flush=True)
while True:
    time.sleep(3600)
