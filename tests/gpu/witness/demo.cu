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
//                   with PVG_OVH_TOGGLE=detach, off detaches CUPTI from the process; with
//                   PVG_OVH_TOGGLE=modules, off and on are the witness without and with its
//                   module recording (pvg_witness_bench_modules)
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
//   demo graph-cost NODES PAIRS [SAMPLES.csv]
//                   graph-pairs, and for each call the witness's own time in it: the sums
//                   that libprovgate-witness-bench.so keeps of its callbacks for the call
//                   (entry and exit, each bracketed by its timer: pvg_witness_bench_graph_cost),
//                   read and reset after each call, outside the timed call; the timer's ticks
//                   are converted to ns against CLOCK_MONOTONIC_RAW over the whole run.
//                   Prints, for counting on and off, the median, p90 and p99 of the witness's
//                   time per call, of its callback at the call's exit, of the empty bracket
//                   (two timer reads, per callback), the differences (of the medians and of
//                   each pair), the whole call's pairs as graph-pairs does, and how many calls
//                   had other than two callbacks; each call's numbers go to SAMPLES.csv
#include <chrono>
#include <cmath>
#include <ctime>
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
	const char *mode = getenv("PVG_OVH_TOGGLE");
	const int modules = mode && strcmp(mode, "modules") == 0;
	int (*toggle)(int) = h ? (int (*)(int))dlsym(h, modules ? "pvg_witness_bench_modules"
							       : "pvg_witness_bench_callbacks")
			       : NULL;
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

static double quantile(const double *sorted, long n, double q)
{
	return sorted[(long)floor(q * (double)(n - 1))];
}

static double *sorted_copy(const double *v, long n)
{
	double *c = new double[n];
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	return c;
}

/* "NAME median M p90 A p99 B" of v (n values) */
static void print_dist(int nodes, const char *name, const double *v, long n)
{
	double *c = sorted_copy(v, n);
	printf("graph-cost nodes=%d %s median %.1f p90 %.1f p99 %.1f\n", nodes, name, quantile(c, n, 0.5),
	       quantile(c, n, 0.9), quantile(c, n, 0.99));
	delete[] c;
}

