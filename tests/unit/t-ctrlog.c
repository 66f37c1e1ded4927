/* SPDX-License-Identifier: MIT */
/*
 * Container runtimes' logs (formats/ctrlog.c) on real recordings (tests/fixtures/ctrlog,
 * record.sh: podman's k8s-file and json-file, docker's json-file), the scan on them, time
 * zones (formats/tz.c) against glibc's own conversions, a service's zone from a /proc tree
 * (sys/zone.c), and where an engine keeps a container's log (sys/container-log.c).
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "formats/container.h"
#include "formats/ctrlog.h"
#include "formats/markers.h"
#include "formats/tz.h"
#include "sys/container-log.h"
#include "sys/zone.h"
#include "tap.h"

static const char *src_dir(void)
{
	const char *s = getenv("PVG_SRC");
	return s && s[0] ? s : ".";
}

static char *fixture(const char *name, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/ctrlog/%s", src_dir(), name);
	char *text = NULL;
	if (pvg_read_file(path, 64u << 20, &text, len) < 0) {
		printf("#   cannot read %s\n", path);
		*len = 0;
		return pvg_strdup("");
	}
	return text;
}

/* What the workload printed, in the order the records hold it: stdout, the stderr line
 * before stdout's last line (which has no newline). */
static char *expected_text(size_t *len)
{
	size_t ol, el;
	_cleanup_free_ char *o = fixture("workload.stdout", &ol);
	_cleanup_free_ char *e = fixture("workload.stderr", &el);
	const char *last = memrchr(o, '\n', ol);
	size_t head = last ? (size_t)(last - o) + 1 : 0;
	char *t = pvg_asprintf("%.*s%s%s", (int)head, o, e, o + head);
	*len = strlen(t);
	return t;
}

/* Decodes bytes fed in pieces of `step` into an output of `cap` bytes at a time. */
static char *decode_all(enum pvg_ctrlog_kind kind, const char *in, size_t n, size_t step,
			size_t cap, size_t *out_len, struct pvg_ctrlog *d, size_t max_lines)
{
	pvg_ctrlog_init(d, kind, max_lines);
	size_t total = 0, room = n * 2 + 4096;
	char *out = pvg_xcalloc(room, 1);
	char *chunk = pvg_xcalloc(cap, 1);
	size_t i = 0;
	int guard = 0;
	while (i < n && guard++ < 10000000) {
		size_t take = n - i < step ? n - i : step, produced = 0;
		size_t used = pvg_ctrlog_decode(d, in + i, take, chunk, cap, &produced);
		memcpy(out + total, chunk, produced);
		total += produced;
		i += used;
		/* the caller has taken every line: the table may forget them */
		pvg_ctrlog_drop_before(d, d->out_pos);
	}
	total += pvg_ctrlog_finish(d, out + total, room - total);
	free(chunk);
	*out_len = total;
	return out;
}

static void decodes_recording(const char *name, enum pvg_ctrlog_kind kind)
{
	size_t n, want_len;
	_cleanup_free_ char *log = fixture(name, &n);
	_cleanup_free_ char *want = expected_text(&want_len);
	CHECK_INT(pvg_ctrlog_detect(log, n), kind);
	static const size_t steps[] = { 1, 7, 4096, 1u << 30 };
	static const size_t caps[] = { PVG_CTRLOG_SLACK, 1000, 1u << 20 };
	for (size_t s = 0; s < ARRAY_SIZE(steps); s++) {
		for (size_t c = 0; c < ARRAY_SIZE(caps); c++) {
			struct pvg_ctrlog d;
			size_t got_len;
			_cleanup_free_ char *got = decode_all(kind, log, n, steps[s], caps[c], &got_len,
							      &d, 16);
			if (got_len != want_len || memcmp(got, want, want_len) != 0) {
				printf("#   %s step %zu cap %zu: decoded %zu bytes, expected %zu\n",
				       name, steps[s], caps[c], got_len, want_len);
				CHECK(false);
			}
			CHECK_INT(d.malformed, 0);
			CHECK(d.joined >= 3); /* the paused line, the 40 000 and 70 000 byte lines */
			pvg_ctrlog_done(&d);
		}
	}
}

static void cri_recordings_decode_to_what_was_printed(void)
{
	decodes_recording("podman-k8s-file.log", PVG_CTRLOG_CRI);
	/* podman 4.3 writes the CRI format for --log-driver json-file too */
	decodes_recording("podman-json-file.log", PVG_CTRLOG_CRI);
}

static void docker_recording_decodes_to_what_was_printed(void)
{
	decodes_recording("docker-json-file.log", PVG_CTRLOG_DOCKER);
}

