/* SPDX-License-Identifier: MIT */
/*
 * libprovgate-witness.so: the launch table shared by the CUDA (cuda.c) and ROCm (hsa.cc)
 * front ends, and the writer of the witness file (formats/witness.h). The launch path only
 * touches the table: an open-addressing hash table of fixed size whose entries are claimed
 * with one compare-and-swap and counted with atomic adds; a helper thread (and the exit
 * handler) turns it into a file, written to a temporary name and renamed.
 */
#pragma once
#include <stdint.h>

#include "formats/witness.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PVG_WITNESS_EXPORT __attribute__((visibility("default")))

/* What a front end knows about one launch. handle identifies the kernel for the table (a
 * CUfunction, a host stub, an HSA kernel object); name is read only when the launch makes a
 * new entry, and module_of (may be NULL) is asked for the module then too. code_of (may be
 * NULL: the record's code is unknown) is asked on that path only as well, for the code
 * module the launch ran (see "code modules" below): it returns 1 + the module's index, or 0,
 * and sets *bind (enum pvg_witness_bind; NONE with 0). A launch of a key already in the table
 * asks nothing: the launch path costs what it did. */
struct pvg_launch {
	uint64_t handle;
	uint32_t grid[3], block[3];
	uint32_t via; /* enum pvg_witness_via */
	const char *name; /* NULL: unknown */
	const char *(*module_of)(uint64_t handle, char *buf, unsigned size);
	uint32_t (*code_of)(uint64_t handle, const char *name, uint32_t *bind);
};

/* Counts one launch; never blocks, never allocates. Exported so that tests can drive the
 * writer without a GPU. */
PVG_WITNESS_EXPORT void pvg_witness_record(const struct pvg_launch *l);
PVG_WITNESS_EXPORT void pvg_witness_nested_driver(void);
PVG_WITNESS_EXPORT void pvg_witness_captured(void);
/* ---- CUDA graph execs ------------------------------------------------------------------------
 * A front end reads an exec's kernel nodes when it is instantiated (or updated) and hands them
 * over as a list; each replay is then one count for the exec's current list (O(1): a lookup
 * of the exec, none when the thread replays the exec it replayed last, and an atomic add),
 * expanded to per-kernel records (via GRAPH) when the file is
 * written. Every list ever set is kept with its own replay count, so an update changes what
 * later replays ran, never what earlier ones did. */
#define PVG_GRAPH_K_CHILD 0x1u    /* a child-graph node: its kernels follow with parent = node */
#define PVG_GRAPH_K_DISABLED 0x2u /* cuGraphNodeSetEnabled(..., 0): runs as an empty node */
struct pvg_graph_kernel {
	uint64_t node;   /* the node's handle (the graph instantiated, or a child graph's) */
	uint64_t parent; /* the child-graph node it is in, 0 at the top level */
	uint64_t handle; /* CUfunction or CUkernel */
	uint32_t grid[3], block[3];
	uint32_t flags;   /* PVG_GRAPH_K_* */
	const char *name; /* NULL: unknown; copied by the writer when set */
	uint32_t code, bind; /* as code_of's answer: 1 + module index (0: unknown), how learnt */
};
/* exec flags */
#define PVG_GRAPH_PARTIAL 0x1u /* kernels that may run are not in the list (conditional bodies,
				* a device-launchable exec, nesting too deep) */
/* exec's kernels from now on: the n of k (copied). 0, or -ENOSPC when the tables are full
 * (the exec is then opaque: its replays counted, its kernels not). */
int pvg_witness_graph_set(uint64_t exec, const struct pvg_graph_kernel *k, size_t n,
			  uint32_t flags);
/* exec's kernels are not known from now on; why: PVG_WITNESS_OPAQUE_*. */
void pvg_witness_graph_opaque(uint64_t exec, uint32_t why);
/* exec was destroyed: a later exec with the same handle starts unknown. */
void pvg_witness_graph_drop(uint64_t exec);
/* A copy (malloc) of exec's current list, for an update: NULL when exec is unknown or opaque.
 * *flags: its PVG_GRAPH_* flags. */
struct pvg_graph_kernel *pvg_witness_graph_get(uint64_t exec, size_t *n, uint32_t *flags);
/* One cuGraphLaunch of exec that ran (not captured): never blocks, never allocates. */
void pvg_witness_graph_replay(uint64_t exec);

