/* SPDX-License-Identifier: MIT */
/*
 * libprovgate: run provgate's seven ordered gates and get a report.
 *
 *   struct pvg_config *cfg; struct pvg_error err = {0};
 *   if (pvg_config_load("provgate.json", &cfg, &err) < 0) ... err.message ...
 *   struct pvg_run *run = pvg_run_new(cfg, PVG_PHASE_LIVE, 0, 0);
 *   pvg_run_execute(run);
 *   char *json = pvg_run_report_json(run);
 *
 * Every function returns 0 or a negative errno; strings are UTF-8.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PVG_EXPORT __attribute__((visibility("default")))

#define PVG_N_GATES 7

enum pvg_status {
	PVG_PASS = 0,
	PVG_FAIL,
	PVG_UNVERIFIABLE,
	PVG_BLOCKED,
	PVG_SKIPPED,
};

enum pvg_phase {
	PVG_PHASE_INSTALL = 0,
	PVG_PHASE_PRESTART,
	PVG_PHASE_LIVE,
};

/* Bit (1u << (id - 1)) per gate id 1..7. */
typedef unsigned pvg_gate_mask;
#define PVG_GATE_BIT(id) (1u << ((id) - 1))
#define PVG_ALL_GATES 0x7fu

struct pvg_config;
struct pvg_run;

/* A configuration error: what was wrong, and where. */
struct pvg_error {
	char message[1024];
};

PVG_EXPORT const char *pvg_version(void);
PVG_EXPORT const char *pvg_status_name(enum pvg_status s);
PVG_EXPORT const char *pvg_phase_name(enum pvg_phase p);
PVG_EXPORT int pvg_phase_from_name(const char *name, enum pvg_phase *out);
PVG_EXPORT pvg_gate_mask pvg_phase_gates(enum pvg_phase p);
PVG_EXPORT const char *pvg_gate_name(int id);

/* Loads and validates a config; -EINVAL (bad content) or -errno (unreadable) with err filled. */
PVG_EXPORT int pvg_config_load(const char *path, struct pvg_config **out, struct pvg_error *err);
/* Applies "section.key=value" as if it were in the file (flags such as --arch). */
PVG_EXPORT int pvg_config_override(struct pvg_config *cfg, const char *key, const char *value,
				   struct pvg_error *err);
PVG_EXPORT void pvg_config_free(struct pvg_config *cfg);

/* gates: the subset to evaluate within the phase (0 = all of the phase). */
PVG_EXPORT struct pvg_run *pvg_run_new(const struct pvg_config *cfg, enum pvg_phase phase,
				       pvg_gate_mask gates, bool keep_going);
/* A file this run writes (a --json, --junit, --out or --attest path): gate 2 never counts it
 * as a change of the experiment. Call before pvg_run_execute; "-" (stdout) is ignored. */
PVG_EXPORT void pvg_run_add_output(struct pvg_run *run, const char *path);
/* Evaluates the selected gates in order. Returns 0 when every selected gate passed,
 * 1 when one did not, negative errno on an internal error. */
PVG_EXPORT int pvg_run_execute(struct pvg_run *run);
PVG_EXPORT enum pvg_status pvg_run_gate_status(const struct pvg_run *run, int id);
/* Certified: every selected gate of phase live passed (before and after exec's command),
 * and, for exec, the command ran and succeeded. A benchmark that failed or never started
 * is no certified run, even on a certified chain. */
PVG_EXPORT bool pvg_run_certified(const struct pvg_run *run);
/* The chain alone: every gate passed, whatever became of exec's command. */
PVG_EXPORT bool pvg_run_provenance_certified(const struct pvg_run *run);
/* exec: what became of the command. */
enum pvg_benchmark {
	PVG_BENCHMARK_NONE,        /* no command (run, certify) */
	PVG_BENCHMARK_NOT_RUN,     /* not run: the chain was not certified before it */
	PVG_BENCHMARK_NOT_STARTED, /* it could not start (not found, not executable) */
	PVG_BENCHMARK_SUCCEEDED,   /* it exited 0 */
	PVG_BENCHMARK_FAILED,      /* a non-zero status, or a signal ended it */
};
/* Records the command's fate in the report's "exec" object (ran, outcome, exit_status,
 * signal, error). wait_status: waitpid's status for NOT_STARTED, SUCCEEDED and FAILED;
 * start_errno: why it could not start (NOT_STARTED). */
PVG_EXPORT void pvg_run_set_benchmark(struct pvg_run *run, enum pvg_benchmark b,
				      int wait_status, int start_errno);