/* Each decoded line carries the time of the record it began in. */
static void lines_carry_the_first_records_time(void)
{
	const char *log = "2026-12-01T21:48:35.173589783+00:00 stdout P part one \n"
			  "2026-12-01T21:48:36.000000001Z stdout F and two\n"
			  "2026-12-01T21:48:37.5+08:00 stderr F other\n";
	struct pvg_ctrlog d;
	size_t len;
	_cleanup_free_ char *out = decode_all(PVG_CTRLOG_CRI, log, strlen(log), 1u << 20, 4096,
					      &len, &d, 16);
	CHECK_STR(out, "part one and two\nother\n");
	/* the table was emptied as the decoding went: decode again without dropping */
	pvg_ctrlog_done(&d);
	pvg_ctrlog_init(&d, PVG_CTRLOG_CRI, 16);
	char buf[4096];
	size_t produced;
	pvg_ctrlog_decode(&d, log, strlen(log), buf, sizeof(buf), &produced);
	CHECK_INT(d.n_lines, 2);
	CHECK_INT(d.lines[0].time_ns, 1796161715173589783LL);
	CHECK_INT(d.lines[0].file, 0);
	CHECK_INT(d.lines[1].time_ns, 1796161717500000000LL - 8LL * 3600 * 1000000000);
	CHECK_INT(d.lines[1].file, (long long)(strchr(strchr(log, '\n') + 1, '\n') + 1 - log));
	CHECK_INT(d.joined, 1);
	pvg_ctrlog_done(&d);

	const char *dj = "{\"log\":\"cut \",\"stream\":\"stdout\",\"time\":\"2026-12-01T21:48:42.69Z\"}\n"
			 "{\"log\":\"here\\n\",\"stream\":\"stdout\",\"attrs\":{\"tag\":\"a}\\\"b\"},"
			 "\"time\":\"2026-12-01T21:48:43Z\"}\n";
	pvg_ctrlog_init(&d, PVG_CTRLOG_DOCKER, 16);
	pvg_ctrlog_decode(&d, dj, strlen(dj), buf, sizeof(buf), &produced);
	CHECK_INT(produced, 9);
	CHECK(memcmp(buf, "cut here\n", 9) == 0);
	CHECK_INT(d.n_lines, 1);
	CHECK_INT(d.lines[0].time_ns, 1796161722690000000LL);
	CHECK_INT(d.malformed, 0);
	pvg_ctrlog_done(&d);
}

static void docker_escapes_and_surrogates_decode(void)
{
	const char *dj =
		"{\"log\":\"a\\u003cb\\u0026\\\"q\\\"\\\\ \\t\\u00e9\\ud83d\\ude00 \\ud83d x\\n\","
		"\"stream\":\"stderr\",\"time\":\"2026-01-01T00:00:00Z\"}\n"
		"{\"log\":\"two\\nlines\\n\",\"stream\":\"stdout\",\"time\":\"2026-01-01T00:00:01Z\"}\n";
	struct pvg_ctrlog d;
	size_t len;
	_cleanup_free_ char *out = decode_all(PVG_CTRLOG_DOCKER, dj, strlen(dj), 3, 200, &len, &d, 16);
	CHECK_STR(out, "a<b&\"q\"\\ \t\xc3\xa9\xf0\x9f\x98\x80 \xef\xbf\xbd x\ntwo\nlines\n");
	CHECK_INT(d.malformed, 0);
	pvg_ctrlog_done(&d);
}

/* A record that breaks the format is read as it is, and counted; the lines around it keep
 * their times. */
static void broken_records_are_read_as_they_are(void)
{
	const char *cri = "2026-12-01T21:48:35Z stdout F fine\n"
			  "not a cri line DCU_KERNEL_DIAG selected=True\n"
			  "2026-13-01T21:48:35Z stdout F bad month\n"
			  "\n"
			  "2026-12-01T21:48:36Z stdout F fine again\n"
			  "trailing bytes";
	struct pvg_ctrlog d;
	size_t len;
	_cleanup_free_ char *out = decode_all(PVG_CTRLOG_CRI, cri, strlen(cri), 5, 300, &len, &d, 16);
	CHECK_STR(out, "fine\nnot a cri line DCU_KERNEL_DIAG selected=True\n"
		       "2026-13-01T21:48:35Z stdout F bad month\n\nfine again\ntrailing bytes");
	CHECK_INT(d.malformed, 4);
	pvg_ctrlog_done(&d);

	const char *dj = "{\"log\":\"ok\\n\",\"stream\":\"stdout\",\"time\":\"2026-01-01T00:00:00Z\"}\n"
			 "plain text forbidden\n"
			 "{\"log\":\"bad \\x escape\\n\",\"time\":\"2026-01-01T00:00:00Z\"}\n"
			 "{\"log\":\"cut after log\\n\",\"stream\":\"stdout\",\"ti\n"
			 "{\"log\":\"bad time\\n\",\"time\":\"yesterday\"}\n";
	_cleanup_free_ char *o2 = decode_all(PVG_CTRLOG_DOCKER, dj, strlen(dj), 1u << 20, 4096,
					     &len, &d, 16);
	CHECK_STR(o2, "ok\nplain text forbidden\nbad \\x escape\\n\",\"time\":\"2026-01-01T00:00:00Z\"}\n"
		      "cut after log\nbad time\n");
	CHECK_INT(d.malformed, 4);
	pvg_ctrlog_done(&d);
}

