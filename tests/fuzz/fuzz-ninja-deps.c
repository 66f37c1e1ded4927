/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a build tree's dependency information on arbitrary bytes: ninja's binary
 * deps log, its .ninja_log text, make-style depfiles. */
/* Built by tests/fuzz/build.sh. */
#include "formats/buildlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_ninja_deps d;
	if (pvg_ninja_deps_parse(data, size, &d) == 0) {
		struct pvg_strv out = { 0 };
		pvg_ninja_deps_dependents(&d, "csrc/shared.h", &out);
		pvg_ninja_deps_dependents(&d, "/abs/x.h", &out);
		pvg_strv_clear(&out);
		pvg_ninja_deps_done(&d);
	}
	int64_t ns;
	(void)pvg_ninja_log_find((const char *)data, size, "_a_C.so", &ns);
	(void)pvg_depfile_mentions((const char *)data, size, "csrc/shared.h");
	(void)pvg_depfile_mentions((const char *)data, size, "x y.h");
	return 0;
}
