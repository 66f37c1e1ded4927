/* SPDX-License-Identifier: MIT */
/*
 * Gate 7 dispatch-marker: the live service really selected the new kernel for the
 * benchmark's shapes. The service log is scanned once (lib/formats/markers.c); only lines that can be
 * attributed to the live service count, the rest is reported as unattributed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "07-witness.h"
#include "checks.h"
#include "facts.h"
#include "sys/container-log.h"
#include "sys/zone.h"
#include "util/untrusted.h"

struct marker_read;
static const char *undecided_why(const struct marker_read *m);
static const char *undecided_hint(const struct marker_read *m);

/* What was seen about a line that does not count (see attribution in provgate(1)). */
static const char *attr_name(enum pvg_attribution a, const struct marker_read *m, bool btime_known)
{
	switch (a) {
	case PVG_ATTR_LIVE:
		return "live";
	case PVG_ATTR_FOREIGN_PID:
		return "its pid is no process of the service's tree, in that process's own pid "
		       "namespace";
	case PVG_ATTR_BEFORE_START:
		return "its timestamp is before the service started";
	case PVG_ATTR_UNKNOWN:
		return btime_known ? "no pid or timestamp in the line, and the log file was created "
				     "before the service started (truncating a file keeps its "
				     "creation time)"
				   : "no pid or timestamp in the line, and the file system does not "
				     "record when the log was created";
	case PVG_ATTR_UNDECIDED:
		return undecided_why(m);
	}
	return "?";
}

/* The one thing that makes such lines count. */
static const char *attr_hint(enum pvg_attribution a, const struct marker_read *m)
{
	if (a == PVG_ATTR_UNDECIDED)
		return undecided_hint(m);
	if (a == PVG_ATTR_UNKNOWN)
		return "lines without a pid or timestamp count only in a log created after the "
		       "service started: remove the log (rm, not truncate) before starting the "
		       "service, or write a timestamp or pid in each line (Python logging: "
		       "%(asctime)s, %(process)d)";
	return "these lines are from an earlier run or another process: run the benchmark "
	       "against the live service";
}

static char *require_text(const struct pvg_require *e)
{
	char *s = pvg_strdup("");
	for (size_t k = 0; k < e->n; k++) {
		char *n = pvg_asprintf("%s%s%s=%s", s, k ? " " : "", e->kv[k].key, e->kv[k].value);
		free(s);
		s = n;
	}
	return s;
}

/* Was the log file created after the service started? Only the birth time says so: the
 * change time moves with every append, so it says nothing about who created the file. */
static int created_after(int fd, const struct timespec *start, bool *after, cJSON *ev)
{
	struct statx stx;
	*after = false;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & STATX_BTIME)) {
		pvg_json_add_str(ev, "log_created", NULL);
		return -EOPNOTSUPP;
	}
	char t[48];
	pvg_format_time(stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec, t, sizeof(t));
	cJSON_AddStringToObject(ev, "log_created", t);
	*after = stx.stx_btime.tv_sec > start->tv_sec ||
		 (stx.stx_btime.tv_sec == start->tv_sec &&
		  (long)stx.stx_btime.tv_nsec >= start->tv_nsec);
	return 0;
}

/* What reading the log found; made by run(), or earlier by prepare() while gate 3 hashes. */
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
	/* where the service's output goes instead of the log (NULL: nowhere else), looked up
	 * by note_elsewhere only for a gate that fails */
	char *elsewhere;
	bool elsewhere_done;
	struct pvg_line_format format; /* markers.pid_pattern / time_pattern, compiled */
	char *log_path;   /* the log read: markers.log, or the container's log file */
	bool container;   /* markers.log is "container" */
	struct pvg_container_log clog; /* where the container's log was looked for */
	struct pvg_proc_zone zone;     /* the service's time zone */
	struct pvg_line_zone line_zone;
	char *undecided;  /* why a time can be before or after the start */
	struct pvg_marker_scan scan;
};

static const char *undecided_why(const struct marker_read *m)
{
	return m->undecided ? m->undecided : "its time may be before or after the service's start";
}

static const char *undecided_hint(const struct marker_read *m)
{
	if (!m->zone.known && m->zone.why.hint)
		return m->zone.why.hint;
	return "write timestamps with their zone offset (Python logging: %z), or remove the log "
	       "(rm, not truncate) before starting the service";
}

