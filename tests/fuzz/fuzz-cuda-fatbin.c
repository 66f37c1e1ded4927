/* SPDX-License-Identifier: MIT */
/* libFuzzer: CUDA fatbin containers and their entries, and the input as a cubin. */
#include "formats/codeobj/codeobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_src src = { .mem = data, .fd = -1, .size = size };
	struct pvg_codeobj_opts opts = { .kernel_names = true };
	struct pvg_codeobj_set *set = pvg_codeobj_set_new("fuzz", &opts);
	pvg_cuda_scan_section(set, &src, ".nv_fatbin", 0, size);
	struct pvg_code_object *co = pvg_co_add(set, "(file)", 0, 0);
	if (co) {
		co->kind = PVG_CO_CUBIN;
		pvg_cubin_parse(&src, 0, size, co);
	}
	for (size_t i = 0; i < set->n_objs; i++)
		cJSON_Delete(pvg_codeobj_json(&set->objs[i], true));
	pvg_codeobj_set_free(set);
	return 0;
}
