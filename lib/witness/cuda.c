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
 * Only launches that returned success are counted.
 * A launch into a stream that is being captured into a graph runs nothing: while any capture
 * is open (cu/cudaStreamBeginCapture seen, its end not yet), the launch's stream is asked
 * (cuStreamIsCapturing) and a captured launch is counted in the header only (captured).
 *
 * Graphs: when an exec is instantiated (the exit of cuGraphInstantiate*, or CUPTI's resource
 * callback GRAPHEXEC_CREATED when it comes from elsewhere), the graph's nodes are read with
 * the driver's queries: kernel nodes (function, grid, block, name by cuFuncGetName or
 * cuKernelGetName), child graphs recursively; the list goes to the writer (witness.h), and
 * each cuGraphLaunch that ran counts one replay of the exec. Updates are followed:
 * cuGraphExecUpdate reads the new graph, cuGraphExecKernelNodeSetParams and
 * cuGraphExecNodeSetParams change one node, cuGraphExecChildGraphNodeSetParams a child graph,
 * cuGraphNodeSetEnabled a node's state. What cannot be followed makes the exec opaque (its
 * replays are counted, its kernels not), never a guess: a node query that fails, a
 * per-node update naming a node not in the list, an update of an exec with disabled nodes,
 * CUPTI saying an exec's node changed outside these calls. Conditional nodes (their bodies
 * run 0..n times), device-launchable execs (launched from the GPU, unseen) and nesting
 * deeper than GRAPH_MAX_DEPTH are flagged partial.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* ---- code modules -------------------------------------------------------------------------------
 * CUPTI's resource callback CUPTI_CBID_RESOURCE_MODULE_LOADED gives each module's image as the
 * driver holds it (pCubin, cubinSize) and an id (moduleId), on the loading thread, inside the
 * call that loaded it; MODULE_UNLOAD_STARTING the same at unload. The image is hashed once,
 * there; its ELF symbol table gives the entry functions (STT_FUNC with STO_CUDA_ENTRY) and
 * e_flags the SM. Where it came from: the load call this thread is inside (cuModuleLoad*,
 * cuLibraryLoad*, whose entries and exits are followed), and the mapped file the image lies in
 * (dl_iterate_phdr), if any.
 *
 * A launch's module is learnt when the launch makes a new record (code_of), in this order:
 *  1. HANDLE: cuFuncGetModule(f) is a CUmodule that a followed call returned together with
 *     the module it loaded (the exits of cuModuleLoad*, of cuLibraryLoad* through
 *     cuLibraryGetModule, of cuKernelGetFunction / cuLibraryGetModule / cuModuleGetFunction
 *     that loaded one);
 *  2. LOADED_IN_CALL: exactly one module was loaded on this thread inside this launch call
 *     (lazy loading) and it defines the kernel's name: its CUmodule is noted for later launches;
 *  3. by name: the loaded modules that define the name (writer.c: ONLY_NAME when they hold the
 *     same bytes, AMBIGUOUS otherwise); none: unknown.
 *
 * A module's path: the file a file load names; for a data load, the mapped file (a shared
 * object) the caller's image lies in, with the image's offset there (pCubin is the driver's
 * copy, in no file). A library's module may be loaded later, inside no load call (lazy
 * loading): each library loaded is kept with its image's file and offset (libs below), and
 * the module gets them when it is learnt to be that library's (at the exit of
 * cuLibraryGetKernel / cuLibraryGetModule / cuKernelGetFunction that loaded it, or when a
 * launch of one of the library's CUkernels makes a new record and binds it). */

#define LOAD_NONE 0
#define LOAD_MODULE_FILE 1   /* cuModuleLoad */
#define LOAD_MODULE_DATA 2   /* cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary */
#define LOAD_LIBRARY_FILE 3  /* cuLibraryLoadFromFile */
#define LOAD_LIBRARY_DATA 4  /* cuLibraryLoadData */
#define LOAD_GET 5           /* cuKernelGetFunction, cuLibraryGetModule, cuModuleGetFunction,
			      * cuLibraryGetKernel: a lazy load may happen inside */

static CUresult (*p_func_get_module)(CUmodule *, CUfunction);
static CUresult (*p_library_get_module)(CUmodule *, CUlibrary);
static int modules_on;

/* the followed call this thread is inside, and the modules loaded inside it */
static __thread struct {
	int kind, depth;
	const void *image;  /* the call's image (data loads) */
	const char *fname;  /* the call's file (file loads) */
	int first, n;       /* index of the first module loaded inside it, how many */
} load_call;
static __thread uint64_t loads_here;  /* modules loaded on this thread */
static __thread uint64_t loads_at_launch; /* at the entry of this thread's last launch call */
static __thread int last_loaded = -1; /* index of the last one */
static __thread int own_call; /* a driver call this file makes: its callbacks are ignored */
static CUresult (*p_kernel_get_library)(CUlibrary *, CUkernel);

#ifdef PVG_WITNESS_BENCH
static FILE *modlog;
#define MODLOG(...) do { if (modlog) { fprintf(modlog, __VA_ARGS__); fflush(modlog); } } while (0)
#else
#define MODLOG(...) do { } while (0)
#endif
#define MODLOG_PATH(idx, lib, path, off) \
	MODLOG("path idx=%d lib=0x%llx path=%s off=%llu\n", idx, (unsigned long long)(lib), path, \
	       (unsigned long long)(off))

/* CUlibrary -> the file its image lay in and the image's offset there (path NULL: in no
 * file). Open addressing; a key stays once set and a later load of the same handle replaces
 * its value, so a handle the driver reuses never keeps an earlier library's file. Full: a
 * library is not kept (its lazily loaded module gets no path). Loads are rare: a mutex. */
#define LIBS 4096u
static struct {
	uint64_t lib;
	char *path;
	uint64_t off;
} libs[LIBS];
static pthread_mutex_t libs_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t lib_slot(uint64_t lib)
{
	uint64_t h = lib * 0x9E3779B97F4A7C15ull;
	return h >> 52; /* 12 bits: LIBS */
}

