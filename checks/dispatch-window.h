/* SPDX-License-Identifier: MIT */
/*
 * Gate 7 in exec's after-check: what the live service compiled or loaded while the benchmark
 * command ran (first-compilation pollution: a JIT compile, Triton autotuning, a lazily loaded
 * module, a torch.compile graph). Two sources, both read by gate 7's other modules: the
 * witness's module table (dispatch-witness.c's live files) and the compile lines of the
 * service's log (dispatch-markers.c's scan, given this module's patterns). This module picks
 * what falls in the window and writes the evidence; the decision is 07-dispatch-marker.c's.
 */
#pragma once
#include "dispatch-markers.h"
#include "dispatch-witness.h"

#define WINDOW_KEPT 64 /* loads and compile lines kept for the report; the rest counted */

/* A module a live witness file says was loaded in the window. */
struct window_load {
	pid_t pid;         /* the process that loaded it (provgate's pid namespace) */
	bool exited;       /* that process was gone by the after-check (its file still read) */
	uint32_t origin;   /* enum pvg_witness_origin */
	char *path;        /* sanitized; NULL: none (memory) */
	char sha[17];      /* the first 16 hex digits of its sha256; "" when not hashed */
	uint64_t size;
	int64_t after_ns;  /* load time minus the window's start */
};

/* A compile line of the live service in (or maybe in) the window. */
struct window_compile {
	char *text;
	bool maybe;        /* its time (to the second, or its zone unknown) straddles an end of
			    * the window: it may have been written before or after */
	int64_t after_ns;  /* its earliest time minus the window's start */
	double took_s;     /* the line's "takes N s", -1 when none */
};

struct window_facts {
	uint64_t start_ns, end_ns; /* CLOCK_REALTIME; start 0: no window (not exec's after-check) */
	bool allowed;              /* benchmark.allow_loads */

	/* the witness's module tables */
	bool witness_read;         /* live files were reached and read */
	size_t files_modules;      /* live files that record module loads (version 3, F_MODULES) */
	size_t files_no_modules;   /* live files that do not: loads cannot be told from them */
	uint32_t no_modules_version; /* such a file's version */
	size_t files_not_covering; /* recording files written before the window's end, neither
				    * answering the request nor final: later loads not seen */
	size_t files_table_full;   /* recording files whose module table was full */
	/* the files of processes of the tree that the before-check saw and that were gone by
	 * the after-check (witness_live.gone): read for their loads in the window too */
	size_t files_exited;
	size_t files_exited_not_covering; /* of those, last written before the window's end,
					   * not at the process's exit: later loads not known */
	pid_t exited_not_covering_pid;    /* the first of those, for the message */
	uint64_t exited_not_covering_ns;  /* its last write */
	struct window_load *loads;
	size_t n_loads, loads_total;

	/* the service log's compile lines */
	bool log_read;             /* the log was scanned for them */
	struct window_compile *compiles;
	size_t n_compiles, compiles_total, compiles_maybe;
	size_t compiles_undated;   /* live compile lines without a time: cannot be placed */
};

/* exec's after-check: ctx has the command's window. */
static inline bool dispatch_window_active(const struct pvg_ctx *ctx)
{
	return ctx->window_start_ns != 0;
}
/* The compile lines the log scan notes (vLLM's torch.compile), NULL-terminated; noted in
 * every run (the compile-cache rule reads them), picked for the window in exec's. */
extern const char *const dispatch_window_log_patterns[];
#define DISPATCH_WINDOW_N_PATTERNS 5

void dispatch_window_init(const struct pvg_ctx *ctx, struct window_facts *wf);
void dispatch_window_clear(struct window_facts *wf);
/* The modules of every live witness file loaded in the window, and of every file of a
 * process of the tree that exited since the before-check. */
void dispatch_window_from_witness(const struct witness_read *wr, struct window_facts *wf);
/* The live compile lines the scan (of a log read to its end) noted that fall in the window. */
void dispatch_window_from_log(const struct pvg_marker_scan *s, struct window_facts *wf);
/* "benchmark_window": the window, what was read, what was found in it. */
void dispatch_window_evidence(cJSON *ev, const struct window_facts *wf);
/* "origin path-or-memory sha256:... N bytes, T s after the start" (allocated). */
char *dispatch_window_load_text(const struct window_load *l);
