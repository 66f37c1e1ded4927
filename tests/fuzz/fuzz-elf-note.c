/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the ELF head, program header and note parsers behind the build-id. */
/* Built by tests/fuzz/build.sh. */
#include "formats/elf-note.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_elf_head h;
	unsigned char id[PVG_BUILD_ID_MAX];
	if (pvg_elf_head_parse(data, size, &h) == 0 && h.phoff <= size &&
	    h.phdrs_bytes <= size - h.phoff &&
	    pvg_elf_note_segments(&h, data + h.phoff, h.phdrs_bytes) == 0) {
		for (size_t i = 0; i < h.n_notes; i++)
			if (h.notes[i].offset <= size && h.notes[i].size <= size - h.notes[i].offset)
				pvg_elf_find_build_id(data + h.notes[i].offset, (size_t)h.notes[i].size,
						      h.msb, id);
	}
	/* the bytes as a note segment of either byte order */
	pvg_elf_find_build_id(data, size, false, id);
	pvg_elf_find_build_id(data, size, true, id);
	return 0;
}