static void rfc3339_times(void)
{
	int64_t ns;
	CHECK_INT(pvg_rfc3339_ns("1970-01-01T00:00:00Z", 20, &ns), 0);
	CHECK_INT(ns, 0);
	const char *a = "2026-12-01T21:26:35.624677950+00:00";
	CHECK_INT(pvg_rfc3339_ns(a, strlen(a), &ns), 0);
	CHECK_INT(ns, 1796160395624677950LL);
	const char *b = "2026-12-01T21:26:35.6Z";
	CHECK_INT(pvg_rfc3339_ns(b, strlen(b), &ns), 0);
	CHECK_INT(ns, 1796160395600000000LL);
	const char *c = "2026-12-01T21:26:35-05:30";
	CHECK_INT(pvg_rfc3339_ns(c, strlen(c), &ns), 0);
	CHECK_INT(ns, (1796160395LL + 5 * 3600 + 1800) * 1000000000);
	const char *bad[] = { "2026-12-01 21:26:35Z", "2026-12-01T21:26:35", "2026-12-01T21:26:35.Z",
			      "2026-12-01T21:26:35.1234567890Z", "2026-12-01T25:26:35Z",
			      "2026-12-01T21:26:35+0800", "2026-12-01T21:26:35Zx" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_INT(pvg_rfc3339_ns(bad[i], strlen(bad[i]), &ns), -EINVAL);
	/* nanoseconds since 1970 in 64 bits end in April 2262: the latest time this reads fits,
	 * a later year is refused rather than overflowed, and so is one before 1970 */
	const char *last = "2261-12-31T23:59:59.999999999-23:59";
	CHECK_INT(pvg_rfc3339_ns(last, strlen(last), &ns), 0);
	CHECK_INT(ns, 9214732739LL * 1000000000 + 999999999);
	const char *out[] = { "2262-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z" };
	for (size_t i = 0; i < ARRAY_SIZE(out); i++)
		CHECK_INT(pvg_rfc3339_ns(out[i], strlen(out[i]), &ns), -EINVAL);
	CHECK_INT(pvg_ctrlog_detect("{\"log\":\"x", 9), PVG_CTRLOG_DOCKER);
	CHECK_INT(pvg_ctrlog_detect("2026-12-01T21:26:35Z stdout F x\n", 32), PVG_CTRLOG_CRI);
	CHECK_INT(pvg_ctrlog_detect("2026-12-01T21:26:35Z stdin F x\n", 31), PVG_CTRLOG_PLAIN);
	CHECK_INT(pvg_ctrlog_detect("2026-12-01 21:26:35 INFO x\n", 27), PVG_CTRLOG_PLAIN);
}

/* ---- the scan on the recordings -------------------------------------------------------------- */

static pid_t tree_pid = 7;
static bool in_tree(void *opaque, pid_t pid)
{
	(void)opaque;
	return pid == tree_pid;
}

static void scan_recording(const char *name, time_t start_sec, long start_ns,
			   struct pvg_marker_scan *s)
{
	size_t n;
	_cleanup_free_ char *log = fixture(name, &n);
	static struct pvg_kv kv[] = { { "selected", "True" }, { "shape", "(4096, 5120)" },
				      { "note", "a<b & c>d" } };
	static struct pvg_require req = { kv, 3 };
	static const char *const facts[] = { "block size = 832" };
	static const char *const forbid[] = { "fallback to unified triton" };
	static struct pvg_service_view view;
	view = (struct pvg_service_view){ .in_tree = in_tree, .start = { start_sec, start_ns } };
	pvg_marker_scan_init(s);
	s->prefix = "DCU_KERNEL_DIAG";
	s->require = &req;
	s->n_require = 1;
	s->facts = facts;
	s->n_facts = 1;
	s->forbid = forbid;
	s->n_forbid = 1;
	s->view = &view;
	s->now = start_sec + 60;
	CHECK_INT(pvg_marker_scan_buffer(s, log, n), 0);
}

/* The first record's runtime time, from the recording itself. */
static int64_t first_time(const char *name)
{
	size_t n;
	_cleanup_free_ char *log = fixture(name, &n);
	const char *t = strstr(log, "\"time\":\"");
	int64_t ns = 0;
	if (t) {
		t += 8;
		pvg_rfc3339_ns(t, (size_t)(strchr(t, '"') - t), &ns);
	} else {
		pvg_rfc3339_ns(log, (size_t)(strchr(log, ' ') - log), &ns);
	}
	return ns;
}

static void scan_attributes_runtime_records(void)
{
	static const char *const names[] = { "podman-k8s-file.log", "podman-json-file.log",
					     "docker-json-file.log" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		int64_t t0 = first_time(names[i]);
		struct pvg_marker_scan s;
		/* the service started just before the first record: everything is live, the
		 * marker with docker's escapes matches, the split 40 000 byte line's marker too */
		tree_pid = 7;
		scan_recording(names[i], (time_t)(t0 / 1000000000), (long)(t0 % 1000000000), &s);
		CHECK_INT(s.log_kind, i == 2 ? PVG_CTRLOG_DOCKER : PVG_CTRLOG_CRI);
		CHECK_INT(s.require_matched[0], 1);
		CHECK_INT(s.markers_live, 3);
		CHECK_INT(s.fact_live[0], 1);
		CHECK_INT(s.forbid_live[0], 1);
		CHECK_INT(s.records_malformed, 0);
		CHECK(s.forbidden.text && strstr(s.forbidden.text, "WARNING 12-01 21:26:38"));
		/* offsets are the log file's: the forbidden line's record */
		size_t n;
		_cleanup_free_ char *log = fixture(names[i], &n);
		const char *fb = strstr(log, "fallback to unified");
		const char *ls = fb ? memrchr(log, '\n', (size_t)(fb - log)) : NULL;
		CHECK_INT(s.forbidden.offset, ls ? (long long)(ls + 1 - log) : -1);
		pvg_marker_scan_done(&s);

		/* started one nanosecond after the first record: that record's line is an
		 * earlier run's, though its head says pid 7 and vLLM's time is whole seconds */
		scan_recording(names[i], (time_t)(t0 / 1000000000), (long)(t0 % 1000000000) + 1, &s);
		CHECK_INT(s.fact_live[0], 0);
		CHECK_INT(s.fact_unattributed[0], 1);
		CHECK_INT(s.fact_attr[0], PVG_ATTR_BEFORE_START);
		pvg_marker_scan_done(&s);

		/* another pid in the tree: the same records are foreign */
		tree_pid = 8;
		scan_recording(names[i], (time_t)(t0 / 1000000000) - 10, 0, &s);
		CHECK_INT(s.matched, 0);
		CHECK_INT(s.attr_count[PVG_ATTR_FOREIGN_PID], 3);
		pvg_marker_scan_done(&s);
		tree_pid = 7;
	}
}

/* ---- time zones ------------------------------------------------------------------------------ */

static struct pvg_tz load_zone(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
	_cleanup_free_ char *bytes = NULL;
	size_t len = 0;
	struct pvg_tz z;
	CHECK_INT(pvg_read_file(path, 1u << 20, &bytes, &len), 0);
	CHECK_INT(pvg_tzif_parse(bytes, len, &z), 0);
	return z;
}

/* Offsets and local-to-UTC against glibc's localtime_r/mktime in the same zone. */
static void zone_matches_glibc(const char *name, const char *tzstr)
{
	struct pvg_tz z;
	if (tzstr)
		CHECK_INT(pvg_tz_posix_parse(tzstr, &z), 0);
	else
		z = load_zone(name);
	setenv("TZ", tzstr ? tzstr : name, 1);
	tzset();
	int bad = 0;
	for (int64_t t = 0; t < 2200000000LL; t += 3 * 3600 + 17) {
		time_t tt = (time_t)t;
		struct tm tm;
		localtime_r(&tt, &tm);
		if (pvg_tz_offset_at(&z, t) != tm.tm_gmtoff && bad++ < 3)
			printf("#   %s at %lld: offset %d, glibc %ld\n", name, (long long)t,
			       pvg_tz_offset_at(&z, t), tm.tm_gmtoff);
		int64_t lo, hi;
		pvg_tz_local_to_utc(&z, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				    tm.tm_min, tm.tm_sec, &lo, &hi);
		if ((t < lo || t > hi) && bad++ < 3)
			printf("#   %s: %lld read back as [%lld, %lld]\n", name, (long long)t,
			       (long long)lo, (long long)hi);
	}
	CHECK_INT(bad, 0);
	unsetenv("TZ");
	tzset();
	pvg_tz_clear(&z);
}

static void zones_match_the_c_library(void)
{
	zone_matches_glibc("Asia/Shanghai", NULL);
	zone_matches_glibc("America/Los_Angeles", NULL);
	zone_matches_glibc("Australia/Sydney", NULL); /* daylight time across the new year */
	zone_matches_glibc("Europe/Dublin", NULL);    /* negative daylight saving in the rule */
	zone_matches_glibc("Asia/Kolkata", NULL);
	zone_matches_glibc("POSIX CST-8", "CST-8");
	zone_matches_glibc("POSIX US", "PST8PDT,M3.2.0,M11.1.0");
	zone_matches_glibc("POSIX AU", "AEST-10AEDT,M10.1.0,M4.1.0/3");
	zone_matches_glibc("POSIX quoted", "<+0330>-3:30");
	zone_matches_glibc("POSIX Julian", "EST5EDT,J60/2,J300/2");
}

static void repeated_hour_is_a_span_and_bad_zones_are_refused(void)
{
	struct pvg_tz la = load_zone("America/Los_Angeles");
	int64_t lo, hi;
	/* 2026-11-01 01:30 happens twice in Los Angeles (PDT, then PST) */
	pvg_tz_local_to_utc(&la, 2026, 11, 1, 1, 30, 0, &lo, &hi);
	CHECK_INT(hi - lo, 3600);
	CHECK_INT(lo, pvg_utc_from_fields(2026, 11, 1, 8, 30, 0));
	pvg_tz_local_to_utc(&la, 2026, 7, 1, 12, 0, 0, &lo, &hi);
	CHECK_INT(lo, hi);
	CHECK_INT(lo, pvg_utc_from_fields(2026, 7, 1, 19, 0, 0));
	pvg_tz_clear(&la);

	_cleanup_free_ char *bytes = NULL;
	size_t len = 0;
	CHECK_INT(pvg_read_file("/usr/share/zoneinfo/Asia/Shanghai", 1u << 20, &bytes, &len), 0);
	struct pvg_tz z;
	for (size_t cut = 0; cut < len; cut += 7)
		CHECK(pvg_tzif_parse(bytes, cut, &z) < 0);
	_cleanup_free_ char *bad = pvg_xcalloc(len, 1);
	memcpy(bad, bytes, len);
	bad[44 + 20] = (char)0xff; /* a transition type out of range, in the v1 block */
	if (pvg_tzif_parse(bad, len, &z) == 0)
		pvg_tz_clear(&z);
	const char *posix_bad[] = { "", "X-8", "CST", "CST-8CDT,M3", "CST-25", "CST-8CDT,M13.1.0,M1.1.0" };
	for (size_t i = 0; i < ARRAY_SIZE(posix_bad); i++)
		CHECK_INT(pvg_tz_posix_parse(posix_bad[i], &z), -EINVAL);
	_cleanup_free_ char *right = NULL;
	if (pvg_read_file("/usr/share/zoneinfo/right/UTC", 1u << 20, &right, &len) == 0)
		CHECK_INT(pvg_tzif_parse(right, len, &z), -ENOTSUP);
}

/* vLLM's "MM-DD HH:MM:SS" read in the writer's zone; in an unknown one a span of 26 hours. */
static void heads_are_read_in_the_writers_zone(void)
{
	struct pvg_tz sh = load_zone("Asia/Shanghai");
	struct pvg_line_zone zone = { .tz = &sh };
	time_t now = (time_t)pvg_utc_from_fields(2026, 12, 1, 13, 0, 0);
	const char *line = "(EngineCore_DP0 pid=7) INFO 12-01 21:26:35 [core.py:75] x";
	struct pvg_line_head h;
	pvg_line_head_parse_in(NULL, &zone, line, strlen(line), now, &h);
	CHECK(h.has_time && h.has_pid);
	CHECK_INT(h.time, pvg_utc_from_fields(2026, 12, 1, 13, 26, 35));
	CHECK_INT(h.time_hi, h.time);
	/* a full date without an offset too */
	const char *iso = "2026-12-01 21:26:35,976 INFO x";
	pvg_line_head_parse_in(NULL, &zone, iso, strlen(iso), now, &h);
	CHECK_INT(h.time, pvg_utc_from_fields(2026, 12, 1, 13, 26, 35));
	/* an offset in the text wins over the zone */
	const char *off = "2026-12-01T21:26:35+00:00 INFO x";
	pvg_line_head_parse_in(NULL, &zone, off, strlen(off), now, &h);
	CHECK_INT(h.time, pvg_utc_from_fields(2026, 12, 1, 21, 26, 35));
	/* the year from now in the writer's zone: 01-01 00:30 in Shanghai when it is already
	 * January 1st there (UTC still December 31st) */
	time_t ny = (time_t)pvg_utc_from_fields(2026, 12, 31, 17, 0, 0);
	const char *jan = "INFO 01-01 00:30:00 [x.py:1] y";
	pvg_line_head_parse_in(NULL, &zone, jan, strlen(jan), ny, &h);
	CHECK_INT(h.time, pvg_utc_from_fields(2026, 12, 31, 16, 30, 0));
	struct pvg_line_zone unknown = { .unknown = true };
	pvg_line_head_parse_in(NULL, &unknown, line, strlen(line), now, &h);
	CHECK_INT(h.time, pvg_utc_from_fields(2026, 12, 1, 21, 26, 35) - 14 * 3600);
	CHECK_INT(h.time_hi, pvg_utc_from_fields(2026, 12, 1, 21, 26, 35) + 12 * 3600);

	/* attribution: a span that holds the start decides nothing unless the file is new */
	struct pvg_service_view view = { .in_tree = in_tree,
					 .start = { (time_t)pvg_utc_from_fields(2026, 12, 1, 15, 0, 0), 0 } };
	tree_pid = 7;
	CHECK_INT(pvg_attribute(&h, &view, false), PVG_ATTR_UNDECIDED);
	CHECK_INT(pvg_attribute(&h, &view, true), PVG_ATTR_LIVE);
	h.has_pid = false;
	CHECK_INT(pvg_attribute(&h, &view, false), PVG_ATTR_UNDECIDED);
	view.start.tv_sec = h.time_hi + 1;
	CHECK_INT(pvg_attribute(&h, &view, false), PVG_ATTR_BEFORE_START);
	view.start.tv_sec = h.time;
	CHECK_INT(pvg_attribute(&h, &view, false), PVG_ATTR_LIVE);
	pvg_tz_clear(&sh);
}

/* ---- a service's zone, from a /proc tree ------------------------------------------------------ */

static void write_file(const char *path, const char *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_INT(write(fd, bytes, len), (long long)len);
		close(fd);
	}
}

