/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the strict config loader (comments, JSON, every key's checks), and the
 * artifacts a loaded config names ("artifacts" or the single form as a list of one). */
/* Built by tests/fuzz/build.sh. */
#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_config *cfg = pvg_config_new();
	cfg->dir = pvg_strdup("/exp");
	struct pvg_error err;
	if (pvg_config_parse(cfg, (const char *)data, size, "fuzz.json", &err) == 0) {
		size_t n = 0;
		struct pvg_artifact *v = pvg_config_artifacts(cfg, &n);
		for (size_t i = 0; i < n; i++) {
			char name[128];
			pvg_artifact_default_name(v[i].build ? v[i].build : v[i].install, name,
						  sizeof(name));
			/* every entry has a build file; a listed one a name too */
			if ((cfg->n_artifacts && (!v[i].name || !v[i].build)) ||
			    (v[i].install && v[i].python_module && cfg->n_artifacts))
				__builtin_trap();
			(void)pvg_artifact_arch(cfg, &v[i]);
		}
		free(v);
	}
	pvg_config_free(cfg);
	return 0;
}