static void library_put(uint64_t lib, const char *path, uint64_t off)
{
	if (!lib)
		return;
	char *copy = path && path[0] ? strdup(path) : NULL;
	pthread_mutex_lock(&libs_lock);
	for (uint64_t i = 0, at = lib_slot(lib); i < LIBS; i++, at = (at + 1) & (LIBS - 1)) {
		if (libs[at].lib && libs[at].lib != lib)
			continue;
		libs[at].lib = lib;
		free(libs[at].path);
		libs[at].path = copy;
		libs[at].off = off;
		copy = NULL;
		break;
	}
	pthread_mutex_unlock(&libs_lock);
	free(copy);
}

/* the library's file into buf and the image's offset: 0, or -1 when not known */
static int library_file(uint64_t lib, char *buf, size_t size, uint64_t *off)
{
	int r = -1;
	if (!lib)
		return r;
	pthread_mutex_lock(&libs_lock);
	for (uint64_t i = 0, at = lib_slot(lib); i < LIBS && libs[at].lib; i++, at = (at + 1) & (LIBS - 1)) {
		if (libs[at].lib != lib)
			continue;
		if (libs[at].path) {
			snprintf(buf, size, "%s", libs[at].path);
			*off = libs[at].off;
			r = 0;
		}
		break;
	}
	pthread_mutex_unlock(&libs_lock);
	return r;
}

/* a fork while another thread held the lock: the child's copy is free (its table as it was) */
static void libs_after_fork(void)
{
	pthread_mutex_init(&libs_lock, NULL);
}

/* the module at idx is lib's: it gets lib's file when it has no path yet */
static void module_from_library(int idx, uint64_t lib)
{
	char path[4096];
	uint64_t off = 0;
	if (idx >= 0 && library_file(lib, path, sizeof(path), &off) == 0) {
		pvg_witness_module_set_path(idx, path, off);
		MODLOG_PATH(idx, lib, path, off);
	}
}

/* the CUmodule of a library (loaded: asking loads nothing new), through a call of our own */
static uint64_t library_module(CUlibrary lib)
{
	CUmodule mod = NULL;
	if (!lib || !p_library_get_module)
		return 0;
	own_call++;
	CUresult r = p_library_get_module(&mod, lib);
	own_call--;
	return r == CUDA_SUCCESS ? (uint64_t)(uintptr_t)mod : 0;
}


static uint16_t le16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t le32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* A cubin's SM and entry function names (NUL-separated, malloc'd into *names). 0, or -1 when
 * p is not a little-endian ELF64 CUDA image whose tables lie inside its n bytes. */
static int cubin_names(const uint8_t *p, size_t n, uint32_t *arch, char **names, size_t *len,
		       uint32_t *count)
{
	*names = NULL;
	*len = 0;
	*count = 0;
	if (n < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 || p[5] != 1 || le16(p + 18) != 190)
		return -1;
	uint32_t flags = le32(p + 48);
	*arch = p[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
	uint64_t shoff = le64(p + 40);
	uint16_t shentsize = le16(p + 58), shnum = le16(p + 60);
	if (shentsize < 64 || shoff > n || (uint64_t)shnum * shentsize > n - shoff)
		return -1;
	size_t cap = 0;
	for (uint16_t i = 0; i < shnum; i++) {
		const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
		if (le32(sh + 4) != 2 /* SHT_SYMTAB */)
			continue;
		uint64_t off = le64(sh + 24), size = le64(sh + 32), ent = le64(sh + 56);
		uint32_t link = le32(sh + 40);
		if (ent < 24 || off > n || size > n - off || link >= shnum)
			return -1;
		const uint8_t *st = p + shoff + (uint64_t)link * shentsize;
		uint64_t stoff = le64(st + 24), stsize = le64(st + 32);
		if (stoff > n || stsize > n - stoff)
			return -1;
		for (uint64_t s = 0; s + ent <= size; s += ent) {
			const uint8_t *sym = p + off + s;
			uint32_t name = le32(sym);
			if ((sym[4] & 0xf) != 2 /* STT_FUNC */ || !(sym[5] & 0x10) /* STO_CUDA_ENTRY */ ||
			    name >= stsize)
				continue;
			const char *nm = (const char *)p + stoff + name;
			size_t nl = strnlen(nm, stsize - name);
			if (nl == 0 || nl == stsize - name)
				continue; /* empty, or not terminated inside the table */
			if (*len + nl + 1 > cap) {
				size_t c = cap ? 2 * cap : 4096;
				while (c < *len + nl + 1)
					c *= 2;
				char *g = realloc(*names, c);
				if (!g)
					return 0;
				*names = g;
				cap = c;
			}
			memcpy(*names + *len, nm, nl + 1);
			*len += nl + 1;
			(*count)++;
		}
	}
	return 0;
}

/* Where in a mapped file addr lies (the loaded object whose segment holds it): path into buf
 * and file offset. 0, or -1 when in none. */
struct where {
	uintptr_t addr;
	char *buf;
	size_t size;
	uint64_t off;
	int found;
};

static int where_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
	(void)sz;
	struct where *w = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (w->addr < start || w->addr - start >= ph->p_filesz)
			continue;
		w->off = ph->p_offset + (w->addr - start);
		const char *name = info->dlpi_name;
		if (name && name[0]) {
			snprintf(w->buf, w->size, "%s", name);
		} else {
			ssize_t n = readlink("/proc/self/exe", w->buf, w->size - 1);
			w->buf[n > 0 ? n : 0] = '\0';
		}
		w->found = 1;
		return 1;
	}
	return 0;
}

static int mapped_file_of(const void *p, char *buf, size_t size, uint64_t *off)
{
	struct where w = { .addr = (uintptr_t)p, .buf = buf, .size = size };
	dl_iterate_phdr(where_cb, &w);
	*off = w.off;
	return w.found ? 0 : -1;
}

/* PTX text: what cuModuleLoadData takes besides a cubin or a fatbin */
static int looks_ptx(const void *image)
{
	const unsigned char *p = image;
	if (!p || le32(p) == 0xBA55ED50u || memcmp(p, "\177ELF", 4) == 0)
		return 0;
	for (int i = 0; i < 8; i++)
		if (p[i] && (p[i] < 0x09 || p[i] > 0x7e))
			return 0;
	return 1;
}

