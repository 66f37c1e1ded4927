/* SPDX-License-Identifier: MIT */
/* checks: gate 5's facts and rules, apart from reading /proc and the GPU driver, so that unit
 * tests can drive each rule with facts they build by hand (checks/05-stale-service.c reads
 * and decides). */
#pragma once

#include "facts.h"
#include "sys/gpu-procs.h"
#include "sys/net-tcp.h"
#include "sys/profiler-traces.h"

#define PVG_STALE_MAX_LISTED 8 /* problems listed one by one; the rest are counted */

/* The service port as the live check read it. */
struct pvg_port_view {
	long port;                 /* service.port */
	const char *procfs;        /* for messages */
	int tcp_r;                 /* reading its listeners: 0 or -errno */
	const struct pvg_tcp_table *listeners; /* in the service's network namespace */
	uint64_t netns;            /* that namespace (0: unknown) */
	bool own_netns;            /* the service has a namespace other than provgate's */
	int host_r;                /* reading provgate's side, when own_netns */
	const struct pvg_tcp_table *host_listeners;
};

/* What the GPU driver says about who holds the GPU, read when provgate runs in a container
 * (where the processes outside it are invisible). */
struct pvg_gpu_view {
	bool in_container;
	int r;                     /* pvg_gpu_procs_read: 0 or -errno, with why */
	const char *why;
	const struct pvg_gpu_procs *g;
	size_t n_tree_holders;     /* distinct processes of the tree that hold a GPU device */
	size_t n_outside_holders;  /* distinct visible processes outside it that do */
	size_t n_unread;           /* visible processes whose open files could not be read */
};

/* The live rules, in the order the gate evaluates them. Each returns its status and
 * problems; fs is the one pass over every process's fds. */
struct pvg_outcome pvg_stale_rule_no_service_outside_tree(const struct pvg_targets *t);
struct pvg_outcome pvg_stale_rule_port_readable(const struct pvg_port_view *pv);
struct pvg_outcome pvg_stale_rule_port_owned(const struct pvg_targets *t,
					     const struct pvg_port_view *pv,
					     const struct pvg_fd_scan *fs);
struct pvg_outcome pvg_stale_rule_host_side_port(const struct pvg_targets *t,
						 const struct pvg_port_view *pv,
						 const struct pvg_fd_scan *fs);
struct pvg_outcome pvg_stale_rule_no_gpu_holder_outside_tree(const struct pvg_targets *t,
							      const struct pvg_fd_scan *fs);
struct pvg_outcome pvg_stale_rule_gpu_driver_accounts(const struct pvg_gpu_view *gv);
struct pvg_outcome pvg_stale_rule_no_profiler(const struct pvg_strv *attached,
					      bool allow_profiler);
/* The torch-profiler trace folders the tree's processes were started with (one entry per
 * distinct variable and value). */
struct pvg_stale_trace_dirs {
	struct pvg_profiler_dir *d;
	size_t n;
};
struct pvg_outcome pvg_stale_rule_no_profiler_traces(const struct pvg_stale_trace_dirs *td,
						     bool allow_profiler);

/* Appends o's problems to res as pvg_outcome_report does, except that the unread fd tables
 * make one problem: a second "stale-service.permission-denied" names what else it cannot rule
 * out in the one already there. The first also lists the unread pids in the evidence. */
enum pvg_status pvg_stale_report(struct pvg_result *res, struct pvg_outcome *o,
				 const struct pvg_fd_scan *fs);
