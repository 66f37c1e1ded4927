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
PVG_WITNESS_EXPORT void pvg_witness_graph_launch(void);
PVG_WITNESS_EXPORT void pvg_witness_nested_driver(void);
PVG_WITNESS_EXPORT void pvg_witness_captured(void);
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