static void service_zone_from_environ_and_root(void)
{
	char tmpl[] = "/tmp/pvg-t-zone.XXXXXX";
	char *dir = mkdtemp(tmpl);
	CHECK(dir != NULL);
	char cmd[8192];
	/* pid 10: TZ names a zone of its root; its root's /etc/localtime is an absolute link,
	 * which must resolve inside that root, not provgate's */
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/10/root/usr/share/zoneinfo/Asia %s/10/root/usr/share/zoneinfo/America "
		 "%s/10/root/etc %s/11/root/etc %s/12/root && "
		 "cp /usr/share/zoneinfo/Asia/Shanghai %s/10/root/usr/share/zoneinfo/Asia/ && "
		 "cp /usr/share/zoneinfo/America/Los_Angeles %s/10/root/usr/share/zoneinfo/America/ && "
		 "ln -s /usr/share/zoneinfo/America/Los_Angeles %s/10/root/etc/localtime && "
		 "ln -s /usr/share/zoneinfo/Asia/Shanghai %s/11/root/etc/localtime",
		 dir, dir, dir, dir, dir, dir, dir, dir, dir);
	CHECK_INT(system(cmd), 0);
	char p[4096];
	/* each runs as us: its zone files are opened with our own rights */
	char status[128];
	int sl = snprintf(status, sizeof(status), "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n",
			  geteuid(), geteuid(), geteuid(), geteuid(), getegid(), getegid(),
			  getegid(), getegid());
	for (int pid = 10; pid <= 12; pid++) {
		snprintf(p, sizeof(p), "%s/%d/status", dir, pid);
		write_file(p, status, (size_t)sl);
	}
	snprintf(p, sizeof(p), "%s/10/environ", dir);
	write_file(p, "PATH=/bin\0TZ=Asia/Shanghai\0", 28);
	struct pvg_proc_zone z;
	CHECK_INT(pvg_proc_zone_read(dir, 10, &z), 0);
	CHECK(z.known);
	CHECK_STR(z.name, "Asia/Shanghai");
	CHECK_INT(pvg_tz_offset_at(&z.tz, 1796160395), 8 * 3600);
	pvg_proc_zone_clear(&z);
	/* no TZ: /etc/localtime of its root, through the absolute link */
	write_file(p, "PATH=/bin\0", 10);
	CHECK_INT(pvg_proc_zone_read(dir, 10, &z), 0);
	CHECK(z.known);
	CHECK_STR(z.name, "America/Los_Angeles");
	CHECK_INT(pvg_tz_offset_at(&z.tz, 1796160395), -8 * 3600);
	pvg_proc_zone_clear(&z);
	/* a POSIX rule needs no file */
	write_file(p, "TZ=CST-8\0", 9);
	CHECK_INT(pvg_proc_zone_read(dir, 10, &z), 0);
	CHECK(z.known);
	CHECK_INT(pvg_tz_offset_at(&z.tz, 1796160395), 8 * 3600);
	pvg_proc_zone_clear(&z);
	/* pid 11: its link points to a file its root does not have (provgate's would) */
	snprintf(p, sizeof(p), "%s/11/environ", dir);
	write_file(p, "PATH=/bin\0", 10);
	CHECK_INT(pvg_proc_zone_read(dir, 11, &z), 0);
	CHECK(!z.known);
	CHECK(z.why.text && strstr(z.why.text, "/etc/localtime"));
	pvg_proc_zone_clear(&z);
	/* pid 12: a zone name its root has no file for: unknown, and says why */
	snprintf(p, sizeof(p), "%s/12/environ", dir);
	write_file(p, "TZ=Asia/Shanghai\0", 17);
	CHECK_INT(pvg_proc_zone_read(dir, 12, &z), 0);
	CHECK(!z.known);
	CHECK(z.why.text && strstr(z.why.text, "TZ=Asia/Shanghai"));
	pvg_proc_zone_clear(&z);
	/* no TZ and no /etc/localtime: the C library's UTC */
	write_file(p, "PATH=/bin\0", 10);
	CHECK_INT(pvg_proc_zone_read(dir, 12, &z), 0);
	CHECK(z.known);
	CHECK_STR(z.name, "UTC");
	pvg_proc_zone_clear(&z);
	/* TZ naming a FIFO, a device, a folder or a file of the kernel's: refused, each says
	 * what it was, and nothing is read (a FIFO would block) */
	snprintf(cmd, sizeof(cmd), "mkfifo %s/12/root/fifo && mkdir %s/12/root/dir %s/12/root/proc",
		 dir, dir, dir);
	CHECK_INT(system(cmd), 0);
	/* as root: a device node, reached through a link inside the root, and procfs */
	snprintf(cmd, sizeof(cmd), "mknod %s/12/root/null c 1 3 && ln -s /null %s/12/root/zone && "
		 "mount -t proc proc %s/12/root/proc", dir, dir, dir);
	bool as_root = geteuid() == 0 && system(cmd) == 0;
	static const struct {
		const char *env, *word, *text;
	} bad[] = {
		{ "TZ=/fifo", "fifo", "a FIFO" },
		{ "TZ=/dir", "directory", "a directory" },
		{ "TZ=:/zone", "device", "a device node" },
		{ "TZ=/proc/version", "kernel-file", "kernel" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		if (i >= 2 && !as_root)
			continue;
		write_file(p, bad[i].env, strlen(bad[i].env) + 1);
		CHECK_INT(pvg_proc_zone_read(dir, 12, &z), 0);
		CHECK(!z.known);
		CHECK(z.refused && strcmp(z.refused, bad[i].word) == 0);
		CHECK(z.why.text && strstr(z.why.text, bad[i].text));
		pvg_proc_zone_clear(&z);
	}
	if (as_root) {
		snprintf(cmd, sizeof(cmd), "umount %s/12/root/proc", dir);
		CHECK_INT(system(cmd), 0); /* before rm -rf below */
	}
	/* a process that is gone */
	CHECK_INT(pvg_proc_zone_read(dir, 13, &z), -ESRCH);
	pvg_proc_zone_clear(&z);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), 0);
}

