/* SPDX-License-Identifier: MIT */
/*
 * Dispatch markers: marker lines "PREFIX key=value ..." in the service's log, which
 * lines belong to the live service, and a streaming scan of the log in bounded memory.
 */
#pragma once
#include <regex.h>

#include "formats/ctrlog.h"
#include "formats/tz.h"
#include "util/util.h"

/* A marker requirement: every key must have exactly this value (markers.require). */
struct pvg_kv {
	char *key;
	char *value;
};

struct pvg_require {
	struct pvg_kv *kv;
	size_t n;
};

/* ---- the live service, as attribution needs to see it ---------------------------------------- */

/* The target process tree and its start; filled by whoever discovers the service. */
struct pvg_service_view {
	bool (*in_tree)(void *opaque, pid_t pid);
	void *opaque;
	void (*release)(void *opaque); /* may be NULL */
	struct timespec start;         /* CLOCK_REALTIME start of the service's root process */
	pid_t root;
	const char *why; /* when no view: what the discovery said (owned by the run) */
};


/* ---- marker lines ------------------------------------------------------------------------------ */

#define PVG_MARKER_FIELDS_MAX 32

struct pvg_marker_field {
	const char *key;
	size_t key_len;
	const char *value; /* without quotes; brackets kept: "(4096, 5120)" */
	size_t value_len;
};

struct pvg_marker {
	struct pvg_marker_field f[PVG_MARKER_FIELDS_MAX];
	size_t n;
};

/* Parses the fields after the prefix. 0; -EINVAL for an unterminated bracket or quote;
 * -E2BIG for more than PVG_MARKER_FIELDS_MAX fields. Values point into s. */
int pvg_marker_parse(const char *s, size_t len, struct pvg_marker *m);
/* The value of key, or NULL. */
const struct pvg_marker_field *pvg_marker_get(const struct pvg_marker *m, const char *key);

/* What the head of a log line says about who wrote it and when. */
struct pvg_line_head {
	bool has_pid;
	pid_t pid;     /* vLLM "(EngineCore_DP0 pid=N)", Ray "(RayWorkerWrapper pid=N)" */
	bool remote;   /* Ray's "(RayWorkerWrapper pid=N, ip=ADDR)": a worker on another node,
			* whose pid is no pid of this machine */
	bool has_time;
	time_t time;    /* epoch seconds (fractions dropped): the earliest instant it can mean */
	time_t time_hi; /* the latest: time, unless the text has no offset and the writer's zone
			 * is unknown (any of UTC-12..UTC+14) or the hour repeats (DST ends) */
	bool runtime_time; /* the time is a container runtime's record time, to the ns */
	int64_t time_ns;
};

/* The zone a head's time without an offset was written in (the writer's local time). */
struct pvg_line_zone {
	const struct pvg_tz *tz; /* the writer's zone */
	bool unknown;            /* it cannot be known: the time is any of UTC-12..UTC+14 */
};

/*
 * Reads the first 192 bytes of a line (colour codes removed) for the leftmost pid and the
 * leftmost timestamp, each starting at a word boundary, in any order. Timestamps:
 *   ISO 8601 and Python logging's asctime: "2026-12-01 03:47:24,976", "2026-12-01T03:47:24Z",
 *     "...T03:47:24.123456+08:00", "2026/12/01 03:47:24", gunicorn's "... 03:47:24 +0000",
 *     SGLang's "[2026-12-01 03:47:24 TP0]"; with a zone it is exact, without one local time;
 *   vLLM "INFO 11-29 12:10:25", glog "I1129 12:10:25.123456", syslog "Nov 29 12:10:25":
 *     local time, the year inferred from now (more than a day ahead: the year before).
 * "Local time" is provgate's own zone here; pvg_line_head_parse_in reads it in the writer's.
 * Pids: "pid=N", "pid N", "pid:N" (vLLM's "(EngineCore_DP0 pid=N)", Ray's "(Actor pid=N,
 * ...)", "[serve pid=N]"), and a bracket holding only digits ("[N]", syslog's "prog[N]:").
 * Callers pass only the part of the line before the text they look for, so the message's own
 * fields never count as its head.
 */
void pvg_line_head_parse(const char *s, size_t len, time_t now, struct pvg_line_head *h);

/* A log format of the user's own, for heads none of the forms above reads: a POSIX extended
 * regular expression with one group around the pid's digits, and one with one group around
 * the timestamp, which strptime(3) reads with time_format ("%z" in it: the zone is in the
 * text; without "%Y": the year inferred as above; otherwise local time). Either may be
 * absent. Tried on the same head before the built-in forms. */
struct pvg_line_format {
	bool has_pid, has_time;
	regex_t pid_re, time_re;
	char *time_format;
};

/* Compiles a format: 0, or -EINVAL with why (what is wrong, for the config's key). */
int pvg_line_format_compile(struct pvg_line_format *f, const char *pid_pattern,
			    const char *time_pattern, const char *time_format, struct pvg_msg *why);
void pvg_line_format_clear(struct pvg_line_format *f);
/* pvg_line_head_parse with a format of the user's own tried first (fmt may be NULL). */
void pvg_line_head_parse_fmt(const struct pvg_line_format *fmt, const char *s, size_t len,
			     time_t now, struct pvg_line_head *h);
/* The same with a time without an offset read in the writer's zone (zone NULL: provgate's
 * own), the year of one that prints none taken in that zone. */
