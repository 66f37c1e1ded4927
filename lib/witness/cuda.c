/* SPDX-License-Identifier: MIT */
/*
 * The CUDA front end: libcuda loads this library for CUDA_INJECTION64_PATH and calls
 * InitializeInjection, which subscribes to CUPTI's callback API for the launch entry points.
 * libcupti is opened here (dlopen), not linked, so that the library loads in any process.
 *
 * Counting each launch once: by default only the driver API's launch callbacks are enabled;
 * a runtime launch (cudaLaunchKernel, the <<<>>> launch of CUDA 13, cudaLaunchKernelExC,
 * cudaLaunchCooperativeKernel) is seen as the driver launch the runtime makes. With
 * PROVGATE_WITNESS_RUNTIME=1 the runtime callbacks are enabled too: a thread-local flag is
 * set between a runtime callback's entry and exit; a driver launch seen inside it is the one
 * recorded (it has the CUfunction and exact dims), and the runtime exit records the launch
 * only when no driver launch was seen inside it.
 * Only launches that returned success are counted. Graph launches are counted in the header
 * (graph_launches): CUPTI's callback for cuGraphLaunch names the graph, not its kernels.
 * A launch into a stream that is being captured into a graph runs nothing: while any capture
 * is open (cu/cudaStreamBeginCapture seen, its end not yet), the launch's stream is asked
 * (cuStreamIsCapturing) and a captured launch is counted in the header only (captured).
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "witness/witness.h"

/* __cudaLaunchKernel (CUDA 13's <<<>>>): no params struct in CUPTI's headers; its arguments
 * are those of crt/device_functions.h's declaration. */
struct rt_launch13_params {
	const void *kernel; /* cudaKernel_t */
	dim3 gridDim;
	dim3 blockDim;
	void **args;
	size_t sharedMem;
	cudaStream_t stream;
};

static CUptiResult (*p_subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
static CUptiResult (*p_enable)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
			       CUpti_CallbackId);
static CUptiResult (*p_result_string)(CUptiResult, const char **);
static CUpti_SubscriberHandle subscriber;

static CUresult (*p_is_capturing)(CUstream, CUstreamCaptureStatus *);
static _Atomic int captures_open;

static __thread int in_runtime;    /* inside a runtime launch callback */
static __thread int runtime_saw_driver;

/* The shared object that holds a runtime launch's host stub: the extension the kernel came
 * from. Looked up once per new entry. */
static const char *host_module(uint64_t handle, char *buf, unsigned size)
{
	Dl_info info;
	if (!dladdr((const void *)(uintptr_t)handle, &info) || !info.dli_fname)
		return NULL;
	snprintf(buf, size, "%s", info.dli_fname);
	return buf;
}

static int captured(CUstream stream)
{
	if (atomic_load_explicit(&captures_open, memory_order_relaxed) <= 0 || !p_is_capturing)
		return 0;
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	if (p_is_capturing(stream, &st) != CUDA_SUCCESS || st == CU_STREAM_CAPTURE_STATUS_NONE)
		return 0;
	pvg_witness_captured();
	return 1;
}

static const CUpti_CallbackId driver_capture_begin[] = {
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
#if CUPTI_API_VERSION >= 21 /* CUDA 12.3 */
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
#endif
};
static const CUpti_CallbackId driver_capture_end[] = {
	CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
	CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
};
static const CUpti_CallbackId runtime_capture_begin[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000,
#if CUPTI_API_VERSION >= 21
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030,
#endif
};
static const CUpti_CallbackId runtime_capture_end[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000,
};

static int in_ids(CUpti_CallbackId cbid, const CUpti_CallbackId *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == cbid)
			return 1;
	return 0;
}
#define IN_IDS(cbid, ids) in_ids(cbid, ids, sizeof(ids) / sizeof(ids[0]))

