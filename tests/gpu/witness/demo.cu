// SPDX-License-Identifier: MIT
// The dispatch witness on a real GPU: launches with known names, grids and counts, through
// the runtime (<<<>>>), cudaLaunchKernelExC, the driver (cuLaunchKernel) and a CUDA graph,
// so that the witness file it leaves can be checked entry by entry (tests/gpu/witness/).
//   demo            the launches below, then "done"
//   demo bench N    N launches of an empty kernel; prints ns per launch (host side, with sync)
//   demo bench-toggle N B
//                   with libprovgate-witness-bench.so as CUDA_INJECTION64_PATH: B blocks of N
//                   launches each with the witness's callbacks off, B with them on, alternating
//                   (off, on, on, off, ...); prints "tight-off NS..." and "tight-on NS...";
//                   with PVG_OVH_TOGGLE=detach, off detaches CUPTI from the process
#include <chrono>
#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void pvg_wit_scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

__global__ void pvg_wit_add(float *x, const float *y, int n)
{
	int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += y[i];
}

extern "C" __global__ void pvg_wit_plain(int *x)
{
	atomicAdd(x, 1);
}

__global__ void pvg_wit_empty() {}

#define CK(e)                                                                                    \
	do {                                                                                     \
		cudaError_t r_ = (e);                                                            \
		if (r_ != cudaSuccess) {                                                         \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #e,                \
				cudaGetErrorString(r_));                                         \
			exit(1);                                                                 \
		}                                                                                \
	} while (0)

static int bench(long n)
{
	pvg_wit_empty<<<1, 32>>>();
	CK(cudaDeviceSynchronize());
	auto t0 = std::chrono::steady_clock::now();
	for (long i = 0; i < n; i++)
		pvg_wit_empty<<<1, 32>>>();
	CK(cudaDeviceSynchronize());
	auto t1 = std::chrono::steady_clock::now();
	double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
	printf("bench launches=%ld ns_per_launch=%.1f launches_per_s=%.0f\n", n, ns / n, n * 1e9 / ns);
	return 0;
}

static double launches_ns(long n)
{
	auto t0 = std::chrono::steady_clock::now();
	for (long i = 0; i < n; i++)
		pvg_wit_empty<<<1, 32>>>();
	CK(cudaDeviceSynchronize());
	auto t1 = std::chrono::steady_clock::now();
	return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

static int bench_toggle(long n, int blocks)
{
	const char *lib = getenv("CUDA_INJECTION64_PATH");
	pvg_wit_empty<<<1, 32>>>(); // the injection library is loaded by the first CUDA call
	CK(cudaDeviceSynchronize());
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*toggle)(int) = h ? (int (*)(int))dlsym(h, "pvg_witness_bench_callbacks") : NULL;
	const char *mode = getenv("PVG_OVH_TOGGLE");
	const int off_arg = mode && strcmp(mode, "detach") == 0 ? -1 : 0;
	if (!toggle || toggle(1) != 0) {
		fprintf(stderr, "bench-toggle: no pvg_witness_bench_callbacks in CUDA_INJECTION64_PATH\n");
		return 1;
	}
	launches_ns(n); // warm
	double *off = new double[blocks], *on = new double[blocks];
	for (int b = 0; b < blocks; b++) {
		for (int k = 0; k < 2; k++) {
			int want_on = (b % 2 == 0) == (k == 1); // off, on, then on, off
			if (toggle(want_on ? 1 : off_arg) != 0) {
				fprintf(stderr, "bench-toggle: the callbacks could not be switched\n");
				return 1;
			}
			(want_on ? on : off)[b] = launches_ns(n);
		}
	}
	toggle(1);
	printf("tight-off");
	for (int b = 0; b < blocks; b++)
		printf(" %.1f", off[b]);
	printf("\ntight-on");
	for (int b = 0; b < blocks; b++)
		printf(" %.1f", on[b]);
	printf("\n");
	delete[] off;
	delete[] on;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "bench") == 0)
		return bench(atol(argv[2]));
	if (argc == 4 && strcmp(argv[1], "bench-toggle") == 0)
		return bench_toggle(atol(argv[2]), atoi(argv[3]));
	const int n = 1024;
	float *x, *y;
	int *c;
	CK(cudaMalloc(&x, n * sizeof(float)));
	CK(cudaMalloc(&y, n * sizeof(float)));
	CK(cudaMalloc(&c, sizeof(int)));
	CK(cudaMemset(x, 0, n * sizeof(float)));
	CK(cudaMemset(y, 0, n * sizeof(float)));
	CK(cudaMemset(c, 0, sizeof(int)));

	// runtime: scale twice with one grid, add once with another
	pvg_wit_scale<<<8, 128>>>(x, 2.0f, n);
	pvg_wit_scale<<<8, 128>>>(x, 2.0f, n);
	pvg_wit_add<<<dim3(4, 2), 64>>>(x, y, n);
	CK(cudaGetLastError());

	// cudaLaunchKernelExC: add with grid 5 x 256
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(5);
	cfg.blockDim = dim3(256);
	void *args_add[] = { &x, &y, (void *)&n };
	CK(cudaLaunchKernelExC(&cfg, (const void *)pvg_wit_add, args_add));

	// driver: plain (extern "C") through cuLaunchKernel, grid 3 x 32
	cudaFunction_t f;
	CK(cudaGetFuncBySymbol(&f, (const void *)pvg_wit_plain));
	void *args_plain[] = { &c };
	CUresult cr = cuLaunchKernel((CUfunction)f, 3, 1, 1, 32, 1, 1, 0, 0, args_plain, nullptr);
	if (cr != CUDA_SUCCESS) {
		fprintf(stderr, "cuLaunchKernel: %d\n", (int)cr);
		return 1;
	}

	// a graph: scale 16 x 32 captured once, the graph launched twice
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	pvg_wit_scale<<<16, 32, 0, s>>>(x, 0.5f, n);
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaDeviceSynchronize());
	int host_c = 0;
	CK(cudaMemcpy(&host_c, c, sizeof(int), cudaMemcpyDeviceToHost));
	printf("done plain_count=%d (expect 96)\n", host_c);
	return host_c == 96 ? 0 : 1;
}
