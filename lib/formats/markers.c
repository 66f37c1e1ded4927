/* SPDX-License-Identifier: MIT */
/*
 * Marker lines and their attribution, and a scan of the service log that reads large blocks
 * and looks only at lines that hold one of the patterns (prefix, facts, forbid): each pattern
 * is found with memmem over the whole block, and only then is its line's head parsed.
 * Memory is one fixed buffer whatever the log's size or line lengths; a container runtime's
 * log takes a second one for its bytes before they are decoded, and a table of lines.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "formats/markers.h"
#include "util/hash.h"

/* ---- marker fields --------------------------------------------------------------------------- */

static bool is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

int pvg_marker_parse(const char *s, size_t len, struct pvg_marker *m)
{
	size_t i = 0;
	m->n = 0;
	while (i < len) {
		while (i < len && (is_space(s[i]) || s[i] == ',' || s[i] == ';' || s[i] == '|' ||
				   s[i] == ':'))
			i++;
		if (i >= len)
			break;
		size_t k = i;
		while (k < len && is_key_char(s[k]))
			k++;
		if (k == i || k >= len || s[k] != '=') {
			/* free text between fields: skip the word */
			while (i < len && !is_space(s[i]))
				i++;
			continue;
		}
		if (m->n >= PVG_MARKER_FIELDS_MAX)
			return -E2BIG;
		struct pvg_marker_field *f = &m->f[m->n++];
		f->key = s + i;
		f->key_len = k - i;
		size_t v = k + 1;
		if (v < len && (s[v] == '"' || s[v] == '\'')) {
			char q = s[v];
			size_t e = v + 1;
			while (e < len && s[e] != q) {
				if (s[e] == '\\' && e + 1 < len)
					e++;
				e++;
			}
			if (e >= len)
				return -EINVAL;
			f->value = s + v + 1;
			f->value_len = e - v - 1;
			i = e + 1;
		} else if (v < len && (s[v] == '(' || s[v] == '[' || s[v] == '{')) {
			/* a bracketed group, nested, quotes inside kept as they are */
			char stack[64];
			size_t depth = 0, e = v;
			for (; e < len; e++) {
				char c = s[e];
				if (c == '"' || c == '\'') {
					/* a quoted string inside the group may hold brackets */
					size_t q = e + 1;
					while (q < len && s[q] != c)
						q += s[q] == '\\' && q + 1 < len ? 2 : 1;
					if (q >= len)
						return -EINVAL;
					e = q;
				} else if (c == '(' || c == '[' || c == '{') {
					if (depth == sizeof(stack))
						return -EINVAL;
					stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
				} else if (c == ')' || c == ']' || c == '}') {
					if (depth == 0 || stack[depth - 1] != c)
						return -EINVAL;
					if (--depth == 0)
						break;
				}
			}
			if (depth != 0 || e >= len)
				return -EINVAL;
			f->value = s + v;
			f->value_len = e + 1 - v;
			i = e + 1;
		} else {
			size_t e = v;
			while (e < len && !is_space(s[e]))
				e++;
			size_t vl = e - v;
			while (vl && (s[v + vl - 1] == ',' || s[v + vl - 1] == ';'))
				vl--;
			f->value = s + v;
			f->value_len = vl;
			i = e;
		}
	}
	return 0;
}

const struct pvg_marker_field *pvg_marker_get(const struct pvg_marker *m, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < m->n; i++)
		if (m->f[i].key_len == kl && memcmp(m->f[i].key, key, kl) == 0)
			return &m->f[i];
	return NULL;
}

static bool value_is(const struct pvg_marker_field *f, const char *v)
{
	size_t n = strlen(v);
	return f && f->value_len == n && memcmp(f->value, v, n) == 0;
}

static bool value_is_false(const struct pvg_marker_field *f)
{
	return value_is(f, "False") || value_is(f, "false") || value_is(f, "0") ||
	       value_is(f, "no") || value_is(f, "FALSE");
}

/* ---- line heads ------------------------------------------------------------------------------- */

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int num2(const char *s)
{
	return (s[0] - '0') * 10 + (s[1] - '0');
}

/* mktime is slow; lines of the same minute share one conversion. */
static __thread struct {
	int year, mon, mday, hour, min;
	time_t base;
	bool valid;
} tcache;

static time_t local_time(int year, int mon, int mday, int hour, int min, int sec)
{
	if (!(tcache.valid && tcache.year == year && tcache.mon == mon && tcache.mday == mday &&
	      tcache.hour == hour && tcache.min == min)) {
		struct tm tm = { .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = mday,
				 .tm_hour = hour, .tm_min = min, .tm_sec = 0, .tm_isdst = -1 };
		tcache.base = mktime(&tm);
		tcache.year = year;
		tcache.mon = mon;
		tcache.mday = mday;
		tcache.hour = hour;
		tcache.min = min;
		tcache.valid = true;
	}
	return tcache.base + sec;
}

static time_t utc_time(int year, int mon, int mday, int hour, int min, int sec)
{
	return (time_t)pvg_utc_from_fields(year, mon, mday, hour, min, sec);
}