/* ---- where the engine keeps the log ---------------------------------------------------------- */

static const char ID[] = "e974cd21cb2ef3f98254f295c5716ded648a806b97e9ab1feb1ded2ac0e72b88";

static void conmon_command_lines(void)
{
	char cmd[1024];
	size_t n = (size_t)snprintf(cmd, sizeof(cmd),
				    "/usr/bin/conmon%c--api-version%c1%c-c%c%s%c-u%c%s%c-l%c"
				    "k8s-file:/var/lib/containers/storage/overlay-containers/%s/"
				    "userdata/ctr.log%c--log-level%cwarning",
				    0, 0, 0, 0, ID, 0, 0, ID, 0, 0, ID, 0, 0);
	char *path, *drivers;
	CHECK_INT(pvg_conmon_log_parse(cmd, n + 1, ID, &path, &drivers), 1);
	CHECK(path && strstr(path, "/userdata/ctr.log"));
	CHECK_STR(drivers, "k8s-file");
	free(path);
	free(drivers);
	CHECK_INT(pvg_conmon_log_parse(cmd, n + 1, "abc", &path, &drivers), 0);
	CHECK(path == NULL);
	free(drivers);
	n = (size_t)snprintf(cmd, sizeof(cmd), "conmon%c--cid=%s%c-l%cjournald", 0, ID, 0, 0);
	CHECK_INT(pvg_conmon_log_parse(cmd, n + 1, ID, &path, &drivers), 1);
	CHECK(path == NULL);
	CHECK_STR(drivers, "journald");
	free(drivers);
	/* CRI-O: a bare path is k8s-file */
	n = (size_t)snprintf(cmd, sizeof(cmd), "conmon%c-c%c%s%c--log-path%c/var/log/pods/ns_p_u/c/0.log",
			     0, 0, ID, 0, 0);
	CHECK_INT(pvg_conmon_log_parse(cmd, n + 1, ID, &path, &drivers), 1);
	CHECK_STR(path, "/var/log/pods/ns_p_u/c/0.log");
	free(path);
	free(drivers);
}

