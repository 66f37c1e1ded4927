/* SPDX-License-Identifier: MIT */
/* libFuzzer target: marker fields, line heads and the streaming scan on arbitrary bytes. */
/* Built by tests/fuzz/build.sh. */
#include "formats/markers.h"

static bool in_tree(void *opaque, pid_t pid)
{
	(void)opaque;
	return pid % 2 == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
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
	pvg_marker_scan_buffer(&scan, s, size);
	pvg_marker_scan_done(&scan);
	return 0;
}
