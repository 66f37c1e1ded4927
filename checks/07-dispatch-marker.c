/* SPDX-License-Identifier: MIT */
/*
 * Gate 7 dispatch-marker: the live service really selected the new kernel for the benchmark's
 * shapes. Two sources of evidence, each read by a module of its own, and decided here:
 *
 *   markers (dispatch-markers.c): the lines the kernel prints to the service log; only lines
 *   that can be attributed to the live service count, the rest is reported as unattributed.
 *     configured             markers.log and markers.prefix are set
 *     service-found          a live service to attribute lines to
 *     container-log-found    markers.log "container": the runtime names the service's log
 *     container-log-owned    ... and that log is its runtime's user's own file
 *     log-is-file            not a device, FIFO or socket (refused unopened)
 *     log-readable           opened and read to its end
 *     log-not-empty          something was written there
 *     kernel-selected        no marker of a require entry says "not selected"
 *     forbid-decided         no forbidden line that may or may not be the live service's
 *     not-forbidden          no forbidden line of the live service
 *     facts-live             every markers.facts entry in the live service's lines
 *     enough                 markers.min_count live markers for each require entry
 *     zone-file              the service's zone file was not refused (told, whatever passed)
 *
 *   witness (dispatch-witness.c): what the GPU runtime itself recorded about the kernels the
 *   live service launched. The service must have been started with the witness (its
 *   environment says so), else the absence of a launch proves nothing. A live file that
 *   neither answered the request for a fresh witness nor is final is unverifiable: the
 *   launches since its last write are not seen. Graph replays the witness could not itemize
 *   leave a requirement unmet or a forbid unproven as unverifiable, never as a pass.
 *     kernel-named           witness.require names a kernel
 *     service                a live service to attribute witness files to
 *     environment            the service was started with the witness, into witness.dir
 *     folder                 witness.dir opens, and is no link
 *     request                a request for a fresh witness could be made
 *     folder-listed          the folder's files can be listed
 *     files                  every file of a live target reads; each answered or is final
 *     live-file              a witness file of the live service is there
 *     recording              the witness records in the live service
 *     required               each witness.require entry launched often enough
 *     forbid-provable        no graph replay hides what a forbid must rule out
 *     forbidden              no witness.forbid kernel launched
 *
 *   exec's after-check (dispatch-window.c): nothing compiled or loaded while the benchmark ran,
 *   unless benchmark.allow_loads (then listed all the same). Where the witness does not record
 *   module loads (a version 1 or 2 file, or an API that cannot say) or no log is read, the
 *   evidence and the summary say that loads could not be told: a note, not a failure.
 *     loads-seen             every recording file covers the window's end and kept every load
 *     no-loads               no module of a live witness file loaded in the window
 *     no-compiles            no compile line of the live service (vLLM's torch.compile) in it
 *
 *   the compile cache (dispatch-compile.c): a torch.compile graph the live service loaded from
 *   vLLM's cache is no older than the changed Python files it traced (SPEC §12). Told by the
 *   service log's own lines (the folder each process used, and whether it loaded a graph from
 *   it), the folder's graph files' times and computation_graph.py's traced files; judged in
 *   every run, whatever part is configured (the log is searched for those lines where a
 *   process of the tree is named vLLM, and in exec's after-check). It fires only for a change that installs a
 *   Python file the graph traced (named in computation_graph.py, or compile_cache.traced, or
 *   under vllm/model_executor/ where that file cannot be read) and a folder the service
 *   loaded from, written before that file took its installed content: fail; the same where
 *   the log cannot tie the load to the folder: unverifiable. A cache in use (a folder held
 *   open, or a vLLM service whose cache root exists and is not disabled) that no log line
 *   names: unverifiable. No cache in use, or no Python file in the change: not applied.
 *     compile-cache          see above
 *
 * Each configured source must pass; a failure outranks an unverifiable part.
 */
#include "07-dispatch-marker.h"
#include "dispatch-compile.h"

/* A part of the gate as its rules are evaluated: the problems go to res as they come. */
struct walk {
	struct pvg_result *res;
	enum pvg_status status;
	char *summary; /* a stopping rule's */
};

/* Takes a rule's outcome into the walk; false when the rules after it have nothing to decide
 * on. */
static bool take(struct walk *w, struct pvg_outcome o)
{
	if (o.summary) {
		free(w->summary);
		w->summary = o.summary;
		o.summary = NULL;
	}
	bool stop = o.stop;
	w->status = pvg_status_worst(w->status, pvg_outcome_report(w->res, &o));
	return !stop;
}

/* ---- markers: the words for lines that do not count ---------------------------------------- */

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

/* What was seen about a line that does not count (see attribution in provgate(1)). */
static const char *attr_name(enum pvg_attribution a, const struct marker_read *m)
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
		return m->btime_known ? "no pid or timestamp in the line, and the log file was "
					"created before the service started (truncating a file "
					"keeps its creation time)"
				      : "no pid or timestamp in the line, and the file system does "
					"not record when the log was created";
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

/* ---- markers: reading the log -------------------------------------------------------------- */

struct pvg_outcome rule_markers_configured(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_config *cfg = f->cfg;
	if (dispatch_markers_configured(cfg))
		return o;
	const char *what = !cfg->markers.log ? "markers.log" : "markers.prefix";
	o.stop = true;
	o.summary = pvg_asprintf("%s is not configured", what);
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.not-configured",
			    "set markers.log (the service's log) and markers.prefix (what the kernel "
			    "prints when it is dispatched), or witness.dir and witness.require (the "
			    "dispatch witness)",
			    "no markers to check: %s is not set", what);
	return o;
}

struct pvg_outcome rule_markers_service_found(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct marker_read *m = f->m;
	int r = m->view_r;
	if (r >= 0)
		return o;
	o.stop = true;
	o.summary = pvg_strdup("no live service to attribute markers to");
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.no-service",
			    "start the service (service.match / pid / pidfile must find it) and run "
			    "the benchmark before this gate",
			    "no live service to attribute markers to: %s",
			    m->view_why              ? m->view_why
			    : r == -EDESTADDRREQ ? "service.match, service.pid or service.pidfile is not set"
			    : r == -ESRCH	      ? "the service process does not exist"
						 : strerror(-r));
	return o;
}

struct pvg_outcome rule_markers_container_log_found(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct marker_read *m = f->m;
	if (!m->container || m->log_path)
		return o;
	const struct pvg_container_log *cl = &m->clog;
	bool gone = m->log_err == ESRCH;
	o.stop = true;
	o.summary = pvg_strdup(gone ? "the service exited during the check" : cl->why.text);
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE,
			    cl->runtime_not_trusted ? "dispatch-marker.runtime-not-trusted"
						    : "dispatch-marker.container-log",
			    gone ? "start the service and check again" : cl->why.hint,
			    "markers.log is \"container\": %s",
			    gone ? "the service exited during the check" : cl->why.text);
	return o;
}

/* The log a container runtime names, refused as not its runtime's user's file (SPEC §11): not
 * owned by that user, not readable by them, or a link where the file should be. */
struct pvg_outcome rule_markers_container_log_owned(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct marker_read *m = f->m;
	if (!m->container || !m->log_err)
		return o;
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
	case PVG_REFUSED_IDENTITY:
		o.stop = true;
		o.summary = pvg_asprintf("the container's log was %s",
					 pvg_refusal_text(m->log_refused));
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.container-log-refused",
				    pvg_refusal_hint(m->log_refused, NULL),
				    "markers.log is \"container\": %s (found in %s) is read with "
				    "its runtime's user's rights (%s), and was %s",
				    m->log_path, cl->how ? cl->how : "?", owner,
				    pvg_refusal_text(m->log_refused));
		return o;
	default:
		return o;
	}
	o.stop = true;
	o.summary = pvg_asprintf("the container's log is refused: %s", seen);
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.container-log-refused",
			    "a log found through a container runtime counts only as that runtime's "
			    "own file: check which process started the service, or set markers.log to "
			    "the service's log file",
			    "markers.log is \"container\": %s (found in %s) is %s; it was not read",
			    m->log_path, cl->how ? cl->how : "?", seen);
	return o;
}

/* A log that is no regular file is refused before it is opened, each kind with its code:
 * opening a device can act (a watchdog reboots, /proc/kmsg drains), a FIFO can block. */