/* ---- code modules ------------------------------------------------------------------------------
 * The code the process loaded: each module once, at its load (a CUDA module or library image,
 * an HSA code object), with the sha256 of the bytes the driver or loader received. Loads are
 * rare and take a mutex; the lookups below take it too and are made only when a launch makes
 * a new record (code_of) or a graph is read, never for a launch already in the table. A
 * module stays in the table after its unload (with unload_ns): a record may name it. */
struct pvg_module_load {
	const void *image;     /* size bytes, hashed here unless sha256 is given; NULL with
				* sha256 NULL: not hashed (M_NOT_HASHED) */
	uint64_t size;
	const uint8_t *sha256; /* 32 bytes computed by the front end, or NULL */
	uint64_t handle;       /* CUmodule / CUlibrary / HSA loaded code object; 0: not known yet
				* (pvg_witness_module_set_handle) */
	uint64_t file_offset;  /* ORIGIN_FILE / EMBEDDED: the image's offset in path's file */
	uint32_t api_id;       /* CUPTI's moduleId, HSA's executable index */
	uint32_t origin;       /* enum pvg_witness_origin */
	uint32_t flags;        /* PVG_WITNESS_M_* the front end knows (COMPRESSED, NOT_HASHED) */
	uint32_t arch;
	const char *path;      /* NULL: none */
	/* the kernels (entry functions) the image defines: n_names NUL-terminated names back to
	 * back; each is kept as a 64-bit prefix of its sha256 (no name is stored) */
	const char *names;
	size_t names_len;      /* bytes of names */
	uint32_t n_names;
	uint32_t unhashed;     /* with M_NOT_HASHED: why (enum pvg_witness_unhashed) */
};
/* Largest image hashed; a larger one is recorded with M_NOT_HASHED. */
#define PVG_WITNESS_MODULE_MAX_HASH (1ull << 32)

/* Adds a module loaded now: its index (>= 0), -ENOSPC when the table is full (the load is
 * counted, F_MODULE_TABLE_FULL set), -ENOTCONN when the witness is not recording. */
int pvg_witness_module_add(const struct pvg_module_load *m);
/* The module at index was unloaded now: its handle and names are forgotten for lookups. */
void pvg_witness_module_unload(int index);
/* The module's handle, learnt after its load (a CUmodule from the exit of the load call). */
void pvg_witness_module_set_handle(int index, uint64_t handle);
/* The module's path and file offset, learnt after its load (a lazily loaded module's library
 * was registered from an image in a mapped file): set once, only when it has none. */
void pvg_witness_module_set_path(int index, const char *path, uint64_t file_offset);
/* The index of the loaded (not unloaded) module with this handle, or with this api_id; -ENOENT. */
int pvg_witness_module_by_handle(uint64_t handle);
int pvg_witness_module_by_api_id(uint32_t api_id);
/* The module a kernel name binds to by name alone: among the modules loaded now that define
 * name, 1 + the index of the first when all of them hold the same bytes (*bind ONLY_NAME),
 * of the first when they differ (*bind AMBIGUOUS: never a guess, the module only names one of
 * them), 0 when none does (*bind NONE). */
uint32_t pvg_witness_module_by_name(const char *name, uint32_t *bind);
/* The front end records module loads (header flag F_MODULES). */
void pvg_witness_modules_recording(void);
/* 1 when the module at index defines a kernel of this name, else 0. */
int pvg_witness_module_defines(int index, const char *name);
/* The module's sha256 and whether it was hashed: 0, or -ENOENT. */
int pvg_witness_module_digest(int index, uint8_t sha256[32]);

#ifdef PVG_WITNESS_BENCH
extern _Atomic int pvg_witness_bench_replay_counting; /* writer.c */
#endif

/* Writes the file now (tests; the helper thread and the exit handler call it too). 0 or
 * -errno. */
PVG_WITNESS_EXPORT int pvg_witness_flush(void);

/* Starts recording into dir (the constructor does this for $PROVGATE_WITNESS_DIR): reads
 * the process's identity, writes the header-only file, starts the helper thread. 0 or
 * -errno. pvg_witness_stop writes the final file and stops (the exit handler calls it). */
int pvg_witness_start(const char *dir);
void pvg_witness_stop(void);

/* A front end says it is recording (api, note) or why it is not (api NONE, note). */
void pvg_witness_set_api(uint32_t api, const char *note, int recording);
/* 1 when $PROVGATE_WITNESS_DIR is set and the writer started. */
int pvg_witness_active(void);
uint64_t pvg_witness_now_ns(void);

#ifdef __cplusplus
}
#endif