static void module_loaded(const CUpti_ModuleResourceData *md)
{
	if (!md || !modules_on)
		return;
	const uint8_t *img = (const uint8_t *)md->pCubin;
	struct pvg_module_load m = { .image = img, .size = md->cubinSize, .api_id = md->moduleId };
	char path[4096] = "";
	uint64_t off = 0;
	int kind = load_call.depth ? load_call.kind : LOAD_NONE;
	/* a data load's bytes are the caller's (a shared object's fatbin when the runtime
	 * registers it): pCubin is the driver's copy, in no file */
	const void *bytes = (kind == LOAD_MODULE_DATA || kind == LOAD_LIBRARY_DATA) && load_call.image
				    ? load_call.image : (const void *)img;
	int in_file = bytes && mapped_file_of(bytes, path, sizeof(path), &off) == 0;
	switch (kind) {
	case LOAD_MODULE_FILE:
	case LOAD_LIBRARY_FILE:
		m.origin = PVG_WITNESS_ORIGIN_FILE;
		if (!in_file && load_call.fname)
			snprintf(path, sizeof(path), "%s", load_call.fname);
		break;
	case LOAD_MODULE_DATA:
	case LOAD_LIBRARY_DATA:
		m.origin = looks_ptx(load_call.image) ? PVG_WITNESS_ORIGIN_PTX_JIT
			   : in_file ? PVG_WITNESS_ORIGIN_FILE : PVG_WITNESS_ORIGIN_MEMORY;
		break;
	default:
		/* loaded by no call that loads: the runtime's registered fatbins, loaded at
		 * registration or lazily at first use */
		m.origin = PVG_WITNESS_ORIGIN_EMBEDDED;
		break;
	}
	if (in_file) {
		m.path = path;
		m.file_offset = off;
	} else if (m.origin == PVG_WITNESS_ORIGIN_FILE && path[0]) {
		m.path = path;
	}
	char *names = NULL;
	size_t len = 0;
	uint32_t count = 0;
	if (img && cubin_names(img, md->cubinSize, &m.arch, &names, &len, &count) == 0) {
		m.names = names;
		m.names_len = len;
		m.n_names = count;
	}
	int idx = pvg_witness_module_add(&m);
	MODLOG("loaded id=%u idx=%d size=%zu magic=%08x origin=%u call=%d/%d image=%p pcubin=%p "
	       "path=%s off=%llu names=%u arch=%u thread_loads=%llu\n",
	       md->moduleId, idx, md->cubinSize, img && md->cubinSize >= 4 ? le32(img) : 0,
	       m.origin, load_call.kind, load_call.depth, load_call.image, (const void *)img,
	       in_file ? path : "-", (unsigned long long)off, count, m.arch,
	       (unsigned long long)loads_here + 1);
	free(names);
	if (idx < 0)
		return;
	loads_here++;
	last_loaded = idx;
	if (load_call.depth) {
		if (!load_call.n++)
			load_call.first = idx;
	}
}

static void module_unloading(const CUpti_ModuleResourceData *md)
{
	if (!md || !modules_on)
		return;
	int idx = pvg_witness_module_by_api_id(md->moduleId);
	MODLOG("unload id=%u idx=%d\n", md->moduleId, idx);
	if (idx >= 0)
		pvg_witness_module_unload(idx);
}

/* the one module loaded inside the current call gets handle h */
static void call_module_handle(uint64_t h)
{
	if (load_call.n == 1 && h)
		pvg_witness_module_set_handle(load_call.first, h);
	MODLOG("call kind=%d loaded=%d handle=0x%llx\n", load_call.kind, load_call.n,
	       (unsigned long long)h);
}

static const CUpti_CallbackId driver_load_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoad,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary,
	CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData,
	CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile,
	CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule,
	CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,
	CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
	CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction,
};

static const CUpti_CallbackId resource_module_ids[] = {
	CUPTI_CBID_RESOURCE_MODULE_LOADED,
	CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
};

/* the CUlibrary of a CUkernel, through a call of our own; 0 when it is none */
static uint64_t kernel_library(CUkernel k)
{
	CUlibrary lib = NULL;
	if (!k || !p_kernel_get_library)
		return 0;
	own_call++;
	CUresult r = p_kernel_get_library(&lib, k);
	own_call--;
	return r == CUDA_SUCCESS ? (uint64_t)(uintptr_t)lib : 0;
}

/* at the exit of a library load that succeeded: the library's file, for its modules loaded
 * later */
static void library_loaded(CUpti_CallbackId cbid, const void *a)
{
	char path[4096] = "";
	uint64_t off = 0;
	CUlibrary *pl = ((const cuLibraryLoadData_params *)a)->library; /* both start with it */
	if (!pl || !*pl)
		return;
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile) {
		if (load_call.fname)
			snprintf(path, sizeof(path), "%s", load_call.fname);
	} else if (!load_call.image || mapped_file_of(load_call.image, path, sizeof(path), &off) < 0) {
		path[0] = '\0';
	}
	library_put((uint64_t)(uintptr_t)*pl, path, off);
	MODLOG("library lib=0x%llx image=%p path=%s off=%llu\n", (unsigned long long)(uintptr_t)*pl,
	       load_call.image, path[0] ? path : "-", (unsigned long long)off);
}