struct pvg_outcome rule_markers_log_is_file(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct marker_read *m = f->m;
	const char *code;
	if (!m->log_err)
		return o;
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
		return o;
	}
	o.stop = true;
	o.summary = pvg_asprintf("the service log is %s, not a file",
				 pvg_refusal_text(m->log_refused));
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, code,
			    "point markers.log at the regular file the service writes its log to (a "
			    "pipe or a terminal is not read: redirect the service's output to a file)",
			    "service log %s is %s (refused unopened)", m->log_path,
			    pvg_refusal_text(m->log_refused));
	return o;
}

struct pvg_outcome rule_markers_log_readable(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct marker_read *m = f->m;
	if (m->log_err) {
		int e = m->log_err;
		const char *w = e == ENOENT ? f->elsewhere : NULL;
		o.stop = true;
		o.summary = pvg_strdup("cannot read the service log");
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.log-unreadable",
				    w ? w
				    : e == ENOENT ? "point markers.log at the file the service writes "
						    "its log to (redirect its output there)"
						  : NULL,
				    "service log %s: %s", m->log_path, strerror(e));
	} else if (m->scan_r < 0) {
		o.stop = true;
		o.summary = pvg_asprintf("cannot read the service log: %s", strerror(-m->scan_r));
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.log-unreadable", NULL,
				    "service log %s: %s", m->log_path, strerror(-m->scan_r));
	}
	return o;
}

/* ---- markers: what the live service's lines say -------------------------------------------- */

struct pvg_outcome rule_markers_log_not_empty(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct marker_read *m = f->m;
	if (m->scan.bytes != 0)
		return o;
	o.stop = true; /* told by its problem */
	pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.empty-log",
			    f->elsewhere ? f->elsewhere
					 : "run the benchmark against the service, with its output "
					   "going to markers.log",
			    "the service log %s is empty%s", m->log_path,
			    m->scan.hole_bytes ? " (its size is all holes: nothing was written there)"
					       : "");
	return o;
}

struct pvg_outcome rule_markers_kernel_selected(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_config *cfg = f->cfg;
	const struct pvg_marker_scan *scan = &f->m->scan;
	for (size_t e = 0; e < cfg->markers.n_require; e++) {
		size_t n = scan->require_not_selected[e];
		if (!n)
			continue;
		_cleanup_free_ char *want = require_text(&cfg->markers.require[e]);
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.not-selected",
				    "the kernel fell back for this shape: check the dispatch condition "
				    "for it (shape, dtype, arch) in the changed source",
				    "%zu marker%s for {%s} say%s the kernel was not selected, e.g. at "
				    "byte %" PRIu64 ": %s",
				    n, n == 1 ? "" : "s", want, n == 1 ? "s" : "",
				    scan->not_selected.offset, scan->not_selected.text);
	}
	return o;
}

/* Lines whose time cannot be placed before or after the start (the service's zone unknown:
 * its environment unreadable to a provgate that is not root, a TZ naming no zone; a repeated
 * hour) may be the live service's. What they would decide is unverifiable, never a failure
 * told as "an earlier run". */
struct pvg_outcome rule_markers_forbid_decided(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_config *cfg = f->cfg;
	const struct marker_read *m = f->m;
	for (size_t i = 0; i < cfg->markers.forbid.n; i++) {
		size_t n = m->scan.forbid_undecided[i];
		if (m->scan.forbid_live[i] || !n)
			continue;
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.time-undecided",
				    undecided_hint(m),
				    "forbidden \"%s\" appears in %zu line%s that may be the live "
				    "service's: %s",
				    cfg->markers.forbid.v[i], n, n == 1 ? "" : "s", undecided_why(m));
	}
	return o;
}

struct pvg_outcome rule_markers_not_forbidden(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_config *cfg = f->cfg;
	const struct pvg_marker_scan *scan = &f->m->scan;
	for (size_t i = 0; i < cfg->markers.forbid.n; i++) {
		size_t n = scan->forbid_live[i];
		if (!n)
			continue;
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.forbidden",
				    "the service took a path the benchmark must not take; fix the cause "
				    "and restart the service",
				    "forbidden \"%s\" appears in %zu line%s of the live service, e.g. at "
				    "byte %" PRIu64 ": %s",
				    cfg->markers.forbid.v[i], n, n == 1 ? "" : "s", scan->forbidden.offset,
				    scan->forbidden.text ? scan->forbidden.text : "");
	}
	return o;
}

struct pvg_outcome rule_markers_facts_live(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_config *cfg = f->cfg;
	const struct marker_read *m = f->m;
	const struct pvg_marker_scan *scan = &m->scan;
	for (size_t i = 0; i < cfg->markers.facts.n; i++) {
		const char *fact = cfg->markers.facts.v[i];
		size_t maybe = scan->fact_undecided[i], unattr = scan->fact_unattributed[i];
		if (scan->fact_live[i])
			continue;
		if (maybe) {
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.time-undecided",
					    undecided_hint(m),
					    "fact \"%s\" appears only in %zu line%s that may or may not "
					    "be the live service's: %s",
					    fact, maybe, maybe == 1 ? "" : "s", undecided_why(m));
			continue;
		}
		_cleanup_free_ char *seen =
			unattr ? pvg_asprintf(" (it appears in %zu line%s that cannot be attributed "
					      "to the live service: %s)",
					      unattr, unattr == 1 ? "" : "s",
					      attr_name(scan->fact_attr[i], m))
			       : pvg_strdup("");
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.missing-fact",
				    unattr ? attr_hint(scan->fact_attr[i], m)
					   : "start the service with the settings the benchmark claims",
				    "fact \"%s\" is missing from the live service's lines%s", fact, seen);
	}
	return o;
}

/* What require entry e (or, without require entries, the prefix) needs and got. */
struct markers_count {
	size_t got, unattr, maybe;
	long need;
	const struct pvg_marker_sample *first; /* the first unattributed: reason, example */
};

static struct markers_count markers_count(const struct pvg_config *cfg,
					  const struct pvg_marker_scan *scan, size_t e)
{
	bool per_entry = cfg->markers.n_require != 0;
	return (struct markers_count){
		.got = per_entry ? scan->require_matched[e] : scan->matched,
		.unattr = per_entry ? scan->require_unattributed[e] : scan->markers_unattributed,
		.maybe = per_entry ? scan->require_undecided[e] : scan->attr_count[PVG_ATTR_UNDECIDED],
		/* zero markers is never a pass, whatever min_count says */
		.need = cfg->markers.min_count > 1 ? cfg->markers.min_count : 1,
		.first = per_entry ? &scan->require_unattr_first[e] : &scan->unattributed,
	};
}

/* No live marker for it: the matching ones are all from elsewhere. No live marker at all may
 * mean the service writes somewhere else; not when lines of other pids are there: this log
 * is written, by another process (another container, an earlier run), and that is what the
 * hint must say. */
static void unattributed_problem(struct pvg_outcome *o, const struct markers_facts *f,
				 const struct markers_count *c, const char *want)
{
	const struct marker_read *m = f->m;
	bool foreign = m->scan.markers_foreign_recent > 0;
	pvg_outcome_problem(o, PVG_FAIL, "dispatch-marker.unattributed",
			    !foreign && f->elsewhere ? f->elsewhere
			    : foreign ? "another process writes markers to this log while the "
					"service runs (pids are compared in the service's own pid "
					"namespace: another container or a second service): run the "
					"benchmark against the live service, and give each service a "
					"log of its own"
				      : attr_hint(c->first->attr, m),
			    "no marker for {%s} from the live service; %zu matching marker%s cannot "
			    "be attributed to it (%s, e.g. at byte %" PRIu64 ")",
			    want, c->unattr, c->unattr == 1 ? "" : "s", attr_name(c->first->attr, m),
			    c->first->offset);
}

/* Live markers, too few: what the live ones that match nothing say (wrong shape, dtype), and
 * why the matching ones that do not count do not. */
