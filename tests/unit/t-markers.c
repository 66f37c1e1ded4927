/* SPDX-License-Identifier: MIT */
/* Marker lines, vLLM line heads, attribution and the bounded streaming scan. */
#include <sys/stat.h>

#include "formats/markers.h"
#include "tap.h"

/* A fake service: pids 100..199 are its tree; it started at `start`. */
static bool fake_in_tree(void *opaque, pid_t pid)
{
	(void)opaque;
	return pid >= 100 && pid < 200;
}

static time_t mk(int year, int mon, int day, int h, int m, int s)
{
	struct tm tm = { .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day, .tm_hour = h,
			 .tm_min = m, .tm_sec = s, .tm_isdst = -1 };
	return mktime(&tm);
}

static void field_is(const struct pvg_marker *m, const char *key, const char *value)
{
	const struct pvg_marker_field *f = pvg_marker_get(m, key);
	_cleanup_free_ char *v = f ? pvg_strdup("") : NULL;
	if (f) {
		free(v);
		v = pvg_asprintf("%.*s", (int)f->value_len, f->value);
	}
	CHECK_STR(v, value);
}

static void parses_bracketed_and_quoted_values(void)
{
	const char *s = " kernel=wvSplitK selected=True shape=(4096, 5120) dtype=torch.bfloat16,"
			" note=\"fell back: no\" nested=[(1, 2), {3: 'x)'}] q='a b'";
	struct pvg_marker m;
	CHECK_INT(pvg_marker_parse(s, strlen(s), &m), 0);
	CHECK_INT(m.n, 7);
	field_is(&m, "kernel", "wvSplitK");
	field_is(&m, "selected", "True");
	field_is(&m, "shape", "(4096, 5120)");
	field_is(&m, "dtype", "torch.bfloat16");
	field_is(&m, "note", "fell back: no");
	field_is(&m, "nested", "[(1, 2), {3: 'x)'}]");
	field_is(&m, "q", "a b");
	CHECK(pvg_marker_get(&m, "missing") == NULL);
}

static void unterminated_or_too_many_fields_are_unparseable(void)
{
	struct pvg_marker m;
	const char *a = " shape=(4096, 5120 selected=True";
	CHECK_INT(pvg_marker_parse(a, strlen(a), &m), -EINVAL);
	const char *b = " note=\"open";
	CHECK_INT(pvg_marker_parse(b, strlen(b), &m), -EINVAL);
	const char *c = " shape=(1, 2]";
	CHECK_INT(pvg_marker_parse(c, strlen(c), &m), -EINVAL);
	char many[2048] = "";
	for (int i = 0; i < PVG_MARKER_FIELDS_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), " k%d=v", i);
	CHECK_INT(pvg_marker_parse(many, strlen(many), &m), -E2BIG);
	/* free text between fields is skipped */
	const char *d = ": wvSplitK dispatch selected=True";
	CHECK_INT(pvg_marker_parse(d, strlen(d), &m), 0);
	CHECK_INT(m.n, 1);
}

static void reads_vllm_line_heads(void)
{
	time_t now = mk(2026, 11, 29, 13, 0, 0);
	struct pvg_line_head h;
	const char *a = "(EngineCore_DP0 pid=12345) INFO 11-29 12:10:25 [core.py:75] hello";
	pvg_line_head_parse(a, strlen(a), now, &h);
	CHECK(h.has_pid && h.pid == 12345);
	CHECK(h.has_time && h.time == mk(2026, 11, 29, 12, 10, 25));
	/* coloured prefix, as vLLM writes it on a terminal */
	const char *b = "\x1b[1;36m(APIServer pid=7)\x1b[0;0m WARNING 11-29 12:10:26 [x.py:1] y";
	pvg_line_head_parse(b, strlen(b), now, &h);
	CHECK(h.has_pid && h.pid == 7);
	CHECK(h.has_time && h.time == mk(2026, 11, 29, 12, 10, 26));
	const char *c = "INFO 11-29 12:10:27 [api_server.py:1] no prefix";
	pvg_line_head_parse(c, strlen(c), now, &h);
	CHECK(!h.has_pid && h.has_time && h.time == mk(2026, 11, 29, 12, 10, 27));
	const char *d = "DCU_KERNEL_DIAG selected=True";
	pvg_line_head_parse(d, strlen(d), now, &h);
	CHECK(!h.has_pid && !h.has_time);
	/* Ray's driver output: a worker of this node, and one of another node (its address) */
	const char *r1 = "(RayWorkerWrapper pid=4242) INFO 11-29 12:10:28 [worker.py:1] z";
	pvg_line_head_parse(r1, strlen(r1), now, &h);
	CHECK(h.has_pid && h.pid == 4242 && !h.remote);
	const char *r2 = "\x1b[36m(RayWorkerWrapper pid=4243, ip=10.0.0.2)\x1b[0m INFO 11-29 12:10:29 [w.py:1] z";
	pvg_line_head_parse(r2, strlen(r2), now, &h);
	CHECK(h.has_pid && h.pid == 4243 && h.remote);
	CHECK(h.has_time && h.time == mk(2026, 11, 29, 12, 10, 29));
	const char *r3 = "(RayWorkerWrapper pid=4243, node=x) INFO 11-29 12:10:29 [w.py:1] z";
	pvg_line_head_parse(r3, strlen(r3), now, &h);
	CHECK(!h.has_pid);
	const char *e = "(Worker pid=notanumber) INFO 13-40 99:00:00 x";
	pvg_line_head_parse(e, strlen(e), now, &h);
	CHECK(!h.has_pid && !h.has_time);
}

