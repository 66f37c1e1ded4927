/* SPDX-License-Identifier: MIT */
/*
 * The cluster decision (provgate merge): one verdict for every node of a job, from the
 * per-node reports. Certified only when every expected node has exactly one report, every
 * report is certified, every node runs the same installed bytes from the same build
 * (artifact digest, source commit) under the same config, and the reports were made within
 * max_skew seconds of each other. The public face is pvg_cluster_* in provgate.h; this
 * header opens the result to the verb that renders it (text, JUnit).
 *
 * Each report is read, reduced to what the verdict needs (struct pvg_cluster_report) and
 * freed before the next one is read, so that a thousand reports cost little more than one.
 */
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include "provgate.h"
#include "util/hostlist.h"
#include "util/util.h"

#define PVG_CLUSTER_MAX_NODES 65536
#define PVG_CLUSTER_MAX_INPUTS 65536
#define PVG_CLUSTER_DEFAULT_MAX_SKEW 300

/* The identity fields every node must agree on, in the order they are checked. */
enum pvg_cluster_ident {
	PVG_CLUSTER_INSTALLED = 0,
	PVG_CLUSTER_BUILD,
	PVG_CLUSTER_COMMIT,
	PVG_CLUSTER_CONFIG,
	PVG_CLUSTER_ARTIFACTS, /* the further artifacts of chain.artifacts (beyond the first) */
	PVG_CLUSTER_ID__MAX,
};

struct pvg_cluster_problem {
	ssize_t ix; /* the expected node it concerns, or -1 */
	char *code;
	char *node;   /* NULL when the report could not say which node it is from */
	char *report; /* the file, when one is concerned */
	int gate;     /* 0 unless a gate is concerned */
	const char *field;
	char *message;
};

/* What the verdict needs from one report. */
struct pvg_cluster_report {
	char *path;
	char *node;
	bool node_from_hostname; /* an older report without host.node */
	bool certified;
	char *started_at;
	time_t started;
	bool started_ok;
	char *ident[PVG_CLUSTER_ID__MAX];
	/* file names of the installed and build artifacts: what an attestation names */
	char *installed_name, *build_name;
	/* "_moe_C installed 1a2b.. build 1a2b..; ..." for the further artifacts, or "none" */
	char *artifacts_text;
	char *tool_version;
	char *failed; /* "gate 4 process-maps fail (process-maps.deleted), ..." or NULL */
	int first_failed_gate;
	ssize_t ix; /* the expected node it claims, or -1 */
};

/* Items (reports, problems) grouped by expected node: node i's are order[start[i]] ..
 * order[start[i + 1] - 1], in their own order. Built once, so that output stays linear. */
struct pvg_cluster_by_node {
	size_t *start;
	size_t *order;
};

#define PVG_CLUSTER_FOR_NODE(g, i, k)                                                       \
	for (size_t _j = (g)->start[i], k; _j < (g)->start[(i) + 1] && ((k = (g)->order[_j]), 1); _j++)

struct pvg_cluster {
	struct pvg_hostlist expected;
	char *nodes_spec;
	char *nodes_source;
	long max_skew;
	struct pvg_cluster_report *reports;
	size_t n_reports;
	struct pvg_cluster_problem *problems;
	size_t n_problems;
	char **ignored; /* cluster reports found in a folder */
	size_t n_ignored;
	/* the expected names sorted, for lookups: indices into expected.host */
	size_t *sorted;
	/* per expected node: index into reports, or -1; count of reports claiming it */
	ssize_t *slot;
	size_t *claims;
	size_t *n_node_problems;
	struct pvg_cluster_by_node reports_of, problems_of;
	char *agreed[PVG_CLUSTER_ID__MAX];
	time_t first, last;
	bool have_window;
	bool decided;
	/* files the verb writes (--json, --junit, --attest), never read back as inputs */
	struct stat *out_st;
	size_t n_out;
	/* files already read (by device and inode), and how many inputs were taken */
	dev_t *seen_dev;
	ino_t *seen_ino;
	size_t n_seen;
	size_t n_inputs;
};

/* "missing", "duplicate", "refused" or "certified": expected node i after pvg_cluster_decide. */
const char *pvg_cluster_node_status(const struct pvg_cluster *c, size_t i);
/* The provgate.cluster/1 document (after pvg_cluster_decide). */
cJSON *pvg_cluster_json(const struct pvg_cluster *c);
