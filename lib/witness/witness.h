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
 * new entry, and module_of (may be NULL) is asked for the module then too. */
struct pvg_launch {
	uint64_t handle;
	uint32_t grid[3], block[3];
	uint32_t via; /* enum pvg_witness_via */
	const char *name; /* NULL: unknown */
	const char *(*module_of)(uint64_t handle, char *buf, unsigned size);
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
