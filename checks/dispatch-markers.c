/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's markers, read: the live service (its root and start), its time zone, the log
 * (markers.log, or the log a container runtime keeps for it), the log's creation time and the
 * scan of lib/formats/markers.c, which attributes every line to the live service or not (see
 * attribution in provgate(1)). Then the evidence of what was read. 07-dispatch-marker.c
 * decides.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dispatch-markers.h"
#include "dispatch-window.h"
#include "facts.h"
#include "sys/vllm-cache.h"

bool dispatch_markers_configured(const struct pvg_config *cfg)
{
	return cfg->markers.log && cfg->markers.prefix;
}

/* Was the log file created after the service started? Only the birth time says so: the
 * change time moves with every append, so it says nothing about who created the file. Sets
 * btime_known and after; the birth time goes into the evidence ("log_created"). */
static void note_creation(int fd, const struct timespec *start, struct marker_read *m)
{
	struct statx stx;
	m->btime_known = m->after = false;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &stx) < 0)
		return;
	if (!(stx.stx_mask & STATX_BTIME)) {
		pvg_json_add_str(m->ev, "log_created", NULL);
		return;
	}
	char t[48];
	pvg_format_time(stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec, t, sizeof(t));
	cJSON_AddStringToObject(m->ev, "log_created", t);
	m->btime_known = true;
	m->after = stx.stx_btime.tv_sec > start->tv_sec ||
		   (stx.stx_btime.tv_sec == start->tv_sec &&
		    (long)stx.stx_btime.tv_nsec >= start->tv_nsec);
}