static time_t utc(int year, int mon, int day, int h, int m, int s)
{
	struct tm tm = { .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day, .tm_hour = h,
			 .tm_min = m, .tm_sec = s };
	return timegm(&tm);
}

static void head_is(const char *line, bool has_pid, pid_t pid, bool has_time, time_t t)
{
	struct pvg_line_head h;
	pvg_line_head_parse(line, strlen(line), mk(2026, 12, 1, 13, 0, 0), &h);
	if (h.has_pid != has_pid || (has_pid && h.pid != pid) || h.has_time != has_time ||
	    (has_time && h.time != t)) {
		printf("# head of [%s]: pid %d/%d time %d/%lld, expected pid %d/%d time %d/%lld\n",
		       line, h.has_pid, (int)h.pid, h.has_time, (long long)h.time, has_pid,
		       (int)pid, has_time, (long long)t);
		CHECK(false);
	} else {
		CHECK(true);
	}
}

/* A format of the user's own: pid_pattern, time_pattern + time_format, tried first. */
static void reads_a_users_own_line_format(void)
{
	struct pvg_line_format f;
	struct pvg_msg why = { 0 };
	time_t now = mk(2026, 12, 1, 13, 0, 0);
	CHECK_INT(pvg_line_format_compile(&f, "^<([0-9]+)@", "@([^>]+)>", "%d.%m.%Y/%H.%M.%S", &why), 0);
	struct pvg_line_head h;
	const char *a = "<4242@01.12.2026/03.47.24> DCU_KERNEL_DIAG selected=True";
	pvg_line_head_parse_fmt(&f, a, strlen(a), now, &h);
	CHECK(h.has_pid && h.pid == 4242);
	CHECK(h.has_time && h.time == mk(2026, 12, 1, 3, 47, 24));
	/* built-in forms still read what the patterns do not */
	const char *b = "[pid 77] 2026-12-01 03:47:25 x";
	pvg_line_head_parse_fmt(&f, b, strlen(b), now, &h);
	CHECK(h.has_pid && h.pid == 77 && h.has_time && h.time == mk(2026, 12, 1, 3, 47, 25));
	/* a group that is not a pid, a text strptime cannot read: not taken */
	const char *c = "<0@31.02.2026/99.00.00> x";
	pvg_line_head_parse_fmt(&f, c, strlen(c), now, &h);
	CHECK(!h.has_pid && !h.has_time);
	pvg_line_format_clear(&f);
	/* a zone in the text is exact; no year: the year is inferred */
	CHECK_INT(pvg_line_format_compile(&f, NULL, "^\\[([^]]+)\\]", "%d/%b/%Y:%H:%M:%S %z", &why), 0);
	const char *d = "[01/Dec/2026:11:47:24 +0800] GET / DCU_KERNEL_DIAG";
	pvg_line_head_parse_fmt(&f, d, strlen(d), now, &h);
	struct tm utc = { .tm_year = 126, .tm_mon = 11, .tm_mday = 1, .tm_hour = 3, .tm_min = 47, .tm_sec = 24 };
	CHECK(!h.has_pid && h.has_time && h.time == timegm(&utc));
	pvg_line_format_clear(&f);
	CHECK_INT(pvg_line_format_compile(&f, NULL, "^([A-Z][a-z]+ [0-9]+ [0-9:]+)", "%b %d %H:%M:%S", &why), 0);
	const char *e = "Dec 1 03:47:26 host x";
	pvg_line_head_parse_fmt(&f, e, strlen(e), now, &h);
	CHECK(h.has_time && h.time == mk(2026, 12, 1, 3, 47, 26));
	pvg_line_format_clear(&f);
	/* refused at compile time, each with its reason */
	CHECK_INT(pvg_line_format_compile(&f, "pid=([0-9", NULL, NULL, &why), -EINVAL);
	CHECK(why.text && strstr(why.text, "not a POSIX extended regular expression"));
	CHECK_INT(pvg_line_format_compile(&f, "pid=[0-9]+", NULL, NULL, &why), -EINVAL);
	CHECK(why.text && strstr(why.text, "exactly one group"));
	CHECK_INT(pvg_line_format_compile(&f, "(a)(b)", NULL, NULL, &why), -EINVAL);
	CHECK_INT(pvg_line_format_compile(&f, NULL, "(x)", NULL, &why), -EINVAL);
	CHECK(why.text && strstr(why.text, "needs time_format"));
	CHECK_INT(pvg_line_format_compile(&f, NULL, NULL, "%H", &why), -EINVAL);
	CHECK_INT(pvg_line_format_compile(&f, NULL, "(x)", "HH:MM", &why), -EINVAL);
	CHECK(why.text && strstr(why.text, "no strptime conversion"));
	/* nothing given: an empty format, no error */
	CHECK_INT(pvg_line_format_compile(&f, NULL, NULL, NULL, &why), 0);
	pvg_line_format_clear(&f);
	pvg_msg_clear(&why);
}