PVG_EXPORT enum pvg_benchmark pvg_run_benchmark(const struct pvg_run *run);
/* The command's fate in words for a verdict line, or NULL when there was no command. */
PVG_EXPORT const char *pvg_run_benchmark_text(const struct pvg_run *run);
/* The exit status that stands for a wait status: the code, 128+N for signal N. */
PVG_EXPORT int pvg_wait_exit_code(int wait_status);
/* Remembers what a later pvg_run_recheck must find again: the service process the run
 * certified (its pid and start time), so that a restarted service that would otherwise pass
 * is refused. Call it after pvg_run_execute, before the benchmark. 0, or -ESRCH when a
 * selected gate that needs the service found no service process. */
PVG_EXPORT int pvg_run_pin(struct pvg_run *run);
/* After the benchmark: evaluates again, with nothing cached from before but the pinned
 * service, every gate that must still hold (pvg_recheck_gates(): same bytes, same mapping,
 * no stale process, markers still attributable), keeping going past a failure. The report
 * then has an "after" part, and certification needs it to pass too. Returns 0 when every
 * re-checked gate passed, 1 when one did not, negative errno on an internal error. */
PVG_EXPORT int pvg_run_recheck(struct pvg_run *run);
/* exec: when the command ran, CLOCK_REALTIME nanoseconds of its start and of its end. Call it
 * before pvg_run_recheck: the re-check then fails for code compiled or loaded in the service
 * while the command ran (unless benchmark.allow_loads), from the witness's module table and
 * the compile lines of the service's log. */
PVG_EXPORT void pvg_run_set_window(struct pvg_run *run, uint64_t start_ns, uint64_t end_ns);
PVG_EXPORT pvg_gate_mask pvg_recheck_gates(void);
/* The report as JSON text (caller frees). */
PVG_EXPORT char *pvg_run_report_json(const struct pvg_run *run);
PVG_EXPORT void pvg_run_free(struct pvg_run *run);

/*
 * The cluster decision (provgate merge): one verdict for every node of a job, from the
 * reports that each node's `provgate certify` wrote. Certified only when every expected node
 * has exactly one certified report, all run the same installed artifact from the same build
 * (digest, source commit) under the same config, and the reports were made within max_skew
 * seconds of each other. What is not a node report is a refusal, never an error.
 *
 *   struct pvg_cluster *c;
 *   if (pvg_cluster_new("gpu[01-04]", "--nodes", 300, &c, &err) < 0) ... err.message ...
 *   pvg_cluster_add(c, "reports/", &err);
 *   int refused = pvg_cluster_decide(c);
 *   char *json = pvg_cluster_report_json(c); (provgate.cluster/1)
 */
struct pvg_cluster;

/* nodes: the job's nodes, a Slurm hostlist expression (gpu[01-04,07], a,b); from: where the
 * list came from ("--nodes", "SLURM_JOB_NODELIST"), named in messages and in the cluster
 * report. -EINVAL (a bad list, a node named twice, a negative max_skew) with err filled. */
PVG_EXPORT int pvg_cluster_new(const char *nodes, const char *from, long max_skew,
			       struct pvg_cluster **out, struct pvg_error *err);
/* A file the caller will write (its cluster report, JUnit, attestation): never read as a
 * node report when it lies in a folder that is added. Call before pvg_cluster_add. */
PVG_EXPORT void pvg_cluster_add_output(struct pvg_cluster *c, const char *path);
/* A node report, or a folder: every *.json in it (not recursive, in name order; hidden and
 * temp files skipped; cluster reports found there are ignored). A file read once counts
 * once. 0; 1 when a folder held more than 65536 reports (the rest are not read; err says
 * so); -errno when path cannot be found or the folder cannot be read (err says why). */
PVG_EXPORT int pvg_cluster_add(struct pvg_cluster *c, const char *path, struct pvg_error *err);
/* Decides (once; nothing can be added after): 0 cluster certified, 1 refused. */
PVG_EXPORT int pvg_cluster_decide(struct pvg_cluster *c);
PVG_EXPORT bool pvg_cluster_certified(const struct pvg_cluster *c);
/* The provgate.cluster/1 document as JSON text with a final newline (caller frees); NULL
 * before pvg_cluster_decide. */
PVG_EXPORT char *pvg_cluster_report_json(const struct pvg_cluster *c);
PVG_EXPORT void pvg_cluster_free(struct pvg_cluster *c);

#ifdef __cplusplus
}
#endif
