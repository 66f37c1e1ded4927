/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libcuda.so.1 and libcupti.so (tests only, never installed; there is no GPU
 * here): the driver calls the witness's CUDA front end (lib/witness/cuda.c) uses and the ones
 * a service makes to launch kernels and build, instantiate, update and replay graphs, each
 * reported to the CUPTI subscriber the way CUPTI does (an enter and an exit callback with
 * the params structs of NVIDIA's generated_cuda_meta.h, resource callbacks inside the call).
 *
 * It keeps its own account of what ran, independent of the witness: an exec is a deep copy
 * of its graph (child graphs included, paired with the original's nodes by position, as the
 * driver pairs them), updates change that copy, and each replay adds one run to every enabled
 * kernel node in it (a conditional node's body: the number of times it was told to run).
 * standin_truth prints that account, to compare with the witness file.
 * cuInit loads $CUDA_INJECTION64_PATH and calls its InitializeInjection, as the driver does.
 *
 * Code modules, as CUDA 13's driver showed them on the H200 (tests/gpu/results/
 * 2026-12-04-h200-modules): each load reports CUPTI_CBID_RESOURCE_MODULE_LOADED on the loading
 * thread inside the call that loads, with pCubin a heap copy of the ELF cubin (never the
 * caller's bytes), and MODULE_UNLOAD_STARTING with the same moduleId at cuModuleUnload.
 * cuModuleLoadData loads inside the call; for PTX text the module's image is the "compiled"
 * ELF set with standin_jit_output. cuLibraryLoadData (the image: an ELF cubin, where the
 * runtime gives a fatbin) loads inside the call when $CUDA_MODULE_LOADING is EAGER at cuInit;
 * otherwise (lazy, the default) at the library's first use: cuLibraryGetKernel,
 * cuLibraryGetModule, cuKernelGetFunction, or the first cuLaunchKernel of one of its
 * CUkernels (inside that launch call, as the runtime's lazily loaded modules are).
 * standin_kernel_quietly gives a CUkernel the way the runtime gets one (through no call
 * CUPTI reports). cuFuncGetModule fails for a CUkernel, as measured.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- CUPTI ----------------------------------------------------------------------------------- */

static CUpti_CallbackFunc subscriber_fn;
static void *subscriber_data;
static unsigned char enabled[4][1024]; /* [domain][cbid] */

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc fn, void *data)
{
	if (subscriber_fn)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	subscriber_fn = fn;
	subscriber_data = data;
	*h = (CUpti_SubscriberHandle)&subscriber_fn;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
	(void)h;
	subscriber_fn = NULL;
	memset(enabled, 0, sizeof(enabled));
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiFinalize(void)
{
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle h,
				       CUpti_CallbackDomain d, CUpti_CallbackId cbid)
{
	(void)h;
	if ((unsigned)d >= 4 || cbid >= 1024)
		return CUPTI_ERROR_INVALID_PARAMETER;
	enabled[d][cbid] = on ? 1 : 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (stand-in)";
	return CUPTI_SUCCESS;
}

static void api_cb(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const char *fn,
		   const void *params, CUresult *ret, const char *symbol)
{
	if (!subscriber_fn || !enabled[CUPTI_CB_DOMAIN_DRIVER_API][cbid])
		return;
	CUpti_CallbackData d = { .callbackSite = site, .functionName = fn, .functionParams = params,
				 .functionReturnValue = ret, .symbolName = symbol };
	subscriber_fn(subscriber_data, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

#define ENTER(id, p, sym) \
	CUresult ret_ = CUDA_SUCCESS; \
	api_cb(CUPTI_DRIVER_TRACE_CBID_##id, CUPTI_API_ENTER, #id, p, &ret_, sym)
#define LEAVE(id, p, sym, r) \
	do { \
		ret_ = (r); \
		api_cb(CUPTI_DRIVER_TRACE_CBID_##id, CUPTI_API_EXIT, #id, p, &ret_, sym); \
		return ret_; \
	} while (0)

static void resource_cb(CUpti_CallbackId cbid, void *g)
{
	if (!subscriber_fn || !enabled[CUPTI_CB_DOMAIN_RESOURCE][cbid])
		return;
	CUpti_ResourceData d = { .resourceDescriptor = g };
	subscriber_fn(subscriber_data, CUPTI_CB_DOMAIN_RESOURCE, cbid, &d);
}

/* ---- objects --------------------------------------------------------------------------------- */

/* a CUfunction and a CUkernel start alike: cuLaunchKernel is handed either */
#define OBJ_FUNCTION 0x434e5546u
#define OBJ_KERNEL 0x4e52454bu
struct CUfunc_st {
	unsigned magic;
	char name[256];
	CUmodule mod; /* NULL: made by name alone (standin_function) */
};

struct CUkern_st {
	unsigned magic;
	char name[256];
	CUlibrary lib;
	CUfunction fn; /* cuKernelGetFunction's, once asked */
};

struct CUmod_st {
	unsigned char *image; /* the driver's copy: what MODULE_LOADED hands over */
	size_t size;
	uint32_t id;
	CUlibrary lib; /* NULL: a module load */
};

struct CUlib_st {
	const void *code; /* the caller's bytes (not copied, as without
			   * CU_LIBRARY_BINARY_IS_PRESERVED they need not stay) */
	CUmodule mod;     /* NULL until loaded */
};

struct truth {
	char name[256];
	int graph;
	unsigned g[3], b[3];
	unsigned long long runs;
};
static struct truth truths[256];
static size_t n_truths;

static void ran(const char *name, int graph, const unsigned g[3], const unsigned b[3],
		unsigned long long times)
{
	if (!times)
		return;
	for (size_t i = 0; i < n_truths; i++) {
		struct truth *t = &truths[i];
		if (t->graph == graph && !strcmp(t->name, name) && !memcmp(t->g, g, sizeof(t->g)) &&
		    !memcmp(t->b, b, sizeof(t->b))) {
			t->runs += times;
			return;
		}
	}
	if (n_truths == 256)
		abort();
	struct truth *t = &truths[n_truths++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->graph = graph;
	memcpy(t->g, g, sizeof(t->g));
	memcpy(t->b, b, sizeof(t->b));
	t->runs = times;
}

EXPORT void standin_truth(FILE *out)
{
	for (size_t i = 0; i < n_truths; i++)
		fprintf(out, "ran %s %s grid=%u,%u,%u block=%u,%u,%u count=%llu\n",
			truths[i].graph ? "graph" : "eager", truths[i].name, truths[i].g[0],
			truths[i].g[1], truths[i].g[2], truths[i].b[0], truths[i].b[1], truths[i].b[2],
			truths[i].runs);
}

EXPORT CUfunction standin_function(const char *name)
{
	struct CUfunc_st *f = calloc(1, sizeof(*f));
	f->magic = OBJ_FUNCTION;
	snprintf(f->name, sizeof(f->name), "%s", name);
	return f;
}

struct CUgraphNode_st {
	CUgraphNodeType type;
	CUfunction func;
	unsigned g[3], b[3];
	CUgraph child; /* GRAPH: the node's own copy; CONDITIONAL: the body */
	unsigned cond_runs;
	int enabled;
	CUgraphNode paired; /* in an exec's copy: the original's node */
};

struct CUgraph_st {
	CUgraphNode *nodes;
	size_t n;
};

struct CUgraphExec_st {
	CUgraph g; /* the copy that runs */
	unsigned long long flags;
};

struct CUstream_st {
	CUgraph capturing;
};

static CUgraph graph_new(void)
{
	return calloc(1, sizeof(struct CUgraph_st));
}

static CUgraphNode node_add(CUgraph g, CUgraphNodeType type)
{
	CUgraphNode n = calloc(1, sizeof(*n));
	n->type = type;
	n->enabled = 1;
	g->nodes = realloc(g->nodes, (g->n + 1) * sizeof(*g->nodes));
	g->nodes[g->n++] = n;
	return n;
}

/* a deep copy; each copied node remembers the node it came from */
static CUgraph graph_clone(CUgraph src)
{
	CUgraph g = graph_new();
	for (size_t i = 0; i < src->n; i++) {
		CUgraphNode s = src->nodes[i], n = node_add(g, s->type);
		*n = *s;
		n->paired = s;
		if (s->child)
			n->child = graph_clone(s->child);
	}
	return g;
}

static void graph_free(CUgraph g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		graph_free(g->nodes[i]->child);
		free(g->nodes[i]);
	}
	free(g->nodes);
	free(g);
}

static void graph_run(CUgraph g, unsigned long long times)
{
	for (size_t i = 0; i < g->n; i++) {
		CUgraphNode n = g->nodes[i];
		if (n->type == CU_GRAPH_NODE_TYPE_KERNEL && n->enabled)
			ran(n->func->name, 1, n->g, n->b, times);
		else if (n->type == CU_GRAPH_NODE_TYPE_GRAPH)
			graph_run(n->child, times);
		else if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
			graph_run(n->child, times * n->cond_runs);
	}
}

/* the node of exec's copy paired with the original's node (at any depth) */
static CUgraphNode exec_node(CUgraph g, CUgraphNode orig)
{
	for (size_t i = 0; i < g->n; i++) {
		CUgraphNode n = g->nodes[i];
		if (n->paired == orig)
			return n;
		if (n->child) {
			CUgraphNode in = exec_node(n->child, orig);
			if (in)
				return in;
		}
	}
	return NULL;
}

/* the parameters of src into dst, node by node in order (same topology), as an update */
static int graph_update(CUgraph dst, CUgraph src)
{
	if (dst->n != src->n)
		return -1;
	for (size_t i = 0; i < dst->n; i++) {
		CUgraphNode d = dst->nodes[i], s = src->nodes[i];
		if (d->type != s->type)
			return -1;
		if (d->type == CU_GRAPH_NODE_TYPE_KERNEL) {
			d->func = s->func;
			memcpy(d->g, s->g, sizeof(d->g));
			memcpy(d->b, s->b, sizeof(d->b));
		} else if (d->child && graph_update(d->child, s->child) < 0) {
			return -1;
		}
	}
	return 0;
}

static void dims_of(const CUDA_KERNEL_NODE_PARAMS *p, unsigned g[3], unsigned b[3])
{
	g[0] = p->gridDimX, g[1] = p->gridDimY, g[2] = p->gridDimZ;
	b[0] = p->blockDimX, b[1] = p->blockDimY, b[2] = p->blockDimZ;
}

/* ---- code modules -------------------------------------------------------------------------------- */

static int eager_loading;
static uint32_t next_module_id = 23; /* CUPTI's ids are not 0-based either */
static unsigned char *jit_out;
static size_t jit_size;

static uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* the size of an ELF64 image (its headers' extent, as the driver reads it: no size is given
 * with the bytes), 0 when image is not one */
static size_t elf_size(const unsigned char *p)
{
	if (!p || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2)
		return 0;
	uint64_t sh = rd64(p + 40) + (uint64_t)rd16(p + 58) * rd16(p + 60);
	uint64_t ph = rd64(p + 32) + (uint64_t)rd16(p + 54) * rd16(p + 56);
	return (size_t)(sh > ph ? sh : ph);
}

static int is_ptx(const unsigned char *p)
{
	return p && !elf_size(p) && rd32(p) != 0xBA55ED50u && (p[0] == '/' || p[0] == '.' ||
							     p[0] == '\n' || p[0] == '\t');
}

/* Not a driver call: the ELF the next PTX text compiles to (copied). */
EXPORT void standin_jit_output(const void *elf, size_t size)
{
	free(jit_out);
	jit_out = malloc(size);
	memcpy(jit_out, elf, size);
	jit_size = size;
}

/* a module of bytes the driver holds (a copy), MODULE_LOADED reported on this thread now */
static CUmodule module_new(const unsigned char *elf, size_t size, CUlibrary lib)
{
	CUmodule m = calloc(1, sizeof(*m));
	m->image = malloc(size);
	memcpy(m->image, elf, size);
	m->size = size;
	m->id = next_module_id++;
	m->lib = lib;
	CUpti_ModuleResourceData md = { .moduleId = m->id, .cubinSize = size,
					.pCubin = (const char *)m->image };
	resource_cb(CUPTI_CBID_RESOURCE_MODULE_LOADED, &md);
	return m;
}

/* the library's module, loaded now if it was not (lazy loading: inside the caller's call) */
static CUmodule lib_module(CUlibrary lib)
{
	if (lib && !lib->mod)
		lib->mod = module_new(lib->code, elf_size(lib->code), lib);
	return lib->mod;
}

/* 1 when the ELF defines a symbol of this name (the stand-in does not read symbol tables:
 * the name between NULs in its string tables) */
static int defines(CUmodule m, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; m && i + n + 2 <= m->size; i++)
		if (m->image[i] == 0 && m->image[i + n + 1] == 0 && !memcmp(m->image + i + 1, name, n))
			return 1;
	return 0;
}

static CUfunction function_in(CUmodule m, const char *name)
{
	CUfunction f = standin_function(name);
	f->mod = m;
	return f;
}

/* Not a driver call: a CUkernel of lib the way the runtime gets one for a launch (through no
 * call CUPTI reports); NULL when lib does not define name. */
EXPORT CUkernel standin_kernel_quietly(CUlibrary lib, const char *name)
{
	if (!lib)
		return NULL;
	struct CUkern_st *k = calloc(1, sizeof(*k));
	k->magic = OBJ_KERNEL;
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->lib = lib;
	return k;
}

/* ---- the driver -------------------------------------------------------------------------------- */

EXPORT CUresult cuInit(unsigned flags)
{
	(void)flags;
	const char *loading = getenv("CUDA_MODULE_LOADING");
	eager_loading = loading && !strcmp(loading, "EAGER");
	const char *lib = getenv("CUDA_INJECTION64_PATH");
	if (lib && lib[0]) {
		void *h = dlopen(lib, RTLD_NOW);
		int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
		if (!init) {
			fprintf(stderr, "cuda stand-in: %s: no InitializeInjection (%s)\n", lib, dlerror());
			return CUDA_ERROR_NOT_INITIALIZED;
		}
		init();
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
	(void)flags;
	*s = calloc(1, sizeof(**s));
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
	*st = s && s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
	cuStreamBeginCapture_v2_params p = { s, mode };
	ENTER(cuStreamBeginCapture_v2, &p, NULL);
	if (!s || s->capturing)
		LEAVE(cuStreamBeginCapture_v2, &p, NULL, CUDA_ERROR_ILLEGAL_STATE);
	s->capturing = graph_new();
	LEAVE(cuStreamBeginCapture_v2, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
	cuStreamEndCapture_params p = { s, g };
	ENTER(cuStreamEndCapture, &p, NULL);
	if (!s || !s->capturing)
		LEAVE(cuStreamEndCapture, &p, NULL, CUDA_ERROR_ILLEGAL_STATE);
	*g = s->capturing;
	s->capturing = NULL;
	LEAVE(cuStreamEndCapture, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **args,
			       void **extra)
{
	cuLaunchKernel_params p = { f, gx, gy, gz, bx, by, bz, shmem, s, args, extra };
	ENTER(cuLaunchKernel, &p, f ? f->name : NULL);
	if (!f)
		LEAVE(cuLaunchKernel, &p, NULL, CUDA_ERROR_INVALID_HANDLE);
	if (f->magic == OBJ_KERNEL) /* a runtime launch: the library loaded at its first use */
		lib_module(((struct CUkern_st *)(void *)f)->lib);
	const unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };
	if (s && s->capturing) {
		CUgraphNode n = node_add(s->capturing, CU_GRAPH_NODE_TYPE_KERNEL);
		n->func = f;
		memcpy(n->g, g, sizeof(g));
		memcpy(n->b, b, sizeof(b));
	} else {
		ran(f->name, 0, g, b, 1);
	}
	LEAVE(cuLaunchKernel, &p, f->name, CUDA_SUCCESS);
}

EXPORT CUresult cuGraphCreate(CUgraph *g, unsigned flags)
{
	(void)flags;
	*g = graph_new();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
					size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *kp)
{
	(void)deps, (void)ndeps;
	if (!kp->func)
		return CUDA_ERROR_INVALID_VALUE;
	CUgraphNode n = node_add(g, CU_GRAPH_NODE_TYPE_KERNEL);
	n->func = kp->func;
	dims_of(kp, n->g, n->b);
	*out = n;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
					 size_t ndeps, CUgraph child)
{
	(void)deps, (void)ndeps;
	CUgraphNode n = node_add(g, CU_GRAPH_NODE_TYPE_GRAPH);
	n->child = graph_clone(child); /* the driver embeds a copy */
	*out = n;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
				    size_t ndeps)
{
	(void)deps, (void)ndeps;
	*out = node_add(g, CU_GRAPH_NODE_TYPE_EMPTY);
	return CUDA_SUCCESS;
}

/* Not a driver call: a conditional node whose body runs `runs` times a replay (the driver's
 * are decided on the GPU by a conditional handle; here the test decides). */
EXPORT CUgraphNode standin_add_conditional(CUgraph g, CUgraph body, unsigned runs)
{
	CUgraphNode n = node_add(g, CU_GRAPH_NODE_TYPE_CONDITIONAL);
	n->child = graph_clone(body);
	n->cond_runs = runs;
	return n;
}

EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
	if (!g || !n)
		return CUDA_ERROR_INVALID_VALUE;
	if (nodes) {
		size_t k = *n < g->n ? *n : g->n;
		memcpy(nodes, g->nodes, k * sizeof(*nodes));
		*n = k;
	} else {
		*n = g->n;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType *t)
{
	*t = n->type;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p)
{
	if (n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(p, 0, sizeof(*p));
	p->func = n->func;
	p->gridDimX = n->g[0], p->gridDimY = n->g[1], p->gridDimZ = n->g[2];
	p->blockDimX = n->b[0], p->blockDimY = n->b[1], p->blockDimZ = n->b[2];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode n, CUgraph *g)
{
	if (n->type != CU_GRAPH_NODE_TYPE_GRAPH)
		return CUDA_ERROR_INVALID_VALUE;
	*g = n->child;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
	*name = f->name;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel k)
{
	if (!k || k->magic != OBJ_KERNEL)
		return CUDA_ERROR_INVALID_HANDLE;
	*name = k->name;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecGetFlags(CUgraphExec e, cuuint64_t *flags)
{
	*flags = e->flags;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
	cuGraphInstantiateWithFlags_params p = { out, g, flags };
	ENTER(cuGraphInstantiateWithFlags, &p, NULL);
	CUgraphExec e = calloc(1, sizeof(*e));
	e->g = graph_clone(g);
	e->flags = flags;
	*out = e;
	CUpti_GraphData gd = { .graph = g, .graphExec = e };
	resource_cb(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, &gd);
	LEAVE(cuGraphInstantiateWithFlags, &p, NULL, CUDA_SUCCESS);
}

/* Not a driver call: an exec made the way no instantiate call the witness follows would
 * make it (CUPTI's resource callback alone tells of it). */
EXPORT CUgraphExec standin_instantiate_quietly(CUgraph g)
{
	CUgraphExec e = calloc(1, sizeof(*e));
	e->g = graph_clone(g);
	CUpti_GraphData gd = { .graph = g, .graphExec = e };
	resource_cb(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, &gd);
	return e;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
	cuGraphLaunch_params p = { e, s };
	ENTER(cuGraphLaunch, &p, NULL);
	if (!e)
		LEAVE(cuGraphLaunch, &p, NULL, CUDA_ERROR_INVALID_HANDLE);
	if (s && s->capturing) {
		/* launched into a capture: the exec's graph becomes a child node */
		CUgraphNode n = node_add(s->capturing, CU_GRAPH_NODE_TYPE_GRAPH);
		n->child = graph_clone(e->g);
	} else {
		graph_run(e->g, 1);
	}
	LEAVE(cuGraphLaunch, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode node,
						  const CUDA_KERNEL_NODE_PARAMS *kp)
{
	cuGraphExecKernelNodeSetParams_v2_params p = { e, node, kp };
	ENTER(cuGraphExecKernelNodeSetParams_v2, &p, NULL);
	CUgraphNode n = exec_node(e->g, node);
	if (!n || n->type != CU_GRAPH_NODE_TYPE_KERNEL || !kp->func)
		LEAVE(cuGraphExecKernelNodeSetParams_v2, &p, NULL, CUDA_ERROR_INVALID_VALUE);
	n->func = kp->func;
	dims_of(kp, n->g, n->b);
	CUpti_GraphData gd = { .node = node, .graphExec = e };
	resource_cb(CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS, &gd);
	LEAVE(cuGraphExecKernelNodeSetParams_v2, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec e, CUgraphNode node, CUgraph child)
{
	cuGraphExecChildGraphNodeSetParams_params p = { e, node, child };
	ENTER(cuGraphExecChildGraphNodeSetParams, &p, NULL);
	CUgraphNode n = exec_node(e->g, node);
	if (!n || n->type != CU_GRAPH_NODE_TYPE_GRAPH || graph_update(n->child, child) < 0)
		LEAVE(cuGraphExecChildGraphNodeSetParams, &p, NULL, CUDA_ERROR_INVALID_VALUE);
	CUpti_GraphData gd = { .node = node, .graphExec = e };
	resource_cb(CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS, &gd);
	LEAVE(cuGraphExecChildGraphNodeSetParams, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode node, unsigned on)
{
	cuGraphNodeSetEnabled_params p = { e, node, on };
	ENTER(cuGraphNodeSetEnabled, &p, NULL);
	CUgraphNode n = exec_node(e->g, node);
	if (!n || n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		LEAVE(cuGraphNodeSetEnabled, &p, NULL, CUDA_ERROR_INVALID_VALUE);
	n->enabled = on != 0;
	LEAVE(cuGraphNodeSetEnabled, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
	cuGraphExecUpdate_v2_params p = { e, g, info };
	ENTER(cuGraphExecUpdate_v2, &p, NULL);
	/* the exec keeps its pairing with the graph it was instantiated from */
	if (graph_update(e->g, g) < 0)
		LEAVE(cuGraphExecUpdate_v2, &p, NULL, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	for (size_t i = 0; i < g->n; i++) {
		CUpti_GraphData gd = { .node = g->nodes[i], .graphExec = e };
		resource_cb(CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED, &gd);
	}
	LEAVE(cuGraphExecUpdate_v2, &p, NULL, CUDA_SUCCESS);
}

/* Not a driver call: a kernel node of exec changed behind the calls the witness follows
 * (CUPTI's resource callback alone tells of it). */
EXPORT void standin_set_quietly(CUgraphExec e, CUgraphNode node, CUfunction f)
{
	CUgraphNode n = exec_node(e->g, node);
	if (n)
		n->func = f;
	CUpti_GraphData gd = { .node = node, .graphExec = e };
	resource_cb(CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS, &gd);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
	cuGraphExecDestroy_params p = { e };
	ENTER(cuGraphExecDestroy, &p, NULL);
	CUpti_GraphData gd = { .graphExec = e };
	resource_cb(CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, &gd);
	graph_free(e->g);
	free(e);
	LEAVE(cuGraphExecDestroy, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuGraphDestroy(CUgraph g)
{
	graph_free(g);
	return CUDA_SUCCESS;
}

/* ---- the driver: code modules -------------------------------------------------------------- */

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	cuModuleLoadData_params p = { module, image };
	ENTER(cuModuleLoadData, &p, NULL);
	const unsigned char *img = image;
	size_t n = elf_size(img);
	if (!n && is_ptx(img) && jit_out) {
		img = jit_out; /* the driver's compiled ELF, not the caller's bytes */
		n = jit_size;
	}
	if (!n)
		LEAVE(cuModuleLoadData, &p, NULL, CUDA_ERROR_INVALID_IMAGE);
	*module = module_new(img, n, NULL);
	LEAVE(cuModuleLoadData, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuModuleUnload(CUmodule m)
{
	cuModuleUnload_params p = { m };
	ENTER(cuModuleUnload, &p, NULL);
	if (!m || !m->image)
		LEAVE(cuModuleUnload, &p, NULL, CUDA_ERROR_INVALID_HANDLE);
	CUpti_ModuleResourceData md = { .moduleId = m->id, .cubinSize = m->size,
					.pCubin = (const char *)m->image };
	resource_cb(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, &md);
	free(m->image);
	m->image = NULL; /* the handle is kept: a stale one fails */
	LEAVE(cuModuleUnload, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	cuModuleGetFunction_params p = { f, m, name };
	ENTER(cuModuleGetFunction, &p, NULL);
	if (!m || !m->image || !defines(m, name))
		LEAVE(cuModuleGetFunction, &p, NULL, CUDA_ERROR_NOT_FOUND);
	*f = function_in(m, name);
	LEAVE(cuModuleGetFunction, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jo,
				  void **jv, unsigned njo, CUlibraryOption *lo, void **lv,
				  unsigned nlo)
{
	cuLibraryLoadData_params p = { library, code, jo, jv, njo, lo, lv, nlo };
	ENTER(cuLibraryLoadData, &p, NULL);
	if (!elf_size(code))
		LEAVE(cuLibraryLoadData, &p, NULL, CUDA_ERROR_INVALID_IMAGE);
	CUlibrary lib = calloc(1, sizeof(*lib));
	lib->code = code;
	if (eager_loading)
		lib_module(lib);
	*library = lib;
	LEAVE(cuLibraryLoadData, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuLibraryGetModule(CUmodule *mod, CUlibrary lib)
{
	cuLibraryGetModule_params p = { mod, lib };
	ENTER(cuLibraryGetModule, &p, NULL);
	if (!lib)
		LEAVE(cuLibraryGetModule, &p, NULL, CUDA_ERROR_INVALID_HANDLE);
	*mod = lib_module(lib);
	LEAVE(cuLibraryGetModule, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
	cuLibraryGetKernel_params p = { k, lib, name };
	ENTER(cuLibraryGetKernel, &p, NULL);
	if (!lib || !defines(lib_module(lib), name))
		LEAVE(cuLibraryGetKernel, &p, NULL, CUDA_ERROR_NOT_FOUND);
	*k = standin_kernel_quietly(lib, name);
	LEAVE(cuLibraryGetKernel, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuKernelGetLibrary(CUlibrary *lib, CUkernel k)
{
	cuKernelGetLibrary_params p = { lib, k };
	ENTER(cuKernelGetLibrary, &p, NULL);
	if (!k || k->magic != OBJ_KERNEL)
		LEAVE(cuKernelGetLibrary, &p, NULL, CUDA_ERROR_INVALID_HANDLE);
	*lib = k->lib;
	LEAVE(cuKernelGetLibrary, &p, NULL, CUDA_SUCCESS);
}

EXPORT CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
	cuKernelGetFunction_params p = { f, k };
	ENTER(cuKernelGetFunction, &p, NULL);
	if (!k || k->magic != OBJ_KERNEL)
		LEAVE(cuKernelGetFunction, &p, NULL, CUDA_ERROR_INVALID_HANDLE);
	if (!k->fn)
		k->fn = function_in(lib_module(k->lib), k->name);
	*f = k->fn;
	LEAVE(cuKernelGetFunction, &p, NULL, CUDA_SUCCESS);
}

/* a CUfunction's module; a CUkernel (what the runtime launches) has none: the driver fails
 * here (measured on the H200), as does a function made by name alone */
EXPORT CUresult cuFuncGetModule(CUmodule *mod, CUfunction f)
{
	cuFuncGetModule_params p = { mod, f };
	ENTER(cuFuncGetModule, &p, NULL);
	if (!f || f->magic != OBJ_FUNCTION || !f->mod)
		LEAVE(cuFuncGetModule, &p, NULL, CUDA_ERROR_INVALID_HANDLE);
	*mod = f->mod;
	LEAVE(cuFuncGetModule, &p, NULL, CUDA_SUCCESS);
}
