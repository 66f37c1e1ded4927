// SPDX-License-Identifier: MIT
// Driver-API loads, each launched once (grid 1, block 32) and asked cuFuncGetModule:
//   modload DIR   DIR holds k.cubin (sm_90), k.ptx, k_fat.fatbin
// 1 cuModuleLoad(k.cubin)  2 cuModuleLoadData(cubin bytes)  3 cuModuleLoadData(PTX text)
// 4 cuLibraryLoadData(cubin bytes)  5 cuModuleLoadFatBinary(fatbin bytes)
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s; cuGetErrorString(r_, &s); printf("%s: %s\n", #x, s); } } while (0)

static std::vector<char> slurp(const std::string &p, bool nul)
{
	std::vector<char> v;
	FILE *f = fopen(p.c_str(), "rb");
	if (!f) { perror(p.c_str()); exit(2); }
	char b[65536];
	size_t n;
	while ((n = fread(b, 1, sizeof(b), f)) > 0) v.insert(v.end(), b, b + n);
	fclose(f);
	if (nul) v.push_back(0);
	return v;
}

static void run(const char *what, CUfunction f, CUdeviceptr x)
{
	void *args[] = { &x, nullptr };
	int n = 32;
	args[1] = &n;
	CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, nullptr));
	CK(cuCtxSynchronize());
	CUmodule m = nullptr;
	CK(cuFuncGetModule(&m, f));
	printf("%s: function %p module %p\n", what, (void *)f, (void *)m);
}

int main(int argc, char **argv)
{
	std::string d = argc > 1 ? argv[1] : ".";
	CK(cuInit(0));
	CUdevice dev;
	CUcontext ctx;
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CUdeviceptr x;
	CK(cuMemAlloc(&x, 4096));
	CUmodule m;
	CUfunction f;
	CK(cuModuleLoad(&m, (d + "/k.cubin").c_str()));
	printf("cuModuleLoad -> module %p\n", (void *)m);
	CK(cuModuleGetFunction(&f, m, "pvg_dup_kernel"));
	run("1 file", f, x);
	auto cubin = slurp(d + "/k.cubin", false);
	CK(cuModuleLoadData(&m, cubin.data()));
	printf("cuModuleLoadData(cubin %p) -> module %p\n", (void *)cubin.data(), (void *)m);
	CK(cuModuleGetFunction(&f, m, "pvg_dup_kernel"));
	run("2 data cubin", f, x);
	auto ptx = slurp(d + "/k.ptx", true);
	CK(cuModuleLoadData(&m, ptx.data()));
	printf("cuModuleLoadData(ptx %p) -> module %p\n", (void *)ptx.data(), (void *)m);
	CK(cuModuleGetFunction(&f, m, "pvg_dup_kernel"));
	run("3 data ptx", f, x);
	CUlibrary lib;
	CK(cuLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
	CUkernel k;
	CK(cuLibraryGetKernel(&k, lib, "pvg_dup_kernel"));
	CK(cuKernelGetFunction(&f, k));
	CUmodule lm = nullptr;
	CK(cuLibraryGetModule(&lm, lib));
	printf("cuLibraryLoadData -> library %p module %p\n", (void *)lib, (void *)lm);
	run("4 library data", f, x);
	auto fat = slurp(d + "/k_fat.fatbin", false);
	CK(cuModuleLoadFatBinary(&m, fat.data()));
	printf("cuModuleLoadFatBinary(%p) -> module %p\n", (void *)fat.data(), (void *)m);
	CK(cuModuleGetFunction(&f, m, "pvg_dup_kernel"));
	run("5 fatbinary", f, x);
	CK(cuModuleUnload(m));
	printf("done\n");
	return 0;
}
