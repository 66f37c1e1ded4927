/* SPDX-License-Identifier: MIT */
/*
 * A CUDA "service" for the witness's tests without a GPU (never installed): it runs on the
 * stand-in driver (cuda-standin.c, loaded as libcuda.so.1) and makes the driver calls a
 * script names, one command a line on stdin; after each it prints "ok N" (N: the line's
 * number) or "error N ...", so that a test can drive a live process through a FIFO.
 *   init                                cuInit: loads $CUDA_INJECTION64_PATH (the witness)
 *   launch NAME G B [STREAM]            cuLaunchKernel; G and B as x,y,z
 *   stream S                            cuStreamCreate
 *   capture S | endcapture S GRAPH      stream capture into GRAPH
 *   graph GRAPH                         cuGraphCreate
 *   kernel GRAPH NODE NAME G B          cuGraphAddKernelNode
 *   empty GRAPH NODE                    cuGraphAddEmptyNode
 *   child GRAPH NODE CHILD              cuGraphAddChildGraphNode (the driver embeds a copy)
 *   inner NODE GRAPH                    GRAPH = the copy a child node holds (its nodes are the
 *                                       ones an exec of the outer graph pairs with)
 *   conditional GRAPH NODE BODY RUNS    a conditional node whose body runs RUNS times a replay
 *   instantiate EXEC GRAPH [FLAGS]      cuGraphInstantiateWithFlags
 *   quiet-instantiate EXEC GRAPH        an exec CUPTI's resource callback alone tells of
 *   replay EXEC N [STREAM]              N x cuGraphLaunch
 *   setk EXEC NODE NAME G B             cuGraphExecKernelNodeSetParams
 *   setchild EXEC NODE GRAPH            cuGraphExecChildGraphNodeSetParams
 *   enable EXEC NODE 0|1                cuGraphNodeSetEnabled
 *   update EXEC GRAPH                   cuGraphExecUpdate
 *   quiet-set EXEC NODE NAME            a node's kernel changed behind the calls followed
 *   destroy EXEC                        cuGraphExecDestroy
 *   file VAR PATH                       VAR = PATH's bytes, read into memory
 *   dlimage VAR SO                      dlopen SO (cuda-image.c): VAR = its standin_image, in
 *                                       its mapped data
 *   jit PATH                            the ELF the next PTX text compiles to (the stand-in's)
 *   modload MOD VAR                     cuModuleLoadData of VAR's bytes (a cubin or PTX text)
 *   modfunc F MOD NAME                  cuModuleGetFunction
 *   modunload MOD                       cuModuleUnload
 *   libload LIB VAR                     cuLibraryLoadData of VAR's bytes (as the runtime
 *                                       registers a fatbin; eager or lazy by
 *                                       $CUDA_MODULE_LOADING)
 *   libkernel K LIB NAME                cuLibraryGetKernel
 *   rtkernel K LIB NAME                 a CUkernel the way the runtime gets one (no call)
 *   kfunc F K                           cuKernelGetFunction
 *   launchv F|K G B                     cuLaunchKernel of a CUfunction or CUkernel variable
 *   truth                               what the stand-in ran ("ran eager|graph NAME ...")
 *   pid                                 "pid N"
 *   sleep MS
 * At the end of input it exits (the witness writes its final file). Names are variables of
 * the script. A kernel named in launch, kernel, setk or quiet-set is a function of the module
 * STANDIN_KERNELS (tests/fixtures/witness-modules/standin-kernels.cu compiled by nvcc), loaded
 * with cuModuleLoadData at the first launch of one of its kernels and got with
 * cuModuleGetFunction, as with a real driver every launched function belongs to a loaded
 * module; a name that module does not define is a function made by name alone, with no
 * module (its launches' code is not known).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

void standin_truth(FILE *out);
CUfunction standin_function(const char *name);
CUgraphNode standin_add_conditional(CUgraph g, CUgraph body, unsigned runs);
CUgraphExec standin_instantiate_quietly(CUgraph g);
void standin_set_quietly(CUgraphExec e, CUgraphNode node, CUfunction f);
void standin_jit_output(const void *elf, size_t size);
CUkernel standin_kernel_quietly(CUlibrary lib, const char *name);

/* PATH's bytes (malloc'd, NUL-terminated), NULL on failure */
static void *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0, r;
	do {
		if (n + 4097 > cap) {
			cap = cap ? 2 * cap : 65536;
			char *g = realloc(buf, cap);
			if (!g)
				break;
			buf = g;
		}
		r = fread(buf + n, 1, 4096, f);
		n += r;
	} while (r > 0);
	fclose(f);
	if (buf)
		buf[n] = 0;
	*size = n;
	return buf;
}

