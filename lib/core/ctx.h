/* SPDX-License-Identifier: MIT */
/*
 * lib/core: the run context that gates share: the config, caches of file identities and of
 * facts computed once (slots), the chain object of the report, and the gate interface the
 * runner drives.
 */
#pragma once

#include "core/config.h"
#include "core/result.h"
#include "util/hash.h"


/* Facts computed once and shared by gates, named by what they hold (the gates that read
 * them name their own). Each area owns its slot's type. */
enum pvg_slot {
	PVG_SLOT_CHANGE_SET = 0, /* the git change set (sys/scope) */
	PVG_SLOT_TARGETS,        /* the process snapshot and the target processes selected */
	PVG_SLOT_CODE_OBJECTS,   /* the code objects of each installed artifact */
	PVG_SLOT_LOG_MARKERS,    /* the service log as read: its dispatch markers, times, refusals */
	PVG_SLOT_LISTENERS_FDS,  /* the service's listening sockets and open descriptors */
	PVG_SLOT_TREE_FACTS,     /* command line, environment, maps of each service tree process */
	PVG_SLOT_EXTRA,
	PVG_SLOT__MAX,
};

#define PVG_MAX_CACHED_FILES 16

/* One artifact of the run (pvg_config_artifacts), with its installed file once resolved. */
struct pvg_ctx_artifact {
	struct pvg_artifact a; /* a.name is always set; strings borrowed from the config */
	char default_name[128];
	bool installed_resolved;
	int installed_err; /* 0 or -errno */
	char *installed_path;
	struct pvg_msg installed_msg;
};

/* A process of the service's tree as the before-check saw it (pvg_run_pin). */
struct pvg_pinned_proc {
	pid_t pid;            /* in provgate's pid namespace */
	pid_t nspid;          /* in its own: what its witness file says */
	uint64_t start_ticks;
	struct timespec start;
	char comm[16];
	bool service;         /* a service process: service.family or service.match */
};

struct pvg_ctx {
	const struct pvg_config *cfg;
	enum pvg_phase phase;
	const char *procfs; /* "/proc", or $PROVGATE_PROCFS for parser tests on a fixture tree */
	const char *sysfs;  /* "/sys", or $PROVGATE_SYSFS (the GPU driver's KFD tree; stand-ins in tests) */
	uint64_t started_ns;
	time_t started_at;

	/* the config's artifacts, each with its installed file (install / python_module) */
	struct pvg_ctx_artifact *arts;
	size_t n_arts;

	struct pvg_file_id files[PVG_MAX_CACHED_FILES];
	size_t n_files;
	size_t evict_next; /* the entry a full cache gives up next */

	cJSON *chain; /* the report's "chain" object; gates fill their part */

	/* the files this run writes (reports, attestations): never a change (gate 2) */
	struct pvg_strv outputs;

	/* exec's after-check: the service must still be the process that was certified
	 * (same pid, same start time), not a restarted one that happens to pass. */
	bool pinned;
	pid_t pinned_pid;
	uint64_t pinned_start_ticks; /* since boot: exact, unlike an epoch conversion */
	/* ... and every process of the service's tree the before-check saw: a service process
	 * gone after, or one it never saw, ran part of the benchmark uncertified; the witness
	 * file of one that exited is still read, by the identity recorded here */
	struct pvg_pinned_proc *pinned_procs;
	size_t n_pinned_procs;
	uint64_t pinned_ns;          /* CLOCK_REALTIME of the pin */
	uint64_t pinned_boot_ticks;  /* clock ticks since boot at the pin */
	/* exec's after-check: when the command ran (CLOCK_REALTIME ns); 0, 0 outside it */
	uint64_t window_start_ns, window_end_ns;

	void *slot[PVG_SLOT__MAX];
	void (*slot_free[PVG_SLOT__MAX])(void *);

	/* during pvg_evaluate: the table of gates, the gates it evaluates, the gate running now,
	 * and the later ones still to prepare */
	const struct pvg_gate_table *gates;
	pvg_gate_mask selected;
	int current_gate;
	pvg_gate_mask to_prepare;
	uint64_t prepared_ns[PVG_N_GATES];
	/* set by the runner for the evaluation: what a gate waiting for a slow read lets run
	 * meanwhile (pvg_ctx_hash_pair), here and then on a helper thread */
	void (*prepare_here)(struct pvg_ctx *ctx);
	void (*prepare_later)(struct pvg_ctx *ctx);
	/* build and installed artifact, compared and hashed since the evaluation began
	 * (gate 3's start) */
	struct pvg_pair_job *early_pair;
};