/* 1: a capture begins, -1: one ends, 0: not a capture call */
static int capture_kind(CUpti_CallbackId cbid, int driver)
{
	if (driver)
		return IN_IDS(cbid, driver_capture_begin) ? 1 : IN_IDS(cbid, driver_capture_end) ? -1 : 0;
	return IN_IDS(cbid, runtime_capture_begin) ? 1 : IN_IDS(cbid, runtime_capture_end) ? -1 : 0;
}

/* open at the begin's entry, closed at the end's exit: a launch between them is asked */
static void capture_event(int kind, const CUpti_CallbackData *cb)
{
	if (kind > 0 && cb->callbackSite == CUPTI_API_ENTER)
		atomic_fetch_add(&captures_open, 1);
	else if (kind < 0 && cb->callbackSite == CUPTI_API_EXIT)
		atomic_fetch_sub(&captures_open, 1);
}

static void record(uint64_t handle, const unsigned grid[3], const unsigned block[3],
		   uint32_t via, const char *name, int host_stub)
{
	struct pvg_launch l = {
		.handle = handle,
		.grid = { grid[0], grid[1], grid[2] },
		.block = { block[0], block[1], block[2] },
		.via = via,
		.name = name,
		.module_of = host_stub ? host_module : NULL,
	};
	pvg_witness_record(&l);
}

static void on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	int ck = capture_kind(cbid, 1);
	if (ck) {
		capture_event(ck, cb);
		return;
	}
	if (cb->callbackSite != CUPTI_API_EXIT)
		return;
	if (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return;
	unsigned g[3], b[3];
	uint64_t f = 0;
	CUstream stream = NULL;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
		const cuLaunchKernel_params *p = cb->functionParams;
		f = (uint64_t)(uintptr_t)p->f;
		stream = p->hStream;
		g[0] = p->gridDimX, g[1] = p->gridDimY, g[2] = p->gridDimZ;
		b[0] = p->blockDimX, b[1] = p->blockDimY, b[2] = p->blockDimZ;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
		const cuLaunchCooperativeKernel_params *p = cb->functionParams;
		f = (uint64_t)(uintptr_t)p->f;
		stream = p->hStream;
		g[0] = p->gridDimX, g[1] = p->gridDimY, g[2] = p->gridDimZ;
		b[0] = p->blockDimX, b[1] = p->blockDimY, b[2] = p->blockDimZ;
		break;
	}
#if CUPTI_API_VERSION >= 19 /* CUDA 12.0 */
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
		const cuLaunchKernelEx_params *p = cb->functionParams;
		if (!p->config)
			return;
		f = (uint64_t)(uintptr_t)p->f;
		stream = p->config->hStream;
		g[0] = p->config->gridDimX, g[1] = p->config->gridDimY, g[2] = p->config->gridDimZ;
		b[0] = p->config->blockDimX, b[1] = p->config->blockDimY, b[2] = p->config->blockDimZ;
		break;
	}
#endif
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
		if (in_runtime) {
			runtime_saw_driver = 1;
			pvg_witness_nested_driver();
		}
		pvg_witness_graph_launch();
		return;
	default:
		return;
	}
	if (in_runtime) {
		runtime_saw_driver = 1;
		pvg_witness_nested_driver();
	}
	if (!captured(stream))
		record(f, g, b, PVG_WITNESS_VIA_DRIVER, cb->symbolName, 0);
}

static void on_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	int ck = capture_kind(cbid, 0);
	if (ck) {
		capture_event(ck, cb);
		return;
	}
	int graph = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
		    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		in_runtime = 1;
		runtime_saw_driver = 0;
		return;
	}
	in_runtime = 0;
	if (runtime_saw_driver)
		return; /* counted as the driver launch inside it */
	if (cb->functionReturnValue &&
	    *(const cudaError_t *)cb->functionReturnValue != cudaSuccess)
		return;
	if (graph) {
		pvg_witness_graph_launch();
		return;
	}
	const void *func;
	dim3 g, b;
	cudaStream_t stream = NULL;
	int host_stub = 1;
	switch (cbid) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
		const cudaLaunchKernel_v7000_params *p = cb->functionParams;
		func = p->func, g = p->gridDim, b = p->blockDim, stream = p->stream;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
		const cudaLaunchCooperativeKernel_v9000_params *p = cb->functionParams;
		func = p->func, g = p->gridDim, b = p->blockDim, stream = p->stream;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
		const cudaLaunchKernelExC_v11060_params *p = cb->functionParams;
		if (!p->config)
			return;
		func = p->func, g = p->config->gridDim, b = p->config->blockDim;
		stream = p->config->stream;
		break;
	}