static void marker_read_free(void *p)
{
	struct marker_read *m = p;
	if (!m)
		return;
	free(m->view_why);
	free(m->elsewhere);
	free(m->log_path);
	free(m->undecided);
	pvg_container_log_clear(&m->clog);
	pvg_proc_zone_clear(&m->zone);
	cJSON_Delete(m->ev);
	pvg_marker_scan_done(&m->scan);
	pvg_line_format_clear(&m->format);
	free(m);
}

static void marker_read_freep(struct marker_read **m)
{
	marker_read_free(*m);
}

/*
 * The usual reason for a log without live markers: the service writes somewhere else (a
 * nohup.out, a log rotated away, an older file of the same name). When the service's root
 * process has the log (log_path NULL: a log that does not exist) open on no descriptor, and
 * its stdout or stderr is a regular file, that file is named. Descriptors are compared by
 * their /proc link text, so no file of the service is stat'ed but the one named (a target on
 * a hung network mount must not hang the gate); nothing is said for pipes, terminals,
 * sockets (tee, journald), or when /proc/PID/fd cannot be read (another user's process).
 */
struct output_scan {
	const char *log_real; /* the log's real path, or NULL */
	bool log_open;        /* the service has the log open */
	int cand_fd;          /* 1 or 2: stdout or stderr goes to cand */
	char cand[PATH_MAX];
};

static bool output_fd(void *opaque, int dirfd, int fd, const char *link)
{
	struct output_scan *o = opaque;
	(void)dirfd;
	if (o->log_real && strcmp(link, o->log_real) == 0) {
		o->log_open = true;
		return false;
	}
	if ((fd == 1 || (fd == 2 && o->cand_fd != 1)) && link[0] == '/' &&
	    strncmp(link, "/dev/", 5) != 0 && strlen(link) < sizeof(o->cand)) {
		strcpy(o->cand, link);
		o->cand_fd = fd;
	}
	return true;
}