/* Every common log format: the pid and the time wherever the head puts them. */
static void reads_common_line_heads(void)
{
	time_t py = mk(2026, 12, 1, 3, 47, 24);
	/* Python logging's asctime, with a Ray Serve-style bracket */
	head_is("2026-12-01 03:47:24,976 INFO [serve pid=9161] FASTNORM_DIAG", true, 9161, true, py);
	head_is("2026-12-01 03:47:24,976 - serve - INFO - x", false, 0, true, py);
	/* ISO 8601 with T, fractions and zones */
	head_is("2026-12-01T03:47:24Z pid=77 x", true, 77, true, utc(2026, 12, 1, 3, 47, 24));
	head_is("2026-12-01T03:47:24.123456Z x", false, 0, true, utc(2026, 12, 1, 3, 47, 24));
	head_is("2026-12-01T03:47:24.5+08:00 x", false, 0, true, utc(2026, 11, 30, 19, 47, 24));
	head_is("2026-12-01T03:47:24-0500 x", false, 0, true, utc(2026, 12, 1, 8, 47, 24));
	head_is("2026-12-01T03:47:24 x", false, 0, true, py);
	head_is("2026/12/01 03:47:24 x", false, 0, true, py);
	/* gunicorn: "[time +0000] [pid] [LEVEL]" */
	head_is("[2026-12-01 03:47:24 +0000] [9161] [INFO] Booting worker", true, 9161, true,
		utc(2026, 12, 1, 3, 47, 24));
	/* SGLang */
	head_is("[2026-12-01 03:47:24 TP0] Load weight end.", false, 0, true, py);
	/* syslog */
	head_is("Dec  1 03:47:24 host serve[4242]: FASTNORM_DIAG", true, 4242, true, py);
	head_is("Dec 11 03:47:24 host serve[4242]: x", true, 4242, true, mk(2026, 12, 11, 3, 47, 24) > mk(2026, 12, 2, 13, 0, 0) ? mk(2025, 12, 11, 3, 47, 24) : mk(2026, 12, 11, 3, 47, 24));
	/* glog */
	head_is("I1201 03:47:24.976543  9161 op.cc:12] x", false, 0, true, py);
	/* Ray */
	head_is("(MyActor pid=3131, ip=10.0.0.1) hello", true, 3131, false, 0);
	head_is("[pid 55] x", true, 55, false, 0);
	head_is("pid:56 x", true, 56, false, 0);
	/* look-alikes that are no pid or time */
	head_is("rapid=5 [x.py:12] [0] step 2026-13-01 03:47:24", false, 0, false, 0);
	head_is("ppid=12 [12a] [-3] 12-01 25:00:00", false, 0, false, 0);
	head_is("[1969-12-31 23:59:59] x", false, 0, false, 0);
	/* a head cut anywhere never reads past its end */
	const char *full = "[2026-12-01 03:47:24 +0000] [9161] Dec  1 03:47:24 I1201 pid=5";
	for (size_t n = 0; n <= strlen(full); n++) {
		_cleanup_free_ char *cut = pvg_xcalloc(n + 1, 1);
		memcpy(cut, full, n);
		struct pvg_line_head h;
		pvg_line_head_parse(cut, n, py, &h);
	}
	CHECK(true);
}

