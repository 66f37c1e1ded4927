/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a Triton cache entry's files as the service's user wrote them, on
 * arbitrary bytes: NAME.json, the .source's first loc, a .py's @triton.jit functions; and
 * ROCr's code-object URIs (the witness's module paths). Built by tests/fuzz/build.sh. */
#include "formats/aql.h"
#include "formats/triton-cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct pvg_triton_meta meta;
	char *why = NULL;
	if (pvg_triton_meta_parse(text, size, &meta, &why) == 0)
		(void)pvg_triton_binary_ext(meta.backend);
	free(why);
	char *path = NULL;
	unsigned long line = 0;
	if (pvg_triton_first_loc(text, size, &path, &line) == 0)
		free(path);
	struct pvg_strv names = { 0 };
	bool imports = false;
	(void)pvg_triton_py_scan(text, size, &names, &imports);
	pvg_strv_clear(&names);
	struct pvg_hsa_uri uri;
	const char *uwhy;
	(void)pvg_hsa_uri_parse(text, size, &uri, &uwhy);
	return 0;
}