void pvg_line_head_parse_in(const struct pvg_line_format *fmt, const struct pvg_line_zone *zone,
			    const char *s, size_t len, time_t now, struct pvg_line_head *h);

enum pvg_attribution {
	PVG_ATTR_LIVE,          /* written by the live service */
	PVG_ATTR_FOREIGN_PID,   /* pid prefix outside the target's tree */
	PVG_ATTR_BEFORE_START,  /* timestamp before the service started */
	PVG_ATTR_UNKNOWN,       /* neither, and the file is older than the service */
	PVG_ATTR_UNDECIDED,     /* its time may be before or after the start (no offset in an
				 * unknown zone, or the repeated hour), and the file is older */
};
#define PVG_ATTR_N 5

enum pvg_attribution pvg_attribute(const struct pvg_line_head *h,
				   const struct pvg_service_view *view, bool file_after_start);

/* ---- the scan ---------------------------------------------------------------------------------- */

#define PVG_MARKER_BUF (4u << 20) /* the scan's only large allocation */
#define PVG_MARKER_SAMPLE 300     /* bytes of a line kept for a message */

struct pvg_marker_sample {
	char *text;      /* sanitized, cut at PVG_MARKER_SAMPLE */
	uint64_t offset; /* byte offset of the line in the log */
	enum pvg_attribution attr;
};

/* A line that holds one of the scan's event patterns (a compile line), written by the live
 * service, with when it was written. */
#define PVG_MARKER_EVENTS 64 /* the last ones kept; the rest counted */
struct pvg_log_event {
	size_t pattern;  /* index into events */
	char *text;      /* sanitized, cut at PVG_MARKER_SAMPLE */
	uint64_t offset; /* of the line in the log file */
	bool has_pid;
	pid_t pid;       /* the pid its head names (the writer's own pid namespace) */
	bool has_time;
	/* the instants its time can mean, CLOCK_REALTIME ns: a time to the second spans that
	 * second (and an unknown zone every zone's); a runtime's record time is exact */
	int64_t lo_ns, hi_ns;
	double took_s;   /* "takes N s" / "took N s" in the line: how long it had run; -1 none */
};

struct pvg_marker_scan {
	/* inputs */
	const char *const *events; /* lines to note with their time (compile lines); may be 0 */
	size_t n_events;
	const char *prefix;
	const struct pvg_require *require;
	size_t n_require;
	const char *const *facts;
	size_t n_facts;
	const char *const *forbid;
	size_t n_forbid;
	const struct pvg_service_view *view;
	bool file_after_start;
	time_t now;
	const struct pvg_line_format *format; /* the user's own log format, or NULL */
	const struct pvg_line_zone *zone;     /* the writer's zone, or NULL: provgate's */

	/* results */
	uint64_t bytes;           /* read: the data of the file, not its holes */
	uint64_t hole_bytes;      /* skipped in holes (a sparse file): no line is there */
	size_t overlong_lines;    /* lines longer than the buffer */
	size_t markers_live;      /* attributable marker lines (parsed) */
	size_t markers_unattributed;
	size_t markers_unparseable; /* attributable marker lines whose fields could not be read */
	size_t matched;           /* live markers matching a require entry (or any, without) */
	size_t *require_matched;  /* per entry */
	size_t *require_not_selected;
	size_t *require_unattributed; /* unattributed markers that would have matched */
	struct pvg_marker_sample *require_unattr_first; /* per entry: the first of those (no text) */
	/* of those, the markers whose time cannot be placed before or after the service's
	 * start (PVG_ATTR_UNDECIDED): they may be the live service's */
	size_t *require_undecided;
	size_t *fact_live, *fact_unattributed, *fact_undecided;
	enum pvg_attribution *fact_attr; /* per fact: the first unattributed line's */
	size_t *forbid_live, *forbid_unattributed, *forbid_undecided;
	size_t attr_count[PVG_ATTR_N]; /* marker lines per attribution */
	/* a container runtime's log: its kind, and what its decoder found */
	enum pvg_ctrlog_kind log_kind;
	uint64_t records, records_joined, records_malformed;
	/* marker lines of a pid outside the tree stamped at or after the service's start:
	 * another process writes this log now (another container, a second service) */
	size_t markers_foreign_recent;
	struct pvg_marker_sample not_selected, forbidden, unmatched, unattributed;
	/* event lines of the live service: the last PVG_MARKER_EVENTS of them, oldest first
	 * from events_first (a ring); events_live counts them all */
	struct pvg_log_event event[PVG_MARKER_EVENTS];
	size_t events_live, events_unattributed, events_first, events_kept;

	/* streaming state of an overlong line */
	bool cont;
	enum pvg_attribution cont_attr;
	bool cont_marker_seen;
	bool line_recent; /* the line being attributed is stamped at or after the start */
	bool *cont_forbid_seen;
	size_t max_pattern;
	struct pvg_ctrlog *ctr; /* the decoder of a runtime's log */
};

void pvg_marker_scan_init(struct pvg_marker_scan *s);
void pvg_marker_scan_done(struct pvg_marker_scan *s);
/* Scans an open file to its end. A log written by a container runtime (CRI, docker's
 * json-file; formats/ctrlog.h) is recognised by its first record and read as the service's
 * lines, each with the runtime's time; offsets in samples are the log file's. 0 or -errno. */
int pvg_marker_scan_fd(struct pvg_marker_scan *s, int fd);
/* Scans bytes held in memory (tests). */
int pvg_marker_scan_buffer(struct pvg_marker_scan *s, const char *bytes, size_t len);
