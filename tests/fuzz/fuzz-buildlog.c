/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the build-log parser and gate 1's decision on arbitrary bytes. */
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
	const char *const changed[] = { "csrc/kern.cu", "csrc/kern.cuh", "csrc/a.cpp" };
	for (int cuda = 0; cuda < 2; cuda++) {
		struct pvg_result res = { .evidence = cJSON_CreateObject() };
		struct pvg_buildlog_request req = {
			.log = &log, .changed = changed, .n_changed = 3, .workdir = "/nonexistent",
			.arch = cuda ? "sm_90" : "gfx936:xnack-", .cuda = cuda,
			.artifact_name = "_rocm_C.abi3.so",
		};
		pvg_buildlog_check(&req, &res);
		pvg_result_reset(&res);
	}
	pvg_buildlog_done(&log);
	return 0;
}