/* 1: cbid is one of the load calls above (handled here) */
static int on_driver_load(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	int kind;
	const void *a = cb->functionParams;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
		kind = LOAD_MODULE_FILE;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
		kind = LOAD_MODULE_DATA;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
		kind = LOAD_LIBRARY_DATA;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
		kind = LOAD_LIBRARY_FILE;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction:
		kind = LOAD_GET;
		break;
	default:
		return 0;
	}
	if (own_call)
		return 1;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (load_call.depth++ == 0) {
			memset(&load_call, 0, sizeof(load_call));
			load_call.depth = 1;
			load_call.kind = kind;
			if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoad)
				load_call.fname = ((const cuModuleLoad_params *)a)->fname;
			else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile)
				load_call.fname = ((const cuLibraryLoadFromFile_params *)a)->fileName;
			else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData)
				load_call.image = ((const cuModuleLoadData_params *)a)->image;
			else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx)
				load_call.image = ((const cuModuleLoadDataEx_params *)a)->image;
			else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary)
				load_call.image = ((const cuModuleLoadFatBinary_params *)a)->fatCubin;
			else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData)
				load_call.image = ((const cuLibraryLoadData_params *)a)->code;
		}
		return 1;
	}
	if (--load_call.depth > 0)
		return 1;
	load_call.depth = 0;
	int ok = !cb->functionReturnValue || *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
	if (ok && (cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData ||
		   cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile))
		library_loaded(cbid, a);
	if (!ok || load_call.n == 0)
		return 1;
	uint64_t h = 0, lib = 0;
	CUmodule mod = NULL;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary: {
		/* the four params structs start with CUmodule *module */
		CUmodule *pm = ((const cuModuleLoad_params *)a)->module;
		h = pm ? (uint64_t)(uintptr_t)*pm : 0;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile: {
		CUlibrary *pl = ((const cuLibraryLoadData_params *)a)->library;
		/* loaded already (eager loading): asking for its module loads nothing */
		h = pl ? library_module(*pl) : 0;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule: {
		CUmodule *pm = ((const cuLibraryGetModule_params *)a)->pMod;
		h = pm ? (uint64_t)(uintptr_t)*pm : 0;
		lib = (uint64_t)(uintptr_t)((const cuLibraryGetModule_params *)a)->library;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel: {
		/* the library's module was loaded inside (lazy loading): asking loads nothing */
		CUlibrary l = ((const cuLibraryGetKernel_params *)a)->library;
		h = library_module(l);
		lib = (uint64_t)(uintptr_t)l;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction: {
		/* both params structs start with CUfunction *pFunc / *hfunc */
		CUfunction *pf = ((const cuKernelGetFunction_params *)a)->pFunc;
		if (pf && *pf && p_func_get_module && p_func_get_module(&mod, *pf) == CUDA_SUCCESS)
			h = (uint64_t)(uintptr_t)mod;
		if (cbid == CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction)
			lib = kernel_library(((const cuKernelGetFunction_params *)a)->kernel);
		break;
	}
	default:
		break;
	}
	call_module_handle(h);
	if (lib && load_call.n == 1)
		module_from_library(load_call.first, lib);
	return 1;
}

/* code_of for driver launches (handle: CUfunction; in_launch: asked at a launch's exit) and
 * graph kernel nodes */
static uint32_t function_code_at(uint64_t handle, const char *name, uint32_t *bind, int in_launch)
{
	*bind = PVG_WITNESS_BIND_NONE;
	CUmodule mod = NULL;
	uint64_t h = 0;
	if (handle && p_func_get_module &&
	    p_func_get_module(&mod, (CUfunction)(uintptr_t)handle) == CUDA_SUCCESS)
		h = (uint64_t)(uintptr_t)mod;
	/* the runtime (CUDA 12+) launches a CUkernel through cuLaunchKernel: no function's
	 * module, but its library's (measured on the H200: cuFuncGetModule fails there) */
	uint64_t lib = 0;
	if (!h && handle && (lib = kernel_library((CUkernel)(uintptr_t)handle)))
		h = library_module((CUlibrary)(uintptr_t)lib);
	int idx = pvg_witness_module_by_handle(h);
	if (idx >= 0) {
		*bind = PVG_WITNESS_BIND_HANDLE;
		if (lib)
			module_from_library(idx, lib);
		MODLOG("bind f=0x%llx mod=0x%llx idx=%d by=handle name=%s\n", (unsigned long long)handle,
		       (unsigned long long)h, idx, name ? name : "-");
		return (uint32_t)idx + 1;
	}
	/* loaded inside this very launch call on this thread, and defining the name */
	if (in_launch && loads_here == loads_at_launch + 1 && last_loaded >= 0 &&
	    pvg_witness_module_defines(last_loaded, name) == 1) {
		if (h)
			pvg_witness_module_set_handle(last_loaded, h);
		if (lib)
			module_from_library(last_loaded, lib);
		*bind = PVG_WITNESS_BIND_LOADED_IN_CALL;
		MODLOG("bind f=0x%llx mod=0x%llx idx=%d by=in-call name=%s\n",
		       (unsigned long long)handle, (unsigned long long)h, last_loaded,
		       name ? name : "-");
		return (uint32_t)last_loaded + 1;
	}
	uint32_t code = pvg_witness_module_by_name(name, bind);
	MODLOG("bind f=0x%llx mod=0x%llx idx=%d by=name(%u) name=%s\n", (unsigned long long)handle,
	       (unsigned long long)h, (int)code - 1, *bind, name ? name : "-");
	return code;
}

static uint32_t function_code(uint64_t handle, const char *name, uint32_t *bind)
{
	return function_code_at(handle, name, bind, 1);
}

/* code_of for runtime launches (a host stub or a cudaKernel_t: no CUfunction) */
static uint32_t name_code(uint64_t handle, const char *name, uint32_t *bind)
{
	(void)handle;
	return pvg_witness_module_by_name(name, bind);
}

/* ---- graphs ------------------------------------------------------------------------------------ */

#define GRAPH_MAX_DEPTH 8
#define GRAPH_MAX_NODES (1u << 18) /* of one exec, child graphs included */

static CUresult (*p_graph_get_nodes)(CUgraph, CUgraphNode *, size_t *);
static CUresult (*p_node_get_type)(CUgraphNode, CUgraphNodeType *);
static CUresult (*p_kernel_node_get_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
static CUresult (*p_child_graph_get)(CUgraphNode, CUgraph *);
static CUresult (*p_func_get_name)(const char **, CUfunction);
static CUresult (*p_kernel_get_name)(const char **, CUkernel);
static CUresult (*p_exec_get_flags)(CUgraphExec, cuuint64_t *);

static __thread int in_graph_call; /* inside an instantiate or update this file handles */

struct klist {
	struct pvg_graph_kernel *v;
	size_t n, cap;
	uint32_t flags; /* PVG_GRAPH_PARTIAL */
};

static int klist_add(struct klist *l, const struct pvg_graph_kernel *k)
{
	if (l->n == GRAPH_MAX_NODES)
		return -ENOSPC;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct pvg_graph_kernel *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *k;
	return 0;
}

/* A kernel's name from its function (or, for a node that holds a CUkernel, the kernel). */
static const char *kernel_name(CUfunction f, CUkernel kern)
{
	const char *name = NULL;
	if (f && p_func_get_name && p_func_get_name(&name, f) == CUDA_SUCCESS)
		return name;
	if (!f && kern && p_kernel_get_name && p_kernel_get_name(&name, kern) == CUDA_SUCCESS)
		return name;
	return NULL;
}

/* One kernel node's entry from its parameters (v2 and v3 share these fields). The name
 * pointer is the driver's: it is copied by pvg_witness_graph_set before the call returns. */
static void kernel_entry(struct pvg_graph_kernel *k, uint64_t node, uint64_t parent,
			 CUfunction func, CUkernel kern, const unsigned g[3], const unsigned b[3])
{
	memset(k, 0, sizeof(*k));
	k->node = node;
	k->parent = parent;
	k->handle = func ? (uint64_t)(uintptr_t)func : (uint64_t)(uintptr_t)kern;
	memcpy(k->grid, g, sizeof(k->grid));
	memcpy(k->block, b, sizeof(k->block));
	k->name = kernel_name(func, kern);
	if (!modules_on)
		return;
	if (func)
		k->code = function_code_at((uint64_t)(uintptr_t)func, k->name, &k->bind, 0);
	else
		k->code = pvg_witness_module_by_name(k->name, &k->bind);
}

#define KPARAMS_DIMS(p, g, b)                                                                    \
	const unsigned g[3] = { (p)->gridDimX, (p)->gridDimY, (p)->gridDimZ },                   \
		       b[3] = { (p)->blockDimX, (p)->blockDimY, (p)->blockDimZ }

/* The kernels of graph g and of its child graphs, depth first, appended to l. 0 or <0: a
 * query failed or the driver lacks one (the exec is then opaque). */
static int read_graph(CUgraph g, uint64_t parent, int depth, struct klist *l)
{
	if (!p_graph_get_nodes || !p_node_get_type || !p_kernel_node_get_params)
		return -ENOSYS;
	size_t n = 0;
	if (p_graph_get_nodes(g, NULL, &n) != CUDA_SUCCESS)
		return -EIO;
	if (n > GRAPH_MAX_NODES)
		return -ENOSPC;
	CUgraphNode *nodes = n ? malloc(n * sizeof(*nodes)) : NULL;
	if (n && !nodes)
		return -ENOMEM;
	int r = 0;
	if (n && p_graph_get_nodes(g, nodes, &n) != CUDA_SUCCESS)
		r = -EIO;
	for (size_t i = 0; r == 0 && i < n; i++) {
		CUgraphNodeType type;
		if (p_node_get_type(nodes[i], &type) != CUDA_SUCCESS) {
			r = -EIO;
			break;
		}
		uint64_t node = (uint64_t)(uintptr_t)nodes[i];
		struct pvg_graph_kernel k;
		if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
			CUDA_KERNEL_NODE_PARAMS p;
			memset(&p, 0, sizeof(p));
			if (p_kernel_node_get_params(nodes[i], &p) != CUDA_SUCCESS || (!p.func && !p.kern)) {
				r = -EIO;
				break;
			}
			KPARAMS_DIMS(&p, gd, bd);
			kernel_entry(&k, node, parent, p.func, p.kern, gd, bd);
			r = klist_add(l, &k);
		} else if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
			CUgraph child = NULL;
			if (!p_child_graph_get || p_child_graph_get(nodes[i], &child) != CUDA_SUCCESS) {
				r = -EIO;
				break;
			}
			memset(&k, 0, sizeof(k));
			k.node = node;
			k.parent = parent;
			k.flags = PVG_GRAPH_K_CHILD;
			r = klist_add(l, &k);
			if (r == 0 && depth + 1 >= GRAPH_MAX_DEPTH)
				l->flags |= PVG_GRAPH_PARTIAL;
			else if (r == 0)
				r = read_graph(child, node, depth + 1, l);
		} else if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
			/* its body runs 0..n times a replay, decided on the GPU */
			l->flags |= PVG_GRAPH_PARTIAL;
		}
		/* memcpy, memset, host, empty, event, semaphore, memory and mem-op nodes run no
		 * kernel of the service's */
	}
	free(nodes);
	return r;
}