static double mono_raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* graph-pairs with the witness's own time in each call (see the top of this file) */
static int graph_cost(int nodes, long pairs, const char *samples)
{
	const char *lib = getenv("CUDA_INJECTION64_PATH");
	pvg_wit_empty<<<1, 32>>>();
	CK(cudaDeviceSynchronize());
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*replay)(int) = h ? (int (*)(int))dlsym(h, "pvg_witness_bench_replay") : NULL;
	void (*cost)(uint64_t *) = h ? (void (*)(uint64_t *))dlsym(h, "pvg_witness_bench_graph_cost") : NULL;
	uint64_t (*ticks)(void) = h ? (uint64_t (*)(void))dlsym(h, "pvg_witness_bench_ticks") : NULL;
	if (!replay || !cost || !ticks) {
		fprintf(stderr, "graph-cost: no pvg_witness_bench_replay/_graph_cost/_ticks in CUDA_INJECTION64_PATH\n");
		return 1;
	}
	FILE *out = samples ? fopen(samples, "w") : NULL;
	if (samples && !out) {
		perror(samples);
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
	for (int k = 0; k < 2; k++) { // warm, both ways
		replay(k);
		graph_launch_ns(ge, s, 50);
	}
	uint64_t c[4];
	cost(c);
	const long n = 2 * pairs;
	/* per call: [0] whole call ns, then ticks: [1] witness, [2] empty brackets, [3] exit */
	double *call = new double[n], *wit = new double[n], *empty = new double[n], *exitt = new double[n];
	int *on_of = new int[n];
	long odd_callbacks = 0;
	const double ns0 = mono_raw_ns();
	const uint64_t tk0 = ticks();
	for (long i = 0; i < pairs; i++) {
		for (int k = 0; k < 2; k++) {
			int on = (i % 2 == 0) == (k == 0);
			long j = 2 * i + k;
			replay(on);
			cost(c); // reset
			auto t0 = std::chrono::steady_clock::now();
			cudaError_t r = cudaGraphLaunch(ge, s);
			auto t1 = std::chrono::steady_clock::now();
			cost(c);
			CK(r);
			CK(cudaStreamSynchronize(s));
			call[j] = std::chrono::duration<double, std::nano>(t1 - t0).count();
			wit[j] = (double)c[1];
			empty[j] = c[0] ? (double)c[2] / (double)c[0] : 0;
			exitt[j] = (double)c[3];
			on_of[j] = on;
			odd_callbacks += c[0] != 2;
		}
	}
	const uint64_t tk1 = ticks();
	const double ns1 = mono_raw_ns();
	replay(1);
	const double tpn = (double)(tk1 - tk0) / (ns1 - ns0);
	for (long j = 0; j < n; j++) {
		wit[j] /= tpn;
		empty[j] /= tpn;
		exitt[j] /= tpn;
	}
	if (out) {
		fprintf(out, "pair,counting,call_ns,witness_ns,empty_bracket_ns,witness_exit_ns\n");
		for (long j = 0; j < n; j++)
			fprintf(out, "%ld,%d,%.0f,%.1f,%.1f,%.1f\n", j / 2, on_of[j], call[j], wit[j], empty[j],
				exitt[j]);
		fclose(out);
	}
	printf("graph-cost nodes=%d pairs=%ld ticks_per_ns=%.6f run_s=%.1f calls_without_2_callbacks=%ld\n",
	       nodes, pairs, tpn, (ns1 - ns0) / 1e9, odd_callbacks);
	/* split by counting; d*: the differences of each pair (on - off) */
	double *v[2][4], *dw = new double[pairs], *dc = new double[pairs];
	for (int o = 0; o < 2; o++)
		for (int q = 0; q < 4; q++)
			v[o][q] = new double[pairs];
	long m[2] = { 0, 0 };
	for (long j = 0; j < n; j++) {
		int o = on_of[j];
		v[o][0][m[o]] = call[j];
		v[o][1][m[o]] = wit[j];
		v[o][2][m[o]] = empty[j];
		v[o][3][m[o]] = exitt[j];
		m[o]++;
	}
	for (long i = 0; i < pairs; i++) {
		dw[i] = v[1][1][i] - v[0][1][i];
		dc[i] = v[1][0][i] - v[0][0][i];
	}
	double med[2];
	for (int o = 0; o < 2; o++) {
		char name[64];
		snprintf(name, sizeof(name), "witness_%s_ns", o ? "on" : "off");
		print_dist(nodes, name, v[o][1], pairs);
		snprintf(name, sizeof(name), "witness_exit_%s_ns", o ? "on" : "off");
		print_dist(nodes, name, v[o][3], pairs);
		snprintf(name, sizeof(name), "empty_bracket_%s_ns", o ? "on" : "off");
		print_dist(nodes, name, v[o][2], pairs);
		double *sc = sorted_copy(v[o][1], pairs);
		med[o] = quantile(sc, pairs, 0.5);
		delete[] sc;
	}
	double *sw = sorted_copy(dw, pairs), *sdc = sorted_copy(dc, pairs);
	double mw = 0, mc = 0;
	for (long i = 0; i < pairs; i++) {
		mw += dw[i] / pairs;
		mc += dc[i] / pairs;
	}
	printf("graph-cost nodes=%d witness_on_minus_off_ns: of_medians %.1f pairs: median %.1f p25 %.1f "
	       "p75 %.1f p90 %.1f p99 %.1f mean %.1f\n",
	       nodes, med[1] - med[0], quantile(sw, pairs, 0.5), quantile(sw, pairs, 0.25),
	       quantile(sw, pairs, 0.75), quantile(sw, pairs, 0.9), quantile(sw, pairs, 0.99), mw);
	print_dist(nodes, "call_off_ns", v[0][0], pairs);
	print_dist(nodes, "call_on_ns", v[1][0], pairs);
	printf("graph-cost nodes=%d call_on_minus_off_ns: median %.0f p25 %.0f p75 %.0f mean %.0f\n", nodes,
	       quantile(sdc, pairs, 0.5), quantile(sdc, pairs, 0.25), quantile(sdc, pairs, 0.75), mc);
	delete[] sw;
	delete[] sdc;
	for (int o = 0; o < 2; o++)
		for (int q = 0; q < 4; q++)
			delete[] v[o][q];
	delete[] dw;
	delete[] dc;
	delete[] call;
	delete[] wit;
	delete[] empty;
	delete[] exitt;
	delete[] on_of;
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "graph-cost") == 0)
		return graph_cost(atoi(argv[2]), atol(argv[3]), argc == 5 ? argv[4] : NULL);
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