static void timestamps_across_new_year_belong_to_last_year(void)
{
	time_t now = mk(2027, 1, 1, 0, 0, 30);
	struct pvg_line_head h;
	const char *a = "INFO 12-31 23:59:59 [x.py:1] last line of the year";
	pvg_line_head_parse(a, strlen(a), now, &h);
	CHECK(h.has_time && h.time == mk(2026, 12, 31, 23, 59, 59));
	const char *b = "INFO 01-01 00:00:10 [x.py:1] first of the new one";
	pvg_line_head_parse(b, strlen(b), now, &h);
	CHECK(h.has_time && h.time == mk(2027, 1, 1, 0, 0, 10));
}

static void attribution_follows_pid_then_time_then_file(void)
{
	struct pvg_service_view v = { .in_tree = fake_in_tree,
				      .start = { mk(2026, 11, 29, 12, 10, 25), 700000000 } };
	struct pvg_line_head h = { .has_pid = true, .pid = 150 };
	CHECK_INT(pvg_attribute(&h, &v, false), PVG_ATTR_LIVE);
	/* the same number from a worker of another node is not this tree's process */
	struct pvg_line_head rh = { .has_pid = true, .pid = 150, .remote = true };
	CHECK_INT(pvg_attribute(&rh, &v, true), PVG_ATTR_FOREIGN_PID);
	h.pid = 250;
	CHECK_INT(pvg_attribute(&h, &v, true), PVG_ATTR_FOREIGN_PID);
	/* one-second resolution: the start's own second counts */
	h = (struct pvg_line_head){ .has_time = true, .time = mk(2026, 11, 29, 12, 10, 25) };
	CHECK_INT(pvg_attribute(&h, &v, false), PVG_ATTR_LIVE);
	h.time--;
	CHECK_INT(pvg_attribute(&h, &v, true), PVG_ATTR_BEFORE_START);
	/* a pid of the tree written before the start is a reused pid */
	h = (struct pvg_line_head){ .has_pid = true, .pid = 150, .has_time = true,
				    .time = mk(2026, 11, 29, 11, 0, 0) };
	CHECK_INT(pvg_attribute(&h, &v, false), PVG_ATTR_BEFORE_START);
	h = (struct pvg_line_head){ 0 };
	CHECK_INT(pvg_attribute(&h, &v, true), PVG_ATTR_LIVE);
	CHECK_INT(pvg_attribute(&h, &v, false), PVG_ATTR_UNKNOWN);
}

static struct pvg_kv req_kv[] = {
	{ "selected", "True" }, { "shape", "(4096, 5120)" }, { "dtype", "torch.bfloat16" },
};
static struct pvg_require req = { req_kv, 3 };
static const char *const facts[] = { "block size = 832", "prefix caching = False" };
static const char *const forbid[] = { "fallback to unified triton" };
static struct pvg_service_view view = { .in_tree = fake_in_tree };

static void scan_init(struct pvg_marker_scan *s)
{
	pvg_marker_scan_init(s);
	s->prefix = "DCU_KERNEL_DIAG";
	s->require = &req;
	s->n_require = 1;
	s->facts = facts;
	s->n_facts = 2;
	s->forbid = forbid;
	s->n_forbid = 1;
	view.start.tv_sec = mk(2026, 11, 29, 12, 10, 0);
	s->view = &view;
	s->now = mk(2026, 11, 29, 13, 0, 0);
}

#define OLD "(EngineCore_DP0 pid=4242) INFO 11-29 11:00:01 [diag.py:10] "
#define NEW "(EngineCore_DP0 pid=123) INFO 11-29 12:10:05 [diag.py:10] "
#define API "INFO 11-29 12:10:03 [api_server.py:1] "

