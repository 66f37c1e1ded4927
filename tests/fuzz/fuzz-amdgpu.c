/* SPDX-License-Identifier: MIT */
/* libFuzzer: an AMDGPU code object (ELF header, notes) and, separately, the input as a
 * NT_AMDGPU_METADATA msgpack blob. */
#include "formats/codeobj/codeobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_src src = { .mem = data, .fd = -1, .size = size };
	struct pvg_codeobj_opts opts = { .kernel_names = true };
	struct pvg_codeobj_set *set = pvg_codeobj_set_new("fuzz", &opts);
	struct pvg_code_object *co = pvg_co_add(set, "(file)", 0, 0);
	co->id = pvg_strdup("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
	co->id_target = pvg_strdup(pvg_target_id_of(co->id));
	pvg_amdgpu_parse(&src, 0, size, co);
	pvg_amdgpu_check_consistency(co);
	(void)pvg_codeobj_matches_arch(co, "gfx90a:xnack+");
	(void)pvg_codeobj_has_kernel(co, "wvSplitK");
	cJSON_Delete(pvg_codeobj_json(co, true));

	struct pvg_code_object *md = pvg_co_add(set, "(file)", 0, 1);
	char *err = NULL;
	pvg_amdgpu_metadata_parse(data, size, md, &err);
	free(err);
	pvg_codeobj_set_free(set);
	return 0;
}
