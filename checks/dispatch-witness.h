/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's second evidence source: the dispatch witness, what the GPU runtime itself recorded
 * about the kernels the live service launched (libprovgate-witness.so, formats/witness.h).
 * This module reads, in the stages the gate asks for (the live processes, their environment,
 * the folder, a fresh answer, the files, the launches counted per witness.require and
 * witness.forbid), and writes what it read into the evidence; the decision on it is
 * 07-dispatch-marker.c's.
 */
#pragma once
#include "checks.h"
#include "core/result.h"
#include "facts.h"
#include "sys/witness.h"
#include "dispatch-sources.h"
#include "dispatch-triton.h"

/* witness.dir is set: the witness is part of gate 7. */
bool dispatch_witness_configured(const struct pvg_config *cfg);

/* The live targets: every process of the service tree, and this boot. In exec's
 * after-check also the processes of the tree the before-check saw (ctx->pinned_procs) that
 * are not live targets now: their files are read for the modules loaded in the benchmark's
 * window, by the identity the before-check recorded (pid in its own namespace, start). */
struct witness_live {
	struct pvg_witness_target *t;
	size_t n;
	struct pvg_witness_target *gone;
	size_t n_gone;
	char boot_id[40];
};

/* What the service's environment says about the witness. */
struct witness_env {
	pid_t pid;          /* the service's primary process */
	int dir_r;          /* reading PROVGATE_WITNESS_DIR: 0 or -errno (-ENOENT: not set) */
	char *dir;          /* its value */
	const char *lib_var; /* CUDA_INJECTION64_PATH or HSA_TOOLS_LIB, the one found */
	char *lib;          /* its value */
	bool same_folder;   /* with dir and lib: dir (against the service's cwd) is witness.dir */
};

/* The request for a fresh witness: every live writer answers it. */
struct witness_fresh {
	uint64_t token; /* 0: no request could be made */
	int err;        /* making it: 0 or -errno */
	long waited_ms;
};

enum witness_freshness {
	WITNESS_ANSWERED, /* written after the request */
	WITNESS_FINAL,    /* written at its process's exit */
	WITNESS_NO_ANSWER,
};

/* One file of the folder, as the gate sees it. */
struct witness_file {
	const struct pvg_witness_read *read;
	bool readable;          /* read and parsed */
	bool named_target;      /* not readable, and its name says it is a live target's */
	enum pvg_witness_attr attr; /* readable: whose it is */
	size_t which;           /* live: its target in witness_live */
	enum witness_freshness fresh; /* live */
	bool writer_alive;      /* no answer (version 2 on): its process is still running */
	bool exited;            /* readable, not live: a gone process's (witness_live.gone) */
	size_t gone_which;      /* exited: its index in witness_live.gone */
};

/* The live files together. */
struct witness_tally {
	size_t attr_count[PVG_WITNESS_ATTR_N];
	size_t unreadable, n_live, recording;
	size_t n_answered, n_final, n_stale;
	size_t n_exited;         /* files of processes gone since the before-check */
	bool table_full;         /* a live file's table was full */
	uint64_t graph_launches, captured, launches;
	uint64_t opaque;         /* graph replays whose kernels are not (all) in the records */
	uint64_t itemized;
	const char *note;        /* a live file not recording: its reason */
};

/* Where a launch's code came from, by the bytes of its module (SPEC §12). */
enum witness_from {
	WITNESS_FROM_ARTIFACT,  /* its module's sha256 is one of an artifact's code objects */
	WITNESS_FROM_NAME_ONLY, /* no module identity: a file before version 3, or module 0 */
	WITNESS_FROM_OTHER,     /* a module with other bytes */
	WITNESS_FROM_AMBIGUOUS, /* several modules define the name and nothing said which */
	WITNESS_FROM_PTX_JIT,   /* compiled by the driver from PTX: no file holds those bytes */
	WITNESS_FROM_UNDECIDED, /* not hashed, or the artifacts' digests are not (all) known */
	WITNESS_FROM_JIT_LINKED, /* from memory, and its Triton cache entry links it to the change */
	WITNESS_FROM_JIT_UNKNOWN, /* from memory, and no Triton cache entry decides what it is (no
				   * entry, an unreadable one, the .py's installed path not known):
				   * undecided, named "undecided" in reports */
};
const char *dispatch_witness_from_name(enum witness_from f);

/* One code object of an artifact for its arch, by its digest. */
struct witness_digest {
	uint8_t sha256[32];
	size_t art; /* index in ctx->arts */
	size_t obj; /* index in that artifact's code objects */
};

/* The artifacts' code objects, by digest (read when a live record names a module). */
struct witness_code {
	bool read;
	struct witness_digest *d;
	size_t n;
	size_t n_unknown;   /* code objects for arch whose digest is not known */
	char *why;          /* some digests are not known: why (the first reason) */
	const char **names; /* artifact names, ctx->n_arts */
	struct triton_jit *jit; /* MEMORY modules judged by their Triton cache entry; NULL: not */
	size_t n_arts;
};