static void exec_read(CUgraphExec exec, CUgraph g, unsigned long long inst_flags)
{
	uint64_t e = (uint64_t)(uintptr_t)exec;
	struct klist l = { 0 };
	cuuint64_t f = inst_flags;
	if (!f && p_exec_get_flags)
		p_exec_get_flags(exec, &f);
	if (f & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
		l.flags |= PVG_GRAPH_PARTIAL; /* it may be launched from the GPU, unseen */
	if (read_graph(g, 0, 0, &l) == 0)
		pvg_witness_graph_set(e, l.v, l.n, l.flags);
	else
		pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UNREAD);
	free(l.v);
}

/* Is k under the child-graph node c (at any depth)? */
static int under(const struct pvg_graph_kernel *v, size_t n, size_t i, uint64_t c)
{
	for (int depth = 0; v[i].parent && depth <= GRAPH_MAX_DEPTH; depth++) {
		if (v[i].parent == c)
			return 1;
		size_t j = 0;
		while (j < n && !(v[j].node == v[i].parent && (v[j].flags & PVG_GRAPH_K_CHILD)))
			j++;
		if (j == n)
			return 0;
		i = j;
	}
	return 0;
}

/* exec's child-graph node c now runs graph g: its old kernels out, g's in. */
static void exec_set_child(uint64_t e, uint64_t c, CUgraph g)
{
	size_t n;
	uint32_t flags;
	struct pvg_graph_kernel *v = pvg_witness_graph_get(e, &n, &flags);
	if (!v) {
		pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UPDATE);
		return;
	}
	struct klist l = { .flags = flags };
	size_t at = n;
	int depth = 0, r = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].node == c && (v[i].flags & PVG_GRAPH_K_CHILD))
			at = i;
	if (at == n) {
		r = -ENOENT;
	} else {
		for (uint64_t p = v[at].parent; p && depth < GRAPH_MAX_DEPTH; depth++) {
			size_t j = 0;
			while (j < n && v[j].node != p)
				j++;
			p = j < n ? v[j].parent : 0;
		}
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (under(v, n, i, c))
			continue;
		r = klist_add(&l, &v[i]);
		if (r < 0 || i != at)
			continue;
		if (depth + 1 >= GRAPH_MAX_DEPTH)
			l.flags |= PVG_GRAPH_PARTIAL;
		else
			r = read_graph(g, c, depth + 1, &l);
	}
	if (r == 0)
		pvg_witness_graph_set(e, l.v, l.n, l.flags);
	else
		pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UPDATE);
	free(l.v);
	free(v);
}