#if CUPTI_API_VERSION >= 130000 /* CUDA 13.0 */
	case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
	case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
		const struct rt_launch13_params *p = cb->functionParams;
		func = p->kernel, g = p->gridDim, b = p->blockDim, stream = p->stream;
		host_stub = 0; /* a cudaKernel_t, not an address in a shared object */
		break;
	}
#endif
	default:
		return;
	}
	if (captured((CUstream)stream))
		return;
	const unsigned gg[3] = { g.x, g.y, g.z }, bb[3] = { b.x, b.y, b.z };
	record((uint64_t)(uintptr_t)func, gg, bb, PVG_WITNESS_VIA_RUNTIME, cb->symbolName,
	       host_stub);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
				 CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
		on_driver(cbid, data);
	else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		on_runtime(cbid, data);
}

static const CUpti_CallbackId driver_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
#if CUPTI_API_VERSION >= 19
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
#endif
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

static const CUpti_CallbackId runtime_ids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
#if CUPTI_API_VERSION >= 130000
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};

/* libcupti: $PROVGATE_WITNESS_CUPTI, else the names a CUDA install or a PyTorch wheel has
 * on the loader's path, else the toolkit's usual folders. */
static void *open_cupti(char *which, size_t size)
{
	const char *env = getenv("PROVGATE_WITNESS_CUPTI");
	const char *names[] = {
		env,
		"libcupti.so",
		"libcupti.so.13",
		"libcupti.so.12",
		"/usr/local/cuda/lib64/libcupti.so",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!names[i] || !names[i][0])
			continue;
		void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
		if (h) {
			snprintf(which, size, "%s", names[i]);
			return h;
		}
	}
	return NULL;
}

/* Enables (1) or disables (0) the callbacks the witness uses: the driver domain's launch and
 * capture calls, and the runtime domain's when asked. Returns how many could not be set. */
static unsigned set_callbacks(uint32_t on, int runtime)
{
	const struct {
		CUpti_CallbackDomain domain;
		const CUpti_CallbackId *ids;
		size_t n;
	} sets[] = {
#define SET(d, a) { d, a, sizeof(a) / sizeof(a[0]) }
		SET(CUPTI_CB_DOMAIN_DRIVER_API, driver_ids),
		SET(CUPTI_CB_DOMAIN_DRIVER_API, driver_capture_begin),
		SET(CUPTI_CB_DOMAIN_DRIVER_API, driver_capture_end),
		SET(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_ids),
		SET(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_capture_begin),
		SET(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_capture_end),
#undef SET
	};
	unsigned failed = 0;
	for (size_t k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		if (sets[k].domain == CUPTI_CB_DOMAIN_RUNTIME_API && !runtime)
			continue;
		for (size_t i = 0; i < sets[k].n; i++)
			failed += p_enable(on, subscriber, sets[k].domain, sets[k].ids[i]) != CUPTI_SUCCESS;
	}
	return failed;
}

static int runtime_enabled;

#ifdef PVG_WITNESS_BENCH
/* Only in libprovgate-witness-bench.so (never installed), for tests/gpu/witness/run-overhead.sh,
 * which times one process with and without the witness:
 *    1  the callbacks on (subscribing again first, after a detach)
 *    0  the callbacks off, CUPTI still attached
 *   -1  CUPTI detached from the process (unsubscribe, cuptiFinalize): as if never loaded
 * Call it with no CUDA work in flight (after a synchronize). The installed library has no way
 * to pause the witness. 0 when done, -1 otherwise. */