static const char log_two_runs[] =
	OLD "block size = 832, prefix caching = False\n"
	OLD "DCU_KERNEL_DIAG kernel=wvSplitK selected=True shape=(4096, 5120) dtype=torch.bfloat16\n"
	OLD "fallback to unified triton attention\n"
	API "block size = 832\r\n"
	NEW "prefix caching = False\n"
	NEW "DCU_KERNEL_DIAG kernel=wvSplitK selected=True shape=(4096, 5120) dtype=torch.bfloat16\n"
	NEW "DCU_KERNEL_DIAG kernel=wvSplitK selected=True shape=(4096, 4096) dtype=torch.bfloat16\n"
	"(EngineCore_DP1 pid=777) INFO 11-29 12:10:06 [diag.py:10] DCU_KERNEL_DIAG kernel=wvSplitK "
	"selected=True shape=(4096, 5120) dtype=torch.bfloat16\n"
	"DCU_KERNEL_DIAG kernel=wvSplitK selected=True shape=(4096, 5120) dtype=torch.bfloat16";

static void scan_counts_only_the_live_run(void)
{
	struct pvg_marker_scan s;
	scan_init(&s);
	CHECK_INT(pvg_marker_scan_buffer(&s, log_two_runs, strlen(log_two_runs)), 0);
	CHECK_INT(s.bytes, strlen(log_two_runs));
	CHECK_INT(s.markers_live, 2);
	CHECK_INT(s.matched, 1);
	CHECK_INT(s.require_matched[0], 1);
	CHECK_INT(s.markers_unattributed, 3); /* earlier run, foreign pid, no head */
	/* the earlier run's pid is not in the tree: the pid decides before the time */
	CHECK_INT(s.attr_count[PVG_ATTR_BEFORE_START], 0);
	CHECK_INT(s.attr_count[PVG_ATTR_FOREIGN_PID], 2);
	CHECK_INT(s.attr_count[PVG_ATTR_UNKNOWN], 1);
	CHECK_INT(s.require_unattributed[0], 3);
	CHECK(s.fact_live[0] && s.fact_live[1]);
	CHECK_INT(s.forbid_live[0], 0);
	CHECK_INT(s.forbid_unattributed[0], 1);
	CHECK(s.unmatched.text && strstr(s.unmatched.text, "(4096, 4096)"));
	pvg_marker_scan_done(&s);

	/* the same log with the file created after the start: the head-less line counts */
	scan_init(&s);
	s.file_after_start = true;
	pvg_marker_scan_buffer(&s, log_two_runs, strlen(log_two_runs));
	CHECK_INT(s.matched, 2);
	CHECK_INT(s.markers_unattributed, 2);
	pvg_marker_scan_done(&s);
}

static void selected_false_and_forbidden_lines_are_seen(void)
{
	const char *t = NEW "DCU_KERNEL_DIAG kernel=wvSplitK selected=False shape=(4096, 5120) "
			    "dtype=torch.bfloat16 reason=\"k % 8 != 0\"\n" NEW
			    "fallback to unified triton attention for 1 layers\n";
	struct pvg_marker_scan s;
	scan_init(&s);
	pvg_marker_scan_buffer(&s, t, strlen(t));
	CHECK_INT(s.require_not_selected[0], 1);
	CHECK_INT(s.matched, 0);
	CHECK_INT(s.forbid_live[0], 1);
	CHECK(s.not_selected.text && strstr(s.not_selected.text, "selected=False"));
	CHECK(s.forbidden.text && strstr(s.forbidden.text, "unified triton"));
	CHECK(!s.fact_live[0] && !s.fact_live[1]);
	pvg_marker_scan_done(&s);
}

/* Feeds the log in pieces that cut lines and patterns at every position around the cut. */
static void results_do_not_depend_on_block_cuts(void)
{
	struct pvg_marker_scan whole;
	scan_init(&whole);
	pvg_marker_scan_buffer(&whole, log_two_runs, strlen(log_two_runs));
	/* a log longer than the buffer, with the same lines at the end */
	size_t pad = PVG_MARKER_BUF - 7, n = pad + strlen(log_two_runs);
	char *big = malloc(n);
	for (size_t i = 0; i < pad; i += 64) {
		size_t l = pad - i < 64 ? pad - i : 64;
		memset(big + i, 'a', l);
		big[i + l - 1] = '\n';
	}
	memcpy(big + pad, log_two_runs, strlen(log_two_runs));
	struct pvg_marker_scan s;
	scan_init(&s);
	pvg_marker_scan_buffer(&s, big, n);
	CHECK_INT(s.matched, whole.matched);
	CHECK_INT(s.markers_live, whole.markers_live);
	CHECK_INT(s.markers_unattributed, whole.markers_unattributed);
	CHECK_INT(s.forbid_unattributed[0], 1);
	CHECK_INT(s.overlong_lines, 0);
	free(big);
	pvg_marker_scan_done(&s);
	pvg_marker_scan_done(&whole);
}