static bool is_alnum(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* How a head's time is read: when it is (for the year of a time that prints none) and the
 * writer's zone for a time without an offset. */
struct clock {
	time_t now;
	const struct pvg_line_zone *zone; /* NULL: provgate's own zone */
};

/* The instants [lo, hi] a time will be one of. */
struct span {
	time_t lo, hi;
};

/* The most a zone is ahead of UTC (UTC+14, Line Islands) and behind it (UTC-12). */
#define ZONE_AHEAD_MAX (14 * 3600)
#define ZONE_BEHIND_MAX (12 * 3600)

/* A local wall-clock time in the writer's zone. */
static void local_span(const struct clock *c, int year, int mon, int mday, int hour, int min,
		       int sec, struct span *out)
{
	const struct pvg_line_zone *z = c->zone;
	if (!z) {
		out->lo = out->hi = local_time(year, mon, mday, hour, min, sec);
	} else if (z->unknown || !z->tz) {
		/* any zone on Earth: the text's time read as UTC, give or take */
		time_t t0 = utc_time(year, mon, mday, hour, min, sec);
		out->lo = t0 - ZONE_AHEAD_MAX;
		out->hi = t0 + ZONE_BEHIND_MAX;
	} else {
		int64_t lo, hi;
		pvg_tz_local_to_utc(z->tz, year, mon, mday, hour, min, sec, &lo, &hi);
		out->lo = (time_t)lo;
		out->hi = (time_t)hi;
	}
}

/* The year a time that prints none was written in, in the writer's zone: the year now is in
 * there, unless that puts it more than a day ahead ("12-31 23:59:59" read on January 1st was
 * written last year). The live service's lines lie between its start and now. */
static int year_now(const struct clock *c)
{
	const struct pvg_line_zone *z = c->zone;
	if (z)
		return pvg_year_of(c->now, z->unknown || !z->tz ? 0 : pvg_tz_offset_at(z->tz, c->now));
	static __thread time_t year_of;
	static __thread int year_cached;
	if (year_of != c->now || !year_cached) {
		struct tm nowtm;
		localtime_r(&c->now, &nowtm);
		year_cached = nowtm.tm_year + 1900;
		year_of = c->now;
	}
	return year_cached;
}

static void local_span_no_year(const struct clock *c, int mon, int mday, int hour, int min,
			       int sec, struct span *out)
{
	int year = year_now(c);
	local_span(c, year, mon, mday, hour, min, sec, out);
	if (out->lo > c->now + 86400)
		local_span(c, year - 1, mon, mday, hour, min, sec, out);
}

static void exact(time_t t, struct span *out)
{
	out->lo = out->hi = t;
}

/* "HH:MM:SS" at b[p]; false unless well-formed. */
static bool clock_at(const char *b, size_t n, size_t p, int *hour, int *min, int *sec)
{
	if (n < p + 8 || !digits(b + p, 2) || b[p + 2] != ':' || !digits(b + p + 3, 2) ||
	    b[p + 5] != ':' || !digits(b + p + 6, 2))
		return false;
	*hour = num2(b + p);
	*min = num2(b + p + 3);
	*sec = num2(b + p + 6);
	return *hour <= 23 && *min <= 59 && *sec <= 60;
}

static bool date_ok(int mon, int mday)
{
	return mon >= 1 && mon <= 12 && mday >= 1 && mday <= 31;
}

/* After "HH:MM:SS" at b[p]: a fraction (",976", ".123456") and a zone ("Z", "+08:00",
 * "-0500", " +0000"). *offset_s is the zone's offset east of UTC; false: no zone (local). */
static bool zone_after(const char *b, size_t n, size_t p, long *offset_s)
{
	if (p < n && (b[p] == '.' || b[p] == ',') && p + 1 < n && is_digit(b[p + 1])) {
		p++;
		while (p < n && is_digit(b[p]))
			p++;
	}
	if (p < n && b[p] == 'Z') {
		*offset_s = 0;
		return p + 1 >= n || !is_alnum(b[p + 1]);
	}
	if (p + 1 < n && b[p] == ' ' && (b[p + 1] == '+' || b[p + 1] == '-'))
		p++; /* "2026-12-01 03:47:24 +0000" (gunicorn) */
	if (p + 5 <= n && (b[p] == '+' || b[p] == '-') && digits(b + p + 1, 2)) {
		size_t q = p + 3;
		if (q < n && b[q] == ':')
			q++;
		if (q + 2 > n || !digits(b + q, 2) || (q + 2 < n && is_alnum(b[q + 2])))
			return false;
		long off = num2(b + p + 1) * 3600L + num2(b + q) * 60L;
		if (off > 18 * 3600)
			return false;
		*offset_s = b[p] == '-' ? -off : off;
		return true;
	}
	return false;
}

static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
				     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

/* A timestamp starting at b[p], in one of the forms of pvg_line_head_parse. */
static bool time_at(const char *b, size_t n, size_t p, const struct clock *c, struct span *out)
{
	int hour, min, sec;
	/* ISO 8601 / Python asctime / SGLang: "2026-12-01 03:47:24,976", "2026-12-01T03:47:24Z",
	 * "2026/12/01 03:47:24" */
	if (n >= p + 19 && digits(b + p, 4) && (b[p + 4] == '-' || b[p + 4] == '/') &&
	    digits(b + p + 5, 2) && b[p + 7] == b[p + 4] && digits(b + p + 8, 2) &&
	    (b[p + 10] == ' ' || b[p + 10] == 'T') && clock_at(b, n, p + 11, &hour, &min, &sec)) {
		int year = (b[p] - '0') * 1000 + (b[p + 1] - '0') * 100 + num2(b + p + 2);
		int mon = num2(b + p + 5), mday = num2(b + p + 8);
		if (!date_ok(mon, mday) || year < 1970)
			return false;
		long off;
		if (zone_after(b, n, p + 19, &off))
			exact(utc_time(year, mon, mday, hour, min, sec) - off, out);
		else
			local_span(c, year, mon, mday, hour, min, sec, out);
		return true;
	}
	/* the forms without a year never start inside a longer date or number */
	if (p > 0 && (b[p - 1] == '-' || b[p - 1] == '/' || b[p - 1] == ':' || b[p - 1] == '.'))
		return false;
	/* vLLM: "11-29 12:10:25" (after its level word) */
	if (n >= p + 14 && digits(b + p, 2) && b[p + 2] == '-' && digits(b + p + 3, 2) &&
	    b[p + 5] == ' ' && clock_at(b, n, p + 6, &hour, &min, &sec)) {
		int mon = num2(b + p), mday = num2(b + p + 3);
		if (!date_ok(mon, mday))
			return false;
		local_span_no_year(c, mon, mday, hour, min, sec, out);
		return true;
	}
	/* glog: "I1201 03:47:24.976543" */
	if (n >= p + 14 && (b[p] == 'I' || b[p] == 'W' || b[p] == 'E' || b[p] == 'F') &&
	    digits(b + p + 1, 4) && b[p + 5] == ' ' && clock_at(b, n, p + 6, &hour, &min, &sec)) {
		int mon = num2(b + p + 1), mday = num2(b + p + 3);
		if (!date_ok(mon, mday))
			return false;
		local_span_no_year(c, mon, mday, hour, min, sec, out);
		return true;
	}
	/* syslog: "Dec  1 03:47:24", "Dec 11 03:47:24" */
	if (n >= p + 15 && b[p + 3] == ' ') {
		int mon = 0;
		for (int i = 0; i < 12 && !mon; i++)
			if (memcmp(b + p, months[i], 3) == 0)
				mon = i + 1;
		size_t d = p + 4;
		if (!mon)
			return false;
		int mday;
		if (b[d] == ' ' && is_digit(b[d + 1]))
			mday = b[d + 1] - '0';
		else if (digits(b + d, 2))
			mday = num2(b + d);
		else
			return false;
		if (b[d + 2] != ' ' || !clock_at(b, n, d + 3, &hour, &min, &sec) || !date_ok(mon, mday))
			return false;
		local_span_no_year(c, mon, mday, hour, min, sec, out);
		return true;
	}
	return false;
}

/* A pid at b[p]: "pid=N", "pid N", "pid:N" (vLLM's "(EngineCore_DP0 pid=N)", Ray's
 * "(MyActor pid=N, ip=...)", "[serve pid=N]"), or a bracket holding only digits ("[N]",
 * syslog's "prog[N]:", gunicorn's "[N]"). */
static bool pid_at(const char *b, size_t n, size_t p, pid_t *out, bool *remote)
{
	size_t d;
	if (p + 4 <= n && (memcmp(b + p, "pid", 3) == 0 || memcmp(b + p, "PID", 3) == 0) &&
	    (p == 0 || !is_alnum(b[p - 1]))) {
		d = p + 3;
		if (d < n && (b[d] == '=' || b[d] == ':' || b[d] == ' '))
			d++;
		else
			return false;
		while (d < n && b[d] == ' ')
			d++;
	} else if (b[p] == '[') {
		d = p + 1;
	} else {
		return false;
	}
	size_t e = d;
	long v = 0;
	while (e < n && is_digit(b[e]) && e - d < 9)
		v = v * 10 + (b[e++] - '0');
	if (e == d || v < 1)
		return false;
	if (b[p] == '[' ? (e >= n || b[e] != ']') : (e < n && is_alnum(b[e])))
		return false;
	/* Ray's driver names a worker of another node with its address:
	 * "(RayWorkerWrapper pid=N, ip=10.0.0.2)"; another qualifier there may say the same in
	 * words this parser does not know, so such a pid is not taken */
	*remote = b[p] != '[' && n - e > 5 && memcmp(b + e, ", ip=", 5) == 0;
	if (!*remote && b[p] != '[' && n - e > 2 && b[e] == ',' && b[e + 1] == ' ' &&
	    memchr(b + e + 2, '=', n - e - 2))
		return false;
	*out = (pid_t)v;
	return true;
}

/* How far into a line its head may reach: pids and times further on are message text. */
#define HEAD_MAX 192

void pvg_line_head_parse(const char *line, size_t len, time_t now, struct pvg_line_head *h)
{
	pvg_line_head_parse_fmt(NULL, line, len, now, h);
}

/* The text of group 1 of re in b (NUL-terminated), into out; false when re does not match. */
static bool group_of(const regex_t *re, const char *b, char *out, size_t size)
{
	regmatch_t m[2];
	if (regexec(re, b, 2, m, 0) != 0 || m[1].rm_so < 0)
		return false;
	size_t l = (size_t)(m[1].rm_eo - m[1].rm_so);
	if (l == 0 || l >= size)
		return false;
	memcpy(out, b + m[1].rm_so, l);
	out[l] = '\0';
	return true;
}

static bool own_pid(const struct pvg_line_format *f, const char *b, pid_t *pid)
{
	char t[24];
	if (!group_of(&f->pid_re, b, t, sizeof(t)))
		return false;
	char *end;
	errno = 0;
	long v = strtol(t, &end, 10);
	if (*end || errno || v <= 0 || v > 4194304 || !is_digit(t[0]))
		return false;
	*pid = (pid_t)v;
	return true;
}

static bool own_time(const struct pvg_line_format *f, const char *b, const struct clock *c,
		     struct span *out)
{
	char t[96];
	if (!group_of(&f->time_re, b, t, sizeof(t)))
		return false;
	/* fields the format does not set are told apart from those it does */
	struct tm tm = { .tm_year = INT_MIN, .tm_mday = 1, .tm_isdst = -1 };
	const char *end = strptime(t, f->time_format, &tm);
	if (!end || *end)
		return false;
	bool zone = strstr(f->time_format, "%z") != NULL;
	if (tm.tm_year == INT_MIN) {
		if (zone)
			return false; /* an offset without a year: no exact instant */
		local_span_no_year(c, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
				   out);
		return true;
	}
	if (zone) {
		long off = tm.tm_gmtoff;
		exact(utc_time(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			       tm.tm_sec) - off, out);
	} else {
		local_span(c, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			   tm.tm_sec, out);
	}
	return true;
}

void pvg_line_head_parse_fmt(const struct pvg_line_format *fmt, const char *line, size_t len,
			     time_t now, struct pvg_line_head *h)
{
	pvg_line_head_parse_in(fmt, NULL, line, len, now, h);
}

void pvg_line_head_parse_in(const struct pvg_line_format *fmt, const struct pvg_line_zone *zone,
			    const char *line, size_t len, time_t now, struct pvg_line_head *h)
{
	const struct clock c = { now, zone };
	struct span t;
	char b[HEAD_MAX];
	size_t n = 0;
	memset(h, 0, sizeof(*h));
	/* the head without colour codes (vLLM colours its process prefix) */
	for (size_t i = 0; i < len && n < sizeof(b); i++) {
		if (line[i] == '\x1b' && i + 1 < len && line[i + 1] == '[') {
			i += 2;
			while (i < len && !((unsigned char)line[i] >= 0x40 && (unsigned char)line[i] <= 0x7e))
				i++;
			continue;
		}
		b[n++] = line[i];
	}
	if (fmt && (fmt->has_pid || fmt->has_time)) {
		char z[HEAD_MAX + 1];
		memcpy(z, b, n);
		z[n] = '\0';
		if (fmt->has_pid && own_pid(fmt, z, &h->pid))
			h->has_pid = true;
		if (fmt->has_time && own_time(fmt, z, &c, &t)) {
			h->has_time = true;
			h->time = t.lo;
			h->time_hi = t.hi;
		}
	}
	/* the leftmost pid and the leftmost timestamp, each starting at a word boundary */
	for (size_t p = 0; p < n && !(h->has_pid && h->has_time); p++) {
		if (p > 0 && is_alnum(b[p - 1]) && b[p] != '[')
			continue;
		if (!h->has_time && time_at(b, n, p, &c, &t)) {
			h->has_time = true;
			h->time = t.lo;
			h->time_hi = t.hi;
			continue;
		}
		if (!h->has_pid && pid_at(b, n, p, &h->pid, &h->remote))
			h->has_pid = true;
	}
}

static int compile_one(regex_t *re, const char *what, const char *pattern, struct pvg_msg *why)
{
	int r = regcomp(re, pattern, REG_EXTENDED);
	if (r != 0) {
		char e[256];
		regerror(r, re, e, sizeof(e));
		pvg_msg_set(why, NULL, "%s is not a POSIX extended regular expression: %s", what, e);
		return -EINVAL;
	}
	if (re->re_nsub != 1) {
		pvg_msg_set(why, NULL, "%s needs exactly one group (parentheses) around the %s; it "
			    "has %zu", what, strcmp(what, "pid_pattern") == 0 ? "pid" : "timestamp",
			    re->re_nsub);
		regfree(re);
		return -EINVAL;
	}
	return 0;
}

int pvg_line_format_compile(struct pvg_line_format *f, const char *pid_pattern,
			    const char *time_pattern, const char *time_format, struct pvg_msg *why)
{
	memset(f, 0, sizeof(*f));
	if (!time_pattern != !time_format) {
		pvg_msg_set(why, NULL, "%s", time_pattern
			    ? "time_pattern needs time_format (how strptime reads the timestamp)"
			    : "time_format needs time_pattern (where the timestamp is)");
		return -EINVAL;
	}
	if (time_format && !strchr(time_format, '%')) {
		pvg_msg_set(why, NULL, "time_format \"%s\" has no strptime conversion (%%Y, %%H, ...)",
			    time_format);
		return -EINVAL;
	}
	if (pid_pattern) {
		if (compile_one(&f->pid_re, "pid_pattern", pid_pattern, why) < 0)
			return -EINVAL;
		f->has_pid = true;
	}
	if (time_pattern) {
		if (compile_one(&f->time_re, "time_pattern", time_pattern, why) < 0) {
			pvg_line_format_clear(f);
			return -EINVAL;
		}
		f->has_time = true;
		f->time_format = pvg_strdup(time_format);
	}
	return 0;
}

void pvg_line_format_clear(struct pvg_line_format *f)
{
	if (f->has_pid)
		regfree(&f->pid_re);
	if (f->has_time)
		regfree(&f->time_re);
	free(f->time_format);
	memset(f, 0, sizeof(*f));
}

/* Is the line's time at or after the service's start? */
enum when { AFTER, BEFORE, UNDECIDED };

static enum when when_vs_start(const struct pvg_line_head *h, const struct timespec *start)
{
	if (h->runtime_time) {
		/* the runtime's clock, to the nanosecond; the start is exact to a clock tick and
		 * truncated, so a line of the live service is never before it */
		int64_t s = (int64_t)start->tv_sec * 1000000000 + start->tv_nsec;
		return h->time_ns >= s ? AFTER : BEFORE;
	}
	if (h->time >= start->tv_sec)
		return AFTER;
	return h->time_hi < start->tv_sec ? BEFORE : UNDECIDED;
}

enum pvg_attribution pvg_attribute(const struct pvg_line_head *h,
				   const struct pvg_service_view *view, bool file_after_start)
{
	enum when w = h->has_time ? when_vs_start(h, &view->start) : AFTER;
	if (h->has_pid) {
		/* another node's pid, never a process of this node's tree, whatever its number */
		if (h->remote || !view->in_tree(view->opaque, h->pid))
			return PVG_ATTR_FOREIGN_PID;
		/* a reused pid: the same number written by an earlier run */
		if (w == BEFORE)
			return PVG_ATTR_BEFORE_START;
		/* a file created after the start holds only lines written since */
		if (w == UNDECIDED)
			return file_after_start ? PVG_ATTR_LIVE : PVG_ATTR_UNDECIDED;
		return PVG_ATTR_LIVE;
	}
	if (h->has_time)
		return w == AFTER ? PVG_ATTR_LIVE
		       : w == BEFORE ? PVG_ATTR_BEFORE_START
		       : file_after_start ? PVG_ATTR_LIVE
					  : PVG_ATTR_UNDECIDED;
	return file_after_start ? PVG_ATTR_LIVE : PVG_ATTR_UNKNOWN;
}

/* ---- the scan --------------------------------------------------------------------------------- */

/*
 * Substring search that compares the needle's first and last bytes at 32 (AVX2) or 16 (SSE2)
 * positions at once and checks only the candidates (W. Muła's "SIMD-friendly" search); it
 * runs several times faster than memmem on text, where most windows fail on the two bytes.
 */
#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) static const char *find_avx2(const char *h, size_t n,
								 const char *needle, size_t k)
{
	const __m256i first = _mm256_set1_epi8(needle[0]), last = _mm256_set1_epi8(needle[k - 1]);
	size_t i = 0;
	for (; i + k - 1 + 32 <= n; i += 32) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(h + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(h + i + k - 1));
		unsigned mask = (unsigned)_mm256_movemask_epi8(
			_mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, last)));
		while (mask) {
			unsigned bit = (unsigned)__builtin_ctz(mask);
			if (memcmp(h + i + bit + 1, needle + 1, k - 2) == 0)
				return h + i + bit;
			mask &= mask - 1;
		}
	}
	return memmem(h + i, n - i, needle, k);
}

