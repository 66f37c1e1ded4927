/* SPDX-License-Identifier: MIT */
/* libFuzzer: the whole file path: host ELF (libelf) or raw container, then every parser. */
#include "formats/codeobj/codeobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_codeobj_set *set = NULL;
	struct pvg_codeobj_opts opts = { .names_arch = "gfx906", .all_digests = true };
	/* libelf's elf_memory may write to the image: give it a copy */
	uint8_t *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	if (pvg_codeobj_scan_mem(copy, size, "fuzz", &opts, &set) == 0) {
		/* every identity is found again through the index */
		for (size_t i = 0; i < set->n_objs; i++) {
			const struct pvg_code_object *which = NULL;
			if (set->objs[i].digest_known &&
			    (!pvg_codeobj_has_digest(set, set->objs[i].sha256, &which) ||
			     memcmp(which->sha256, set->objs[i].sha256, 32) != 0))
				__builtin_trap();
		}
		pvg_codeobj_set_free(set);
	}
	free(copy);
	return 0;
}