static void too_few_problem(struct pvg_outcome *o, const struct markers_facts *f,
			    const struct markers_count *c, const char *want)
{
	const struct marker_read *m = f->m;
	const struct pvg_marker_scan *scan = &m->scan;
	bool look_elsewhere = scan->markers_live == 0 && scan->markers_foreign_recent == 0;
	_cleanup_free_ char *seen =
		scan->unmatched.text
			? pvg_asprintf("; live markers that match no entry, e.g. at byte %" PRIu64
				       ": %s",
				       scan->unmatched.offset, scan->unmatched.text)
		: scan->markers_unparseable
			? pvg_asprintf("; %zu live marker line%s could not be parsed",
				       scan->markers_unparseable,
				       scan->markers_unparseable == 1 ? "" : "s")
			: pvg_strdup("");
	_cleanup_free_ char *others =
		c->unattr ? pvg_asprintf(" (%zu more matching marker%s do%s not count: %s, e.g. "
					 "at byte %" PRIu64 ")",
					 c->unattr, c->unattr == 1 ? "" : "s",
					 c->unattr == 1 ? "es" : "", attr_name(c->first->attr, m),
					 c->first->offset)
			  : pvg_strdup("");
	pvg_outcome_problem(o, PVG_FAIL, "dispatch-marker.too-few",
			    look_elsewhere && f->elsewhere
				    ? f->elsewhere
				    : "run the benchmark with the shapes and dtype the config "
				      "requires, and check that the kernel prints its marker",
			    "%zu live marker%s for {%s}, %ld required%s%s", c->got,
			    c->got == 1 ? "" : "s", want, c->need, seen, others);
}

/* Enough matching live markers, for every require entry. */
struct pvg_outcome rule_markers_enough(const struct markers_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_config *cfg = f->cfg;
	const struct marker_read *m = f->m;
	const struct pvg_marker_scan *scan = &m->scan;
	size_t n_checks = cfg->markers.n_require ? cfg->markers.n_require : 1;
	for (size_t e = 0; e < n_checks; e++) {
		struct markers_count c = markers_count(cfg, scan, e);
		if ((long)c.got >= c.need)
			continue;
		_cleanup_free_ char *want = cfg->markers.n_require
						    ? require_text(&cfg->markers.require[e])
						    : pvg_strdup(cfg->markers.prefix);
		if ((long)(c.got + c.maybe) >= c.need)
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.time-undecided",
					    undecided_hint(m),
					    "%zu live marker%s for {%s}, %ld required; %zu more matching "
					    "marker%s may be the live service's: %s",
					    c.got, c.got == 1 ? "" : "s", want, c.need, c.maybe,
					    c.maybe == 1 ? "" : "s", undecided_why(m));
		else if (c.got == 0 && c.unattr > 0 && scan->markers_live == 0 &&
			 scan->markers_unparseable == 0)
			unattributed_problem(&o, f, &c, want);
		else
			too_few_problem(&o, f, &c, want);
	}
	return o;
}

bool markers_need_elsewhere(const struct pvg_config *cfg, const struct marker_read *m)
{
	if (m->view_r < 0)
		return false;
	if (m->log_err)
		return m->log_err == ENOENT && m->log_path;
	if (m->scan_r < 0)
		return false;
	if (m->scan.bytes == 0)
		return true;
	if (m->scan.markers_live || m->scan.markers_foreign_recent)
		return false;
	size_t n_checks = cfg->markers.n_require ? cfg->markers.n_require : 1;
	for (size_t e = 0; e < n_checks; e++) {
		struct markers_count c = markers_count(cfg, &m->scan, e);
		if ((long)(c.got + c.maybe) < c.need)
			return true;
	}
	return false;
}

/* A zone file of the service that was refused (a device, a FIFO, a file of the kernel's, one
 * its user may not read) leaves the zone unknown, which matters only for lines without an
 * offset. Where the markers did not pass it is among the problems (it may be why), leaving
 * their status as it is; where they passed it is told in the evidence only
 * (service.time_zone.unknown): a problem would fail a gate the markers decided. */
struct pvg_outcome rule_markers_zone_file(const struct markers_facts *f, enum pvg_status so_far)
{
	struct pvg_outcome o = { 0 };
	const struct marker_read *m = f->m;
	if (m->zone.refused && so_far != PVG_PASS)
		pvg_outcome_problem(&o, PVG_PASS, "dispatch-marker.zone-file-refused", m->zone.why.hint,
				    "the service's time zone is unknown: %s", m->zone.why.text);
	return o;
}

/* ---- witness: reaching the files ----------------------------------------------------------- */

/* Something to require: witness.require, or a changed device source (the default
 * requirement, whose kernels may yet be unknown). */
struct pvg_outcome rule_witness_kernel_named(const struct pvg_config *cfg,
					     const struct changed_sources *srcs)
{
	struct pvg_outcome o = { 0 };
	if (cfg->witness.n_require || (srcs && (srcs->n_required || srcs->err)))
		return o;
	o.stop = true;
	o.summary = pvg_strdup("witness: no kernel required");
	const struct changed_source *py = NULL;
	for (size_t i = 0; srcs && i < srcs->n && !py; i++)
		if (srcs->v[i].triton && srcs->v[i].state == SOURCE_NO_KERNELS)
			py = &srcs->v[i];
	_cleanup_free_ char *py_path = py ? pvg_utf8_sanitize(py->path, strlen(py->path)) : NULL;
	_cleanup_free_ char *py_text = py ? pvg_asprintf(" (%s imports triton, but no kernel was "
							 "recognised in it)", py_path)
					  : pvg_strdup("");
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-not-configured",
			    py ? "name the new kernel in witness.require (e.g. {\"kernel\": "
				 "\"my_kernel*\"}), or the .py's kernels in witness.changed_sources"
			       : "name the new kernel in witness.require (e.g. {\"kernel\": \"my_kernel*\"})",
			    "witness.dir is set but witness.require names no kernel%s%s",
			    srcs && srcs->applies ? " and no changed device source has kernels to "
						    "require"
						  : "", py_text);
	return o;
}

struct pvg_outcome rule_witness_service(int targets_r, const struct pvg_targets *t)
{
	struct pvg_outcome o = { 0 };
	if (targets_r >= 0 && !t->err)
		return o;
	o.stop = true;
	o.summary = pvg_strdup("witness: no live service");
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.no-service",
			    "start the service (service.match / pid / pidfile must find it) and run "
			    "the benchmark before this gate",
			    "no live service to attribute witness files to: %s",
			    targets_r < 0 ? strerror(-targets_r)
			    : t->msg.text ? t->msg.text
					  : "no target");
	return o;
}

/* The variables the service must have been started with, naming witness.dir. */
struct pvg_outcome rule_witness_environment(const struct pvg_config *cfg,
					    const struct witness_env *env)
{
	struct pvg_outcome o = { 0 };
	int pid = (int)env->pid, r = env->dir_r;
	const char *api = cfg->witness.api;
	if (r < 0 && r != -ENOENT)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-env-unreadable",
				    r == -EACCES || r == -EPERM
					    ? "run provgate as the service's user (or root) so that it "
					      "can read /proc/PID/environ"
					    : NULL,
				    "cannot read the environment of service process %d: %s", pid,
				    strerror(-r));
	else if (!env->dir || !env->lib)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-not-enabled",
				    "start the service with the variables `provgate exec --witness DIR` "
				    "prints, then run the benchmark",
				    "service process %d was not started with the witness (%s is not set "
				    "in its environment), so a missing launch proves nothing",
				    pid, !env->dir ? PVG_WITNESS_DIR_ENV
					 : api && strcmp(api, "hsa") == 0 ? "HSA_TOOLS_LIB"
					 : api ? "CUDA_INJECTION64_PATH"
					       : "CUDA_INJECTION64_PATH or HSA_TOOLS_LIB");
	else if (!env->same_folder)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-dir-mismatch",
				    "point witness.dir at the folder the service writes to, or restart "
				    "the service with PROVGATE_WITNESS_DIR set to witness.dir",
				    "service process %d writes its witness to %s, not to witness.dir %s",
				    pid, env->dir, cfg->witness.dir);
	return o;
}