static const char *find_sse2(const char *h, size_t n, const char *needle, size_t k)
{
	const __m128i first = _mm_set1_epi8(needle[0]), last = _mm_set1_epi8(needle[k - 1]);
	size_t i = 0;
	for (; i + k - 1 + 16 <= n; i += 16) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(h + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(h + i + k - 1));
		unsigned mask = (unsigned)_mm_movemask_epi8(
			_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));
		while (mask) {
			unsigned bit = (unsigned)__builtin_ctz(mask);
			if (memcmp(h + i + bit + 1, needle + 1, k - 2) == 0)
				return h + i + bit;
			mask &= mask - 1;
		}
	}
	return memmem(h + i, n - i, needle, k);
}
#endif

static const char *find(const char *h, size_t n, const char *needle, size_t k)
{
#if defined(__x86_64__)
	static int avx2 = -1;
	if (avx2 < 0)
		avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
	if (k >= 2 && n >= k)
		return avx2 ? find_avx2(h, n, needle, k) : find_sse2(h, n, needle, k);
#endif
	return memmem(h, n, needle, k);
}

void pvg_marker_scan_init(struct pvg_marker_scan *s)
{
	memset(s, 0, sizeof(*s));
}

static void sample_clear(struct pvg_marker_sample *m)
{
	free(m->text);
	m->text = NULL;
}

