/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the strict config loader (comments, JSON, every key's checks). */
/* Built by tests/fuzz/build.sh. */
#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_config *cfg = pvg_config_new();
	cfg->dir = pvg_strdup("/exp");
	struct pvg_error err;
	pvg_config_parse(cfg, (const char *)data, size, "fuzz.json", &err);
	pvg_config_free(cfg);
	return 0;
}