struct pvg_outcome rule_witness_folder(const struct pvg_config *cfg,
				       const struct witness_read *wr)
{
	struct pvg_outcome o = { 0 };
	int fo = wr->folder_r;
	if (fo >= 0)
		return o;
	bool link = wr->folder.is_link;
	if (link)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-dir-link",
				    "name the folder itself in witness.dir, not a link to it (a "
				    "folder the service's user can replace by a link would make "
				    "provgate write and read where that link points)",
				    "witness folder %s is a symbolic link: refused, nothing in it "
				    "read or created", cfg->witness.dir);
	else
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-dir-unreadable",
				    fo == -ENOENT ? "create the folder and start the service with "
						    "PROVGATE_WITNESS_DIR pointing at it"
				    : fo == -ENOTDIR ? "point witness.dir at a folder"
						     : "let provgate read the witness folder",
				    "witness folder %s: %s", cfg->witness.dir, strerror(-fo));
	o.stop = true;
	o.summary = pvg_asprintf("witness folder %s: %s", link ? "refused" : "unreadable",
				 link ? "a symbolic link" : strerror(-fo));
	return o;
}

struct pvg_outcome rule_witness_request(const struct pvg_config *cfg,
					const struct witness_fresh *fr)
{
	struct pvg_outcome o = { 0 };
	if (fr->err < 0 && fr->err != -ENOENT)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-request-failed",
				    "let provgate create files in the witness folder (it asks the live "
				    "service for a fresh witness there)",
				    "cannot ask the live service for a fresh witness in %s: %s",
				    cfg->witness.dir, strerror(-fr->err));
	return o;
}

struct pvg_outcome rule_witness_folder_listed(const struct pvg_config *cfg,
					      const struct witness_read *wr)
{
	struct pvg_outcome o = { 0 };
	int dr = wr->dir_r;
	if (dr >= 0)
		return o;
	o.stop = true;
	o.summary = pvg_asprintf("witness folder unreadable: %s", strerror(-dr));
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-dir-unreadable",
			    dr == -ENOENT ? "create the folder and start the service with "
					    "PROVGATE_WITNESS_DIR pointing at it"
					  : "let provgate read the witness folder",
			    "witness folder %s: %s", cfg->witness.dir, strerror(-dr));
	return o;
}

/* A live file that neither answered the request nor is final: why, as far as can be told. */
static void no_answer_problem(struct pvg_outcome *o, const struct witness_read *wr,
			      const struct witness_file *wf)
{
	const struct pvg_witness_header *h = &wf->read->file.h;
	int pid = (int)wr->live.t[wf->which].pid;
	char ts[48];
	pvg_format_time((time_t)(h->written_ns / 1000000000u), (long)(h->written_ns % 1000000000u), ts,
			sizeof(ts));
	const char *code = "dispatch-marker.witness-no-answer";
	_cleanup_free_ char *clean = pvg_utf8_sanitize(wf->read->name, strlen(wf->read->name));
	if (h->version < 2)
		pvg_outcome_problem(o, PVG_UNVERIFIABLE, code,
				    "restart the service with this release's libprovgate-witness.so",
				    "witness file %s (process %d) is version %u: its library cannot "
				    "answer a request, so launches after its last write (%s) are not seen",
				    clean, pid, h->version, ts);
	else if (!wf->writer_alive)
		pvg_outcome_problem(o, PVG_UNVERIFIABLE, code,
				    "the process ended without the witness's exit handler (killed?): "
				    "run the benchmark against a service that keeps running",
				    "process %d exited during the check without its final witness "
				    "write: launches after its last write (%s) are not seen",
				    pid, ts);
	else
		pvg_outcome_problem(o, PVG_UNVERIFIABLE, code,
				    "the process may be stopped or overloaded: check it, or raise "
				    "witness.answer_ms",
				    "process %d did not answer the witness request within %ld ms: "
				    "launches after its last write (%s) are not seen",
				    pid, wr->fresh.waited_ms, ts);
}

/* Every file of a live target reads, and each live one answered the request or is final. */
struct pvg_outcome rule_witness_files(const struct witness_read *wr)
{
	struct pvg_outcome o = { 0 };
	for (size_t i = 0; i < wr->dir.n; i++) {
		const struct witness_file *wf = &wr->files[i];
		const struct pvg_witness_read *f = wf->read;
		if (!wf->readable && wf->named_target) {
			_cleanup_free_ char *clean = pvg_utf8_sanitize(f->name, strlen(f->name));
			pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.witness-corrupt",
					    "the file was changed or cut short after the library wrote "
					    "it: restart the service with an empty witness folder",
					    "witness file %s of a live service process cannot be read: %s",
					    clean,
					    f->err < 0 ? strerror(-f->err) : pvg_witness_strerror(f->perr));
		} else if (wf->readable && wf->attr == PVG_WITNESS_LIVE &&
			   wf->fresh == WITNESS_NO_ANSWER) {
			if (wr->fresh.token)
				no_answer_problem(&o, wr, wf);
			o.status = pvg_status_worst(o.status, PVG_UNVERIFIABLE);
		}
	}
	return o;
}

/* ---- witness: what the live service launched ----------------------------------------------- */

/* Started with the witness, yet no file: the library never loaded, or the process made no GPU
 * call (CUDA loads it at cuInit). Told only when nothing before made the part unverifiable. */
struct pvg_outcome rule_witness_live_file(const struct pvg_config *cfg,
					  const struct witness_tally *ta,
					  enum pvg_status so_far)
{
	struct pvg_outcome o = { 0 };
	if (ta->n_live)
		return o;
	const size_t *n = ta->attr_count;
	size_t stale = n[PVG_WITNESS_OTHER_BOOT] + n[PVG_WITNESS_PID_REUSED] +
		       n[PVG_WITNESS_FOREIGN_NS] + n[PVG_WITNESS_NOT_TARGET];
	o.stop = true;
	o.summary = pvg_asprintf("witness: no file of the live service (%zu ignored)", stale);
	if (so_far != PVG_PASS)
		return o;
	if (stale > 0)
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.witness-stale",
				    "these files are from an earlier service or another process: run "
				    "the benchmark against the live service",
				    "no witness file of the live service in %s; %zu file%s from other "
				    "processes ignored (%zu earlier boot, %zu reused pid, %zu other pid "
				    "namespace, %zu not a target)",
				    cfg->witness.dir, stale, stale == 1 ? "" : "s",
				    n[PVG_WITNESS_OTHER_BOOT], n[PVG_WITNESS_PID_REUSED],
				    n[PVG_WITNESS_FOREIGN_NS], n[PVG_WITNESS_NOT_TARGET]);
	else
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.witness-missing",
				    "check that the service's GPU runtime loads the library "
				    "(CUDA_INJECTION64_PATH / HSA_TOOLS_LIB naming "
				    "libprovgate-witness.so) and that the benchmark ran",
				    "no witness file of the live service in %s", cfg->witness.dir);
	return o;
}

struct pvg_outcome rule_witness_recording(const struct witness_tally *ta)
{
	struct pvg_outcome o = { 0 };
	if (ta->recording)
		return o;
	o.stop = true;
	o.summary = pvg_strdup("witness: loaded but not recording");
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-not-recording",
			    "make libcupti loadable in the service (PROVGATE_WITNESS_CUPTI=PATH), and "
			    "start it without a profiler holding CUPTI",
			    "the witness is loaded in the live service but not recording: %s",
			    ta->note && ta->note[0] ? ta->note : "no reason given");
	return o;
}

/* One requirement short of launches. Replays the witness could not itemize may hold the
 * kernel (unless eager launches alone are asked for), and so may dispatch packets that do not
 * say how they were sent: then, like a full table, the shortfall is unverifiable. */