/* exec's kernel node now launches func/kern with these dims. */
static void exec_set_kernel(uint64_t e, uint64_t node, CUfunction func, CUkernel kern,
			    const unsigned g[3], const unsigned b[3])
{
	size_t n;
	uint32_t flags;
	struct pvg_graph_kernel *v = pvg_witness_graph_get(e, &n, &flags);
	size_t hits = 0;
	for (size_t i = 0; v && i < n; i++) {
		if (v[i].node != node || (v[i].flags & PVG_GRAPH_K_CHILD))
			continue;
		uint32_t keep = v[i].flags & PVG_GRAPH_K_DISABLED;
		kernel_entry(&v[i], node, v[i].parent, func, kern, g, b);
		v[i].flags |= keep;
		hits++;
	}
	if (hits && (func || kern))
		pvg_witness_graph_set(e, v, n, flags);
	else
		pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UPDATE);
	free(v);
}

/* exec's node enabled or disabled (kernel, memset and memcpy nodes take it): a node not in
 * the list (memcpy, memset) changes nothing; a child-graph node is not one the driver takes,
 * and is not guessed at. */
static void exec_set_enabled(uint64_t e, uint64_t node, unsigned on)
{
	size_t n;
	uint32_t flags;
	struct pvg_graph_kernel *v = pvg_witness_graph_get(e, &n, &flags);
	if (!v)
		return; /* unknown or opaque already */
	size_t hits = 0, child = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].node != node)
			continue;
		if (v[i].flags & PVG_GRAPH_K_CHILD) {
			child++;
			continue;
		}
		v[i].flags = on ? v[i].flags & ~PVG_GRAPH_K_DISABLED : v[i].flags | PVG_GRAPH_K_DISABLED;
		hits++;
	}
	if (child)
		pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UPDATE);
	else if (hits)
		pvg_witness_graph_set(e, v, n, flags);
	free(v);
}

/* cuGraphExecUpdate: exec now runs g's parameters. The enabled state of a node is kept by
 * the exec, paired with g's nodes in a way this file does not know: with a disabled node
 * the exec becomes opaque. */
static void exec_update(uint64_t e, CUgraph g)
{
	size_t n;
	uint32_t flags;
	struct pvg_graph_kernel *v = pvg_witness_graph_get(e, &n, &flags);
	int disabled = 0;
	for (size_t i = 0; v && i < n; i++)
		disabled |= (v[i].flags & PVG_GRAPH_K_DISABLED) != 0;
	free(v);
	if (disabled) {
		pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UPDATE);
		return;
	}
	exec_read((CUgraphExec)(uintptr_t)e, g, 0);
}

static const CUpti_CallbackId driver_graph_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
	/* changes of nodes that run no kernel: seen so that CUPTI's resource callback for
	 * them is known to be one of these */
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventRecordNodeSetEvent,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventWaitNodeSetEvent,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecExternalSemaphoresSignalNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecExternalSemaphoresWaitNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecBatchMemOpNodeSetParams,
};

static const CUpti_CallbackId resource_graph_ids[] = {
	CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
	CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
	CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED,
	CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS,
};

