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
//   demo graph-bench NODES LAUNCHES BLOCKS
//                   with libprovgate-witness-bench.so: a graph of NODES empty kernel nodes
//                   (independent, built with cudaGraphAddKernelNode), instantiated once; then
//                   BLOCKS rounds of five blocks in turn (ABCDE, EDCBA, ...): the witness
//                   detached ("none"), CUPTI subscribed with no callback ("subscribed"), the
//                   launch callbacks alone ("launch-only", as before graphs were read), all
//                   with replay counting off ("count-off": cuGraphLaunch counted in the header
//                   only) and on ("count-on", as installed); each block LAUNCHES cuGraphLaunch
//                   calls, each timed alone (the stream is synchronized after each, untimed);
//                   prints the median ns per call of each block, and the time of the
//                   instantiation with the witness attached
//   demo graph-pairs NODES PAIRS
//                   with libprovgate-witness-bench.so: the same graph, PAIRS pairs of
//                   cuGraphLaunch calls, one with replay counting and one without (switched
//                   between the two calls, the order alternating), each timed alone; prints
//                   the median, quartiles and mean of the differences
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* the median of n calls, each timed alone */
static double graph_launch_ns(cudaGraphExec_t ge, cudaStream_t s, long n)
{
	double *t = new double[n];
	for (long i = 0; i < n; i++) {
		auto t0 = std::chrono::steady_clock::now();
		cudaError_t r = cudaGraphLaunch(ge, s);
		auto t1 = std::chrono::steady_clock::now();
		CK(r);
		CK(cudaStreamSynchronize(s));
		t[i] = std::chrono::duration<double, std::nano>(t1 - t0).count();
	}
	qsort(t, n, sizeof(*t), cmp_double);
	double m = t[n / 2];
	delete[] t;
	return m;
}

static int graph_bench(int nodes, long launches, int blocks)
{
	const char *lib = getenv("CUDA_INJECTION64_PATH");
	pvg_wit_empty<<<1, 32>>>(); // the injection library is loaded by the first CUDA call
	CK(cudaDeviceSynchronize());
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*toggle)(int) = h ? (int (*)(int))dlsym(h, "pvg_witness_bench_callbacks") : NULL;
	int (*replay)(int) = h ? (int (*)(int))dlsym(h, "pvg_witness_bench_replay") : NULL;
	if (!toggle || !replay || toggle(1) != 0) {
		fprintf(stderr, "graph-bench: no pvg_witness_bench_callbacks/_replay in CUDA_INJECTION64_PATH\n");
		return 1;
	}
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaGraph_t g;
	CK(cudaGraphCreate(&g, 0));
	cudaKernelNodeParams p = {};
	p.func = (void *)pvg_wit_empty;
	p.gridDim = dim3(1);
	p.blockDim = dim3(32);
	p.kernelParams = nullptr;
	for (int i = 0; i < nodes; i++) {
		cudaGraphNode_t node;
		CK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &p));
	}
	cudaGraphExec_t ge;
	auto t0 = std::chrono::steady_clock::now();
	CK(cudaGraphInstantiate(&ge, g, 0));
	auto t1 = std::chrono::steady_clock::now();
	printf("graph-bench nodes=%d instantiate_us=%.1f\n", nodes,
	       std::chrono::duration<double, std::micro>(t1 - t0).count());
	graph_launch_ns(ge, s, launches / 4 + 1); // warm
	/* none: CUPTI detached; subscribed: attached, no callback enabled; launch-only: the
	 * callbacks of before graphs were read; count-off: all, a replay counted in the header
	 * only; count-on: all, as installed */
	const char *names[5] = { "none", "subscribed", "launch-only", "count-off", "count-on" };
	const int mode[5] = { -1, 0, 2, 1, 1 };
	double *ns[5];
	for (int m = 0; m < 5; m++)
		ns[m] = new double[blocks];
	for (int b = 0; b < blocks; b++) {
		for (int k = 0; k < 5; k++) {
			int m = b % 2 == 0 ? k : 4 - k;
			if (toggle(mode[m]) != 0 || replay(m == 4) < 0) {
				fprintf(stderr, "graph-bench: the witness could not be switched\n");
				return 1;
			}
			ns[m][b] = graph_launch_ns(ge, s, launches);
		}
	}
	toggle(1);
	replay(1);
	for (int m = 0; m < 5; m++) {
		printf("graph-bench nodes=%d %s", nodes, names[m]);
		for (int b = 0; b < blocks; b++)
			printf(" %.1f", ns[m][b]);
		printf("\n");
		delete[] ns[m];
	}
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	return 0;
}

/* PAIRS pairs of cuGraphLaunch calls of one exec, one with replay counting and one without
 * (the order alternating from pair to pair), each timed alone; the difference of each pair */
static int graph_pairs(int nodes, long pairs)
{
	const char *lib = getenv("CUDA_INJECTION64_PATH");
	pvg_wit_empty<<<1, 32>>>();
	CK(cudaDeviceSynchronize());
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*replay)(int) = h ? (int (*)(int))dlsym(h, "pvg_witness_bench_replay") : NULL;
	if (!replay) {
		fprintf(stderr, "graph-pairs: no pvg_witness_bench_replay in CUDA_INJECTION64_PATH\n");
		return 1;
	}
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaGraph_t g;
	CK(cudaGraphCreate(&g, 0));
	cudaKernelNodeParams p = {};
	p.func = (void *)pvg_wit_empty;
	p.gridDim = dim3(1);
	p.blockDim = dim3(32);
	for (int i = 0; i < nodes; i++) {
		cudaGraphNode_t node;
		CK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &p));
	}
	cudaGraphExec_t ge;
	CK(cudaGraphInstantiate(&ge, g, 0));
	graph_launch_ns(ge, s, 100); // warm
	double *d = new double[pairs], *off = new double[pairs];
	for (long i = 0; i < pairs; i++) {
		double t[2];
		for (int k = 0; k < 2; k++) {
			int on = (i % 2 == 0) == (k == 0);
			replay(on);
			auto t0 = std::chrono::steady_clock::now();
			cudaError_t r = cudaGraphLaunch(ge, s);
			auto t1 = std::chrono::steady_clock::now();
			CK(r);
			CK(cudaStreamSynchronize(s));
			t[on] = std::chrono::duration<double, std::nano>(t1 - t0).count();
		}
		d[i] = t[1] - t[0];
		off[i] = t[0];
	}
	replay(1);
	qsort(d, pairs, sizeof(*d), cmp_double);
	qsort(off, pairs, sizeof(*off), cmp_double);
	double mean = 0;
	for (long i = 0; i < pairs; i++)
		mean += d[i] / pairs;
	printf("graph-pairs nodes=%d pairs=%ld off_median_ns=%.0f on_minus_off_ns: median %.0f "
	       "p25 %.0f p75 %.0f mean %.0f\n",
	       nodes, pairs, off[pairs / 2], d[pairs / 2], d[pairs / 4], d[3 * pairs / 4], mean);
	delete[] d;
	delete[] off;
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "graph-pairs") == 0)
		return graph_pairs(atoi(argv[2]), atol(argv[3]));
	if (argc == 5 && strcmp(argv[1], "graph-bench") == 0)
		return graph_bench(atoi(argv[2]), atol(argv[3]), atoi(argv[4]));
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