/* Launches whose code cannot be told from the artifact's, in words. */
static char *code_untold_text(uint64_t ambiguous, uint64_t jit, uint64_t undecided,
			      uint64_t jit_unknown, const struct witness_code *code)
{
	/* JIT code from memory is undecided by its Triton cache entry, not by the artifacts */
	_cleanup_free_ char *ju = jit_unknown ? pvg_asprintf(
							"%" PRIu64 " launch%s of JIT code from memory "
							"that no Triton cache entry links to the change "
							"(evidence.witness.triton.modules says why)",
							jit_unknown, jit_unknown == 1 ? "" : "es")
					      : NULL;
	undecided -= jit_unknown;
	_cleanup_free_ char *a = ambiguous ? pvg_asprintf("%" PRIu64 " launch%s of a name several "
							  "loaded modules define, none told",
							  ambiguous, ambiguous == 1 ? "" : "es")
					   : NULL;
	_cleanup_free_ char *j = jit ? pvg_asprintf("%" PRIu64 " launch%s of code the driver "
						    "compiled from PTX (its bytes are the driver's "
						    "output, in no file to compare)",
						    jit, jit == 1 ? "" : "es")
				     : NULL;
	_cleanup_free_ char *u = undecided ? pvg_asprintf(
						     "%" PRIu64 " launch%s whose code cannot be "
						     "compared: %s",
						     undecided, undecided == 1 ? "" : "es",
						     code && code->why
							     ? code->why
							     : "its module is not known, was not "
							       "hashed, or was unloaded before the "
							       "last of them")
					   : NULL;
	return pvg_asprintf("%s%s%s%s%s%s%s", a ? a : "", a && (j || u || ju) ? "; " : "",
			    j ? j : "", j && (u || ju) ? "; " : "", u ? u : "", u && ju ? "; " : "",
			    ju ? ju : "");
}

static const char *code_untold_hint(uint64_t ambiguous, uint64_t jit, uint64_t undecided,
				    uint64_t jit_unknown)
{
	if (jit_unknown && jit_unknown == undecided && !jit && !ambiguous)
		return "let provgate find the Triton cache entry of the code that ran: name the "
		       "service's cache folders in witness.triton_caches, and install_map the .py "
		       "it was compiled from";
	if (jit)
		return "build device code for the node's arch (nvcc -gencode arch=compute_NN,"
		       "code=sm_NN) so that the driver loads the artifact's cubin, not PTX it "
		       "compiles itself";
	if (ambiguous)
		return "the service loaded several modules defining this name: load one (see "
		       "evidence.witness.modules)";
	return "gate 6 must read the digest of every code object of the artifact for the "
	       "node's arch; a module the witness could not hash cannot be compared";
}

static void need_problem(struct pvg_outcome *o, const struct witness_tally *ta,
			 const struct witness_need *nd, const struct witness_code *code)
{
	const struct pvg_witness_require *w = nd->w;
	bool in_opaque = ta->opaque && w->via != PVG_WITNESS_REQUIRE_EAGER;
	enum pvg_status st = ta->table_full || in_opaque || nd->packets ? PVG_UNVERIFIABLE : PVG_FAIL;
	_cleanup_free_ char *want = dispatch_witness_require_text(w);
	_cleanup_free_ char *why = pvg_asprintf(
		"%s%s%s%s",
		ta->table_full ? " (the witness table was full: launches of kernels first seen "
				 "after that were not recorded)"
			       : "",
		in_opaque ? "; graph replays whose kernels the witness could not itemize may hold it"
			  : "",
		nd->other_via ? w->via == PVG_WITNESS_REQUIRE_GRAPH
					? "; its eager launches do not count (via graph)"
					: "; its launches inside graph replays do not count (via eager)"
			      : "",
		nd->packets ? "; the ROCm witness's dispatch packets do not say whether a graph "
			      "replay sent them, so \"via\" cannot be decided on them"
			    : "");
	uint64_t got = nd->got, other_n = nd->name_only;
	uint64_t untold = nd->ambiguous + nd->jit + nd->undecided;
	_cleanup_free_ char *untold_why = untold ? code_untold_text(nd->ambiguous, nd->jit,
								    nd->undecided, nd->jit_unknown,
								    code)
						 : NULL;
	if (untold)
		st = PVG_UNVERIFIABLE;
	if (nd->other_code) {
		_cleanup_free_ char *nm = dispatch_witness_entry_name(nd->other_e);
		_cleanup_free_ char *mod = dispatch_witness_module_text(nd->other_mod);
		pvg_outcome_problem(o, st, "dispatch-marker.witness-other-code",
				    "the service ran a kernel of this name from code that is not the "
				    "artifact's (another library, an older build, a JIT copy): check "
				    "what it loads (evidence.witness.modules) and restart it on the "
				    "installed artifact",
				    "{%s}: %" PRIu64 " launch%s from the artifact's code, %ld required; "
				    "%s ran %" PRIu64 " time%s from other code, e.g. %" PRIu64 " from %s%s%s%s",
				    want, got, got == 1 ? "" : "es", nd->need, nm, nd->other_code,
				    nd->other_code == 1 ? "" : "s", nd->other_e_n, mod,
				    untold_why ? "; " : "", untold_why ? untold_why : "", why);
		return;
	}
	if (untold) {
		pvg_outcome_problem(o, PVG_UNVERIFIABLE, "dispatch-marker.witness-code-unknown",
				    code_untold_hint(nd->ambiguous, nd->jit, nd->undecided, nd->jit_unknown),
				    "{%s}: %" PRIu64 " launch%s from the artifact's code, %ld required; "
				    "%s%s",
				    want, got, got == 1 ? "" : "es", nd->need, untold_why, why);
		return;
	}
	if (other_n) {
		const struct pvg_witness_entry *other = nd->other;
		_cleanup_free_ char *nm = dispatch_witness_entry_name(other);
		pvg_outcome_problem(o, st, "dispatch-marker.witness-grid-mismatch",
				    "the kernel ran with other launch dimensions: run the benchmark with "
				    "the shapes the config requires, or correct witness.require",
				    "{%s}: %" PRIu64 " launch%s, %ld required; %s ran %" PRIu64
				    " time%s with other dimensions, e.g. grid=%u,%u,%u block=%u,%u,%u%s",
				    want, got, got == 1 ? "" : "es", nd->need, nm, other_n,
				    other_n == 1 ? "" : "s", other->grid[0], other->grid[1],
				    other->grid[2], other->block[0], other->block[1], other->block[2],
				    why);
	} else {
		pvg_outcome_problem(o, st, "dispatch-marker.witness-too-few",
				    "the live service did not launch this kernel: check that the "
				    "benchmark ran and that dispatch selects the new kernel (look for "
				    "the fallback kernel among the witness's records)",
				    "{%s}: %" PRIu64 " launch%s seen by the witness, %ld required%s", want,
				    got, got == 1 ? "" : "es", nd->need, why);
	}
}

/* Each witness.require entry launched min_count times, over every live file. */
struct pvg_outcome rule_witness_required(const struct pvg_config *cfg,
					 const struct witness_read *wr)
{
	struct pvg_outcome o = { 0 };
	for (size_t k = 0; k < cfg->witness.n_require; k++) {
		const struct witness_need *nd = &wr->needs[k];
		if ((long double)nd->got < (long double)nd->need)
			need_problem(&o, &wr->tally, nd, &wr->code);
	}
	return o;
}

/* The default requirement (SPEC §12): for every changed device source, at least one of its
 * kernels launched by the live service from the artifact's code. Launches linked by name only
 * (a witness without module identity) are a claim, not proof: unverifiable, never a pass. */
