/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's first evidence source: the dispatch markers the kernel prints to the service log.
 * This module reads (the live service, the log and its creation time, the service's time
 * zone, the scan of lib/formats/markers.c) and writes what it read into the evidence; the
 * decision on it is 07-dispatch-marker.c's.
 */
#pragma once
#include <sys/stat.h>

#include "checks.h"
#include "core/result.h"
#include "formats/markers.h"
#include "sys/container-log.h"
#include "sys/zone.h"
#include "util/untrusted.h"

/* What reading the log found; made by the gate's run, or earlier by its prepare while gate 3
 * hashes. */
struct marker_read {
	int view_r;	/* pvg_service_view_get: 0 or -errno */
	char *view_why;
	int log_err;	/* opening the log: 0 or errno */
	enum pvg_refusal log_refused; /* with log_err: what the log was instead of a file */
	struct stat log_st_refused;   /* with log_refused: what was seen */
	int scan_r;	/* the scan: 0 or -errno */
	cJSON *ev;	/* "service", "log_created" for the evidence */
	bool after;	/* log created after the service started */
	bool btime_known; /* the file system records creation times */
	pid_t root;	/* the service's root process */
	struct stat log_st; /* the log's, when log_err is 0 */
	struct pvg_line_format format; /* markers.pid_pattern / time_pattern, compiled */
	char *log_path;   /* the log read: markers.log, or the container's log file */
	bool container;   /* markers.log is "container" */
	struct pvg_container_log clog; /* where the container's log was looked for */
	struct pvg_proc_zone zone;     /* the service's time zone */
	struct pvg_line_zone line_zone;
	char *undecided;  /* why a time can be before or after the start */
	const char *const *events; /* the compile lines to note (torch.compile's: exec's
				    * after-check, or a vLLM service), or NULL */
	struct pvg_marker_scan scan;
};

/* markers.log and markers.prefix are set: the markers are part of gate 7. */
bool dispatch_markers_configured(const struct pvg_config *cfg);

/* Reads the live service's view, the log and its scan. Never NULL. */
struct marker_read *dispatch_markers_read(struct pvg_ctx *ctx);
void dispatch_markers_read_free(void *m);

/* The log was read to its end: its scan holds the markers. */
bool dispatch_markers_scanned(const struct marker_read *m);

/* Where the service's output goes instead of the log, as a sentence (allocated), or NULL:
 * the service's root process writes its stdout or stderr to a regular file and has the log
 * open on no descriptor. */
char *dispatch_markers_output_elsewhere(const char *procfs, const struct marker_read *m);

/* The markers' evidence: markers.log and prefix, what reading found, the scan's counts (and
 * the chain's "markers") when the log was read, and elsewhere when it was looked up. */
void dispatch_markers_evidence(struct pvg_ctx *ctx, cJSON *ev, const struct marker_read *m,
			  const char *elsewhere);