/* One witness.require entry, counted over every live file. */
struct witness_need {
	const struct pvg_witness_require *w;
	long need;                 /* its min_count */
	uint64_t got;              /* launches that count: from the artifact, or by name only */
	uint64_t by_name;          /* of got: linked by name only (no module identity) */
	uint64_t other_code;       /* the kernel from other code (a module with other bytes) */
	const struct pvg_witness_entry *other_e;   /* the most launched of those */
	const struct pvg_witness_mod *other_mod;   /* its module */
	uint64_t other_e_n;
	uint64_t ambiguous, jit, undecided; /* launches whose code cannot be told */
	uint64_t jit_unknown;      /* of undecided: JIT code no Triton entry decides */
	uint64_t in_graph;         /* of those, inside graph replays */
	uint64_t name_only;        /* the kernel with other dimensions */
	const struct pvg_witness_entry *other; /* the last of those */
	uint64_t other_via;        /* the kernel launched the other way (eager / graph) */
	uint64_t packets;          /* ROCm dispatch packets: "via" cannot be told */
};

/* One witness.forbid pattern over every live file. */
struct witness_seen {
	const char *pattern;
	uint64_t n;                       /* its launches */
	const struct pvg_witness_entry *seen; /* the last record matching, or NULL */
};

/* Everything read, filled stage by stage. */
struct witness_read {
	struct witness_live live;
	struct witness_env env;
	struct pvg_witness_folder folder;
	int folder_r;           /* opening the folder: 0 or -errno */
	struct witness_fresh fresh;
	int dir_r;              /* listing the folder: 0 or -errno */
	struct pvg_witness_dir dir;
	struct witness_file *files; /* dir.n */
	struct witness_tally tally;
	struct witness_need *needs; /* witness.n_require */
	struct witness_seen *seen;  /* witness.forbid.n */
	struct witness_code code;
	struct changed_sources *sources; /* the default requirement (borrowed), or NULL */
};

void dispatch_witness_read_init(struct witness_read *wr);
void dispatch_witness_read_clear(struct witness_read *wr);

/* The stages, in order; each reads what the earlier ones found. */
void dispatch_witness_read_live(struct pvg_ctx *ctx, const struct pvg_targets *t,
				struct witness_read *wr);
void dispatch_witness_read_env(struct pvg_ctx *ctx, pid_t pid, struct witness_read *wr);
void dispatch_witness_open_folder(const struct pvg_config *cfg, struct witness_read *wr);
/* Makes the request and waits until every live file has answered it or is final, a writer
 * is gone, or witness.answer_ms has passed. */
void dispatch_witness_ask_fresh(const struct pvg_ctx *ctx, struct witness_read *wr);
/* Reads the folder's files (the live ones with their records) and tallies them. */
void dispatch_witness_read_files(const struct pvg_ctx *ctx, struct witness_read *wr);
/* Counts the launches of every live file per witness.require entry, changed source (into
 * wr->sources) and witness.forbid pattern; reads the artifacts' code objects first when a live
 * record names its module. */
void dispatch_witness_count(struct pvg_ctx *ctx, struct witness_read *wr);
/* Where e (a record of live file f) came from; *mod its module, *d the artifact's code object
 * it is (FROM_ARTIFACT). */
enum witness_from dispatch_witness_from(const struct witness_code *code,
					const struct pvg_witness_file *f,
					const struct pvg_witness_entry *e,
					const struct pvg_witness_mod **mod,
					const struct witness_digest **d);
/* Does a witness.require pattern name this record (mangled or demangled)? */
bool dispatch_witness_kernel_matches(const char *pattern, const struct pvg_witness_entry *e);
/* A module for a message: "PATH (origin, sha256 0123456789ab…)", allocated. */
char *dispatch_witness_module_text(const struct pvg_witness_mod *m);

/* A record's name for a message: demangled when known, cut at 200 bytes (allocated). */
char *dispatch_witness_entry_name(const struct pvg_witness_entry *e);
/* witness.require entry as the messages write it: "KERNEL grid=X,Y,Z block=... via=..." */
char *dispatch_witness_require_text(const struct pvg_witness_require *w);

/* Evidence under "witness", each for its stage. */
void dispatch_witness_live_evidence(cJSON *ev, const struct witness_read *wr);
void dispatch_witness_env_evidence(cJSON *ev, const struct witness_read *wr);
void dispatch_witness_folder_evidence(cJSON *ev, const struct witness_read *wr);
void dispatch_witness_request_evidence(cJSON *ev, const struct pvg_config *cfg,
				       const struct witness_read *wr);
void dispatch_witness_files_evidence(cJSON *ev, const struct witness_read *wr);
/* What the live service launched, most launched first (at most 32, for the reader), each with
 * its module; and the modules those records name (at most 64). */
void dispatch_witness_kernels_evidence(cJSON *ev, const struct witness_read *wr);
void dispatch_witness_required_evidence(cJSON *ev, const struct pvg_config *cfg,
					const struct witness_read *wr);
/* The chain's "witness": live files, requirements met, forbidden kernels seen. */
void dispatch_witness_chain(struct pvg_ctx *ctx, const struct pvg_config *cfg,
			    const struct witness_read *wr);