void pvg_marker_scan_done(struct pvg_marker_scan *s)
{
	free(s->require_matched);
	free(s->require_not_selected);
	free(s->require_unattributed);
	free(s->require_unattr_first);
	free(s->fact_live);
	free(s->fact_unattributed);
	free(s->fact_attr);
	free(s->forbid_live);
	free(s->forbid_unattributed);
	free(s->require_undecided);
	free(s->fact_undecided);
	free(s->forbid_undecided);
	free(s->cont_forbid_seen);
	sample_clear(&s->not_selected);
	sample_clear(&s->forbidden);
	sample_clear(&s->unmatched);
	sample_clear(&s->unattributed);
	for (size_t i = 0; i < PVG_MARKER_EVENTS; i++) {
		free(s->event[i].text);
		s->event[i].text = NULL;
	}
}

static void prepare(struct pvg_marker_scan *s)
{
	if (s->require_matched)
		return;
	size_t nr = s->n_require + 1, nf = s->n_facts + 1, nb = s->n_forbid + 1;
	s->require_matched = pvg_xcalloc(nr, sizeof(size_t));
	s->require_not_selected = pvg_xcalloc(nr, sizeof(size_t));
	s->require_unattributed = pvg_xcalloc(nr, sizeof(size_t));
	s->require_unattr_first = pvg_xcalloc(nr, sizeof(*s->require_unattr_first));
	s->fact_live = pvg_xcalloc(nf, sizeof(size_t));
	s->fact_unattributed = pvg_xcalloc(nf, sizeof(size_t));
	s->fact_attr = pvg_xcalloc(nf, sizeof(*s->fact_attr));
	s->forbid_live = pvg_xcalloc(nb, sizeof(size_t));
	s->forbid_unattributed = pvg_xcalloc(nb, sizeof(size_t));
	s->require_undecided = pvg_xcalloc(nr, sizeof(size_t));
	s->fact_undecided = pvg_xcalloc(nf, sizeof(size_t));
	s->forbid_undecided = pvg_xcalloc(nb, sizeof(size_t));
	s->cont_forbid_seen = pvg_xcalloc(nb, sizeof(bool));
	s->max_pattern = s->prefix ? strlen(s->prefix) : 1;
	for (size_t i = 0; i < s->n_facts; i++)
		if (strlen(s->facts[i]) > s->max_pattern)
			s->max_pattern = strlen(s->facts[i]);
	for (size_t i = 0; i < s->n_forbid; i++)
		if (strlen(s->forbid[i]) > s->max_pattern)
			s->max_pattern = strlen(s->forbid[i]);
	for (size_t i = 0; i < s->n_events; i++)
		if (strlen(s->events[i]) > s->max_pattern)
			s->max_pattern = strlen(s->events[i]);
	if (s->max_pattern > PVG_MARKER_BUF / 4)
		s->max_pattern = PVG_MARKER_BUF / 4;
}