/* 1: cbid is one of the graph calls above (handled here) */
static int on_driver_graph(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	if (!IN_IDS(cbid, driver_graph_ids))
		return 0;
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy) {
		if (cb->callbackSite == CUPTI_API_ENTER)
			pvg_witness_graph_drop((uint64_t)(uintptr_t)((const cuGraphExecDestroy_params *)
								      cb->functionParams)->hGraphExec);
		return 1;
	}
	if (cb->callbackSite == CUPTI_API_ENTER) {
		in_graph_call++;
		return 1;
	}
	in_graph_call--;
	if (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return 1; /* nothing changed */
	const void *a = cb->functionParams;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate: {
		const cuGraphInstantiate_params *p = a;
		exec_read(*p->phGraphExec, p->hGraph, 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2: {
		const cuGraphInstantiate_v2_params *p = a;
		exec_read(*p->phGraphExec, p->hGraph, 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags: {
		const cuGraphInstantiateWithFlags_params *p = a;
		exec_read(*p->phGraphExec, p->hGraph, p->flags);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams: {
		const cuGraphInstantiateWithParams_params *p = a;
		exec_read(*p->phGraphExec, p->hGraph, p->instantiateParams ? p->instantiateParams->flags : 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
		const cuGraphInstantiateWithParams_ptsz_params *p = a;
		exec_read(*p->phGraphExec, p->hGraph, p->instantiateParams ? p->instantiateParams->flags : 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate: {
		const cuGraphExecUpdate_params *p = a;
		exec_update((uint64_t)(uintptr_t)p->hGraphExec, p->hGraph);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2: {
		const cuGraphExecUpdate_v2_params *p = a;
		exec_update((uint64_t)(uintptr_t)p->hGraphExec, p->hGraph);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams: {
		const cuGraphExecKernelNodeSetParams_params *p = a;
		if (!p->nodeParams) {
			pvg_witness_graph_opaque((uint64_t)(uintptr_t)p->hGraphExec, PVG_WITNESS_OPAQUE_UPDATE);
			break;
		}
		KPARAMS_DIMS(p->nodeParams, gd, bd);
		exec_set_kernel((uint64_t)(uintptr_t)p->hGraphExec, (uint64_t)(uintptr_t)p->hNode,
				p->nodeParams->func, NULL, gd, bd);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2: {
		const cuGraphExecKernelNodeSetParams_v2_params *p = a;
		if (!p->nodeParams) {
			pvg_witness_graph_opaque((uint64_t)(uintptr_t)p->hGraphExec, PVG_WITNESS_OPAQUE_UPDATE);
			break;
		}
		KPARAMS_DIMS(p->nodeParams, gd, bd);
		exec_set_kernel((uint64_t)(uintptr_t)p->hGraphExec, (uint64_t)(uintptr_t)p->hNode,
				p->nodeParams->func, p->nodeParams->kern, gd, bd);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams: {
		const cuGraphExecNodeSetParams_params *p = a;
		uint64_t e = (uint64_t)(uintptr_t)p->hGraphExec, node = (uint64_t)(uintptr_t)p->hNode;
		if (!p->nodeParams) {
			pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UPDATE);
		} else if (p->nodeParams->type == CU_GRAPH_NODE_TYPE_KERNEL) {
			const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->nodeParams->kernel;
			KPARAMS_DIMS(k, gd, bd);
			exec_set_kernel(e, node, k->func, k->kern, gd, bd);
		} else if (p->nodeParams->type == CU_GRAPH_NODE_TYPE_GRAPH) {
			exec_set_child(e, node, p->nodeParams->graph.graph);
		} else {
			/* another node type: a kernel or child node of the list changed into it
			 * cannot be (types do not change); anything else runs no kernel */
			size_t n;
			uint32_t flags;
			struct pvg_graph_kernel *v = pvg_witness_graph_get(e, &n, &flags);
			for (size_t i = 0; v && i < n; i++)
				if (v[i].node == node) {
					pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_UPDATE);
					break;
				}
			free(v);
		}
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams: {
		const cuGraphExecChildGraphNodeSetParams_params *p = a;
		exec_set_child((uint64_t)(uintptr_t)p->hGraphExec, (uint64_t)(uintptr_t)p->hNode,
			       p->childGraph);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled: {
		const cuGraphNodeSetEnabled_params *p = a;
		exec_set_enabled((uint64_t)(uintptr_t)p->hGraphExec, (uint64_t)(uintptr_t)p->hNode,
				 p->isEnabled);
		break;
	}
	default:
		break;
	}
	return 1;
}

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
		module_loaded(rd ? rd->resourceDescriptor : NULL);
		return;
	}
	if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
		module_unloading(rd ? rd->resourceDescriptor : NULL);
		return;
	}
	const CUpti_GraphData *gd = rd ? rd->resourceDescriptor : NULL;
	if (!gd || !gd->graphExec)
		return;
	uint64_t e = (uint64_t)(uintptr_t)gd->graphExec;
	switch (cbid) {
	case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
		/* inside a cuGraphInstantiate* seen here, its exit reads the graph (after the
		 * driver is done with it); from anywhere else, now */
		if (!in_graph_call && gd->graph)
			exec_read(gd->graphExec, gd->graph, 0);
		break;
	case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING:
		pvg_witness_graph_drop(e);
		break;
	case CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED:
	case CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS:
		/* an exec's node changed by a call this file does not follow */
		if (!in_graph_call)
			pvg_witness_graph_opaque(e, PVG_WITNESS_OPAQUE_CHANGED);
		break;
	default:
		break;
	}
}

static void graph_launch(CUgraphExec exec, CUstream stream)
{
	/* launched into a stream being captured: it becomes a node of that graph, run when
	 * that graph is (and read when it is instantiated) */
	if (captured(stream))
		return;
	pvg_witness_graph_replay((uint64_t)(uintptr_t)exec);
}

static void open_graph_queries(void *cuda)
{
#define SYM(p, name) p = (__typeof__(p))dlsym(cuda, name)
	SYM(p_graph_get_nodes, "cuGraphGetNodes");
	SYM(p_node_get_type, "cuGraphNodeGetType");
	SYM(p_kernel_node_get_params, "cuGraphKernelNodeGetParams_v2");
	SYM(p_child_graph_get, "cuGraphChildGraphNodeGetGraph");
	SYM(p_func_get_name, "cuFuncGetName");
	SYM(p_kernel_get_name, "cuKernelGetName");
	SYM(p_exec_get_flags, "cuGraphExecGetFlags");
#undef SYM
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
		.code_of = !modules_on ? NULL : via == PVG_WITNESS_VIA_DRIVER ? function_code : name_code,
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
	if (on_driver_graph(cbid, cb))
		return;
	if (on_driver_load(cbid, cb))
		return;
	if (cb->callbackSite != CUPTI_API_EXIT) {
		loads_at_launch = loads_here; /* a module loaded before the exit: in this call */
		return;
	}
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
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
		if (in_runtime) {
			runtime_saw_driver = 1;
			pvg_witness_nested_driver();
		}
		/* the two params structs have the same layout */
		const cuGraphLaunch_params *p = cb->functionParams;
		graph_launch(p->hGraph, p->hStream);
		return;
	}
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
		const cudaGraphLaunch_v10000_params *p = cb->functionParams;
		graph_launch((CUgraphExec)p->graphExec, (CUstream)p->stream);
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
	else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
		on_resource(cbid, data);
}

#ifdef PVG_WITNESS_BENCH
/* Only in libprovgate-witness-bench.so: the witness's own time for each cuGraphLaunch, from
 * the entry of its callback to the exit, for tests/gpu/witness/demo.cu graph-cost. Each
 * callback of a graph launch (CUPTI calls it at the call's entry and at its exit) is
 * bracketed by three reads of the timer: t0, t1 (nothing between them: what one read of the
 * timer itself costs, the empty bracket), then on_callback, then t2. This thread's sums are
 * read and reset by pvg_witness_bench_graph_cost. The timer: the TSC (lfence; rdtsc;
 * lfence) on x86-64, CLOCK_MONOTONIC_RAW in ns elsewhere; pvg_witness_bench_ticks reads the
 * same timer, so that the caller converts ticks to ns against its own clock. */
static inline uint64_t bench_ticks(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

PVG_WITNESS_EXPORT uint64_t pvg_witness_bench_ticks(void)
{
	return bench_ticks();
}

/* [0] callbacks, [1] ticks in on_callback (the bracket t1..t2), [2] ticks in the empty
 * brackets (t0..t1), [3] of [1], those of the callbacks at the call's exit */
static __thread uint64_t bench_cost[4];

static void CUPTIAPI on_callback_timed(void *userdata, CUpti_CallbackDomain domain,
				       CUpti_CallbackId cbid, const void *data)
{
	int graph = domain == CUPTI_CB_DOMAIN_DRIVER_API
			    ? cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
				      cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz
			    : domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
				      (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
				       cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000);
	if (!graph) {
		on_callback(userdata, domain, cbid, data);
		return;
	}
	uint64_t t0 = bench_ticks();
	uint64_t t1 = bench_ticks();
	on_callback(userdata, domain, cbid, data);
	uint64_t t2 = bench_ticks();
	bench_cost[0]++;
	bench_cost[1] += t2 - t1;
	bench_cost[2] += t1 - t0;
	if (((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT)
		bench_cost[3] += t2 - t1;
}

/* Copies this thread's sums (bench_cost above) to out and resets them. */
PVG_WITNESS_EXPORT void pvg_witness_bench_graph_cost(uint64_t out[4])
{
	memcpy(out, bench_cost, sizeof(bench_cost));
	memset(bench_cost, 0, sizeof(bench_cost));
}
#define WITNESS_CALLBACK on_callback_timed
#else
#define WITNESS_CALLBACK on_callback
#endif

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
static unsigned set_callbacks(uint32_t on, int runtime, int graphs)
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
		SET(CUPTI_CB_DOMAIN_DRIVER_API, driver_graph_ids),
		SET(CUPTI_CB_DOMAIN_RESOURCE, resource_graph_ids),
		SET(CUPTI_CB_DOMAIN_DRIVER_API, driver_load_ids),
		SET(CUPTI_CB_DOMAIN_RESOURCE, resource_module_ids),
		SET(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_ids),
		SET(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_capture_begin),
		SET(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_capture_end),
#undef SET
	};
	unsigned failed = 0;
	for (size_t k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		if (sets[k].domain == CUPTI_CB_DOMAIN_RUNTIME_API && !runtime)
			continue;
		if (!graphs && (sets[k].ids == driver_graph_ids || sets[k].ids == resource_graph_ids))
			continue;
		if (!modules_on && (sets[k].ids == driver_load_ids || sets[k].ids == resource_module_ids))
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
 *    2  the launch and capture callbacks on, the graph ones (instantiate, update, resource)
 *       off: what was enabled before graphs were read
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
	if (on == 2) /* the launch callbacks alone, as before graphs were read */
		return set_callbacks(0, runtime_enabled, 1) || set_callbacks(1, runtime_enabled, 0) ? -1 : 0;
	return set_callbacks(on ? 1 : 0, runtime_enabled, 1) ? -1 : 0;
}

/* Module recording on (1, as installed) or off (0: the module load callbacks disabled and no
 * record asks for its code, as before modules were recorded), for the cost of recording them
 * inside one process. 0 when done, -1 otherwise. */
PVG_WITNESS_EXPORT int pvg_witness_bench_modules(int on)
{
	if (!p_enable || !subscriber)
		return -1;
	modules_on = on ? 1 : 0;
	unsigned failed = 0;
	for (size_t i = 0; i < sizeof(driver_load_ids) / sizeof(driver_load_ids[0]); i++)
		failed += p_enable(modules_on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
				   driver_load_ids[i]) != CUPTI_SUCCESS;
	for (size_t i = 0; i < sizeof(resource_module_ids) / sizeof(resource_module_ids[0]); i++)
		failed += p_enable(modules_on, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
				   resource_module_ids[i]) != CUPTI_SUCCESS;
	return failed ? -1 : 0;
}

/* 1: each cuGraphLaunch counts a replay of its exec (the installed library); 0: it is
 * counted in the header only, as before graphs were read. Returns the previous setting. The
 * other bits of the setting (writer.c) are kept. */
PVG_WITNESS_EXPORT int pvg_witness_bench_replay(int on)
{
	return (on ? atomic_fetch_or(&pvg_witness_bench_replay_counting, 1)
		   : atomic_fetch_and(&pvg_witness_bench_replay_counting, ~1)) & 1;
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
	if (cuda) {
		p_is_capturing = (CUresult(*)(CUstream, CUstreamCaptureStatus *))dlsym(
			cuda, "cuStreamIsCapturing");
		open_graph_queries(cuda);
		p_func_get_module = (CUresult(*)(CUmodule *, CUfunction))dlsym(cuda, "cuFuncGetModule");
		p_library_get_module = (CUresult(*)(CUmodule *, CUlibrary))dlsym(cuda, "cuLibraryGetModule");
		p_kernel_get_library = (CUresult(*)(CUlibrary *, CUkernel))dlsym(cuda, "cuKernelGetLibrary");
	}
	modules_on = 1;
	pthread_atfork(NULL, NULL, libs_after_fork);
#ifdef PVG_WITNESS_BENCH
	/* the witness as it was before it recorded code modules, for the cost of doing so */
	const char *bm = getenv("PVG_WITNESS_BENCH_MODULES");
	if (bm && strcmp(bm, "0") == 0)
		modules_on = 0;
	const char *ml = getenv("PVG_WITNESS_BENCH_MODLOG");
	if (ml && ml[0])
		modlog = fopen(ml, "we");
#endif
	if (modules_on)
		pvg_witness_modules_recording();
	CUptiResult r = p_subscribe(&subscriber, WITNESS_CALLBACK, NULL);
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
	bench_callback = WITNESS_CALLBACK;
#endif
	unsigned failed = set_callbacks(1, runtime, 1);
	snprintf(note, sizeof(note), "cuda: %.60s%s%s", which, runtime ? ", runtime and driver API" : "",
		 failed ? " (some launch callbacks could not be enabled)" : "");
	pvg_witness_set_api(PVG_WITNESS_API_CUDA, note, 1);
	return 1;
}