static void container_logs_from_engine_state(void)
{
	char tmpl[] = "/tmp/pvg-t-clog.XXXXXX";
	char *dir = mkdtemp(tmpl);
	CHECK(dir != NULL);
	char cmd[16384], p[4096];
	/* /proc: pid 20 in a podman container under conmon 19; pid 30 in docker's; 40 in a
	 * Kubernetes pod; 50 on the host. The root tree: docker's default data root, the
	 * kubelet's link. */
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %1$s/proc/19 %1$s/proc/20 %1$s/proc/30 %1$s/proc/40 %1$s/proc/50 "
		 "%1$s/root/var/lib/docker/containers/%2$s %1$s/root/var/log/containers "
		 "%1$s/root/var/log/pods/ns_pod_1234/ctr && "
		 "echo '19 (conmon) S 1 19' >%1$s/proc/19/stat && echo conmon >%1$s/proc/19/comm && "
		 "printf 'Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n' >%1$s/proc/19/status && "
		 "printf 'Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n' "
		 ">%1$s/proc/20/status && "
		 "echo '20 (python3) S 19 20' >%1$s/proc/20/stat && echo python3 >%1$s/proc/20/comm && "
		 "echo '0::/libpod_parent/libpod-%2$s' >%1$s/proc/20/cgroup && "
		 "echo '30 (python3) S 1 30' >%1$s/proc/30/stat && "
		 "echo '0::/system.slice/docker-%2$s.scope' >%1$s/proc/30/cgroup && "
		 "echo '40 (python3) S 1 40' >%1$s/proc/40/stat && "
		 "echo '0::/kubepods/besteffort/pod1234/%2$s' >%1$s/proc/40/cgroup && "
		 "echo '0::/user.slice' >%1$s/proc/50/cgroup && "
		 "echo '{\"LogPath\":\"/var/lib/docker/containers/%2$s/%2$s-json.log\"}' "
		 ">%1$s/root/var/lib/docker/containers/%2$s/config.v2.json && "
		 "echo '{\"LogConfig\":{\"Type\":\"json-file\",\"Config\":{}}}' "
		 ">%1$s/root/var/lib/docker/containers/%2$s/hostconfig.json && "
		 ": >%1$s/root/var/log/pods/ns_pod_1234/ctr/0.log && "
		 "ln -s %1$s/root/var/log/pods/ns_pod_1234/ctr/0.log "
		 "%1$s/root/var/log/containers/pod_ns_ctr-%2$s.log",
		 dir, ID);
	CHECK_INT(system(cmd), 0);
	snprintf(p, sizeof(p), "%s/proc/19/cmdline", dir);
	char cl[1024];
	size_t n = (size_t)snprintf(cl, sizeof(cl), "/usr/bin/conmon%c-c%c%s%c-l%ck8s-file:/x/ctr.log",
				    0, 0, ID, 0, 0);
	write_file(p, cl, n + 1);
	char procfs[4096], root[4096];
	snprintf(procfs, sizeof(procfs), "%s/proc", dir);
	snprintf(root, sizeof(root), "%s/root", dir);
	struct pvg_container_log l;
	CHECK_INT(pvg_container_log_find(procfs, root, 20, &l), 0);
	CHECK_STR(l.path, "/x/ctr.log");
	CHECK_STR(l.driver, "k8s-file");
	CHECK(l.how && strstr(l.how, "conmon"));
	CHECK(!l.as_user && !l.runtime_not_trusted);
	pvg_container_log_clear(&l);
	/* a conmon of another user than the service's is not believed, whatever it names */
	snprintf(cmd, sizeof(cmd), "printf 'Uid:\t4242\t4242\t4242\t4242\nGid:\t4242\t4242\t4242\t4242\n' "
		 ">%s/proc/19/status", dir);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(pvg_container_log_find(procfs, root, 20, &l), 0);
	CHECK(l.path == NULL && l.runtime_not_trusted && !l.no_file);
	CHECK(l.why.text && strstr(l.why.text, "conmon (pid 19)") && strstr(l.why.text, "uid 4242"));
	pvg_container_log_clear(&l);
	/* the service's own user's conmon (rootless podman): believed, and the log is theirs,
	 * read with their rights */
	snprintf(cmd, sizeof(cmd), "printf 'Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n' "
		 ">%s/proc/19/status", dir);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(pvg_container_log_find(procfs, root, 20, &l), 0);
	CHECK_STR(l.path, "/x/ctr.log");
	CHECK(l.as_user && l.owner == 1000 && l.creds.uid == 1000 && l.creds.gid == 1000);
	struct pvg_untrusted how = { .root_fd = -1 };
	pvg_container_log_how(&l, &how);
	CHECK(how.as == &l.creds && how.has_want_uid && how.want_uid == 1000 && how.nofollow);
	pvg_container_log_clear(&l);
	snprintf(cmd, sizeof(cmd), "printf 'Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n' "
		 ">%s/proc/19/status", dir);
	CHECK_INT(system(cmd), 0);
	/* the same container logging to the journal: no file, and says so */
	n = (size_t)snprintf(cl, sizeof(cl), "/usr/bin/conmon%c-c%c%s%c-l%cjournald", 0, 0, ID, 0, 0);
	write_file(p, cl, n + 1);
	CHECK_INT(pvg_container_log_find(procfs, root, 20, &l), 0);
	CHECK(l.path == NULL);
	CHECK(l.no_file);
	CHECK(l.why.text && strstr(l.why.text, "journald"));
	CHECK(l.why.hint && strstr(l.why.hint, "journal"));
	pvg_container_log_clear(&l);

	CHECK_INT(pvg_container_log_find(procfs, root, 30, &l), 0);
	CHECK(l.path && strstr(l.path, "-json.log"));
	CHECK_STR(l.driver, "json-file");
	struct stat rst;
	CHECK_INT(stat(root, &rst), 0);
	CHECK(!l.as_user && l.owner == rst.st_uid); /* the default data root is root's */
	pvg_container_log_clear(&l);
	snprintf(cmd, sizeof(cmd),
		 "echo '{\"LogConfig\":{\"Type\":\"journald\"}}' "
		 ">%s/root/var/lib/docker/containers/%s/hostconfig.json", dir, ID);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(pvg_container_log_find(procfs, root, 30, &l), 0);
	CHECK(l.path == NULL && l.no_file);
	CHECK_STR(l.driver, "journald");
	pvg_container_log_clear(&l);

	CHECK_INT(pvg_container_log_find(procfs, root, 40, &l), 0);
	CHECK(l.path && strstr(l.path, "/var/log/pods/ns_pod_1234/ctr/0.log"));
	pvg_container_log_clear(&l);

	CHECK_INT(pvg_container_log_find(procfs, root, 50, &l), 0);
	CHECK(l.path == NULL && !l.in_container && !l.no_file);
	pvg_container_log_clear(&l);
	CHECK_INT(pvg_container_log_find(procfs, root, 60, &l), -ESRCH);
	pvg_container_log_clear(&l);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), 0);
}

int main(void)
{
	RUN(cri_recordings_decode_to_what_was_printed);
	RUN(docker_recording_decodes_to_what_was_printed);
	RUN(lines_carry_the_first_records_time);
	RUN(docker_escapes_and_surrogates_decode);
	RUN(broken_records_are_read_as_they_are);
	RUN(rfc3339_times);
	RUN(scan_attributes_runtime_records);
	RUN(zones_match_the_c_library);
	RUN(repeated_hour_is_a_span_and_bad_zones_are_refused);
	RUN(heads_are_read_in_the_writers_zone);
	RUN(service_zone_from_environ_and_root);
	RUN(conmon_command_lines);
	RUN(container_logs_from_engine_state);
	TAP_EXIT();
}
