/* SPDX-License-Identifier: MIT */
/* libFuzzer: every offload bundle (plain or CCOB) in a .hip_fatbin-like byte run. */
#include "formats/codeobj/codeobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_src src = { .mem = data, .fd = -1, .size = size };
	struct pvg_codeobj_opts opts = { .kernel_names = true, .all_digests = true };
	struct pvg_codeobj_set *set = pvg_codeobj_set_new("fuzz", &opts);
	pvg_hip_scan_section(set, &src, ".hip_fatbin", 0, size);
	pvg_hip_decode_deferred(set, &src);
	pvg_co_digest_plain(set, &src);
	pvg_co_index_digests(set);
	/* every identity is found again through the index */
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *which = NULL;
		if (set->objs[i].digest_known &&
		    (!pvg_codeobj_has_digest(set, set->objs[i].sha256, &which) ||
		     memcmp(which->sha256, set->objs[i].sha256, 32) != 0))
			__builtin_trap();
	}
	for (size_t i = 0; i < set->n_objs; i++)
		cJSON_Delete(pvg_codeobj_json(&set->objs[i], true));
	pvg_codeobj_set_free(set);
	return 0;
}