void dispatch_markers_read_free(void *p)
{
	struct marker_read *m = p;
	if (!m)
		return;
	free(m->view_why);
	free(m->log_path);
	free(m->undecided);
	pvg_container_log_clear(&m->clog);
	pvg_proc_zone_clear(&m->zone);
	cJSON_Delete(m->ev);
	pvg_marker_scan_done(&m->scan);
	pvg_line_format_clear(&m->format);
	free(m);
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

/* The writer's zone, for times written without an offset; and why a time may be before or
 * after the start when the zone cannot tell. */
static void read_zone(struct pvg_ctx *ctx, const struct pvg_service_view *view, cJSON *sv,
		      struct marker_read *m)
{
	if (pvg_proc_zone_read(ctx->procfs, view->root, &m->zone) == 0 && m->zone.known) {
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
}

/* markers.log "container": the log file the container runtime keeps for the service's primary
 * process. 0, or the errno that log_err records. */
static int find_container_log(struct pvg_ctx *ctx, const struct pvg_service_view *view,
			      struct marker_read *m)
{
	const struct pvg_targets *t;
	pid_t primary = pvg_targets_get(ctx, &t) == 0 && !t->err ? t->primary : view->root;
	cJSON *cl = cJSON_AddObjectToObject(m->ev, "container_log");
	if (pvg_container_log_find(ctx->procfs, "/", primary, &m->clog) < 0)
		return ESRCH;
	if (m->clog.in_container) {
		pvg_json_add_str(cl, "engine", m->clog.container.engine);
		pvg_json_add_str(cl, "id", m->clog.container.id);
	}
	pvg_json_add_int(cl, "pid", (int)primary);
	pvg_json_add_str(cl, "driver", m->clog.driver);
	pvg_json_add_str(cl, "found_in", m->clog.how);
	if (!m->clog.path)
		return m->clog.no_file ? ENOTSUP : ENOENT;
	m->log_path = pvg_strdup(m->clog.path);
	return 0;
}

/* Scans the open log with the config's markers, attributing lines through the view. */
static void scan_log(const struct pvg_config *cfg, struct pvg_service_view *view, int fd,
		     struct marker_read *m)
{
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
	scan->view = view;
	if (m->events) {
		scan->events = m->events;
		while (m->events[scan->n_events])
			scan->n_events++;
	}
	scan->file_after_start = m->after;
	scan->now = time(NULL);
	scan->zone = &m->line_zone;
	m->scan_r = pvg_marker_scan_fd(scan, fd);
	scan->view = NULL;
}

/* Opens the log (refusing what is no regular file, unopened), notes its creation time and
 * scans it. */
static void read_log(const struct pvg_config *cfg, struct pvg_service_view *view,
		     struct marker_read *m)
{
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
		return;
	}
	struct stat st = f.st;
	note_creation(fd, &view->start, m);
	m->log_st = st;
	scan_log(cfg, view, fd, m);
}

/* A process of the service's tree is vLLM's (its title or command line says so). */
static bool service_is_vllm(struct pvg_ctx *ctx)
{
	const struct pvg_targets *t;
	if (pvg_targets_get(ctx, &t) < 0 || t->err)
		return false;
	for (size_t i = 0; i < t->n; i++)
		if (t->procs[i].in_tree &&
		    (pvg_names_vllm(t->procs[i].comm) || pvg_names_vllm(t->procs[i].cmdline)))
			return true;
	return false;
}

struct marker_read *dispatch_markers_read(struct pvg_ctx *ctx)
{
	const struct pvg_config *cfg = ctx->cfg;
	struct marker_read *m = pvg_xcalloc(1, sizeof(*m));
	m->ev = cJSON_CreateObject();
	pvg_marker_scan_init(&m->scan);
	/* torch.compile's lines: the benchmark window's compiles, and for a vLLM service the
	 * compile cache's folders (dispatch-compile.c); other logs are not searched for them */
	if (dispatch_window_active(ctx) || service_is_vllm(ctx))
		m->events = dispatch_window_log_patterns;
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
	read_zone(ctx, &view, sv, m);

	m->container = strcmp(cfg->markers.log, PVG_LOG_CONTAINER) == 0;
	if (m->container)
		m->log_err = find_container_log(ctx, &view, m);
	else
		m->log_path = pvg_strdup(cfg->markers.log);
	if (!m->log_err)
		read_log(cfg, &view, m);
	pvg_service_view_release(&view);
	return m;
}

bool dispatch_markers_scanned(const struct marker_read *m)
{
	return m->view_r >= 0 && m->log_err == 0 && m->scan_r >= 0;
}

char *dispatch_markers_output_elsewhere(const char *procfs, const struct marker_read *m)
{
	bool log = m->log_err == 0;
	return output_elsewhere(procfs, m->root, log ? m->log_path : NULL, log ? &m->log_st : NULL);
}

/* ---- evidence ----------------------------------------------------------------------------- */

/* The scan's counts; compare reads "facts": a declared "block size" must differ between
 * baseline and candidate. */
static void scan_evidence(const struct pvg_config *cfg, const struct marker_read *m, cJSON *ev)
{
	const struct pvg_marker_scan *scan = &m->scan;
	pvg_json_add_u64(ev, "bytes", scan->bytes);
	if (scan->hole_bytes)
		pvg_json_add_u64(ev, "hole_bytes", scan->hole_bytes);
	pvg_json_add_bool(ev, "log_created_after_start", m->after);
	cJSON *mk = cJSON_AddObjectToObject(ev, "markers");
	pvg_json_add_u64(mk, "live", scan->markers_live);
	pvg_json_add_u64(mk, "matched", scan->matched);
	pvg_json_add_u64(mk, "unattributed", scan->markers_unattributed);
	pvg_json_add_u64(mk, "unparseable", scan->markers_unparseable);
	pvg_json_add_u64(mk, "foreign_pid", scan->attr_count[PVG_ATTR_FOREIGN_PID]);
	pvg_json_add_u64(mk, "foreign_pid_since_start", scan->markers_foreign_recent);
	pvg_json_add_u64(mk, "before_start", scan->attr_count[PVG_ATTR_BEFORE_START]);
	pvg_json_add_u64(mk, "unknown_origin", scan->attr_count[PVG_ATTR_UNKNOWN]);
	pvg_json_add_u64(mk, "time_undecided", scan->attr_count[PVG_ATTR_UNDECIDED]);
	pvg_json_add_str(ev, "log_format", pvg_ctrlog_kind_name(scan->log_kind));
	if (scan->log_kind != PVG_CTRLOG_PLAIN) {
		cJSON *rt = cJSON_AddObjectToObject(ev, "runtime_records");
		pvg_json_add_u64(rt, "records", scan->records);
		pvg_json_add_u64(rt, "joined", scan->records_joined);
		pvg_json_add_u64(rt, "malformed", scan->records_malformed);
	}
	if (scan->overlong_lines)
		pvg_json_add_u64(ev, "overlong_lines", scan->overlong_lines);
	/* each configured fact and whether the live service's lines hold it */
	cJSON *fj = cJSON_AddArrayToObject(ev, "facts");
	for (size_t i = 0; i < cfg->markers.facts.n; i++) {
		cJSON *f = cJSON_CreateObject();
		pvg_json_add_str(f, "fact", cfg->markers.facts.v[i]);
		pvg_json_add_bool(f, "live", scan->fact_live[i] > 0);
		pvg_json_add_u64(f, "live_lines", scan->fact_live[i]);
		pvg_json_add_u64(f, "unattributed_lines", scan->fact_unattributed[i]);
		cJSON_AddItemToArray(fj, f);
	}
}

void dispatch_markers_evidence(struct pvg_ctx *ctx, cJSON *ev, const struct marker_read *m,
			  const char *elsewhere)
{
	const struct pvg_config *cfg = ctx->cfg;
	pvg_json_add_str(ev, "log", cfg->markers.log);
	pvg_json_add_str(ev, "prefix", cfg->markers.prefix);
	for (const cJSON *it = m->ev->child; it; it = it->next)
		cJSON_AddItemToObject(ev, it->string, cJSON_Duplicate(it, true));
	if (m->view_r < 0)
		return;
	if (m->container)
		pvg_json_add_str(ev, "log_file", m->log_path);
	if (dispatch_markers_scanned(m)) {
		scan_evidence(cfg, m, ev);
		cJSON *chain = cJSON_CreateObject();
		cJSON_AddNumberToObject(chain, "matched", (double)m->scan.matched);
		cJSON_AddNumberToObject(chain, "unattributed", (double)m->scan.markers_unattributed);
		pvg_chain_set(ctx, "markers", chain);
	}
	if (elsewhere)
		pvg_json_add_str(ev, "service_output_elsewhere", elsewhere);
}
