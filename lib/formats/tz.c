/* SPDX-License-Identifier: MIT */
/* TZif files and POSIX TZ rules; see tz.h. */
#include "formats/tz.h"

/* ---- calendar arithmetic (proleptic Gregorian, H. Hinnant's algorithms) ---------------------- */

int64_t pvg_days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *year, int *mon, int *mday)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*mday = (int)(doy - (153 * mp + 2) / 5 + 1);
	*mon = (int)(mp < 10 ? mp + 3 : mp - 9);
	*year = yoe + era * 400 + (*mon <= 2);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int64_t pvg_utc_from_fields(int year, int mon, int mday, int hour, int min, int sec)
{
	return pvg_days_from_civil(year, mon, mday) * 86400 + hour * 3600 + min * 60 + sec;
}

int pvg_year_of(int64_t utc, int32_t off)
{
	int64_t y;
	int m, d;
	civil_from_days(floor_div(utc + off, 86400), &y, &m, &d);
	return (int)y;
}

static bool leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
	static const int dim[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	return m == 2 && leap(y) ? 29 : dim[m - 1];
}

/* ---- POSIX TZ rules --------------------------------------------------------------------------- */

/* The UTC instant of a rule's date in year y, given in local time of offset off. */
static int64_t rule_instant(const struct pvg_tz_date *d, int64_t y, int32_t off)
{
	int64_t days;
	if (d->kind == 'J') {
		days = pvg_days_from_civil(y, 1, 1) + d->a - 1 + (leap(y) && d->a >= 60);
	} else if (d->kind == 'D') {
		days = pvg_days_from_civil(y, 1, 1) + d->a;
	} else {
		int64_t first = pvg_days_from_civil(y, d->a, 1);
		int wd1 = (int)((first % 7 + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
		int mday = 1 + (d->c - wd1 + 7) % 7 + (d->b - 1) * 7;
		while (mday > days_in_month(y, d->a))
			mday -= 7;
		days = first + mday - 1;
	}
	return days * 86400 + d->time - off;
}

static int32_t rule_offset(const struct pvg_tz_rule *r, int64_t utc)
{
	if (!r->has_dst)
		return r->std_off;
	int64_t y = pvg_year_of(utc, r->std_off);
	int64_t s = rule_instant(&r->start, y, r->std_off);
	int64_t e = rule_instant(&r->end, y, r->dst_off);
	bool dst = s < e ? (utc >= s && utc < e) : !(utc >= e && utc < s);
	return dst ? r->dst_off : r->std_off;
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A zone abbreviation: three or more letters, or <...> of letters, digits, '+' and '-'. */
static const char *tz_name(const char *p)
{
	const char *s = p;
	if (*p == '<') {
		p++;
		while (is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-')
			p++;
		if (*p != '>' || p - s < 4)
			return NULL;
		return p + 1;
	}
	while (is_alpha(*p))
		p++;
	return p - s >= 3 ? p : NULL;
}

/* [+-]hh[:mm[:ss]] with hh at most max_h; *secs signed as written. */
static const char *tz_hms(const char *p, int max_h, int32_t *secs)
{
	int sign = 1;
	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	int v[3] = { 0, 0, 0 };
	for (int i = 0; i < 3; i++) {
		if (i > 0) {
			if (*p != ':')
				break;
			p++;
		}
		if (!is_digit(*p))
			return NULL;
		int n = 0, k = 0;
		while (is_digit(*p) && k < 3) {
			n = n * 10 + (*p++ - '0');
			k++;
		}
		if (is_digit(*p) || (i > 0 && n > 59) || (i == 0 && n > max_h))
			return NULL;
		v[i] = n;
	}
	*secs = sign * (v[0] * 3600 + v[1] * 60 + v[2]);
	return p;
}

static const char *tz_num(const char *p, int lo, int hi, int *out)
{
	if (!is_digit(*p))
		return NULL;
	int n = 0;
	while (is_digit(*p)) {
		n = n * 10 + (*p++ - '0');
		if (n > hi)
			return NULL;
	}
	if (n < lo)
		return NULL;
	*out = n;
	return p;
}

static const char *tz_date(const char *p, struct pvg_tz_date *d)
{
	memset(d, 0, sizeof(*d));
	if (*p == 'J') {
		d->kind = 'J';
		p = tz_num(p + 1, 1, 365, &d->a);
	} else if (*p == 'M') {
		d->kind = 'M';
		p = tz_num(p + 1, 1, 12, &d->a);
		if (p && *p == '.')
			p = tz_num(p + 1, 1, 5, &d->b);
		else
			p = NULL;
		if (p && *p == '.')
			p = tz_num(p + 1, 0, 6, &d->c);
		else
			p = NULL;
	} else {
		d->kind = 'D';
		p = tz_num(p, 0, 365, &d->a);
	}
	if (!p)
		return NULL;
	d->time = 7200;
	if (*p == '/')
		p = tz_hms(p + 1, 167, &d->time);
	return p;
}

static int rule_parse(const char *p, struct pvg_tz_rule *r)
{
	memset(r, 0, sizeof(*r));
	int32_t v;
	if (!(p = tz_name(p)) || !(p = tz_hms(p, 24, &v)))
		return -EINVAL;
	r->std_off = -v;
	if (!*p)
		return 0;
	if (!(p = tz_name(p)))
		return -EINVAL;
	r->has_dst = true;
	r->dst_off = r->std_off + 3600;
	if (*p && *p != ',') {
		if (!(p = tz_hms(p, 24, &v)))
			return -EINVAL;
		r->dst_off = -v;
	}
	if (!*p) {
		/* no dates: the US rule, glibc's default without a posixrules file */
		r->start = (struct pvg_tz_date){ 'M', 3, 2, 0, 7200 };
		r->end = (struct pvg_tz_date){ 'M', 11, 1, 0, 7200 };
		return 0;
	}
	if (*p != ',' || !(p = tz_date(p + 1, &r->start)) || *p != ',' ||
	    !(p = tz_date(p + 1, &r->end)) || *p)
		return -EINVAL;
	return 0;
}

int pvg_tz_posix_parse(const char *s, struct pvg_tz *out)
{
	memset(out, 0, sizeof(*out));
	if (rule_parse(s, &out->rule) < 0)
		return -EINVAL;
	out->has_rule = true;
	return 0;
}

void pvg_tz_utc(struct pvg_tz *out)
{
	memset(out, 0, sizeof(*out));
}

void pvg_tz_clear(struct pvg_tz *z)
{
	free(z->trans);
	free(z->trans_type);
	free(z->type_off);
	memset(z, 0, sizeof(*z));
}

/* ---- TZif ------------------------------------------------------------------------------------- */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_counts {
	uint32_t isut, isstd, leap, time, type, chars;
	uint64_t size; /* of the data block after the header */
};

static int tzif_header(const unsigned char *p, size_t len, int tsize, struct tzif_counts *c)
{
	if (len < 44 || memcmp(p, "TZif", 4) != 0 ||
	    !(p[4] == 0 || p[4] == '2' || p[4] == '3' || p[4] == '4'))
		return -EINVAL;
	c->isut = be32(p + 20);
	c->isstd = be32(p + 24);
	c->leap = be32(p + 28);
	c->time = be32(p + 32);
	c->type = be32(p + 36);
	c->chars = be32(p + 40);
	if (c->type == 0 || c->type > 256 || c->chars == 0 || (c->isut && c->isut != c->type) ||
	    (c->isstd && c->isstd != c->type) || c->time > len || c->leap > len || c->chars > len)
		return -EINVAL;
	c->size = (uint64_t)c->time * (uint64_t)(tsize + 1) + (uint64_t)c->type * 6 + c->chars +
		  (uint64_t)c->leap * (uint64_t)(tsize + 4) + c->isstd + c->isut;
	if (c->size > len - 44)
		return -EINVAL;
	return 0;
}

int pvg_tzif_parse(const void *bytes, size_t len, struct pvg_tz *out)
{
	const unsigned char *p = bytes;
	memset(out, 0, sizeof(*out));
	struct tzif_counts c;
	if (tzif_header(p, len, 4, &c) < 0)
		return -EINVAL;
	int tsize = 4;
	const unsigned char *d = p + 44, *end = p + len;
	if (p[4] >= '2') {
		/* the 64-bit block follows the 32-bit one; only it is read */
		const unsigned char *h2 = d + c.size;
		if (tzif_header(h2, (size_t)(end - h2), 8, &c) < 0)
			return -EINVAL;
		tsize = 8;
		d = h2 + 44;
	}
	if (c.leap)
		return -ENOTSUP;
	const unsigned char *times = d, *idx = times + (size_t)c.time * (size_t)tsize;
	const unsigned char *types = idx + c.time;
	out->n_trans = c.time;
	out->n_types = c.type;
	out->trans = pvg_xcalloc(c.time + 1, sizeof(int64_t));
	out->trans_type = pvg_xcalloc(c.time + 1, 1);
	out->type_off = pvg_xcalloc(c.type, sizeof(int32_t));
	for (uint32_t i = 0; i < c.type; i++) {
		const unsigned char *t = types + 6 * (size_t)i;
		int32_t off = (int32_t)be32(t);
		if (off < -89999 || off > 93599 || t[4] > 1 || t[5] >= c.chars)
			goto bad;
		out->type_off[i] = off;
	}
	for (uint32_t i = 0; i < c.time; i++) {
		out->trans[i] = tsize == 8 ? be64(times + 8 * (size_t)i)
					   : (int64_t)(int32_t)be32(times + 4 * (size_t)i);
		out->trans_type[i] = idx[i];
		if (idx[i] >= c.type || (i > 0 && out->trans[i] <= out->trans[i - 1]))
			goto bad;
	}
	if (tsize == 8) {
		/* the footer: "\nTZ\n", the rule after the last transition (may be empty) */
		const unsigned char *f = d + c.size;
		if (f >= end || *f != '\n')
			goto bad;
		const unsigned char *nl = memchr(f + 1, '\n', (size_t)(end - f - 1));
		if (!nl || nl - f - 1 > 255)
			goto bad;
		char rule[256];
		memcpy(rule, f + 1, (size_t)(nl - f - 1));
		rule[nl - f - 1] = '\0';
		if (rule[0]) {
			if (rule_parse(rule, &out->rule) < 0)
				goto bad;
			out->has_rule = true;
		}
	}
	return 0;
bad:
	pvg_tz_clear(out);
	return -EINVAL;
}

/* ---- conversions ------------------------------------------------------------------------------ */

int32_t pvg_tz_offset_at(const struct pvg_tz *z, int64_t utc)
{
	size_t n = z->n_trans;
	if (n && utc < z->trans[0])
		return z->type_off[0];
	if (n == 0 || utc >= z->trans[n - 1]) {
		if (z->has_rule)
			return rule_offset(&z->rule, utc);
		if (n)
			return z->type_off[z->trans_type[n - 1]];
		return z->n_types ? z->type_off[0] : 0;
	}
	size_t lo = 0, hi = n - 1; /* trans[lo] <= utc < trans[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (z->trans[mid] <= utc)
			lo = mid;
		else
			hi = mid;
	}
	return z->type_off[z->trans_type[lo]];
}

void pvg_tz_local_to_utc(const struct pvg_tz *z, int year, int mon, int mday, int hour, int min,
			 int sec, int64_t *lo, int64_t *hi)
{
	int64_t t0 = pvg_utc_from_fields(year, mon, mday, hour, min, sec);
	/* the offsets in force around that wall-clock time: no zone changes twice in two days */
	int32_t cand[3] = { pvg_tz_offset_at(z, t0 - 86400), pvg_tz_offset_at(z, t0),
			    pvg_tz_offset_at(z, t0 + 86400) };
	bool any = false;
	for (int i = 0; i < 3; i++) {
		int64_t u = t0 - cand[i];
		if (pvg_tz_offset_at(z, u) != cand[i])
			continue;
		if (!any || u < *lo)
			*lo = u;
		if (!any || u > *hi)
			*hi = u;
		any = true;
	}
	if (any)
		return;
	/* a gap: no offset gives this wall-clock time back */
	*lo = *hi = t0 - cand[0];
	for (int i = 1; i < 3; i++) {
		if (t0 - cand[i] < *lo)
			*lo = t0 - cand[i];
		if (t0 - cand[i] > *hi)
			*hi = t0 - cand[i];
	}
}