static void overlong_lines_are_bounded_and_counted(void)
{
	/* a 10 MB marker line of the live service, then a good marker */
	size_t big = 10u << 20;
	const char *head = NEW "DCU_KERNEL_DIAG kernel=wvSplitK selected=True shape=(";
	const char *tail = "1)\n" NEW "DCU_KERNEL_DIAG kernel=wvSplitK selected=True "
			   "shape=(4096, 5120) dtype=torch.bfloat16\n";
	size_t n = strlen(head) + big + strlen(tail);
	char *t = malloc(n + 1);
	strcpy(t, head);
	memset(t + strlen(head), '7', big);
	/* a forbidden pattern straddling the 4 MiB cut, inside the long line */
	size_t at = PVG_MARKER_BUF - 10;
	memcpy(t + at, forbid[0], strlen(forbid[0]));
	strcpy(t + strlen(head) + big, tail);
	struct pvg_marker_scan s;
	scan_init(&s);
	CHECK_INT(pvg_marker_scan_buffer(&s, t, n), 0);
	CHECK_INT(s.overlong_lines, 1);
	CHECK_INT(s.markers_unparseable, 1);
	CHECK_INT(s.matched, 1);
	CHECK_INT(s.forbid_live[0], 1);
	pvg_marker_scan_done(&s);
	free(t);
}

static void binary_garbage_does_not_crash(void)
{
	size_t n = 3u << 20;
	char *t = malloc(n);
	srand(11);
	for (size_t i = 0; i < n; i++)
		t[i] = (char)(rand() & 0xff);
	memcpy(t + 1000, "\nDCU_KERNEL_DIAG shape=((((", 27);
	memcpy(t + 5000, "\n(x pid=99999999999999) INFO 99-99 DCU_KERNEL_DIAG", 51);
	struct pvg_marker_scan s;
	scan_init(&s);
	CHECK_INT(pvg_marker_scan_buffer(&s, t, n), 0);
	CHECK_INT(s.matched, 0);
	CHECK_INT(s.bytes, n);
	pvg_marker_scan_done(&s);
	free(t);
}

/* Patterns at every position of lines of every length, compared with a plain count. */
static void pattern_search_finds_every_occurrence(void)
{
	size_t cap = 3u << 20, n = 0, expect = 0;
	char *t = malloc(cap);
	srand(5);
	const char *pat = forbid[0];
	size_t plen = strlen(pat);
	while (n + 400 < cap) {
		size_t len = (size_t)rand() % 300;
		for (size_t i = 0; i < len; i++)
			t[n + i] = "fallback to unified triton xyz"[rand() % 30];
		if (rand() % 3 == 0 && len >= plen) {
			size_t at = (size_t)rand() % (len - plen + 1);
			memcpy(t + n + at, pat, plen);
		}
		/* a line counts once however often it holds the pattern */
		if (memmem(t + n, len, pat, plen))
			expect++;
		n += len;
		t[n++] = '\n';
	}
	struct pvg_marker_scan s;
	scan_init(&s);
	s.file_after_start = true; /* head-less lines are live */
	CHECK_INT(pvg_marker_scan_buffer(&s, t, n), 0);
	CHECK(expect > 1000);
	CHECK_INT(s.forbid_live[0], expect);
	pvg_marker_scan_done(&s);
	free(t);
}


/* A procfs tree: 10 -> 11 -> 12 (comm with spaces and parentheses), 13 elsewhere. */
int main(void)
{
	RUN(parses_bracketed_and_quoted_values);
	RUN(unterminated_or_too_many_fields_are_unparseable);
	RUN(reads_vllm_line_heads);
	RUN(reads_common_line_heads);
	RUN(reads_a_users_own_line_format);
	RUN(timestamps_across_new_year_belong_to_last_year);
	RUN(attribution_follows_pid_then_time_then_file);
	RUN(scan_counts_only_the_live_run);
	RUN(selected_false_and_forbidden_lines_are_seen);
	RUN(results_do_not_depend_on_block_cuts);
	RUN(overlong_lines_are_bounded_and_counted);
	RUN(binary_garbage_does_not_crash);
	RUN(pattern_search_finds_every_occurrence);
	TAP_EXIT();
}
