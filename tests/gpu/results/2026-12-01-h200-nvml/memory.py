# NVML as gate 5 reads it from inside a pid namespace: the caller's listed processes, and the
# device's memory in use (nvmlMemory_v2_t, reserved memory apart). Run with python3 on the GPU
# machine; tests/gpu/results/2026-12-01-h200-nvml/README.md says how.
import ctypes as C
n = C.CDLL("libnvidia-ml.so.1")
n.nvmlInit_v2()
class P(C.Structure):
    _fields_ = [("pid", C.c_uint), ("mem", C.c_ulonglong), ("gi", C.c_uint), ("ci", C.c_uint)]
class M2(C.Structure):
    _fields_ = [("version", C.c_uint), ("total", C.c_ulonglong), ("reserved", C.c_ulonglong),
                ("free", C.c_ulonglong), ("used", C.c_ulonglong)]
h = C.c_void_p()
n.nvmlDeviceGetHandleByIndex_v2(0, C.byref(h))
a = (P * 64)()
c = C.c_uint(64)
n.nvmlDeviceGetComputeRunningProcesses_v3(h, C.byref(c), a)
m = M2()
m.version = C.sizeof(M2) | (2 << 24)
r = n.nvmlDeviceGetMemoryInfo_v2(h, C.byref(m))
print("sizeof", C.sizeof(M2), "rc", r, "procs", [(a[i].pid, a[i].mem >> 20) for i in range(c.value)],
      "listed MiB", sum(a[i].mem for i in range(c.value)) >> 20, "used MiB", m.used >> 20,
      "reserved MiB", m.reserved >> 20, "total MiB", m.total >> 20)