void pvg_ctx_init(struct pvg_ctx *ctx, const struct pvg_config *cfg, enum pvg_phase phase);
void pvg_ctx_done(struct pvg_ctx *ctx);
/* Forget cached facts so that a second evaluation (exec's after-check) sees the system anew. */
void pvg_ctx_forget(struct pvg_ctx *ctx);
void *pvg_ctx_slot(struct pvg_ctx *ctx, enum pvg_slot s);
void pvg_ctx_set_slot(struct pvg_ctx *ctx, enum pvg_slot s, void *p, void (*free_fn)(void *));
/* Artifact i's installed path (config or python module). 0, or -errno with *why set;
 * -EDESTADDRREQ when the config names no installed file for it (or has no artifact i). */
int pvg_ctx_installed_at(struct pvg_ctx *ctx, size_t i, const char **path, const char **why);
/* The same for the first artifact. */
int pvg_ctx_installed(struct pvg_ctx *ctx, const char **path, const char **why);
/* "" for a single artifact, else "NAME: ", to begin a problem's message with. */
const char *pvg_ctx_art_label(const struct pvg_ctx *ctx, size_t i, char *buf, size_t size);
/* Hashes the given paths (concurrently when several are not cached yet) and returns the
 * cached identities; a file whose dev/inode/size/mtime/ctime still match is not rehashed. */
int pvg_ctx_hash(struct pvg_ctx *ctx, const char *const *paths, size_t n,
		 const struct pvg_file_id **out);
/* The build and the installed artifact (pvg_pair_start, begun early by gate 3's start when
 * it could be); the evaluation prepares later gates meanwhile (prepare_here, prepare_later). Equal bytes give
 * the build the installed digest; only when they differ (or cannot be compared) is the build
 * hashed as well. Cached like pvg_ctx_hash. */
int pvg_ctx_hash_pair(struct pvg_ctx *ctx, const char *build, const char *installed,
		      const struct pvg_file_id *out[2], uint64_t *diff_at);
/* Stops pvg_ctx_hash_early's work when nobody will collect it. */
void pvg_ctx_cancel_early(struct pvg_ctx *ctx);
/* Begins pvg_ctx_hash_pair's work in the background. */
void pvg_ctx_hash_early(struct pvg_ctx *ctx, const char *build, const char *installed);
/* Hands over a slot's content (the caller frees it) and empties the slot. */
void *pvg_ctx_take_slot(struct pvg_ctx *ctx, enum pvg_slot s);
void pvg_chain_set(struct pvg_ctx *ctx, const char *key, cJSON *value);

/* The phases a gate belongs to (struct pvg_check.phases). */
#define PVG_IN_PHASE(p) (1u << (p))
#define PVG_IN_ALL_PHASES (PVG_IN_PHASE(PVG_PHASE_INSTALL) | PVG_IN_PHASE(PVG_PHASE_PRESTART) | \
			   PVG_IN_PHASE(PVG_PHASE_LIVE))

/* One gate, as the runner and exec see it: what it is, when it runs, and its steps. The
 * runner reads these fields and never a gate's number. */
struct pvg_check {
	int id;
	const char *name;
	unsigned phases; /* PVG_IN_PHASE bits */
	bool rechecked;  /* exec evaluates it again after the command (it must still hold) */
	enum pvg_status (*run)(struct pvg_ctx *ctx, struct pvg_result *res);
	/* optional: work that run() would do, done earlier while an earlier gate waits, on a
	 * helper thread of low priority; it may only fill the ctx caches that run() then uses
	 * (ctx->prepare_later) */
	void (*prepare)(struct pvg_ctx *ctx);
	/* optional: the part of the preparation that must stay on the evaluating thread (it is
	 * called there just before the helper thread starts): the process snapshot, which starts
	 * threads of its own and which every later gate reads */
	void (*prepare_here)(struct pvg_ctx *ctx);
	/* optional: remembers what its re-check must find again (pvg_run_pin): 0 or -errno */
	int (*pin)(struct pvg_ctx *ctx);
	/* optional: background work begun when the evaluation begins (the gate is selected);
	 * what run() does not collect is cancelled when the evaluation ends */
	void (*start)(struct pvg_ctx *ctx);
};

/* The gates a run drives, in the chain's order, and the reader of the report's "environment":
 * handed to the runner by the layer that owns them (checks/table.c); core names no gate. */
struct pvg_gate_table {
	const struct pvg_check *const *checks; /* PVG_N_GATES of them, gate i + 1 at i */
	/* after the gates ran, from their facts (the process snapshot) */
	cJSON *(*environment)(struct pvg_ctx *ctx);
};


