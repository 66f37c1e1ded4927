/* SPDX-License-Identifier: MIT */
/*
 * checks: the facts that gates share, each computed once per evaluation and cached in a
 * context slot (pvg_ctx_forget drops them for exec's after-check).
 */
#pragma once

#include "core/ctx.h"
#include "formats/markers.h"
#include "sys/procs.h"
#include "sys/environment.h"
#include "sys/scope.h"

/* The run's snapshot and selection (scanned once, cached in PVG_SLOT_TARGETS). Returns 0 or
 * a negative errno when the process table could not be read at all; selection failures are
 * in (*out)->err / why. */
int pvg_targets_get(struct pvg_ctx *ctx, const struct pvg_targets **out);

/* A gate's prepare_here step for gates that prepare from the process list: reads it on the
 * evaluating thread (see struct pvg_check). */
void pvg_targets_prepare(struct pvg_ctx *ctx);

/* Remembers the run's selected service process (pid and start time) in ctx->pinned*, and
 * every process of its tree (ctx->pinned_procs), so that a later evaluation on the same ctx
 * can tell a restarted service and a process gone or new. 0 or -ESRCH. */
int pvg_targets_pin(struct pvg_ctx *ctx);
/* The pinned process of the tree with this pid and start, or NULL. */
const struct pvg_pinned_proc *pvg_pinned_find(const struct pvg_ctx *ctx, pid_t pid,
					      uint64_t start_ticks);

/* Records why no target was selected as res's problem ("<gate>.no-target", ...) and returns
 * the status that follows: fail when the evidence says the service is not there, else
 * unverifiable. */
enum pvg_status pvg_targets_problem(const struct pvg_targets *t, struct pvg_result *res);
/* Evidence object describing the selection (how, primary, root, targets, strays). */
cJSON *pvg_targets_json(const struct pvg_targets *t);

/* The roots the run reads the system through (procfs, sysfs, /etc). */
void pvg_ctx_roots(const struct pvg_ctx *ctx, struct pvg_roots *roots);

/* What each live process of the service tree says about itself (command line, kernel-steering
 * environment, namespaces, cgroup, mapped objects without build-ids), read once for gate 5's
 * profiler check and the report's environment (PVG_SLOT_TREE_FACTS). Processes that exited
 * since the snapshot are left out. 0, or -errno when the process table could not be read. */
struct pvg_tree_facts {
	struct pvg_service_facts *f; /* in the snapshot's pid order */
	size_t n;
};
int pvg_tree_facts_get(struct pvg_ctx *ctx, const struct pvg_tree_facts **out);

/* The run's change set (computed on first use, kept until pvg_ctx_forget). Returns 0 or
 * scope->err; *out is always set (read why/hint/reason on error). A path changed by commits
 * and again in the work tree is one entry; its kind describes merge base -> work tree. */
int pvg_scope_get(struct pvg_ctx *ctx, const struct pvg_scope **out);

/* Does the config name a service (service.match, service.pid or service.pidfile)? Without
 * one there is no service tree to read facts of. */
bool pvg_service_selected(const struct pvg_config *cfg);

/* The live service of this run (the service tree of gates 4 and 5). 0, or -EDESTADDRREQ
 * when no service is configured, -ESRCH when there is no live service, other -errno. */
int pvg_service_view_get(struct pvg_ctx *ctx, struct pvg_service_view *view);
void pvg_service_view_release(struct pvg_service_view *view);

/* The build folders a parsed build log names (its "Entering directory" lines, the "cd DIR &&"
 * of its commands, the ninja roots above its absolute paths; at most 16), appended to roots:
 * where its relative outputs lie. Gate 1's, and gate 7's for the objects of changed
 * sources. */
struct pvg_buildlog;
struct pvg_linkgraph;
void pvg_build_roots(const struct pvg_buildlog *log, const struct pvg_linkgraph *g,
		     struct pvg_strv *roots);
/* Adds the folder of a configured build artifact (an absolute path) whose file name a link
 * line of the log writes by a relative name, where that folder is ninja's build folder (its
 * .ninja_log or .ninja_deps): a log of "ninja -v" alone, as torch.utils.cpp_extension writes
 * it, names its folder nowhere. */
