/* SPDX-License-Identifier: MIT */
/*
 * JIT code in gate 7 (SPEC §12): a module the witness saw handed to the driver from memory
 * (Triton's cuModuleLoadData of its cubin) joins the chain through its Triton cache entry.
 * The entry is the one whose binary has the module's sha256, in the folders the service
 * uses (TRITON_CACHE_DIR, TRITON_HOME/.triton/cache, HOME/.triton/cache and VLLM_CACHE_ROOT's
 * compile cache from its environment, witness.triton_caches), all read inside its root with
 * its user's rights. The entry links the module to the change when its target is the node's
 * arch, its .source names a changed .py as installed, with the change's content, and it was
 * written after that file took its content. Judged only for modules that ran a required
 * kernel; the decision on the verdicts is 07-dispatch-marker.c's.
 *
 * Several entries can hold the module's bytes (one kernel in vLLM's per-rank folders, or
 * compiled again under another key): each is judged, and the bytes are the installed code
 * when any one of them is a fresh compile of the installed file, since the same bytes ran
 * whichever entry Triton read them from. None linked: the best of the others decides (one
 * that cannot be read or matched may still be that compile: unverifiable; else a fail).
 * An autotuner's other variants of a kernel that ran (same name and source, other bytes)
 * are not the code that ran: listed, judged for the reader, never a problem.
 */
#pragma once
#include "checks.h"
#include "core/result.h"
#include "facts.h"
#include "formats/witness.h"
#include "sys/triton-cache.h"
#include "sys/witness.h"

enum triton_verdict {
	TRITON_LINKED,        /* a fresh entry of a changed file, for the node's arch */
	TRITON_NO_ENTRY,      /* no entry has these bytes in the folders looked at */
	TRITON_BAD_ENTRY,     /* its json or .source cannot be read */
	TRITON_WRONG_ARCH,    /* compiled for another target */
	TRITON_NOT_CHANGED,   /* its source is no .py of the change set */
	TRITON_OTHER_COPY,    /* its source is not the installed file, or lacks the change */
	TRITON_STALE,         /* written before its source took its content */
	TRITON_INSTALL_UNKNOWN, /* its source ends like a changed .py whose install path is not
				 * known: whether it is the installed file cannot be told */
};

#define TRITON_MAX_SAME_BYTES 64u /* entries judged for one module's bytes */
#define TRITON_MAX_VARIANTS 64u   /* other variants listed in the evidence */

/* One entry, judged. */
struct triton_entry_verdict {
	const struct pvg_triton_entry *e;
	enum triton_verdict v;
	char *why;
	char *change; /* LINKED: the changed .py it was compiled from (repo-relative) */
	bool loaded; /* (variants) a module the witness saw loaded has its bytes */
};

struct triton_judged {
	uint8_t sha256[32];
	enum triton_verdict v;
	const struct pvg_triton_entry *e; /* the entry that decided; NULL with NO_ENTRY */
	char *why;                        /* in words */
	char *change;                     /* LINKED: the changed .py it was compiled from
					   * (repo-relative) */
	struct triton_entry_verdict *same; /* the other entries with these bytes */
	size_t n_same;
	size_t same_unjudged; /* past TRITON_MAX_SAME_BYTES */
};

struct triton_jit {
	struct pvg_ctx *ctx;
	pid_t pid;          /* the service's primary process */
	bool built;
	int root_fd;        /* the service's root (O_PATH), opened once when built; -1: none */
	struct pvg_creds creds; /* the service's user, read once when built */
	bool as_user;       /* open as that user (not provgate's own) */
	char *why;          /* the folders could not be read at all: why */
	struct pvg_triton_index idx;
	struct triton_judged *v;
	size_t n;
	size_t n_required; /* the first n_required were judged for required kernels */
	struct triton_entry_verdict *variants; /* dispatch_triton_variants */
	size_t n_variants, variants_total;
};

void dispatch_triton_init(struct triton_jit *j, struct pvg_ctx *ctx, pid_t pid);
void dispatch_triton_clear(struct triton_jit *j);
/* The verdict on a MEMORY module (judged once per digest). */
const struct triton_judged *dispatch_triton_judge(struct triton_jit *j,
						  const struct pvg_witness_mod *m);
/* The other variants of the kernels judged: entries of the same kernel name and .source
 * path as a judged module's entry whose bytes no judged module has (an autotuner's other
 * configs, other specialisations), each judged and marked loaded when a module in dir has
 * its bytes. Evidence only: they are not the code that ran a required kernel. */
void dispatch_triton_variants(struct triton_jit *j, const struct pvg_witness_dir *dir);
/* One problem per module that ran a required kernel and is not linked. */
struct pvg_outcome rule_witness_triton(const struct triton_jit *j);
/* evidence.witness.triton: the folders looked at, the modules judged. */
void dispatch_triton_evidence(cJSON *ev, const struct triton_jit *j);