struct var {
	char name[160];
	void *p;
};
static struct var vars[1024];
static size_t n_vars;

static void *get(const char *name)
{
	for (size_t i = 0; i < n_vars; i++)
		if (!strcmp(vars[i].name, name))
			return vars[i].p;
	return NULL;
}

static void set(const char *name, void *p)
{
	for (size_t i = 0; i < n_vars; i++)
		if (!strcmp(vars[i].name, name)) {
			vars[i].p = p;
			return;
		}
	if (n_vars == 1024)
		abort();
	snprintf(vars[n_vars].name, sizeof(vars[0].name), "%s", name);
	vars[n_vars++].p = p;
}

/* the kernels' cubin in STANDIN_KERNELS' mapped data (dlopen'd at the first kernel asked
 * for), its size, and the module loaded from it */
static const unsigned char *kernels_image;
static size_t kernels_size;
static CUmodule kernels;

/* 1 when the cubin has a section ".text.NAME": NAME is one of its kernels */
static int kernels_define(const char *name)
{
	char sec[160];
	int n = snprintf(sec, sizeof(sec), ".text.%s", name);
	if (n < 0 || (size_t)n >= sizeof(sec))
		return 0;
	for (size_t i = 0; i + (size_t)n + 1 <= kernels_size; i++)
		if (!memcmp(kernels_image + i, sec, (size_t)n + 1))
			return 1;
	return 0;
}

/* NAME's function in the kernels' module (loaded now if it was not, from the shared object's
 * mapped data, as an application loads the code its own files hold), NULL when the module
 * does not define it */
static CUfunction module_function(const char *name)
{
	if (!kernels_image) {
		void *h = dlopen(STANDIN_KERNELS, RTLD_NOW | RTLD_LOCAL);
		kernels_image = h ? dlsym(h, "standin_image") : NULL;
		uint64_t shoff;
		uint16_t shentsize, shnum;
		if (!kernels_image || memcmp(kernels_image, "\177ELF", 4) != 0) {
			fprintf(stderr, "cuda-sim: %s: no cubin (%s)\n", STANDIN_KERNELS, dlerror());
			exit(1);
		}
		memcpy(&shoff, kernels_image + 40, 8);
		memcpy(&shentsize, kernels_image + 58, 2);
		memcpy(&shnum, kernels_image + 60, 2);
		kernels_size = (size_t)(shoff + (uint64_t)shentsize * shnum);
	}
	if (!kernels_define(name))
		return NULL;
	CUresult r;
	if (!kernels && (r = cuModuleLoadData(&kernels, kernels_image)) != CUDA_SUCCESS) {
		fprintf(stderr, "cuda-sim: cuModuleLoadData(%s): %d\n", STANDIN_KERNELS, (int)r);
		exit(1);
	}
	CUfunction f = NULL;
	if ((r = cuModuleGetFunction(&f, kernels, name)) != CUDA_SUCCESS) {
		fprintf(stderr, "cuda-sim: cuModuleGetFunction(%s): %d\n", name, (int)r);
		exit(1);
	}
	return f;
}

static CUfunction fn(const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "fn:%.120s", name);
	CUfunction f = get(key);
	if (!f) {
		f = module_function(name);
		if (!f)
			f = standin_function(name);
		set(key, f);
	}
	return f;
}