static void sample_set(struct pvg_marker_sample *m, const char *line, size_t len, uint64_t off,
		       enum pvg_attribution attr)
{
	if (m->text)
		return;
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	_cleanup_free_ char *t = pvg_utf8_sanitize(line, len > PVG_MARKER_SAMPLE ? PVG_MARKER_SAMPLE : len);
	m->text = len > PVG_MARKER_SAMPLE ? pvg_asprintf("%s…", t) : TAKE_PTR(t);
	m->offset = off;
	m->attr = attr;
}

/* Does marker m match entry e on every key other than "selected"? */
static bool match_others(const struct pvg_marker *m, const struct pvg_require *e,
			 const char **want_selected)
{
	*want_selected = NULL;
	for (size_t k = 0; k < e->n; k++) {
		if (strcmp(e->kv[k].key, "selected") == 0) {
			*want_selected = e->kv[k].value;
			continue;
		}
		if (!value_is(pvg_marker_get(m, e->kv[k].key), e->kv[k].value))
			return false;
	}
	return true;
}

static void marker_line(struct pvg_marker_scan *s, const char *line, size_t len, size_t at,
			enum pvg_attribution attr, uint64_t off)
{
	s->attr_count[attr]++;
	struct pvg_marker m;
	size_t plen = strlen(s->prefix);
	int r = pvg_marker_parse(line + at + plen, len - at - plen, &m);
	if (attr != PVG_ATTR_LIVE) {
		s->markers_unattributed++;
		sample_set(&s->unattributed, line, len, off, attr);
		if (r == 0)
			for (size_t e = 0; e < s->n_require; e++) {
				const char *want;
				const struct pvg_marker_field *sel = pvg_marker_get(&m, "selected");
				if (!match_others(&m, &s->require[e], &want) ||
				    (want && !value_is(sel, want)) || value_is_false(sel))
					continue;
				if (s->require_unattributed[e]++ == 0) {
					s->require_unattr_first[e].offset = off;
					s->require_unattr_first[e].attr = attr;
				}
				s->require_undecided[e] += attr == PVG_ATTR_UNDECIDED;
			}
		return;
	}
	if (r < 0) {
		s->markers_unparseable++;
		return;
	}
	s->markers_live++;
	const struct pvg_marker_field *sel = pvg_marker_get(&m, "selected");
	bool any = false, fell_back = false;
	for (size_t e = 0; e < s->n_require; e++) {
		const char *want;
		if (!match_others(&m, &s->require[e], &want))
			continue;
		if (value_is_false(sel) || (want && sel && !value_is(sel, want))) {
			s->require_not_selected[e]++;
			fell_back = true;
			sample_set(&s->not_selected, line, len, off, attr);
		} else if (!want || value_is(sel, want)) {
			s->require_matched[e]++;
			any = true;
		}
	}
	if (s->n_require == 0 && !value_is_false(sel))
		any = true;
	if (any)
		s->matched++;
	else if (!fell_back)
		sample_set(&s->unmatched, line, len, off, attr);
}

/* The line's head, at offset off of the text scanned: in a runtime's log the service's own
 * head gives the pid, the runtime's record the time. */
static enum pvg_attribution line_attr_head(struct pvg_marker_scan *s, const char *ls,
					   const char *le, uint64_t off, struct pvg_line_head *out)
{
	struct pvg_line_head h;
	pvg_line_head_parse_in(s->format, s->zone, ls, (size_t)(le - ls), s->now, &h);
	const struct pvg_ctrlog_line *l = s->ctr ? pvg_ctrlog_line_at(s->ctr, off) : NULL;
	if (l && l->time_ns != PVG_CTRLOG_NO_TIME) {
		h.has_time = h.runtime_time = true;
		h.time_ns = l->time_ns;
		h.time = h.time_hi = (time_t)(l->time_ns / 1000000000 -
					      (l->time_ns % 1000000000 < 0));
	}
	/* another process's line written while the service runs (not an earlier run's) */
	s->line_recent = h.has_time && (h.runtime_time
		? h.time_ns >= (int64_t)s->view->start.tv_sec * 1000000000 + s->view->start.tv_nsec
		: h.time >= s->view->start.tv_sec);
	if (out)
		*out = h;
	return pvg_attribute(&h, s->view, s->file_after_start);
}

