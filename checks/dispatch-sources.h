/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's default requirement: the kernels of every changed device source, which the live
 * service must have launched from its artifact when a witness records (SPEC §12). This module
 * reads them: the change set's device sources (.cu, .hip), the objects the build log compiled
 * from each (its compile lines' -o), and the kernels of the node's arch inside those objects
 * (HIP offload bundles, CUDA fatbins: formats/codeobj); witness.changed_sources names a
 * source's kernels instead, or exempts it with a reason. A changed header has no object of its
 * own: its kernels come through the changed sources that include it. The decision is
 * 07-dispatch-marker.c's.
 */
#pragma once
#include "checks.h"
#include "core/result.h"
#include "facts.h"
#include "sys/witness.h"
#include "core/source-kernels.h"

enum changed_source_state {
	SOURCE_KERNELS,    /* its kernels are known: required */
	SOURCE_NO_KERNELS, /* its objects define no kernel for arch (host code only): nothing to
			    * require */
	SOURCE_EXEMPT,     /* witness.changed_sources exempts it (exempt: why) */
	SOURCE_HEADER,     /* a header: no object of its own */
	SOURCE_UNKNOWN,    /* its kernels could not be read (why) */
};

/* Launches of one source's kernels, counted by dispatch-witness.c over the live files. */
struct source_count {
	uint64_t from_artifact;  /* a module whose bytes are an artifact's code object */
	uint64_t name_only;      /* no module identity (an older witness, module unknown) */
	uint64_t elsewhere;      /* a module with other bytes */
	uint64_t ambiguous;      /* several modules define the name, none was told */
	uint64_t jit;            /* a module the driver compiled from PTX */
	uint64_t undecided;      /* not hashed, or the artifact's digests not known */
	uint64_t jit_unknown;    /* of undecided: JIT code no Triton entry decides */
	const struct pvg_witness_entry *other;   /* the most launched elsewhere record */
	const struct pvg_witness_mod *other_mod; /* its module */
	uint64_t other_n;
};

struct changed_source {
	char *path;          /* repo-relative */
	enum changed_source_state state;
	bool from_config;    /* kernels (or the exemption) from witness.changed_sources */
	bool triton;         /* a .py with Triton kernels: they run only as JIT modules whose
			      * Triton cache entry was compiled from this very file; with
			      * SOURCE_NO_KERNELS, one that imports triton and in which the scan
			      * knows no kernel (a note, why DISPATCH_SOURCE_TRITON_NO_KERNEL) */
	char *why;           /* UNKNOWN, NO_KERNELS, HEADER: in words */
	const char *exempt;  /* EXEMPT: the config's reason (borrowed) */
	struct pvg_strv kernels;
	const struct pvg_source_object *objs; /* read.objs */
	size_t n_objs;
	struct pvg_source_kernels read; /* the objects as read */
	bool *in_art;        /* [ctx->n_arts]: the configured artifacts its objects are linked
			      * into (by the output's file name); NULL: the log does not say,
			      * and a launch from any artifact's code counts */
	struct source_count count;
};

struct changed_sources {
	bool applies;   /* a change set to read (source.repo is set) */
	int err;        /* the change set or the build log cannot be read: -errno (why) */
	char *why;
	const char *arch;
	struct changed_source *v;
	size_t n;
	size_t n_required; /* sources in SOURCE_KERNELS or SOURCE_UNKNOWN */
};

#define DISPATCH_SOURCE_TRITON_NO_KERNEL                                                        \
	"it imports triton, but no Triton kernel was recognised in it (@triton.jit, "              \
	"@triton.autotune, @triton.heuristics, through an alias or a name imported from "      \
	"triton, or k = triton.jit(fn)): nothing of it is required; if it defines kernels, "   \
	"name them in witness.changed_sources"

void dispatch_sources_read(struct pvg_ctx *ctx, struct changed_sources *out);
void dispatch_sources_clear(struct changed_sources *s);
/* evidence.witness.changed_sources */
void dispatch_sources_evidence(cJSON *ev, const struct changed_sources *s);
/* "a, b, c" (at most 8 names, "and N more"), allocated. */
char *dispatch_source_kernel_list(const struct changed_source *s);
