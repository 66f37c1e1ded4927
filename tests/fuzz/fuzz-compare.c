/* SPDX-License-Identifier: MIT */
/* libFuzzer target: provgate compare on two documents (the input split at its first NUL, or
 * in half), with declarations: any JSON is refused or compared, never a crash. */
/* Built by tests/fuzz/build.sh. */
#include <string.h>

#include "core/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *z = memchr(data, 0, size);
	size_t a = z ? (size_t)(z - data) : size / 2;
	size_t b_off = z ? a + 1 : a;
	cJSON *ja = cJSON_ParseWithLength((const char *)data, a);
	cJSON *jb = cJSON_ParseWithLength((const char *)data + b_off, size - b_off);
	struct pvg_compare_input ai = { "a.json", ja, ja ? NULL : "not JSON", NULL };
	struct pvg_compare_input bi = { "b.json", jb, jb ? NULL : "not JSON", NULL };
	const char *decl[] = { "fact.block size", "service.shared_objects.*", "service.args.--x" };
	struct pvg_compare c;
	pvg_compare_reports(&ai, &bi, decl, 3, &c);
	cJSON *doc = pvg_compare_json(&c, decl, 3);
	cJSON_Delete(doc);
	pvg_compare_clear(&c);
	cJSON_Delete(ja);
	cJSON_Delete(jb);
	return 0;
}
