/* SPDX-License-Identifier: MIT */
/* libFuzzer target: marker fields, line heads and the streaming scan on arbitrary bytes;
 * the container runtimes' log decoder (both formats, fed in pieces into small outputs), the
 * scan of a runtime's log (an input that starts as one), TZif and POSIX TZ parsing. */
/* Built by tests/fuzz/build.sh. */
#include "formats/markers.h"

static bool in_tree(void *opaque, pid_t pid)
{
	(void)opaque;
	return pid % 2 == 0;
}

/* The decoder on the input as each format, in pieces of a size the input picks, into an
 * output just above the decoder's slack; the line table is looked up as a reader would. */
static void decode_as(enum pvg_ctrlog_kind kind, const char *s, size_t size)
{
	struct pvg_ctrlog d;
	pvg_ctrlog_init(&d, kind, 16);
	char out[PVG_CTRLOG_SLACK + 61];
	size_t step = size ? (unsigned char)s[0] % 97 + 1 : 1, i = 0, stalls = 0;
	while (i < size && stalls < 4) {
		size_t take = size - i < step ? size - i : step, produced = 0;
		size_t used = pvg_ctrlog_decode(&d, s + i, take, out, sizeof(out), &produced);
		stalls = used || produced ? 0 : stalls + 1;
		i += used;
		(void)pvg_ctrlog_line_at(&d, d.out_pos ? d.out_pos - 1 : 0);
		pvg_ctrlog_drop_before(&d, d.out_pos);
	}
	if (stalls)
		__builtin_trap(); /* the decoder must always make progress */
	pvg_ctrlog_finish(&d, out, sizeof(out));
	pvg_ctrlog_done(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	decode_as(PVG_CTRLOG_CRI, s, size);
	decode_as(PVG_CTRLOG_DOCKER, s, size);
	int64_t ns;
	(void)pvg_rfc3339_ns(s, size, &ns);
	struct pvg_tz tz;
	if (pvg_tzif_parse(s, size, &tz) == 0) {
		int64_t lo, hi;
		(void)pvg_tz_offset_at(&tz, 1764400000);
		pvg_tz_local_to_utc(&tz, 2026, 3, 8, 2, 30, 0, &lo, &hi);
		pvg_tz_clear(&tz);
	}
	char rule[64];
	size_t rl = size < sizeof(rule) - 1 ? size : sizeof(rule) - 1;
	memcpy(rule, s, rl);
	rule[rl] = '\0';
	if (pvg_tz_posix_parse(rule, &tz) == 0) {
		int64_t lo, hi;
		(void)pvg_tz_offset_at(&tz, 1764400000);
		pvg_tz_local_to_utc(&tz, 2026, 11, 1, 1, 30, 0, &lo, &hi);
		pvg_tz_clear(&tz);
	}
	struct pvg_marker m;
	pvg_marker_parse(s, size, &m);
	struct pvg_line_head h;
	pvg_line_head_parse(s, size, 1764400000, &h);
	/* a format of the user's own, compiled once: regexec and strptime on arbitrary heads */
	static struct pvg_line_format own;
	static bool own_ready;
	if (!own_ready) {
		struct pvg_msg why = { 0 };
		own_ready = pvg_line_format_compile(&own, "<([0-9]+)@", "@([^>]*)>",
						    "%d.%m.%Y/%H.%M.%S %z", &why) == 0;
		pvg_msg_clear(&why);
	}
	if (own_ready)
		pvg_line_head_parse_fmt(&own, s, size, 1764400000, &h);
	/* in a zone of the writer's, and in an unknown one */
	static struct pvg_tz posix8;
	static bool posix8_ready;
	if (!posix8_ready)
		posix8_ready = pvg_tz_posix_parse("PST8PDT,M3.2.0,M11.1.0", &posix8) == 0;
	struct pvg_line_zone zone = { .tz = &posix8 }, unknown = { .unknown = true };
	pvg_line_head_parse_in(NULL, &zone, s, size, 1764400000, &h);
	pvg_line_head_parse_in(NULL, &unknown, s, size, 1764400000, &h);

	static struct pvg_kv kv[] = { { "selected", "True" }, { "shape", "(4096, 5120)" } };
	static struct pvg_require req = { kv, 2 };
	static const char *const facts[] = { "block size = 832" };
	static const char *const forbid[] = { "fallback", "x" };
	struct pvg_service_view view = { .in_tree = in_tree, .start = { 1764300000, 0 } };
	struct pvg_marker_scan scan;
	pvg_marker_scan_init(&scan);
	scan.prefix = "DIAG";
	scan.require = &req;
	scan.n_require = 1;
	scan.facts = facts;
	scan.n_facts = 1;
	scan.forbid = forbid;
	scan.n_forbid = 2;
	scan.view = &view;
	scan.now = 1764400000;
	scan.zone = &unknown;
	pvg_marker_scan_buffer(&scan, s, size);
	pvg_marker_scan_done(&scan);
	/* the same bytes behind a runtime's head, so that the scan decodes them */
	const char *head = size && s[0] & 1 ? "{\"log\":\"" : "2026-12-01T21:26:35.1Z stdout P ";
	size_t hl = strlen(head);
	char *framed = pvg_xcalloc(hl + size + 1, 1);
	memcpy(framed, head, hl);
	memcpy(framed + hl, s, size);
	pvg_marker_scan_init(&scan);
	scan.prefix = "DIAG";
	scan.require = &req;
	scan.n_require = 1;
	scan.forbid = forbid;
	scan.n_forbid = 2;
	scan.view = &view;
	scan.now = 1764400000;
	pvg_marker_scan_buffer(&scan, framed, hl + size);
	pvg_marker_scan_done(&scan);
	free(framed);
	return 0;
}
