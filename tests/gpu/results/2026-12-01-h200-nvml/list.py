# The raw NVML process list (first call: the count; second: the entries) and the device memory
# of nvmlMemory_t (v1: reserved memory included). python3 list.py on the GPU machine.
import ctypes as C
n=C.CDLL("libnvidia-ml.so.1"); n.nvmlInit_v2()
class P(C.Structure): _fields_=[("pid",C.c_uint),("mem",C.c_ulonglong),("gi",C.c_uint),("ci",C.c_uint)]
class M(C.Structure): _fields_=[("total",C.c_ulonglong),("free",C.c_ulonglong),("used",C.c_ulonglong)]
h=C.c_void_p(); n.nvmlDeviceGetHandleByIndex_v2(0,C.byref(h))
cnt=C.c_uint(0); r0=n.nvmlDeviceGetComputeRunningProcesses_v3(h,C.byref(cnt),None)
a=(P*64)(); cnt2=C.c_uint(64); r1=n.nvmlDeviceGetComputeRunningProcesses_v3(h,C.byref(cnt2),a)
m=M(); n.nvmlDeviceGetMemoryInfo(h,C.byref(m))
print("first call rc",r0,"count",cnt.value,"| second rc",r1,"count",cnt2.value,"entries",[(a[i].pid,a[i].mem>>20) for i in range(cnt2.value)],"| device used MiB",m.used>>20)
