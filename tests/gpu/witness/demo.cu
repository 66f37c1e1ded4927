// SPDX-License-Identifier: MIT
// The dispatch witness on a real GPU: launches with known names, grids and counts, through
// the runtime (<<<>>>), cudaLaunchKernelExC, the driver (cuLaunchKernel) and a CUDA graph,
// so that the witness file it leaves can be checked entry by entry (tests/gpu/witness/).
//   demo            the launches below, then "done"
//   demo bench N    N launches of an empty kernel; prints ns per launch (host side, with sync)
#include <chrono>
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

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "bench") == 0)
		return bench(atol(argv[2]));
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