static enum pvg_attribution line_attr(struct pvg_marker_scan *s, const char *ls, const char *le,
				      uint64_t off)
{
	return line_attr_head(s, ls, le, off, NULL);
}

/* "takes 28.96 s" / "took 0.512 s" after the pattern: how long the work it reports ran. */
static double line_took(const char *p, const char *le)
{
	static const char *const words[] = { "takes ", "took " };
	for (size_t w = 0; w < ARRAY_SIZE(words); w++) {
		size_t k = strlen(words[w]);
		const char *q = p < le ? memmem(p, (size_t)(le - p), words[w], k) : NULL;
		if (!q)
			continue;
		q += k;
		char num[32];
		size_t n = 0;
		while (q + n < le && n < sizeof(num) - 1 && (is_digit(q[n]) || q[n] == '.'))
			n++;
		if (!n || q + n >= le || q[n] != ' ' || q + n + 1 >= le || q[n + 1] != 's')
			continue;
		memcpy(num, q, n);
		num[n] = '\0';
		char *end;
		double d = strtod(num, &end);
		if (*end == '\0' && d >= 0 && d < 1e7)
			return d;
	}
	return -1;
}

/* A live event line into the ring of the last PVG_MARKER_EVENTS. */
static void event_line(struct pvg_marker_scan *s, size_t pattern, const char *ls, const char *hit,
		       const char *le, const struct pvg_line_head *h, uint64_t off)
{
	s->events_live++;
	size_t at = (s->events_first + s->events_kept) % PVG_MARKER_EVENTS;
	if (s->events_kept == PVG_MARKER_EVENTS)
		s->events_first = (s->events_first + 1) % PVG_MARKER_EVENTS;
	else
		s->events_kept++;
	struct pvg_log_event *e = &s->event[at];
	free(e->text);
	memset(e, 0, sizeof(*e));
	size_t len = (size_t)(le - ls);
	while (len && (ls[len - 1] == '\r' || ls[len - 1] == '\n'))
		len--;
	_cleanup_free_ char *t = pvg_utf8_sanitize(ls, len > PVG_MARKER_SAMPLE ? PVG_MARKER_SAMPLE : len);
	e->text = len > PVG_MARKER_SAMPLE ? pvg_asprintf("%s…", t) : TAKE_PTR(t);
	e->pattern = pattern;
	e->offset = off;
	e->took_s = line_took(hit, le);
	e->has_pid = h->has_pid && !h->remote;
	e->pid = h->pid;
	e->has_time = h->has_time;
	if (h->runtime_time) {
		e->lo_ns = e->hi_ns = h->time_ns;
	} else if (h->has_time) {
		e->lo_ns = (int64_t)h->time * 1000000000;
		e->hi_ns = ((int64_t)h->time_hi + 1) * 1000000000 - 1;
	}
}

/* The log file's offset of the line at offset off of the text scanned. */
static uint64_t file_offset(const struct pvg_marker_scan *s, uint64_t off)
{
	const struct pvg_ctrlog_line *l = s->ctr ? pvg_ctrlog_line_at(s->ctr, off) : NULL;
	return s->ctr ? (l ? l->file : 0) : off;
}

/*
 * Complete lines in [start, end) (end is just after a '\n', or the end of the file). When
 * cont is set, the first line is the tail of an overlong line whose head was seen before.
 */
static void scan_region(struct pvg_marker_scan *s, const char *start, const char *end,
			bool cont, uint64_t base)
{
	for (int kind = 0; kind < 4; kind++) {
		size_t n = kind == 0 ? (s->prefix ? 1 : 0) : kind == 1 ? s->n_facts
							 : kind == 2 ? s->n_forbid
								     : s->n_events;
		for (size_t i = 0; i < n; i++) {
			const char *pat = kind == 0 ? s->prefix : kind == 1 ? s->facts[i]
							 : kind == 2 ? s->forbid[i]
								     : s->events[i];
			size_t plen = strlen(pat);
			if (plen == 0 || (kind == 1 && s->fact_live[i]))
				continue;
			const char *p = start;
			while (p < end) {
				const char *hit = find(p, (size_t)(end - p), pat, plen);
				if (!hit)
					break;
				const char *ls = memrchr(start, '\n', (size_t)(hit - start));
				ls = ls ? ls + 1 : start;
				const char *le = memchr(hit, '\n', (size_t)(end - hit));
				le = le ? le : end;
				bool in_cont = cont && ls == start;
				/* the head is what precedes the pattern: a pid or time after it is
				 * the message's own text */
				uint64_t at = base + (uint64_t)(ls - start);
				struct pvg_line_head head = { 0 };
				enum pvg_attribution a = in_cont ? s->cont_attr
								 : line_attr_head(s, ls, hit, at, &head);
				bool live = a == PVG_ATTR_LIVE;
				if (kind == 3) {
					/* the tail of an overlong line: its head (and time) was
					 * in an earlier block, and the event was counted there */
					if (!in_cont && live)
						event_line(s, i, ls, hit, le, &head, file_offset(s, at));
					else if (!in_cont)
						s->events_unattributed++;
				} else if (kind == 0) {
					if (in_cont) {
						/* its fields began in an earlier block: unreadable */
						if (!s->cont_marker_seen) {
							s->cont_marker_seen = true;
							s->attr_count[a]++;
							if (live)
								s->markers_unparseable++;
							else
								s->markers_unattributed++;
						}
					} else {
						marker_line(s, ls, (size_t)(le - ls), (size_t)(hit - ls), a,
							    file_offset(s, at));
						if (a == PVG_ATTR_FOREIGN_PID && s->line_recent)
							s->markers_foreign_recent++;
					}
				} else if (kind == 1) {
					if (live) {
						s->fact_live[i]++;
						break;
					}
					if (s->fact_unattributed[i]++ == 0)
						s->fact_attr[i] = a;
					s->fact_undecided[i] += a == PVG_ATTR_UNDECIDED;
				} else if (!(in_cont && s->cont_forbid_seen[i])) {
					if (in_cont)
						s->cont_forbid_seen[i] = true;
					if (live) {
						s->forbid_live[i]++;
						sample_set(&s->forbidden, ls, (size_t)(le - ls),
							   file_offset(s, at), a);
					} else {
						s->forbid_unattributed[i]++;
						s->forbid_undecided[i] += a == PVG_ATTR_UNDECIDED;
					}
				}
				p = le + 1;
			}
		}
	}
}