struct pvg_outcome rule_witness_changed_sources(const struct changed_sources *srcs,
						const struct witness_tally *ta,
						const struct witness_code *code)
{
	struct pvg_outcome o = { 0 };
	if (!srcs || !srcs->applies)
		return o;
	if (srcs->err) {
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-sources-unknown",
				    "gate 2's change set says which device sources changed; fix "
				    "source.repo / source.baseline",
				    "the changed device sources whose kernels must run are not known: %s",
				    srcs->why);
		return o;
	}
	for (size_t i = 0; i < srcs->n; i++) {
		const struct changed_source *c = &srcs->v[i];
		_cleanup_free_ char *src = pvg_utf8_sanitize(c->path, strlen(c->path));
		/* an exempt source requires nothing: its reason is in the evidence and the
		 * summary (a gate that passes has no problems) */
		if (c->state == SOURCE_UNKNOWN) {
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE,
					    "dispatch-marker.witness-source-kernels-unknown",
					    "rebuild with a verbose build log (the object compiled from "
					    "it must be there), or name its kernels in "
					    "witness.changed_sources",
					    "changed device source %s: its kernels are not known: %s", src,
					    c->why ? c->why : "?");
			continue;
		}
		if (c->state != SOURCE_KERNELS)
			continue;
		const struct source_count *n = &c->count;
		if (n->from_artifact)
			continue;
		_cleanup_free_ char *ks = dispatch_source_kernel_list(c);
		uint64_t untold = n->ambiguous + n->jit + n->undecided;
		bool hidden = ta->table_full || ta->opaque;
		const char *hidden_why = ta->table_full ? "; the witness table was full: kernels first "
							  "launched after that were not recorded"
				       : ta->opaque ? "; graph replays whose kernels the witness could "
						      "not itemize may hold them"
						    : "";
		_cleanup_free_ char *untold_why = untold ? code_untold_text(n->ambiguous, n->jit,
									    n->undecided, n->jit_unknown,
									    code)
							 : NULL;
		if (n->elsewhere) {
			_cleanup_free_ char *nm = dispatch_witness_entry_name(n->other);
			_cleanup_free_ char *mod = dispatch_witness_module_text(n->other_mod);
			pvg_outcome_problem(&o,
					    untold || n->name_only || hidden ? PVG_UNVERIFIABLE
									     : PVG_FAIL,
					    "dispatch-marker.witness-source-other-code",
					    "the service ran these kernels from code that is not the "
					    "artifact's: restart it on the installed artifact, and check "
					    "what else it loads (evidence.witness.modules)",
					    "changed source %s: none of its kernels (%s) was launched from "
					    "the artifact; %s ran %" PRIu64 " time%s from other code: %s%s%s%s",
					    src, ks, nm, n->elsewhere, n->elsewhere == 1 ? "" : "s", mod,
					    untold_why ? "; " : "", untold_why ? untold_why : "",
					    hidden_why);
		} else if (n->name_only) {
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-name-only",
					    "start the service with a witness library that records "
					    "code modules (witness file version 3), so that the bytes "
					    "that ran can be compared with the artifact's",
					    "changed source %s: its kernels (%s) were launched %" PRIu64
					    " time%s, linked by name only (the witness does not say "
					    "which code ran): a name is a claim, not the artifact's bytes",
					    src, ks, n->name_only, n->name_only == 1 ? "" : "s");
		} else if (untold) {
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-code-unknown",
					    code_untold_hint(n->ambiguous, n->jit, n->undecided, n->jit_unknown),
					    "changed source %s: no launch of its kernels (%s) is from the "
					    "artifact's code; %s",
					    src, ks, untold_why);
		} else {
			pvg_outcome_problem(&o, hidden ? PVG_UNVERIFIABLE : PVG_FAIL,
					    "dispatch-marker.witness-source-not-launched",
					    "run the benchmark so that it reaches the changed code, or "
					    "exempt the source in witness.changed_sources with the "
					    "reason it is not run",
					    "changed source %s: none of its kernels (%s) was launched by the "
					    "live service: nothing of that name ran%s",
					    src, ks, hidden_why);
		}
	}
	return o;
}

/* A forbid is proven only over launches the witness itemized. */
struct pvg_outcome rule_witness_forbid_provable(const struct pvg_config *cfg,
						const struct witness_tally *ta)
{
	struct pvg_outcome o = { 0 };
	uint64_t opaque = ta->opaque;
	if (opaque && cfg->witness.forbid.n)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.witness-graph-opaque",
				    "see provgate-witness(7) for the graphs the witness itemizes; a "
				    "witness file of version 1 itemizes none: restart the service with "
				    "this release's libprovgate-witness.so",
				    "%" PRIu64 " graph replay%s ran kernels the witness could not itemize "
				    "(an exec it could not read or follow, a conditional body, a "
				    "device-launchable exec, or a version 1 witness): a forbidden kernel "
				    "may have run in them",
				    opaque, opaque == 1 ? "" : "s");
	return o;
}

struct pvg_outcome rule_witness_forbidden(const struct pvg_config *cfg,
					  const struct witness_read *wr)
{
	struct pvg_outcome o = { 0 };
	for (size_t k = 0; k < cfg->witness.forbid.n; k++) {
		const struct witness_seen *s = &wr->seen[k];
		const struct pvg_witness_entry *e = s->seen;
		if (!e)
			continue;
		_cleanup_free_ char *nm = dispatch_witness_entry_name(e);
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.witness-forbidden",
				    "the service launched a kernel the benchmark must not use (a "
				    "fallback): fix the dispatch condition and restart the service",
				    "forbidden \"%s\": the live service launched %s %" PRIu64 " time%s "
				    "(e.g. grid=%u,%u,%u block=%u,%u,%u)",
				    s->pattern, nm, s->n, s->n == 1 ? "" : "s", e->grid[0], e->grid[1],
				    e->grid[2], e->block[0], e->block[1], e->block[2]);
	}
	return o;
}

/* ---- exec's after-check: the benchmark's window ------------------------------------------- */

#define WINDOW_LISTED 8 /* problems listed one by one; the rest are counted in a last one */

/* A file that neither answered the request made after the command nor is final was written
 * before the command ended: a load since is not in it. A full table dropped loads. */
struct pvg_outcome rule_window_loads_seen(const struct window_facts *wf)
{
	struct pvg_outcome o = { 0 };
	if (wf->allowed)
		return o;
	if (wf->files_not_covering)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.loads-not-covered",
				    "the witness answers a request within witness.answer_ms: raise it, "
				    "or check that the service is not stopped or hung",
				    "%zu witness file%s of the live service %s written before the "
				    "benchmark ended and did not answer: modules loaded since are not "
				    "known", wf->files_not_covering,
				    wf->files_not_covering == 1 ? "" : "s",
				    wf->files_not_covering == 1 ? "was" : "were");
	if (wf->files_exited_not_covering) {
		char at[48];
		pvg_format_time((time_t)(wf->exited_not_covering_ns / 1000000000u),
				(long)(wf->exited_not_covering_ns % 1000000000u), at, sizeof(at));
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.loads-not-covered",
				    "a process killed or crashed writes no file at its exit: what it "
				    "loaded after its last write is lost; run the benchmark again on "
				    "a steady service",
				    "the witness file of process %d, a process of the service's tree "
				    "that exited before the after-check, was last written at %s, "
				    "before the benchmark ended, and not at its exit: modules it "
				    "loaded since are not known%s",
				    (int)wf->exited_not_covering_pid, at,
				    wf->files_exited_not_covering > 1 ? " (and so for other exited "
									"processes: see the evidence)"
								      : "");
	}
	if (wf->files_table_full)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.loads-table-full",
				    "the service loaded more modules than the witness keeps: warm it "
				    "up fully before the benchmark and restart it between runs",
				    "the witness's module table was full in %zu file%s of the live "
				    "service: a module loaded while the benchmark ran may not be recorded",
				    wf->files_table_full, wf->files_table_full == 1 ? "" : "s");
	return o;
}

/* JIT compiles, Triton autotuning, a lazily loaded module (CUDA_MODULE_LOADING=LAZY is the
 * default): their time is in the benchmark's number. */
struct pvg_outcome rule_window_no_loads(const struct window_facts *wf)
{
	struct pvg_outcome o = { 0 };
	if (wf->allowed || !wf->loads_total)
		return o;
	for (size_t i = 0; i < wf->n_loads && i < WINDOW_LISTED; i++) {
		_cleanup_free_ char *what = dispatch_window_load_text(&wf->loads[i]);
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.loaded-during-benchmark",
				    "warm the service up with the benchmark's shapes before the "
				    "benchmark (or set benchmark.allow_loads for a run that means to "
				    "measure them): compiling and loading code is in the number",
				    "code was loaded in the service while the benchmark ran: %s", what);
	}
	if (wf->loads_total > WINDOW_LISTED)
		pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.loaded-during-benchmark",
				    "see the evidence's benchmark_window.modules.loads",
				    "%zu more modules were loaded while the benchmark ran",
				    wf->loads_total - WINDOW_LISTED);
	return o;
}

/* A torch.compile graph compiled (or loaded from its cache) while the benchmark ran. A line
 * whose time can lie on either side of an end of the window is unverifiable. */
