/* SPDX-License-Identifier: MIT */
/*
 * Triton's compile cache, as its own source writes it (python/triton/runtime/cache.py,
 * python/triton/compiler/compiler.py): one folder per compiled kernel holding NAME.json (the
 * metadata: hash, target {backend, arch, warp_size}, name, triton_version, options),
 * NAME.source (MLIR whose first loc names the .py file and line the kernel was defined at),
 * the stages' IR and the binary the driver receives (NAME.cubin, on ROCm NAME.hsaco).
 * Pure parsers of those files' bytes, every field type-checked: the files are the service
 * user's and hostile. The folder walk is sys/triton-cache.c's.
 */
#pragma once
#include "util/util.h"

#define PVG_TRITON_MAX_JSON (1u << 20)   /* NAME.json larger than this is refused */
#define PVG_TRITON_MAX_SOURCE (4u << 20) /* NAME.source, and a .py scanned for kernels */
#define PVG_TRITON_MAX_NAME 256u

struct pvg_triton_meta {
	char name[PVG_TRITON_MAX_NAME]; /* the kernel (the @triton.jit function's name) */
	char backend[16];               /* "cuda" or "hip" */
	char arch[64];                  /* a target id as codeobj writes it: "sm_90", "gfx90a:xnack-" */
	char triton_version[32];        /* "" when absent */
	long warp_size;                 /* 0 when absent */
	/* the options that tell an autotuner's variants of one kernel apart (Triton's key
	 * hashes them and the constexprs, which the json does not keep): 0 when absent, and
	 * maxnreg 0 also when null (no cap) */
	long num_warps, num_stages, maxnreg;
};

/* Parses NAME.json. 0, or -EBADMSG with *why (allocated): not JSON, not an object, a field of
 * the wrong type or out of bounds (num_warps 1..1024, num_stages 0..1024, maxnreg null or
 * 1..65535), a backend other than cuda/hip, an arch that is no target. */
int pvg_triton_meta_parse(const char *text, size_t len, struct pvg_triton_meta *out, char **why);

/* Does a node of arch node ("sm_90", "gfx90a:xnack-") run an entry of meta m: CUDA the same
 * sm_NN (a cubin is built for one), HIP by the target-id rule (pvg_target_compatible). False
 * when node is NULL (not known). */
bool pvg_triton_arch_runs(const char *node, const struct pvg_triton_meta *m);

/* The binary's file name suffix for a backend: "cubin", "hsaco"; NULL for another. */
const char *pvg_triton_binary_ext(const char *backend);

/* The first loc("FILE":LINE:COL) of a NAME.source: *path allocated (MLIR string escapes
 * undone), *line. 0, or -ENOENT (none), -EBADMSG (a loc cut short or malformed). */
int pvg_triton_first_loc(const char *text, size_t len, char **path, unsigned long *line);

/* The names of a .py file's Triton kernels: the functions decorated with triton.jit,
 * triton.autotune or triton.heuristics (alone, with arguments over several lines, among other
 * decorators and comments), through the module's own name or an alias ("import triton as tr":
 * @tr.jit) or a name imported from triton or one of its modules ("from triton import (jit,)",
 * "from triton.runtime.jit import jit as tjit": @tjit), and fn of the call form
 * "k = triton.jit(fn)". A bounded textual scan, not Python: a jit of another library (numba,
 * jax) is none. Names are added to out (unique); returns how many were found.
 * *imports_triton (may be NULL): the file imports triton or one of its modules (or vLLM's
 * triton_utils), whether or not a kernel was found. */
size_t pvg_triton_py_scan(const char *text, size_t len, struct pvg_strv *out,
			  bool *imports_triton);
/* pvg_triton_py_scan without the import. */
size_t pvg_triton_py_kernels(const char *text, size_t len, struct pvg_strv *out);