static CUptiResult (*p_unsubscribe)(CUpti_SubscriberHandle);
static CUptiResult (*p_finalize)(void);
static CUpti_CallbackFunc bench_callback;

PVG_WITNESS_EXPORT int pvg_witness_bench_callbacks(int on)
{
	if (!p_enable)
		return -1;
	if (on < 0) {
		if (!subscriber)
			return 0;
		if (!p_unsubscribe || !p_finalize || p_unsubscribe(subscriber) != CUPTI_SUCCESS)
			return -1;
		subscriber = NULL;
		return p_finalize() == CUPTI_SUCCESS ? 0 : -1;
	}
	if (!subscriber && (on == 0 || p_subscribe(&subscriber, bench_callback, NULL) != CUPTI_SUCCESS))
		return on == 0 ? 0 : -1;
	return set_callbacks(on ? 1 : 0, runtime_enabled) ? -1 : 0;
}
#endif

PVG_WITNESS_EXPORT int InitializeInjection(void)
{
	if (!pvg_witness_active())
		return 1; /* loaded without a witness folder: nothing to do, and no error for CUDA */
	char which[96], note[200];
	void *h = open_cupti(which, sizeof(which));
	if (!h) {
		pvg_witness_set_api(PVG_WITNESS_API_CUDA,
				    "cuda: libcupti not found (set PROVGATE_WITNESS_CUPTI)", 0);
		return 1;
	}
	p_subscribe = (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))dlsym(
		h, "cuptiSubscribe");
	p_enable = (CUptiResult(*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
				   CUpti_CallbackId))dlsym(h, "cuptiEnableCallback");
	p_result_string = (CUptiResult(*)(CUptiResult, const char **))dlsym(h, "cuptiGetResultString");
	if (!p_subscribe || !p_enable) {
		snprintf(note, sizeof(note), "cuda: %.90s lacks cuptiSubscribe", which);
		pvg_witness_set_api(PVG_WITNESS_API_CUDA, note, 0);
		return 1;
	}
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (cuda)
		p_is_capturing = (CUresult(*)(CUstream, CUstreamCaptureStatus *))dlsym(
			cuda, "cuStreamIsCapturing");
	CUptiResult r = p_subscribe(&subscriber, on_callback, NULL);
	if (r != CUPTI_SUCCESS) {
		const char *s = NULL;
		if (p_result_string)
			p_result_string(r, &s);
		/* CUPTI allows one subscriber: a profiler already holds it */
		snprintf(note, sizeof(note), "cuda: cuptiSubscribe failed: %s", s ? s : "?");
		pvg_witness_set_api(PVG_WITNESS_API_CUDA, note, 0);
		return 1;
	}
	/* The driver domain alone by default: on the H200 with CUDA 13.0 every runtime launch
	 * showed its driver launch inside it (tests/gpu/results/2026-12-01-h200-witness), and
	 * the runtime callbacks cost about 0.8 us a launch. PROVGATE_WITNESS_RUNTIME=1 adds
	 * them, for a runtime whose launches reach the driver unseen. */
	const char *rt = getenv("PROVGATE_WITNESS_RUNTIME");
	int runtime = rt && strcmp(rt, "1") == 0;
	runtime_enabled = runtime;
#ifdef PVG_WITNESS_BENCH
	p_unsubscribe = (CUptiResult(*)(CUpti_SubscriberHandle))dlsym(h, "cuptiUnsubscribe");
	p_finalize = (CUptiResult(*)(void))dlsym(h, "cuptiFinalize");
	bench_callback = on_callback;
#endif
	unsigned failed = set_callbacks(1, runtime);
	snprintf(note, sizeof(note), "cuda: %.60s%s%s", which, runtime ? ", runtime and driver API" : "",
		 failed ? " (some launch callbacks could not be enabled)" : "");
	pvg_witness_set_api(PVG_WITNESS_API_CUDA, note, 1);
	return 1;
}