static int dims(const char *s, unsigned d[3])
{
	d[0] = d[1] = d[2] = 1;
	return sscanf(s, "%u,%u,%u", &d[0], &d[1], &d[2]) >= 1 ? 0 : -1;
}

static CUDA_KERNEL_NODE_PARAMS kparams(const char *name, const unsigned g[3], const unsigned b[3])
{
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof(p));
	p.func = fn(name);
	p.gridDimX = g[0], p.gridDimY = g[1], p.gridDimZ = g[2];
	p.blockDimX = b[0], p.blockDimY = b[1], p.blockDimZ = b[2];
	return p;
}

static volatile sig_atomic_t terminated;

static void on_term(int sig)
{
	(void)sig;
	terminated = 1;
}

static int run(char **a, int n)
{
	unsigned g[3], b[3];
	CUgraph gr;
	CUgraphNode nd;
	CUgraphExec ex;
	CUstream st;
#define IS(cmd, args) (!strcmp(a[0], cmd) && n >= (args) + 1)
	if (IS("init", 0))
		return cuInit(0);
	if (IS("launch", 3)) {
		if (dims(a[2], g) || dims(a[3], b))
			return -1;
		return cuLaunchKernel(fn(a[1]), g[0], g[1], g[2], b[0], b[1], b[2], 0,
				      n > 4 ? get(a[4]) : NULL, NULL, NULL);
	}
	if (IS("stream", 1)) {
		int r = cuStreamCreate(&st, 0);
		set(a[1], st);
		return r;
	}
	if (IS("capture", 1))
		return cuStreamBeginCapture(get(a[1]), CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (IS("endcapture", 2)) {
		int r = cuStreamEndCapture(get(a[1]), &gr);
		set(a[2], gr);
		return r;
	}
	if (IS("graph", 1)) {
		int r = cuGraphCreate(&gr, 0);
		set(a[1], gr);
		return r;
	}
	if (IS("kernel", 5)) {
		if (dims(a[4], g) || dims(a[5], b))
			return -1;
		CUDA_KERNEL_NODE_PARAMS p = kparams(a[3], g, b);
		int r = cuGraphAddKernelNode(&nd, get(a[1]), NULL, 0, &p);
		set(a[2], nd);
		return r;
	}
	if (IS("empty", 2)) {
		int r = cuGraphAddEmptyNode(&nd, get(a[1]), NULL, 0);
		set(a[2], nd);
		return r;
	}
	if (IS("child", 3)) {
		int r = cuGraphAddChildGraphNode(&nd, get(a[1]), NULL, 0, get(a[3]));
		set(a[2], nd);
		return r;
	}
	if (IS("inner", 2)) {
		int r = cuGraphChildGraphNodeGetGraph(get(a[1]), &gr);
		set(a[2], gr);
		return r;
	}
	if (IS("conditional", 4)) {
		set(a[2], standin_add_conditional(get(a[1]), get(a[3]), (unsigned)atoi(a[4])));
		return 0;
	}
	if (IS("instantiate", 2)) {
		int r = cuGraphInstantiateWithFlags(&ex, get(a[2]), n > 3 ? strtoull(a[3], NULL, 0) : 0);
		set(a[1], ex);
		return r;
	}
	if (IS("quiet-instantiate", 2)) {
		set(a[1], standin_instantiate_quietly(get(a[2])));
		return 0;
	}
	if (IS("replay", 2)) {
		long times = atol(a[2]);
		for (long i = 0; i < times; i++) {
			int r = cuGraphLaunch(get(a[1]), n > 3 ? get(a[3]) : NULL);
			if (r)
				return r;
		}
		return 0;
	}
	if (IS("setk", 5)) {
		if (dims(a[4], g) || dims(a[5], b))
			return -1;
		CUDA_KERNEL_NODE_PARAMS p = kparams(a[3], g, b);
		return cuGraphExecKernelNodeSetParams(get(a[1]), get(a[2]), &p);
	}
	if (IS("setchild", 3))
		return cuGraphExecChildGraphNodeSetParams(get(a[1]), get(a[2]), get(a[3]));
	if (IS("enable", 3))
		return cuGraphNodeSetEnabled(get(a[1]), get(a[2]), (unsigned)atoi(a[3]));
	if (IS("update", 2)) {
		CUgraphExecUpdateResultInfo info;
		return cuGraphExecUpdate(get(a[1]), get(a[2]), &info);
	}
	if (IS("quiet-set", 3)) {
		standin_set_quietly(get(a[1]), get(a[2]), fn(a[3]));
		return 0;
	}
	if (IS("destroy", 1))
		return cuGraphExecDestroy(get(a[1]));
	if (IS("file", 2)) {
		size_t sz;
		void *b = slurp(a[2], &sz);
		set(a[1], b);
		return b ? 0 : -1;
	}
	if (IS("dlimage", 2)) {
		void *h = dlopen(a[2], RTLD_NOW | RTLD_LOCAL);
		void *img = h ? dlsym(h, "standin_image") : NULL;
		set(a[1], img);
		return img ? 0 : -1;
	}
	if (IS("jit", 1)) {
		size_t sz;
		void *b = slurp(a[1], &sz);
		if (!b)
			return -1;
		standin_jit_output(b, sz);
		free(b);
		return 0;
	}
	if (IS("modload", 2)) {
		CUmodule m = NULL;
		int r = cuModuleLoadData(&m, get(a[2]));
		set(a[1], m);
		return r;
	}
	if (IS("modfunc", 3)) {
		CUfunction f = NULL;
		int r = cuModuleGetFunction(&f, get(a[2]), a[3]);
		set(a[1], f);
		return r;
	}
	if (IS("modunload", 1))
		return cuModuleUnload(get(a[1]));
	if (IS("libload", 2)) {
		CUlibrary l = NULL;
		int r = cuLibraryLoadData(&l, get(a[2]), NULL, NULL, 0, NULL, NULL, 0);
		set(a[1], l);
		return r;
	}
	if (IS("libkernel", 3)) {
		CUkernel k = NULL;
		int r = cuLibraryGetKernel(&k, get(a[2]), a[3]);
		set(a[1], k);
		return r;
	}
	if (IS("rtkernel", 3)) {
		CUkernel k = standin_kernel_quietly(get(a[2]), a[3]);
		set(a[1], k);
		return k ? 0 : -1;
	}
	if (IS("kfunc", 2)) {
		CUfunction f = NULL;
		int r = cuKernelGetFunction(&f, get(a[2]));
		set(a[1], f);
		return r;
	}
	if (IS("launchv", 3)) {
		if (dims(a[2], g) || dims(a[3], b))
			return -1;
		return cuLaunchKernel(get(a[1]), g[0], g[1], g[2], b[0], b[1], b[2], 0, NULL, NULL,
				      NULL);
	}
	if (IS("truth", 0)) {
		standin_truth(stdout);
		return 0;
	}
	if (IS("pid", 0)) {
		printf("pid %d\n", (int)getpid());
		return 0;
	}
	if (IS("sleep", 1)) {
		long ms = atol(a[1]);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		return 0;
	}
#undef IS
	return -1;
}

int main(void)
{
	/* SIGTERM ends it by returning from main, so the exit handlers (the final file) run */
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	char line[1024];
	long no = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (!terminated && fgets(line, sizeof(line), stdin)) {
		no++;
		char *a[16];
		int n = 0;
		for (char *t = strtok(line, " \t\n"); t && n < 16; t = strtok(NULL, " \t\n"))
			a[n++] = t;
		if (n == 0 || a[0][0] == '#')
			continue;
		int r = run(a, n);
		if (r)
			printf("error %ld %s: %d\n", no, a[0], r);
		else
			printf("ok %ld\n", no);
	}
	return 0;
}
