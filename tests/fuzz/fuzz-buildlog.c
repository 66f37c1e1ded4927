/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the build-log parser, its link graph and gate 1's decision (one artifact
 * and several, with the make-style depfile reader) on arbitrary bytes. */
/* Built by tests/fuzz/build.sh. */
#include "01-build-log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_buildlog log;
	pvg_buildlog_init(&log);
	/* two feeds: lines cut at an arbitrary point must parse as if whole */
	size_t half = size ? data[0] % (size + 1) : 0;
	pvg_buildlog_feed(&log, (const char *)data, half);
	pvg_buildlog_feed(&log, (const char *)data + half, size - half);
	pvg_buildlog_finish(&log);
	struct pvg_linkgraph g;
	pvg_linkgraph_build(&log, &g);
	for (size_t i = 0; i < g.n_compiles && i < 32; i++) {
		size_t out[8];
		if (g.compiles[i].object)
			(void)pvg_linkgraph_outputs_of(&g, g.compiles[i].object, g.compiles[i].dir, out, 8);
	}
	const char *const changed[] = { "csrc/kern.cu", "csrc/kern.cuh", "csrc/a.cpp",
					"csrc/a/a_kern.hip", "csrc/shared.h" };
	for (int cuda = 0; cuda < 2; cuda++) {
		struct pvg_result res = { .evidence = cJSON_CreateObject() };
		struct pvg_buildlog_request req = {
			.log = &log, .changed = changed, .n_changed = 5, .workdir = "/nonexistent",
			.arch = cuda ? "sm_90" : "gfx936:xnack-", .cuda = cuda,
			.artifact_name = "_rocm_C.abi3.so", .graph = cuda ? NULL : &g,
		};
		pvg_buildlog_check(&req, &res);
		pvg_result_reset(&res);
	}
	/* several artifacts, one with compiled globs; depfiles looked for in a folder that has none */
	char *gv[] = { "csrc/a/**", NULL };
	struct pvg_strv globs = { .v = gv, .n = 1 };
	const struct pvg_buildlog_artifact arts[] = {
		{ .name = "_a_C", .build = "_a_C.so", .file = "_a_C.so", .arch = "gfx90a",
		  .compiled = &globs },
		{ .name = "_b_C", .build = "_b_C.so", .file = "_b_C.so", .arch = "gfx90a:xnack-" },
	};
	const char *const roots[] = { "/nonexistent" };
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_buildlog_request req = {
		.log = &log, .changed = changed, .n_changed = 5, .workdir = "/nonexistent",
		.arch = "gfx90a", .artifact_name = "_a_C.so", .arts = arts, .n_arts = 2,
		.graph = &g, .roots = roots, .n_roots = 1,
	};
	pvg_buildlog_check(&req, &res);
	pvg_result_reset(&res);
	pvg_linkgraph_done(&g);
	pvg_buildlog_done(&log);
	return 0;
}