struct pvg_outcome rule_window_no_compiles(const struct window_facts *wf)
{
	struct pvg_outcome o = { 0 };
	if (wf->allowed || !wf->compiles_total)
		return o;
	size_t listed = 0;
	for (size_t i = 0; i < wf->n_compiles && listed < WINDOW_LISTED; i++, listed++) {
		const struct window_compile *c = &wf->compiles[i];
		if (c->maybe)
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE,
					    "dispatch-marker.compiled-maybe-during-benchmark",
					    "its time is too coarse to place it (to the second, or "
					    "its zone unknown): leave a few seconds between the "
					    "warm-up and the benchmark, or log times with their zone",
					    "the service logged a compile that may have run while the "
					    "benchmark ran: %s", c->text);
		else
			pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.compiled-during-benchmark",
					    "warm the service up with the benchmark's shapes before "
					    "the benchmark (or set benchmark.allow_loads): the compile "
					    "time is in the number",
					    "the service compiled while the benchmark ran (%.3f s after "
					    "it started): %s", (double)c->after_ns / 1e9, c->text);
	}
	if (wf->compiles_total > listed)
		pvg_outcome_problem(&o, wf->compiles_maybe == wf->compiles_total ? PVG_UNVERIFIABLE
										 : PVG_FAIL,
				    "dispatch-marker.compiled-during-benchmark",
				    "see the evidence's benchmark_window.compile_lines",
				    "%zu more compile lines in the benchmark's window",
				    wf->compiles_total - listed);
	return o;
}

char *window_summary(const struct window_facts *wf)
{
	size_t sure = wf->compiles_total - wf->compiles_maybe;
	_cleanup_free_ char *loads =
		wf->files_modules ? pvg_asprintf("%zu module%s loaded", wf->loads_total,
						 wf->loads_total == 1 ? "" : "s")
				  : pvg_strdup(wf->witness_read ? "module loads not recorded by the "
								  "witness"
								: "module loads not recorded (no "
								  "witness)");
	_cleanup_free_ char *compiles =
		wf->log_read ? pvg_asprintf("%zu compile line%s", sure, sure == 1 ? "" : "s")
			     : pvg_strdup("no log read for compile lines");
	return pvg_asprintf("while the benchmark ran: %s, %s%s", loads, compiles,
			    wf->allowed && (wf->loads_total || wf->compiles_total)
				    ? " (allowed: benchmark.allow_loads)"
				    : "");
}

/* ---- the gate ------------------------------------------------------------------------------ */

static const struct markers_rule {
	const char *name;
	struct pvg_outcome (*check)(const struct markers_facts *f);
} markers_rules[] = {
	{ "configured", rule_markers_configured },
	{ "service-found", rule_markers_service_found },
	{ "container-log-found", rule_markers_container_log_found },
	{ "container-log-owned", rule_markers_container_log_owned },
	{ "log-is-file", rule_markers_log_is_file },
	{ "log-readable", rule_markers_log_readable },
	{ "log-not-empty", rule_markers_log_not_empty },
	{ "kernel-selected", rule_markers_kernel_selected },
	{ "forbid-decided", rule_markers_forbid_decided },
	{ "not-forbidden", rule_markers_not_forbidden },
	{ "facts-live", rule_markers_facts_live },
	{ "enough", rule_markers_enough },
};

/* Without a stopping rule's own words: the match when it passed; else the first problem,
 * and a failure is told by what failed, not by what could not be decided. */
static void markers_summary(struct pvg_result *res, size_t first, enum pvg_status status,
			    const struct marker_read *m)
{
	if (status == PVG_PASS) {
		size_t n = m->scan.matched;
		pvg_summary(res, "%zu marker%s of the live service match%s (%zu unattributed ignored)",
			    n, n == 1 ? "" : "s", n == 1 ? "es" : "", m->scan.markers_unattributed);
		return;
	}
	const struct pvg_problem *told = first < res->n_problems ? &res->problems[first] : NULL;
	for (size_t k = first; status == PVG_FAIL && k < res->n_problems; k++)
		if (strcmp(res->problems[k].code, "dispatch-marker.time-undecided") != 0) {
			told = &res->problems[k];
			break;
		}
	pvg_summary(res, "%s", told ? told->message : "did not pass");
}

static void prepare_dispatch_marker(struct pvg_ctx *ctx)
{
	if (dispatch_markers_configured(ctx->cfg))
		pvg_ctx_set_slot(ctx, PVG_SLOT_LOG_MARKERS, dispatch_markers_read(ctx),
				 dispatch_markers_read_free);
}

static void marker_read_freep(struct marker_read **m)
{
	dispatch_markers_read_free(*m);
}

/* The markers' part: the log read (by prepare, or now), then the rules in order. */
static enum pvg_status run_markers(struct pvg_ctx *ctx, struct pvg_result *res,
				   struct window_facts *wf, struct compile_facts *cf)
{
	_cleanup_(marker_read_freep) struct marker_read *m = NULL;
	_cleanup_free_ char *elsewhere = NULL;
	if (dispatch_markers_configured(ctx->cfg)) {
		m = pvg_ctx_take_slot(ctx, PVG_SLOT_LOG_MARKERS);
		if (!m)
			m = dispatch_markers_read(ctx);
		if (markers_need_elsewhere(ctx->cfg, m))
			elsewhere = dispatch_markers_output_elsewhere(ctx->procfs, m);
	}
	struct markers_facts f = { .cfg = ctx->cfg, .m = m, .elsewhere = elsewhere };
	struct walk w = { .res = res, .status = PVG_PASS };
	size_t first = res->n_problems;
	bool decided = true;
	for (size_t i = 0; decided && i < ARRAY_SIZE(markers_rules); i++)
		decided = take(&w, markers_rules[i].check(&f));
	if (m)
		dispatch_markers_evidence(ctx, res->evidence, m, elsewhere);
	if (w.summary)
		pvg_summary(res, "%s", w.summary);
	else
		markers_summary(res, first, w.status, m);
	free(w.summary);
	w.summary = NULL;
	if (m)
		take(&w, rule_markers_zone_file(&f, w.status));
	free(w.summary); /* the gate's summary is written: a later rule's is not shown */
	if (m && wf && dispatch_markers_scanned(m))
		dispatch_window_from_log(&m->scan, wf);
	dispatch_compile_from_log(m, cf);
	return w.status;
}

/* The witness's part up to its files: the live processes, their environment, the folder and a
 * fresh answer in it. False when the rules after have nothing to decide on. */
static bool witness_reach_files(struct pvg_ctx *ctx, cJSON *ev, struct walk *w,
				struct witness_read *wr)
{
	const struct pvg_config *cfg = ctx->cfg;
	const struct pvg_targets *t;
	int r = pvg_targets_get(ctx, &t);
	if (!take(w, rule_witness_service(r, t)))
		return false;
	dispatch_witness_read_live(ctx, t, wr);
	dispatch_witness_live_evidence(ev, wr);
	dispatch_witness_read_env(ctx, t->primary, wr);
	dispatch_witness_env_evidence(ev, wr);
	take(w, rule_witness_environment(cfg, &wr->env));
	dispatch_witness_open_folder(cfg, wr);
	if (!take(w, rule_witness_folder(cfg, wr)))
		return false;
	dispatch_witness_folder_evidence(ev, wr);
	dispatch_witness_ask_fresh(ctx, wr);
	dispatch_witness_request_evidence(ev, cfg, wr);
	take(w, rule_witness_request(cfg, &wr->fresh));
	dispatch_witness_read_files(ctx, wr);
	if (!take(w, rule_witness_folder_listed(cfg, wr)))
		return false;
	dispatch_witness_files_evidence(ev, wr);
	return take(w, rule_witness_files(wr));
}

