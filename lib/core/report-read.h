/* SPDX-License-Identifier: MIT */
/*
 * The one reader of provgate report files (compare's two sides, merge's node reports): a
 * bounded read, then the JSON, with what was wrong with it said precisely enough for a
 * message (too large, empty, a NUL byte, where the JSON ends early or goes wrong, content
 * after it, not an object). Each verb words its refusal; none of these is an error.
 */
#pragma once
#include "util/util.h"

enum pvg_report_bad {
	PVG_REPORT_OK = 0,
	PVG_REPORT_UNREADABLE, /* err: -errno of the read */
	PVG_REPORT_TOO_BIG,    /* more than max bytes, or it grew while it was read */
	PVG_REPORT_EMPTY,
	PVG_REPORT_NUL,        /* holds a NUL byte (at: the first) */
	PVG_REPORT_TRUNCATED,  /* the JSON ends early (only blanks from at on) */
	PVG_REPORT_MALFORMED,  /* the JSON goes wrong at byte at */
	PVG_REPORT_TRAILING,   /* content after the JSON value (root holds the value) */
	PVG_REPORT_NOT_OBJECT, /* JSON, but not an object (root holds the value) */
};

struct pvg_report_file {
	enum pvg_report_bad bad;
	int err;         /* -errno of the read (PVG_REPORT_UNREADABLE, _TOO_BIG) */
	size_t len;      /* bytes read */
	size_t at;       /* where the JSON went wrong */
	char sha256[65]; /* of the bytes read, when asked for and read ("" otherwise) */
	cJSON *root;     /* the parsed value; NULL when the JSON did not parse */
};

/* Reads path (at most max bytes; the sha256 of what was read when want_sha256) into f.
 * Returns 0 (f->bad says what was wrong), or f->err when the file could not be read. */
int pvg_report_read(const char *path, size_t max, bool want_sha256, struct pvg_report_file *f);
void pvg_report_file_clear(struct pvg_report_file *f);