/* Every pattern is searched separately; doing so per slice of ~256 KiB (cut at line ends)
 * keeps the slice in the CPU cache from the first pattern's search to the last's. */
#define SLICE (256u << 10)

static void scan_lines(struct pvg_marker_scan *s, const char *start, const char *end, bool cont,
		       uint64_t base)
{
	for (const char *p = start; p < end;) {
		const char *q = end;
		if ((size_t)(end - p) > SLICE) {
			const char *nl = memrchr(p, '\n', SLICE);
			if (!nl)
				nl = memchr(p + SLICE, '\n', (size_t)(end - p - SLICE));
			q = nl ? nl + 1 : end;
		}
		scan_region(s, p, q, cont, base + (uint64_t)(p - start));
		cont = false;
		p = q;
	}
}

/* The head block of an overlong line: attribute it once, then treat it like a tail. */
static void begin_overlong(struct pvg_marker_scan *s, const char *start, const char *end,
			   uint64_t base)
{
	s->overlong_lines++;
	s->cont = true;
	s->cont_attr = line_attr(s, start, end, base);
	s->cont_marker_seen = false;
	memset(s->cont_forbid_seen, 0, (s->n_forbid + 1) * sizeof(bool));
}

/* Where the log's bytes come from: a file or memory. A file is read one data extent at a
 * time (SEEK_DATA/SEEK_HOLE): a hole holds no bytes anyone wrote, so it holds no log line,
 * and a sparse terabyte costs two seeks, not a terabyte of zeros. */
struct source {
	int fd;
	const char *mem;
	size_t len, off;
	bool plain_reads;  /* the file cannot tell its holes (a pipe): read() as it comes */
	uint64_t pos;      /* offset of the next read */
	uint64_t data_end; /* end of the data extent pos is in */
	uint64_t hole;     /* a hole of this many bytes ends at pos, not yet taken by the scan */
	uint64_t holes;    /* bytes skipped in holes */
};

static void source_open(struct source *src, int fd, const char *mem, size_t len)
{
	*src = (struct source){ .fd = fd, .mem = mem, .len = len };
	off_t at = fd >= 0 ? lseek(fd, 0, SEEK_CUR) : -1;
	src->plain_reads = at < 0;
	src->pos = src->data_end = at < 0 ? 0 : (uint64_t)at;
}

/* Finds the data extent at or after pos. 1: one is there (a hole before it is in
 * src->hole), 0: only a hole is left (the end), -errno. */
static int source_next_extent(struct source *src)
{
	off_t d = lseek(src->fd, (off_t)src->pos, SEEK_DATA);
	if (d < 0) {
		if (errno == ENXIO)
			return 0;
		/* a file system that cannot say: the whole file is data */
		src->plain_reads = true;
		return lseek(src->fd, (off_t)src->pos, SEEK_SET) < 0 ? -errno : 1;
	}
	off_t h = lseek(src->fd, d, SEEK_HOLE);
	if (h < 0)
		return -errno;
	if ((uint64_t)d > src->pos) {
		src->hole += (uint64_t)d - src->pos;
		src->holes += (uint64_t)d - src->pos;
	}
	src->pos = (uint64_t)d;
	src->data_end = (uint64_t)h;
	return 1;
}

/* Bytes read into dst; 0 at the end, or with src->hole set: a hole came first, and the
 * caller ends the line before it and then reads on. */
static ssize_t source_read(struct source *src, char *dst, size_t cap)
{
	if (src->fd >= 0) {
		if (!src->plain_reads && src->pos >= src->data_end) {
			int r = source_next_extent(src);
			if (r <= 0)
				return r;
			if (src->hole)
				return 0;
		}
		if (!src->plain_reads && src->data_end - src->pos < cap)
			cap = (size_t)(src->data_end - src->pos);
		for (;;) {
			ssize_t r = src->plain_reads ? read(src->fd, dst, cap)
						     : pread(src->fd, dst, cap, (off_t)src->pos);
			if (r >= 0 || errno != EINTR) {
				if (r < 0)
					return -errno;
				src->pos += (uint64_t)r;
				/* a file cut shorter than its extent said: its end is here */
				if (r == 0)
					src->data_end = src->pos;
				return r;
			}
		}
	}
	size_t n = src->len - src->off;
	if (n > cap)
		n = cap;
	memcpy(dst, src->mem + src->off, n);
	src->off += n;
	return (ssize_t)n;
}

/* A runtime's log: its bytes (raw) and the decoder that turns them into the service's lines. */
#define CTR_LINES 65536

struct decoded {
	struct pvg_ctrlog dec;
	char *raw;
	size_t raw_have;
	bool raw_eof, finished;
};

/* Fills buf[*have..) with decoded text: 1 when it read or wrote something, 0 when nothing
 * could be added (the decoder waits for the scan to take lines), -errno. */
static int decode_more(struct pvg_marker_scan *s, struct source *src, struct decoded *d,
		       char *buf, size_t *have, bool *eof)
{
	if (src->hole) {
		/* the hole ends the record before it once the decoder has taken that record's
		 * bytes */
		if (d->raw_have == 0 && PVG_MARKER_BUF - *have >= PVG_CTRLOG_SLACK &&
		    d->dec.n_lines + 2 <= d->dec.cap_lines) {
			*have += pvg_ctrlog_hole(&d->dec, src->hole, buf + *have,
						 PVG_MARKER_BUF - *have);
			src->hole = 0;
			return 1;
		}
	} else if (!d->raw_eof && d->raw_have < PVG_MARKER_BUF) {
		ssize_t r = source_read(src, d->raw + d->raw_have, PVG_MARKER_BUF - d->raw_have);
		if (r < 0)
			return (int)r;
		if (r == 0 && !src->hole)
			d->raw_eof = true;
		d->raw_have += (size_t)r;
		s->bytes += (uint64_t)r;
	}
	size_t produced = 0;
	size_t used = pvg_ctrlog_decode(&d->dec, d->raw, d->raw_have, buf + *have,
					PVG_MARKER_BUF - *have, &produced);
	memmove(d->raw, d->raw + used, d->raw_have - used);
	d->raw_have -= used;
	*have += produced;
	if (d->raw_eof && d->raw_have == 0 && !d->finished &&
	    PVG_MARKER_BUF - *have >= PVG_CTRLOG_SLACK) {
		*have += pvg_ctrlog_finish(&d->dec, buf + *have, PVG_MARKER_BUF - *have);
		d->finished = true;
	}
	*eof = d->finished;
	return used || produced || !d->raw_have ? 1 : 0;
}