void pvg_build_roots_of_artifact(const struct pvg_linkgraph *g, const char *artifact,
				 struct pvg_strv *roots);

/* ---- several artifacts ---- */

/* One artifact's part of a gate: evidence goes into ev, problems and the summary into res. */
typedef enum pvg_status (*pvg_artifact_check_fn)(struct pvg_ctx *ctx, size_t i, cJSON *ev,
						 struct pvg_result *res, void *arg);
/* Runs one() for every artifact of the run. With one artifact, ev is res->evidence itself and
 * nothing changes; with several, each gets an object of evidence.artifacts[] (with its
 * "name"), the problems it adds begin with "NAME: ", and the summary is composed from theirs
 * (every one when all passed, else the first that did not). The worst status; unverifiable
 * with artifact-less problem code none_code when the config names no artifact. */
enum pvg_status pvg_each_artifact(struct pvg_ctx *ctx, struct pvg_result *res,
				  pvg_artifact_check_fn one, void *arg);
/* With several artifacts, the problems res got since index from begin with "NAME: " of
 * artifact ai (pvg_each_artifact does this itself). */
void pvg_problems_label(const struct pvg_ctx *ctx, struct pvg_result *res, size_t from,
			size_t ai);
/* The report's chain.artifacts[i] object (made with its name when the run began), or NULL. */
cJSON *pvg_chain_artifact(struct pvg_ctx *ctx, size_t i);

/* ---- rules ---- */

/* What one rule of a gate found: its status and the problems that say why, in the order it
 * found them. A rule takes the facts it needs and returns one; the gate's entry moves the
 * problems into its result with pvg_outcome_report and combines the statuses with
 * pvg_status_worst. Evidence is written apart, from the same facts. Every gate's rules
 * return this one type. */
struct pvg_outcome {
	enum pvg_status status;
	struct pvg_problem *problems;
	size_t n_problems;
	bool stop;     /* what the rules after it would look at is not there (gate 7) */
	char *summary; /* with stop: the part's summary; NULL: told by its problems */
};

/* Adds a problem to o and makes o's status at least st. */
void pvg_outcome_problem(struct pvg_outcome *o, enum pvg_status st, const char *code,
			 const char *hint, const char *fmt, ...) PVG_PRINTF(5, 6);
/* Makes o's status at least st, with no problem of its own. */
void pvg_outcome_worsen(struct pvg_outcome *o, enum pvg_status st);
/* A rule that records its problems in res as it goes: the problems res got since index from
 * move into the outcome (res is back to from problems), with status st. */
struct pvg_outcome pvg_outcome_since(struct pvg_result *res, size_t from, enum pvg_status st);
/* Appends o's problems to res and returns o's status; o is left empty (a summary not taken
 * before is freed). */
enum pvg_status pvg_outcome_report(struct pvg_result *res, struct pvg_outcome *o);
/* pvg_outcome_report on a rule's return value: res gets its problems, the caller its status. */
enum pvg_status pvg_outcome_into(struct pvg_result *res, struct pvg_outcome o);
/* The outcome of a rule that ends a gate's check (stop): its summary, when it has one, becomes
 * res's, then as pvg_outcome_into. */
enum pvg_status pvg_outcome_final(struct pvg_result *res, struct pvg_outcome o);
void pvg_outcome_clear(struct pvg_outcome *o);

/* ---- code identity (gate 6's reading of the artifacts, shared with gate 7) ---- */

struct pvg_codeobj_set;
/* The code objects of artifact ai's installed file, as gate 6 reads them (once a run,
 * PVG_SLOT_CODE_OBJECTS): kernel names and sha256 of the objects for the artifact's arch
 * (pvg_codeobj_has_digest in formats/codeobj/codeobj.h asks whether a module's digest is
 * one of them; PTX the driver could compile for the arch has one too, of its text). NULL
 * when they cannot be known: no arch, the installed artifact not located, or unreadable
 * (gate 6 says why). Owned by the context. */
const struct pvg_codeobj_set *pvg_artifact_code_objects(struct pvg_ctx *ctx, size_t ai);