/* What the live service launched against what the witness's config asks. */
static char *witness_summary(const struct pvg_config *cfg, const struct witness_read *wr)
{
	size_t met = 0, forbidden = 0, n_req = cfg->witness.n_require, n_live = wr->tally.n_live;
	for (size_t k = 0; k < n_req; k++)
		met += (long double)wr->needs[k].got >= (long double)wr->needs[k].need;
	for (size_t k = 0; k < cfg->witness.forbid.n; k++)
		forbidden += wr->seen[k].seen != NULL;
	uint64_t launches = wr->tally.launches;
	size_t src_met = 0, src_req = 0, src_exempt = 0, py_none = 0;
	const struct changed_source *exempt = NULL, *py_first = NULL;
	for (size_t i = 0; wr->sources && i < wr->sources->n; i++) {
		const struct changed_source *c = &wr->sources->v[i];
		if (c->triton && c->state == SOURCE_NO_KERNELS && !py_none++)
			py_first = c;
		src_exempt += c->state == SOURCE_EXEMPT;
		if (c->state == SOURCE_EXEMPT && !exempt)
			exempt = c;
		if (c->state == SOURCE_KERNELS || c->state == SOURCE_UNKNOWN) {
			src_req++;
			src_met += c->state == SOURCE_KERNELS && c->count.from_artifact > 0;
		}
	}
	_cleanup_free_ char *ex_path = exempt ? pvg_utf8_sanitize(exempt->path, strlen(exempt->path))
					      : NULL;
	_cleanup_free_ char *ex_why = exempt ? pvg_utf8_sanitize(exempt->exempt,
								 strlen(exempt->exempt))
					     : NULL;
	_cleanup_free_ char *ex_text =
		exempt ? pvg_asprintf(" (%zu exempt: %s: %s%s)", src_exempt, ex_path, ex_why,
				      src_exempt > 1 ? ", ..." : "")
		       : pvg_strdup("");
	_cleanup_free_ char *src_text =
		src_req || src_exempt
			? pvg_asprintf("; %zu of %zu changed device source%s launched from the "
				       "artifact%s",
				       src_met, src_req, src_req == 1 ? "" : "s", ex_text)
			: pvg_strdup("");
	_cleanup_free_ char *py_path = py_first ? pvg_utf8_sanitize(py_first->path,
								    strlen(py_first->path))
						: NULL;
	_cleanup_free_ char *py_text =
		py_none ? pvg_asprintf("; note: %zu changed .py import%s triton with no kernel "
				       "recognised (%s%s), nothing of %s required",
				       py_none, py_none == 1 ? "s" : "", py_path,
				       py_none > 1 ? ", ..." : "", py_none == 1 ? "it" : "them")
			: pvg_strdup("");
	return pvg_asprintf("witness: %zu of %zu required kernel%s launched by the live service "
			    "(%zu file%s, %" PRIu64 " launch%s)%s%s%s",
			    met, n_req, n_req == 1 ? "" : "s", n_live, n_live == 1 ? "" : "s",
			    launches, launches == 1 ? "" : "es", src_text,
			    forbidden ? ", forbidden kernel launched" : "", py_text);
}

/* The witness's part: its status; *summary its one line. */
static enum pvg_status run_witness(struct pvg_ctx *ctx, struct pvg_result *res, char **summary,
				   struct window_facts *wf)
{
	const struct pvg_config *cfg = ctx->cfg;
	cJSON *ev = cJSON_AddObjectToObject(res->evidence, "witness");
	pvg_json_add_str(ev, "dir", cfg->witness.dir);
	struct walk w = { .res = res, .status = PVG_PASS };
	struct witness_read wr;
	dispatch_witness_read_init(&wr);
	struct changed_sources srcs;
	dispatch_sources_read(ctx, &srcs);
	wr.sources = &srcs;
	struct triton_jit jit;
	dispatch_triton_init(&jit, ctx, 0);
	if (take(&w, rule_witness_kernel_named(cfg, &srcs)) &&
	    witness_reach_files(ctx, ev, &w, &wr) &&
	    take(&w, rule_witness_live_file(cfg, &wr.tally, w.status)) &&
	    take(&w, rule_witness_recording(&wr.tally))) {
		dispatch_triton_init(&jit, ctx, wr.env.pid);
		wr.code.jit = &jit;
		dispatch_witness_count(ctx, &wr);
		jit.n_required = jit.n;
		dispatch_triton_variants(&jit, &wr.dir);
		dispatch_triton_evidence(ev, &jit);
		dispatch_witness_kernels_evidence(ev, &wr);
		dispatch_witness_required_evidence(ev, cfg, &wr);
		dispatch_sources_evidence(ev, &srcs);
		take(&w, rule_witness_required(cfg, &wr));
		take(&w, rule_witness_changed_sources(&srcs, &wr.tally, &wr.code));
		take(&w, rule_witness_triton(&jit));
		take(&w, rule_witness_forbid_provable(cfg, &wr.tally));
		take(&w, rule_witness_forbidden(cfg, &wr));
		dispatch_witness_chain(ctx, cfg, &wr);
		w.summary = witness_summary(cfg, &wr);
	} else {
		dispatch_sources_evidence(ev, &srcs);
	}
	if (wf && wr.files)
		dispatch_window_from_witness(&wr, wf);
	dispatch_witness_read_clear(&wr);
	dispatch_triton_clear(&jit);
	dispatch_sources_clear(&srcs);
	*summary = w.summary;
	return w.status;
}

/* Markers, the witness, or both (each configured part must pass; a failure outranks an
 * unverifiable part). */
static enum pvg_status run_parts(struct pvg_ctx *ctx, struct pvg_result *res,
				 struct window_facts *wf, struct compile_facts *cf)
{
	const struct pvg_config *cfg = ctx->cfg;
	if (!dispatch_witness_configured(cfg))
		return run_markers(ctx, res, wf, cf);
	_cleanup_free_ char *wsum = NULL;
	if (!dispatch_markers_configured(cfg)) {
		dispatch_compile_from_log(NULL, cf);
		enum pvg_status st = run_witness(ctx, res, &wsum, wf);
		if (st == PVG_PASS || !res->n_problems)
			pvg_summary(res, "%s", wsum ? wsum : "witness");
		else
			pvg_summary(res, "%s", res->problems[0].message);
		return st;
	}
	enum pvg_status ms = run_markers(ctx, res, wf, cf);
	_cleanup_free_ char *msum = res->summary ? pvg_strdup(res->summary) : NULL;
	enum pvg_status ws = run_witness(ctx, res, &wsum, wf);
	pvg_summary(res, "markers: %s; %s", msum ? msum : "?", wsum ? wsum : "witness");
	return pvg_status_worst(ms, ws);
}

static const struct window_rule {
	const char *name;
	struct pvg_outcome (*check)(const struct window_facts *wf);
} window_rules[] = {
	{ "loads-seen", rule_window_loads_seen },
	{ "no-loads", rule_window_no_loads },
	{ "no-compiles", rule_window_no_compiles },
};

/* In exec's after-check, the parts read what fell in the benchmark's window as they went;
 * its rules come last, and its words join the summary. */
/* The compile cache's rule, after the parts (whose log read named the folders); its problem
 * joins the summary. */
static enum pvg_status run_compile_cache(struct pvg_ctx *ctx, struct pvg_result *res,
					 struct compile_facts *cf, enum pvg_status st)
{
	dispatch_compile_read(ctx, cf);
	struct pvg_outcome o = rule_compile_cache(cf);
	_cleanup_free_ char *first = o.n_problems ? pvg_strdup(o.problems[0].message) : NULL;
	st = pvg_status_worst(st, pvg_outcome_into(res, o));
	dispatch_compile_evidence(res->evidence, cf);
	if (first) {
		_cleanup_free_ char *parts = res->summary ? pvg_strdup(res->summary) : NULL;
		pvg_summary(res, "%s; compile cache: %s", parts ? parts : "?", first);
	}
	dispatch_compile_clear(cf);
	return st;
}

static enum pvg_status run_dispatch_marker(struct pvg_ctx *ctx, struct pvg_result *res)
{
	struct compile_facts cf = { 0 };
	if (!dispatch_window_active(ctx))
		return run_compile_cache(ctx, res, &cf, run_parts(ctx, res, NULL, &cf));
	struct window_facts wf;
	dispatch_window_init(ctx, &wf);
	enum pvg_status st = run_parts(ctx, res, &wf, &cf);
	st = run_compile_cache(ctx, res, &cf, st);
	size_t first = res->n_problems;
	for (size_t i = 0; i < ARRAY_SIZE(window_rules); i++)
		st = pvg_status_worst(st, pvg_outcome_into(res, window_rules[i].check(&wf)));
	dispatch_window_evidence(res->evidence, &wf);
	_cleanup_free_ char *ws = window_summary(&wf);
	_cleanup_free_ char *parts = res->summary ? pvg_strdup(res->summary) : NULL;
	if (res->n_problems > first && first == 0)
		pvg_summary(res, "%s", res->problems[first].message);
	else
		pvg_summary(res, "%s; %s", parts ? parts : "?", ws);
	dispatch_window_clear(&wf);
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