static char *output_elsewhere(const char *procfs, pid_t root, const char *log_path,
			      const struct stat *log)
{
	_cleanup_free_ char *log_real = log_path ? realpath(log_path, NULL) : NULL;
	struct output_scan o = { .log_real = log_real };
	if (pvg_proc_fds(procfs, root, output_fd, &o) < 0 || o.log_open || !o.cand_fd)
		return NULL;
	/* only the named descriptor is stat'ed, through /proc: the open file itself */
	char fdpath[512];
	snprintf(fdpath, sizeof(fdpath), "%s/%d/fd/%d", procfs, (int)root, o.cand_fd);
	struct stat st;
	if (stat(fdpath, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (log && st.st_dev == log->st_dev && st.st_ino == log->st_ino))
		return NULL;
	return pvg_asprintf("the service (pid %d) writes its %s to %s, not to this log; point "
			    "markers.log there, or redirect the service's output",
			    (int)root, o.cand_fd == 1 ? "stdout" : "stderr", o.cand);
}

static struct marker_read *read_markers(struct pvg_ctx *ctx)
{
	const struct pvg_config *cfg = ctx->cfg;
	struct marker_read *m = pvg_xcalloc(1, sizeof(*m));
	m->ev = cJSON_CreateObject();
	pvg_marker_scan_init(&m->scan);
	struct pvg_service_view view;
	m->view_r = pvg_service_view_get(ctx, &view);
	if (m->view_r < 0) {
		m->view_why = view.why ? pvg_strdup(view.why) : NULL;
		return m;
	}
	char t[48];
	pvg_format_time(view.start.tv_sec, view.start.tv_nsec, t, sizeof(t));
	m->root = view.root;
	cJSON *sv = cJSON_AddObjectToObject(m->ev, "service");
	pvg_json_add_int(sv, "pid", (int)view.root);
	cJSON_AddStringToObject(sv, "start_time", t);

	/* the writer's zone, for times written without an offset */
	if (pvg_proc_zone_read(ctx->procfs, view.root, &m->zone) == 0 && m->zone.known) {
		m->line_zone.tz = &m->zone.tz;
		cJSON *z = cJSON_AddObjectToObject(sv, "time_zone");
		pvg_json_add_str(z, "zone", m->zone.name);
		pvg_json_add_str(z, "source", m->zone.source);
	} else {
		m->line_zone.unknown = true;
		cJSON *z = cJSON_AddObjectToObject(sv, "time_zone");
		pvg_json_add_str(z, "zone", NULL);
		pvg_json_add_str(z, "unknown", m->zone.why.text ? m->zone.why.text
								 : "the service exited");
		m->undecided = pvg_asprintf(
			"its timestamp has no zone offset, and the service's time zone cannot be "
			"known (%s): in any zone from UTC-12 to UTC+14 it may be before or after the "
			"service's start", m->zone.why.text ? m->zone.why.text : "the service exited");
	}
	if (!m->undecided)
		m->undecided = pvg_asprintf(
			"its timestamp has no zone offset and falls in the hour that repeats when "
			"the clocks of the service's zone (%s) go back: it may be before or after the "
			"service's start", m->zone.name);

	m->container = strcmp(cfg->markers.log, PVG_LOG_CONTAINER) == 0;
	if (m->container) {
		const struct pvg_targets *t;
		pid_t primary = pvg_targets_get(ctx, &t) == 0 && !t->err ? t->primary : view.root;
		cJSON *cl = cJSON_AddObjectToObject(m->ev, "container_log");
		if (pvg_container_log_find(ctx->procfs, "/", primary, &m->clog) < 0) {
			m->log_err = ESRCH;
			pvg_service_view_release(&view);
			return m;
		}
		if (m->clog.in_container) {
			pvg_json_add_str(cl, "engine", m->clog.container.engine);
			pvg_json_add_str(cl, "id", m->clog.container.id);
		}
		pvg_json_add_int(cl, "pid", (int)primary);
		pvg_json_add_str(cl, "driver", m->clog.driver);
		pvg_json_add_str(cl, "found_in", m->clog.how);
		if (!m->clog.path) {
			m->log_err = m->clog.no_file ? ENOTSUP : ENOENT;
			pvg_service_view_release(&view);
			return m;
		}
		m->log_path = pvg_strdup(m->clog.path);
	} else {
		m->log_path = pvg_strdup(cfg->markers.log);
	}

	/* resolved as O_PATH and checked before anything opens it: a log replaced by a link to
	 * a device, a FIFO or a socket is refused unopened (the config names the path, so its
	 * links are followed) */
	struct pvg_untrusted how = { .root_fd = -1 };
	if (m->container)
		pvg_container_log_how(&m->clog, &how); /* the runtime's user's file, as they read it */
	struct pvg_untrusted_file f;
	_cleanup_close_ int fd = pvg_open_untrusted(m->log_path, &how, &f);
	if (fd < 0) {
		m->log_err = -fd;
		m->log_refused = f.refused;
		m->log_st_refused = f.st;
		pvg_service_view_release(&view);
		return m;
	}
	struct stat st = f.st;
	m->btime_known = created_after(fd, &view.start, &m->after, m->ev) == 0;
	if (!m->btime_known)
		m->after = false;
	m->log_st = st;

	struct pvg_marker_scan *scan = &m->scan;
	/* the config's loader compiled the same patterns, so this cannot fail but by memory */
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	if (pvg_line_format_compile(&m->format, cfg->markers.pid_pattern, cfg->markers.time_pattern,
				    cfg->markers.time_format, &why) == 0)
		scan->format = &m->format;
	scan->prefix = cfg->markers.prefix;
	scan->require = cfg->markers.require;
	scan->n_require = cfg->markers.n_require;
	scan->facts = (const char *const *)cfg->markers.facts.v;
	scan->n_facts = cfg->markers.facts.n;
	scan->forbid = (const char *const *)cfg->markers.forbid.v;
	scan->n_forbid = cfg->markers.forbid.n;
	scan->view = &view;
	scan->file_after_start = m->after;
	scan->now = time(NULL);
	scan->zone = &m->line_zone;
	m->scan_r = pvg_marker_scan_fd(scan, fd);
	scan->view = NULL;
	pvg_service_view_release(&view);
	return m;
}

/* A log that is no regular file is refused before it is opened, each kind with its code:
 * opening a device can act (a watchdog reboots, /proc/kmsg drains), a FIFO can block. */
static bool log_refused(const struct marker_read *m, struct pvg_result *res)
{
	const char *code;
	switch (m->log_refused) {
	case PVG_REFUSED_DEVICE:
		code = "dispatch-marker.log-device";
		break;
	case PVG_REFUSED_FIFO:
		code = "dispatch-marker.log-fifo";
		break;
	case PVG_REFUSED_SOCKET:
		code = "dispatch-marker.log-socket";
		break;
	default:
		return false;
	}
	pvg_summary(res, "the service log is %s, not a file", pvg_refusal_text(m->log_refused));
	pvg_problem(res, code,
		    "point markers.log at the regular file the service writes its log to (a "
		    "pipe or a terminal is not read: redirect the service's output to a file)",
		    "service log %s is %s (refused unopened)", m->log_path,
		    pvg_refusal_text(m->log_refused));
	return true;
}

/* The log a container runtime names, refused as not its runtime's user's file (SPEC §11): not
 * owned by that user, not readable by them, or a link where the file should be. */
static bool container_log_refused(const struct marker_read *m, struct pvg_result *res)
{
	const struct pvg_container_log *cl = &m->clog;
	_cleanup_free_ char *owner = pvg_asprintf("uid %u", (unsigned)cl->owner);
	_cleanup_free_ char *seen = NULL;
	switch (m->log_refused) {
	case PVG_REFUSED_OWNER:
		seen = pvg_asprintf("owned by uid %u, not by its runtime's user (%s)",
				    (unsigned)m->log_st_refused.st_uid, owner);
		break;
	case PVG_REFUSED_USER:
		seen = pvg_asprintf("not readable by its runtime's user (%s)", owner);
		break;
	case PVG_REFUSED_LINK:
		seen = pvg_strdup("a link where the runtime's file should be");
		break;
	default:
		return false;
	}
	pvg_summary(res, "the container's log is refused: %s", seen);
	pvg_problem(res, "dispatch-marker.container-log-refused",
		    "a log found through a container runtime counts only as that runtime's own "
		    "file: check which process started the service, or set markers.log to the "
		    "service's log file",
		    "markers.log is \"container\": %s (found in %s) is %s; it was not read",
		    m->log_path, cl->how ? cl->how : "?", seen);
	return true;
}

/* A zone file of the service that was refused (a device, a FIFO, a file of the kernel's, one
 * its user may not read) is a problem of its own, whatever the markers decided. */
static void zone_refused(const struct marker_read *m, struct pvg_result *res)
{
	if (!m->zone.refused)
		return;
	pvg_problem(res, "dispatch-marker.zone-file-refused", m->zone.why.hint,
		    "the service's time zone is unknown: %s", m->zone.why.text);
}

/* output_elsewhere for a gate that fails, looked up once and put in the evidence */
static const char *note_elsewhere(struct marker_read *m, const struct pvg_ctx *ctx, cJSON *ev)
{
	if (!m->elsewhere_done) {
		m->elsewhere_done = true;
		bool log = m->log_err == 0;
		m->elsewhere = output_elsewhere(ctx->procfs, m->root, log ? m->log_path : NULL,
						log ? &m->log_st : NULL);
		if (m->elsewhere)
			pvg_json_add_str(ev, "service_output_elsewhere", m->elsewhere);
	}
	return m->elsewhere;
}

static bool configured(const struct pvg_config *cfg)
{
	return cfg->markers.log && cfg->markers.prefix;
}

static void prepare_dispatch_marker(struct pvg_ctx *ctx)
{
	if (configured(ctx->cfg))
		pvg_ctx_set_slot(ctx, PVG_SLOT_LOG_MARKERS, read_markers(ctx), marker_read_free);
}

static enum pvg_status markers_decide(struct pvg_ctx *ctx, struct pvg_result *res,
				      struct marker_read *m)
{
	const struct pvg_config *cfg = ctx->cfg;
	if (!configured(cfg)) {
		const char *what = !cfg->markers.log ? "markers.log" : "markers.prefix";
		pvg_summary(res, "%s is not configured", what);
		pvg_problem(res, "dispatch-marker.not-configured",
			    "set markers.log (the service's log) and markers.prefix (what the kernel "
			    "prints when it is dispatched), or witness.dir and witness.require (the "
			    "dispatch witness)",
			    "no markers to check: %s is not set", what);
		return PVG_UNVERIFIABLE;
	}
	cJSON *ev = res->evidence;
	pvg_json_add_str(ev, "log", cfg->markers.log);
	pvg_json_add_str(ev, "prefix", cfg->markers.prefix);

	for (cJSON *it = m->ev->child; it;) {
		cJSON *next = it->next;
		cJSON_AddItemToObject(ev, it->string, cJSON_DetachItemViaPointer(m->ev, it));
		it = next;
	}
	if (m->view_r < 0) {
		int r = m->view_r;
		pvg_summary(res, "no live service to attribute markers to");
		pvg_problem(res, "dispatch-marker.no-service",
			    "start the service (service.match / pid / pidfile must find it) and run "
			    "the benchmark before this gate",
			    "no live service to attribute markers to: %s",
			    m->view_why              ? m->view_why
			    : r == -EDESTADDRREQ ? "service.match, service.pid or service.pidfile is not set"
			    : r == -ESRCH	 ? "the service process does not exist"
						 : strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	if (m->container)
		pvg_json_add_str(ev, "log_file", m->log_path);
	if (m->container && !m->log_path) {
		const struct pvg_container_log *cl = &m->clog;
		pvg_summary(res, "%s", m->log_err == ESRCH ? "the service exited during the check"
							: cl->why.text);
		pvg_problem(res,
			    cl->runtime_not_trusted ? "dispatch-marker.runtime-not-trusted"
						    : "dispatch-marker.container-log",
			    m->log_err == ESRCH ? "start the service and check again" : cl->why.hint,
			    "markers.log is \"container\": %s",
			    m->log_err == ESRCH ? "the service exited during the check" : cl->why.text);
		return PVG_UNVERIFIABLE;
	}
	if (m->container && m->log_err && container_log_refused(m, res))
		return PVG_UNVERIFIABLE;
	if (m->log_err && log_refused(m, res))
		return PVG_UNVERIFIABLE;
	if (m->log_err) {
		int e = m->log_err;
		const char *w = e == ENOENT ? note_elsewhere(m, ctx, ev) : NULL;
		pvg_summary(res, "cannot read the service log");
		pvg_problem(res, "dispatch-marker.log-unreadable",
			    w ? w
			    : e == ENOENT ? "point markers.log at the file the service writes its log "
					  "to (redirect its output there)"
					: NULL,
			    "service log %s: %s", m->log_path, strerror(e));
		return PVG_UNVERIFIABLE;
	}
	if (m->scan_r < 0) {
		pvg_summary(res, "cannot read the service log: %s", strerror(-m->scan_r));
		pvg_problem(res, "dispatch-marker.log-unreadable", NULL, "service log %s: %s",
			    m->log_path, strerror(-m->scan_r));
		return PVG_UNVERIFIABLE;
	}
	const struct pvg_marker_scan scan = m->scan;
	bool after = m->after;
	pvg_json_add_u64(ev, "bytes", scan.bytes);
	if (scan.hole_bytes)
		pvg_json_add_u64(ev, "hole_bytes", scan.hole_bytes);
	pvg_json_add_bool(ev, "log_created_after_start", after);
	cJSON *mk = cJSON_AddObjectToObject(ev, "markers");
	pvg_json_add_u64(mk, "live", scan.markers_live);
	pvg_json_add_u64(mk, "matched", scan.matched);
	pvg_json_add_u64(mk, "unattributed", scan.markers_unattributed);
	pvg_json_add_u64(mk, "unparseable", scan.markers_unparseable);
	pvg_json_add_u64(mk, "foreign_pid", scan.attr_count[PVG_ATTR_FOREIGN_PID]);
	pvg_json_add_u64(mk, "foreign_pid_since_start", scan.markers_foreign_recent);
	pvg_json_add_u64(mk, "before_start", scan.attr_count[PVG_ATTR_BEFORE_START]);
	pvg_json_add_u64(mk, "unknown_origin", scan.attr_count[PVG_ATTR_UNKNOWN]);
	pvg_json_add_u64(mk, "time_undecided", scan.attr_count[PVG_ATTR_UNDECIDED]);
	pvg_json_add_str(ev, "log_format", pvg_ctrlog_kind_name(scan.log_kind));
	if (scan.log_kind != PVG_CTRLOG_PLAIN) {
		cJSON *rt = cJSON_AddObjectToObject(ev, "runtime_records");
		pvg_json_add_u64(rt, "records", scan.records);
		pvg_json_add_u64(rt, "joined", scan.records_joined);
		pvg_json_add_u64(rt, "malformed", scan.records_malformed);
	}
	if (scan.overlong_lines)
		pvg_json_add_u64(ev, "overlong_lines", scan.overlong_lines);
	/* each configured fact and whether the live service's lines hold it (compare reads
	 * these: a declared "block size" must differ between baseline and candidate) */
	cJSON *fj = cJSON_AddArrayToObject(ev, "facts");
	for (size_t i = 0; i < cfg->markers.facts.n; i++) {
		cJSON *f = cJSON_CreateObject();
		pvg_json_add_str(f, "fact", cfg->markers.facts.v[i]);
		pvg_json_add_bool(f, "live", scan.fact_live[i] > 0);
		pvg_json_add_u64(f, "live_lines", scan.fact_live[i]);
		pvg_json_add_u64(f, "unattributed_lines", scan.fact_unattributed[i]);
		cJSON_AddItemToArray(fj, f);
	}

	cJSON *chain = cJSON_CreateObject();
	cJSON_AddNumberToObject(chain, "matched", (double)scan.matched);
	cJSON_AddNumberToObject(chain, "unattributed", (double)scan.markers_unattributed);
	pvg_chain_set(ctx, "markers", chain);

	enum pvg_status status = PVG_PASS;
	if (scan.bytes == 0) {
		const char *w = note_elsewhere(m, ctx, ev);
		pvg_problem(res, "dispatch-marker.empty-log",
			    w ? w
			      : "run the benchmark against the service, with its output going to "
				"markers.log",
			    "the service log %s is empty%s", m->log_path,
			    scan.hole_bytes ? " (its size is all holes: nothing was written there)"
					    : "");
		status = PVG_FAIL;
		goto out;
	}

	for (size_t e = 0; e < cfg->markers.n_require; e++) {
		if (!scan.require_not_selected[e])
			continue;
		_cleanup_free_ char *want = require_text(&cfg->markers.require[e]);
		pvg_problem(res, "dispatch-marker.not-selected",
			    "the kernel fell back for this shape: check the dispatch condition for "
			    "it (shape, dtype, arch) in the changed source",
			    "%zu marker%s for {%s} say%s the kernel was not selected, e.g. at byte "
			    "%" PRIu64 ": %s",
			    scan.require_not_selected[e], scan.require_not_selected[e] == 1 ? "" : "s",
			    want, scan.require_not_selected[e] == 1 ? "s" : "",
			    scan.not_selected.offset, scan.not_selected.text);
		status = PVG_FAIL;
	}
	/* Lines whose time cannot be placed before or after the start (the service's zone
	 * unknown: its environment unreadable to a provgate that is not root, a TZ naming no
	 * zone; a repeated hour) may be the live service's. What they would decide is
	 * unverifiable, never a failure told as "an earlier run". */
	bool undecided = false;
	for (size_t i = 0; i < cfg->markers.forbid.n; i++) {
		if (scan.forbid_live[i] || !scan.forbid_undecided[i])
			continue;
		pvg_problem(res, "dispatch-marker.time-undecided", undecided_hint(m),
			    "forbidden \"%s\" appears in %zu line%s that may be the live service's: %s",
			    cfg->markers.forbid.v[i], scan.forbid_undecided[i],
			    scan.forbid_undecided[i] == 1 ? "" : "s", undecided_why(m));
		undecided = true;
	}
	for (size_t i = 0; i < cfg->markers.forbid.n; i++) {
		if (!scan.forbid_live[i])
			continue;
		pvg_problem(res, "dispatch-marker.forbidden",
			    "the service took a path the benchmark must not take; fix the cause and "
			    "restart the service",
			    "forbidden \"%s\" appears in %zu line%s of the live service, e.g. at byte "
			    "%" PRIu64 ": %s",
			    cfg->markers.forbid.v[i], scan.forbid_live[i],
			    scan.forbid_live[i] == 1 ? "" : "s", scan.forbidden.offset,
			    scan.forbidden.text ? scan.forbidden.text : "");
		status = PVG_FAIL;
	}
	for (size_t i = 0; i < cfg->markers.facts.n; i++) {
		if (scan.fact_live[i])
			continue;
		if (scan.fact_undecided[i]) {
			pvg_problem(res, "dispatch-marker.time-undecided", undecided_hint(m),
				    "fact \"%s\" appears only in %zu line%s that may or may not be the "
				    "live service's: %s",
				    cfg->markers.facts.v[i], scan.fact_undecided[i],
				    scan.fact_undecided[i] == 1 ? "" : "s", undecided_why(m));
			undecided = true;
			continue;
		}
		_cleanup_free_ char *seen =
			scan.fact_unattributed[i]
				? pvg_asprintf(" (it appears in %zu line%s that cannot be attributed to "
					       "the live service: %s)",
					       scan.fact_unattributed[i],
					       scan.fact_unattributed[i] == 1 ? "" : "s",
					       attr_name(scan.fact_attr[i], m, m->btime_known))
				: pvg_strdup("");
		pvg_problem(res, "dispatch-marker.missing-fact",
			    scan.fact_unattributed[i] ? attr_hint(scan.fact_attr[i], m)
						      : "start the service with the settings the "
							"benchmark claims",
			    "fact \"%s\" is missing from the live service's lines%s",
			    cfg->markers.facts.v[i], seen);
		status = PVG_FAIL;
	}

	/* enough matching markers, for every require entry */
	size_t n_checks = cfg->markers.n_require ? cfg->markers.n_require : 1;
	for (size_t e = 0; e < n_checks; e++) {
		size_t got = cfg->markers.n_require ? scan.require_matched[e] : scan.matched;
		/* zero markers is never a pass, whatever min_count says */
		long need = cfg->markers.min_count > 1 ? cfg->markers.min_count : 1;
		if ((long)got >= need)
			continue;
		_cleanup_free_ char *want = cfg->markers.n_require
						    ? require_text(&cfg->markers.require[e])
						    : pvg_strdup(cfg->markers.prefix);
		size_t unattr = cfg->markers.n_require ? scan.require_unattributed[e]
						       : scan.markers_unattributed;
		size_t maybe = cfg->markers.n_require ? scan.require_undecided[e]
						      : scan.attr_count[PVG_ATTR_UNDECIDED];
		if ((long)(got + maybe) >= need) {
			pvg_problem(res, "dispatch-marker.time-undecided", undecided_hint(m),
				    "%zu live marker%s for {%s}, %ld required; %zu more matching "
				    "marker%s may be the live service's: %s",
				    got, got == 1 ? "" : "s", want, need, maybe, maybe == 1 ? "" : "s",
				    undecided_why(m));
			undecided = true;
			continue;
		}
		/* the first of those, for the reason and the example */
		const struct pvg_marker_sample *first = cfg->markers.n_require
								? &scan.require_unattr_first[e]
								: &scan.unattributed;
		/* No live marker at all: perhaps the service writes somewhere else. Not when lines
		 * of other pids are there: this log is written, by another process (another
		 * container, an earlier run), and that is what the hint must say. */
		bool foreign = scan.markers_foreign_recent > 0;
		const char *w = scan.markers_live == 0 && !foreign ? note_elsewhere(m, ctx, ev) : NULL;
		/* "only from an earlier run" when the live service wrote no marker at all; live
		 * markers that match nothing say more (wrong shape, dtype) */
		if (got == 0 && unattr > 0 && scan.markers_live == 0 && scan.markers_unparseable == 0) {
			pvg_problem(res, "dispatch-marker.unattributed",
				    w ? w
				    : foreign
					    ? "another process writes markers to this log while the service "
					      "runs (pids are compared in the service's own pid namespace: "
					      "another container or a second service): run the benchmark "
					      "against the live service, and give each service a log of "
					      "its own"
					    : attr_hint(first->attr, m),
				    "no marker for {%s} from the live service; %zu matching marker%s "
				    "cannot be attributed to it (%s, e.g. at byte %" PRIu64 ")",
				    want, unattr, unattr == 1 ? "" : "s",
				    attr_name(first->attr, m, m->btime_known), first->offset);
		} else {
			_cleanup_free_ char *seen =
				scan.unmatched.text
					? pvg_asprintf("; live markers that match no entry, e.g. at "
						       "byte %" PRIu64 ": %s",
						       scan.unmatched.offset, scan.unmatched.text)
					: scan.markers_unparseable
					? pvg_asprintf("; %zu live marker line%s could not be parsed",
						       scan.markers_unparseable,
						       scan.markers_unparseable == 1 ? "" : "s")
					: pvg_strdup("");
			/* the markers that matched but do not count, and why the first did not */
			_cleanup_free_ char *others =
				unattr ? pvg_asprintf(" (%zu more matching marker%s do%s not count: "
						      "%s, e.g. at byte %" PRIu64 ")",
						      unattr, unattr == 1 ? "" : "s",
						      unattr == 1 ? "es" : "",
						      attr_name(first->attr, m, m->btime_known),
						      first->offset)
				       : pvg_strdup("");
			pvg_problem(res, "dispatch-marker.too-few",
				    w ? w
					    : "run the benchmark with the shapes and dtype the config "
					      "requires, and check that the kernel prints its marker",
				    "%zu live marker%s for {%s}, %ld required%s%s", got,
				    got == 1 ? "" : "s", want, need, seen, others);
		}
		status = PVG_FAIL;
	}

	if (undecided && status == PVG_PASS)
		status = PVG_UNVERIFIABLE;
out:
	if (status == PVG_PASS)
		pvg_summary(res, "%zu marker%s of the live service match%s (%zu unattributed ignored)",
			    scan.matched, scan.matched == 1 ? "" : "s",
			    scan.matched == 1 ? "es" : "", scan.markers_unattributed);
	else {
		/* a failure is told by what failed, not by what could not be decided */
		const struct pvg_problem *first = res->n_problems ? &res->problems[0] : NULL;
		for (size_t k = 0; status == PVG_FAIL && k < res->n_problems; k++)
			if (strcmp(res->problems[k].code, "dispatch-marker.time-undecided") != 0) {
				first = &res->problems[k];
				break;
			}
		pvg_summary(res, "%s", first ? first->message : "did not pass");
	}
	return status;
}

static enum pvg_status run_markers(struct pvg_ctx *ctx, struct pvg_result *res)
{
	_cleanup_(marker_read_freep) struct marker_read *m = NULL;
	if (configured(ctx->cfg)) {
		m = pvg_ctx_take_slot(ctx, PVG_SLOT_LOG_MARKERS);
		if (!m)
			m = read_markers(ctx);
	}
	enum pvg_status st = markers_decide(ctx, res, m);
	if (m)
		zone_refused(m, res);
	return st;
}

/* Markers, the witness, or both (each configured part must pass; a failure outranks an
 * unverifiable part). */
static enum pvg_status run_dispatch_marker(struct pvg_ctx *ctx, struct pvg_result *res)
{
	const struct pvg_config *cfg = ctx->cfg;
	if (!pvg_witness_configured(cfg))
		return run_markers(ctx, res);
	_cleanup_free_ char *wsum = NULL;
	if (!configured(cfg)) {
		enum pvg_status st = pvg_witness_check(ctx, res, &wsum);
		if (st == PVG_PASS || !res->n_problems)
			pvg_summary(res, "%s", wsum ? wsum : "witness");
		else
			pvg_summary(res, "%s", res->problems[0].message);
		return st;
	}
	enum pvg_status ms = run_markers(ctx, res);
	_cleanup_free_ char *msum = res->summary ? pvg_strdup(res->summary) : NULL;
	enum pvg_status ws = pvg_witness_check(ctx, res, &wsum);
	enum pvg_status st = ms == PVG_FAIL || ws == PVG_FAIL		  ? PVG_FAIL
			     : ms == PVG_UNVERIFIABLE || ws == PVG_UNVERIFIABLE ? PVG_UNVERIFIABLE
									      : PVG_PASS;
	pvg_summary(res, "markers: %s; %s", msum ? msum : "?", wsum ? wsum : "witness");
	return st;
}

const struct pvg_check pvg_check_dispatch_marker = {
	.id = 7,
	.name = "dispatch-marker",
	.phases = PVG_IN_PHASE(PVG_PHASE_LIVE),
	.rechecked = true,
	.run = run_dispatch_marker,
	.prepare_here = pvg_targets_prepare,
	.prepare = prepare_dispatch_marker,
};