/* A container runtime's log: raw (taken) holds its first raw_have bytes; the decoded text
 * is scanned in blocks, each line's runtime time and file offset in the decoder's table. */
static int scan_decoded(struct pvg_marker_scan *s, struct source *src, char *raw, size_t raw_have,
			bool raw_eof, uint64_t raw_base)
{
	_cleanup_free_ char *raw_buf = raw;
	_cleanup_free_ char *buf = pvg_xcalloc(PVG_MARKER_BUF, 1);
	struct decoded d = { .raw = raw, .raw_have = raw_have, .raw_eof = raw_eof };
	pvg_ctrlog_init(&d.dec, s->log_kind, CTR_LINES);
	/* a hole before the first record: the records' offsets are the file's */
	(void)pvg_ctrlog_hole(&d.dec, raw_base, buf, PVG_MARKER_BUF);
	s->ctr = &d.dec;
	size_t have = 0;
	uint64_t base = 0; /* offset of buf[0] in the decoded text */
	bool eof = false;
	int r = 0;
	while (!eof || have) {
		if (!eof) {
			r = decode_more(s, src, &d, buf, &have, &eof);
			if (r < 0)
				break;
			if (r > 0 && !eof && have + PVG_CTRLOG_SLACK < PVG_MARKER_BUF)
				continue; /* fill the block */
			r = 0;
		}
		const char *nl = memrchr(buf, '\n', have);
		size_t done;
		if (nl || eof) {
			done = nl && !eof ? (size_t)(nl - buf) + 1 : have;
			scan_lines(s, buf, buf + done, s->cont, base);
			s->cont = false;
		} else {
			/* a full block without a line end: an overlong line (a decoder that
			 * cannot go on has a full block too) */
			if (!s->cont)
				begin_overlong(s, buf, buf + have, base);
			scan_region(s, buf, buf + have, true, base);
			/* keep the last bytes so a pattern across the cut is still seen */
			size_t keep = s->max_pattern > 1 ? s->max_pattern - 1 : 0;
			done = have > keep ? have - keep : 0;
		}
		memmove(buf, buf + done, have - done);
		have -= done;
		base += done;
		pvg_ctrlog_drop_before(s->ctr, base);
		if (eof && have == 0)
			break;
	}
	s->records = d.dec.records;
	s->records_joined = d.dec.joined;
	s->records_malformed = d.dec.malformed;
	pvg_ctrlog_done(&d.dec);
	s->ctr = NULL;
	return r;
}

/* The log is read in chunks of the read plan (util/hash.h: what stays in the reading core's
 * cache) and the complete lines of each chunk scanned while they are still there; the block
 * only decides what an overlong line is and how much is kept between reads. The first
 * bytes say whether it is a container runtime's log, which scan_decoded reads instead. */
static int scan_stream(struct pvg_marker_scan *s, int fd, const char *mem, size_t mem_len)
{
	prepare(s);
	struct source src;
	source_open(&src, fd, mem, mem_len);
	_cleanup_free_ char *buf = pvg_xcalloc(PVG_MARKER_BUF, 1);
	size_t chunk = pvg_read_plan_get()->chunk;
	size_t have = 0, done = 0;
	uint64_t base = src.pos; /* file offset of buf[0] */
	bool eof = false, detected = false;
	int r = 0;
	while (!eof || done < have) {
		bool hole = false;
		if (!eof) {
			size_t want = PVG_MARKER_BUF - have < chunk ? PVG_MARKER_BUF - have : chunk;
			ssize_t n = source_read(&src, buf + have, want);
			if (n < 0) {
				r = (int)n;
				break;
			}
			if (n == 0 && src.hole)
				hole = true;
			else if (n == 0)
				eof = true;
			have += (size_t)n;
			s->bytes += (uint64_t)n;
		}
		if (!detected) {
			if (hole && have == 0) {
				/* the log begins with a hole (truncated under its writer) */
				base += src.hole;
				src.hole = 0;
				continue;
			}
			/* a CRI head needs 64 bytes, or its line end (or the hole that ends it) */
			if (!eof && !hole && have < 64 && !memchr(buf, '\n', have))
				continue;
			detected = true;
			s->log_kind = pvg_ctrlog_detect(buf, have);
			if (s->log_kind != PVG_CTRLOG_PLAIN) {
				r = scan_decoded(s, &src, TAKE_PTR(buf), have, eof, base);
				break;
			}
		}
		if (hole) {
			/* the hole ends the line before it; nothing of it is kept */
			scan_lines(s, buf + done, buf + have, s->cont, base + done);
			s->cont = false;
			base += have + src.hole;
			have = done = 0;
			src.hole = 0;
			continue;
		}
		/* the complete lines read so far (all of it at the end) */
		const char *nl = have > done ? memrchr(buf + done, '\n', have - done) : NULL;
		if (nl || (eof && have > done)) {
			size_t upto = nl && !eof ? (size_t)(nl - buf) + 1 : have;
			scan_lines(s, buf + done, buf + upto, s->cont, base + done);
			s->cont = false;
			done = upto;
		} else if (have == PVG_MARKER_BUF && done == 0) {
			/* a full block without a line end: an overlong line */
			if (!s->cont)
				begin_overlong(s, buf, buf + have, base);
			scan_region(s, buf, buf + have, true, base);
			/* keep the last bytes so a pattern across the cut is still seen */
			size_t keep = s->max_pattern > 1 ? s->max_pattern - 1 : 0;
			done = have - keep;
			memmove(buf, buf + done, have - done);
			have -= done;
			base += done;
			done = 0;
			continue;
		}
		/* room for the next read: move the unfinished line to the front */
		if (have == PVG_MARKER_BUF || (have - done < chunk && have + chunk > PVG_MARKER_BUF) ||
		    (eof && done == have)) {
			memmove(buf, buf + done, have - done);
			have -= done;
			base += done;
			done = 0;
		}
		if (eof && have == 0)
			break;
	}
	s->hole_bytes = src.holes;
	return r;
}

int pvg_marker_scan_fd(struct pvg_marker_scan *s, int fd)
{
	return scan_stream(s, fd, NULL, 0);
}

int pvg_marker_scan_buffer(struct pvg_marker_scan *s, const char *bytes, size_t len)
{
	return scan_stream(s, -1, bytes, len);
}
