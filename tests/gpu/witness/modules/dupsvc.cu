// SPDX-License-Identifier: MIT
// A service that maps libpvgdup.so (the artifact) and libvendor_ops.so (an older copy of
// pvg_dup_kernel) and launches one of them:
//   dupsvc vendor|artifact|both N       N launches of that copy (both: N of each)
//   dupsvc lazy N SO                    prints "benchmark start REALTIME_NS", then dlopens SO
//                                       (libpvgdup.so) and launches its kernel N times, then
//                                       "benchmark end REALTIME_NS"
// Both libraries are linked by path at run time (dlopen), as a Python extension would be.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

typedef int (*launch_fn)(float *, int, int);

static unsigned long long now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static launch_fn load(const std::string &so, const char *sym)
{
	void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", so.c_str(), dlerror());
		exit(2);
	}
	return (launch_fn)dlsym(h, sym);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	std::string dir = argv[0];
	dir = dir.substr(0, dir.rfind('/') + 1);
	int n = atoi(argv[2]);
	float *x;
	cudaMalloc(&x, 4096 * sizeof(float));
	cudaMemset(x, 0, 4096 * sizeof(float));
	if (strcmp(argv[1], "lazy") == 0) {
		printf("benchmark start %llu\n", now_ns());
		fflush(stdout);
		launch_fn f = load(argc > 3 ? argv[3] : dir + "libpvgdup.so", "pvgdup_launch");
		int r = f(x, 4096, n);
		printf("benchmark end %llu rc=%d\n", now_ns(), r);
		return r;
	}
	launch_fn art = load(dir + (getenv("PVGDUP_SO") ? getenv("PVGDUP_SO") : "libpvgdup.so"), "pvgdup_launch");
	launch_fn ven = load(dir + "libvendor_ops.so", "vendor_launch");
	int r = 0;
	if (!strcmp(argv[1], "vendor") || !strcmp(argv[1], "both"))
		r |= ven(x, 4096, n);
	if (!strcmp(argv[1], "artifact") || !strcmp(argv[1], "both"))
		r |= art(x, 4096, n);
	float h0;
	cudaMemcpy(&h0, x, sizeof(h0), cudaMemcpyDeviceToHost);
	printf("%s n=%d x[0]=%g rc=%d\n", argv[1], n, h0, r);
	return r;
}
