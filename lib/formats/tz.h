/* SPDX-License-Identifier: MIT */
/*
 * Time zones as the C library reads them, without touching the process's own zone (TZ,
 * tzset): a TZif file (RFC 8536, versions 1 to 4) with its POSIX TZ footer, or a POSIX TZ
 * string alone ("CST-8", "EST5EDT,M3.2.0,M11.1.0"). Pure parsers and arithmetic: safe to use
 * from any thread, for any number of zones at once.
 */
#pragma once
#include "util/util.h"

/* A POSIX TZ rule: standard time, and daylight time between two dates of each year. */
struct pvg_tz_date {
	char kind;    /* 'J': day 1..365 without Feb 29; 'D': day 0..365; 'M': month.week.day */
	int a, b, c;  /* J/D: a = day; M: a = month, b = week (5: last), c = weekday (0: Sunday) */
	int32_t time; /* seconds after local midnight the change happens (may be < 0 or > 24 h) */
};

struct pvg_tz_rule {
	int32_t std_off, dst_off; /* seconds east of UTC */
	bool has_dst;
	struct pvg_tz_date start, end; /* of daylight time, in local time */
};

struct pvg_tz {
	size_t n_trans;
	int64_t *trans;     /* UTC instants of the transitions, ascending */
	uint8_t *trans_type; /* the type that holds from each transition on */
	size_t n_types;
	int32_t *type_off;  /* seconds east of UTC, per type */
	bool has_rule;      /* after the last transition (or without any): the rule */
	struct pvg_tz_rule rule;
};

/* Parses the bytes of a TZif file. 0; -EINVAL for anything that is not a well-formed TZif
 * file; -ENOTSUP for a zone with leap seconds ("right/..."), whose clock the offsets alone do
 * not give. out is cleared first; pvg_tz_clear frees it. */
int pvg_tzif_parse(const void *bytes, size_t len, struct pvg_tz *out);
/* Parses a POSIX TZ string (without a leading ':') into a zone of its rule alone. 0 or
 * -EINVAL. A daylight name without dates takes the US rule (M3.2.0,M11.1.0), as glibc does
 * when no posixrules file says otherwise. */
int pvg_tz_posix_parse(const char *s, struct pvg_tz *out);
/* A zone that is UTC all year. */
void pvg_tz_utc(struct pvg_tz *out);
void pvg_tz_clear(struct pvg_tz *z);

/* The zone's offset east of UTC at a UTC instant, in seconds. */
int32_t pvg_tz_offset_at(const struct pvg_tz *z, int64_t utc);
/* The instants a local wall-clock time names: *lo == *hi usually; *lo < *hi in the hour that
 * repeats when the clocks go back; in a gap (the hour skipped when they go forward, which no
 * clock shows) the instants the offsets before and after it would give. */
void pvg_tz_local_to_utc(const struct pvg_tz *z, int year, int mon, int mday, int hour, int min,
			 int sec, int64_t *lo, int64_t *hi);

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12). */
int64_t pvg_days_from_civil(int64_t year, int mon, int mday);
/* The UTC instant of broken-down UTC fields (any thread, no zone involved). */
int64_t pvg_utc_from_fields(int year, int mon, int mday, int hour, int min, int sec);
/* The calendar year of a UTC instant shifted by off seconds (the local year). */
int pvg_year_of(int64_t utc, int32_t off);
