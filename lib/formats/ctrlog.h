/* SPDX-License-Identifier: MIT */
/*
 * Logs written by a container runtime, decoded back into the service's own lines:
 *   CRI (Kubernetes' kubelet with containerd or CRI-O, podman's k8s-file and json-file):
 *     "TIMESTAMP STREAM TAG CONTENT", RFC 3339 time with nanoseconds, TAG "F" (the line is
 *     complete) or "P" (a part: the line goes on in the next record of that stream);
 *   docker's json-file: {"log":"...","stream":"stdout","attrs":{...},"time":"..."} a line,
 *     the log string JSON-escaped (\n, \", \u003c, surrogate pairs), a line docker cut at
 *     16 KiB carried on in the next record (a log string without its closing "\n").
 * The decoder streams: any record length, bounded memory, the decoded text written into the
 * caller's buffer with a table that says, for each decoded line, the runtime's time and the
 * file offset of the record it began in. A record that breaks the format is read as it is,
 * from the byte that breaks it on (a "log" string already read stays decoded), and counted.
 */
#pragma once
#include "util/util.h"

enum pvg_ctrlog_kind {
	PVG_CTRLOG_PLAIN = 0, /* not a runtime's log: the service's own lines */
	PVG_CTRLOG_CRI,
	PVG_CTRLOG_DOCKER,
};

/* "plain", "cri", "docker-json" */
const char *pvg_ctrlog_kind_name(enum pvg_ctrlog_kind k);
/* The kind of a log from its first record (the first bytes of the file: a CRI head needs at
 * most 64, docker's {"log":" 8). PLAIN when they are neither. */
enum pvg_ctrlog_kind pvg_ctrlog_detect(const char *bytes, size_t len);

/* An RFC 3339 time ("2026-12-01T21:26:35.624677950+00:00", "...Z", fraction optional, up to
 * nanoseconds) -> nanoseconds since the epoch. 0 or -EINVAL. */
int pvg_rfc3339_ns(const char *s, size_t len, int64_t *ns);

#define PVG_CTRLOG_NO_TIME INT64_MIN

/* One line of the decoded text. */
struct pvg_ctrlog_line {
	uint64_t out;    /* offset of its first byte in the decoded text */
	uint64_t file;   /* offset in the log of the record it began in */
	int64_t time_ns; /* that record's runtime time; PVG_CTRLOG_NO_TIME: none could be read */
};

struct pvg_ctrlog {
	enum pvg_ctrlog_kind kind;
	/* the decoded lines not yet dropped, ascending */
	struct pvg_ctrlog_line *lines;
	size_t n_lines, cap_lines;
	uint64_t out_pos; /* decoded bytes written so far */
	uint64_t in_pos;  /* log bytes consumed so far */

	/* what the reading found */
	uint64_t records;   /* records (lines of the log) read */
	uint64_t joined;    /* records that carried on the line of the one before */
	uint64_t malformed; /* records that break the format */

	/* the decoder's state (private) */
	int st;
	bool open;       /* a decoded line has begun and not ended */
	bool pending_nl; /* docker: a decoded "\n" not yet written (it may end the record) */
	bool partial;    /* CRI: this record's tag is P */
	bool log_done;   /* docker: the log string was read whole */
	bool any_key;
	int open_stream; /* CRI: the stream of the open line (1 stdout, 2 stderr) */
	int rec_stream;
	int64_t rec_time;
	uint64_t rec_file; /* log offset of this record */
	uint64_t rec_out;  /* decoded offset where this record began */
	char buf[96];      /* CRI head, a docker key or captured value */
	size_t buf_n;
	int key;           /* docker: which key's value is read (0 other, 1 log, 2 stream, 3 time) */
	char time_text[64];
	size_t time_n;
	int spaces;        /* CRI: spaces in the head so far */
	int depth;         /* docker: nesting of a skipped value */
	bool in_str, esc;  /* docker: inside a string of a skipped value */
	uint32_t u_val, u_high;
	int u_n;
};

/* max_lines: how many decoded lines the table holds before the decoder waits for
 * pvg_ctrlog_drop_before. */
void pvg_ctrlog_init(struct pvg_ctrlog *d, enum pvg_ctrlog_kind kind, size_t max_lines);
void pvg_ctrlog_done(struct pvg_ctrlog *d);
/* What the decoder keeps free in out: a step writes at most this much. */
#define PVG_CTRLOG_SLACK 128
/* Decodes in[0, n) into out[0, cap). Returns the bytes of in consumed; *produced is what was
 * written. It stops early when out has less than PVG_CTRLOG_SLACK bytes left or the line
 * table is full. */
size_t pvg_ctrlog_decode(struct pvg_ctrlog *d, const char *in, size_t n, char *out, size_t cap,
			 size_t *produced);
/* At the end of the log: a record without its line end ends there. Writes what it still
 * holds into out (cap at least PVG_CTRLOG_SLACK) and returns how many bytes; call once. */
size_t pvg_ctrlog_finish(struct pvg_ctrlog *d, char *out, size_t cap);
/* A hole of n bytes in the log (SEEK_HOLE: no bytes were ever written there): holds no
 * record, and ends the record and the line begun before it. Writes what that ends into out
 * (cap at least PVG_CTRLOG_SLACK: the caller checks) and returns how many bytes. */
size_t pvg_ctrlog_hole(struct pvg_ctrlog *d, uint64_t n, char *out, size_t cap);
/* The decoded line that holds decoded offset off, or NULL (dropped or not yet written). */
const struct pvg_ctrlog_line *pvg_ctrlog_line_at(const struct pvg_ctrlog *d, uint64_t off);
/* Forgets the lines that end at or before off (the caller is done with them). */
void pvg_ctrlog_drop_before(struct pvg_ctrlog *d, uint64_t off);
