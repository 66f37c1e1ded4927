/* SPDX-License-Identifier: MIT */
/*
 * The GNU build-id of an ELF file, from its program headers' PT_NOTE segments: a pure
 * parser over bytes. The caller reads the file's head (ELF and program headers) and then
 * each note segment the head names; nothing here reads a file or allocates from input.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PVG_ELF_MAX_NOTE_SEGMENTS 16
#define PVG_ELF_MAX_NOTE_BYTES (64u << 10) /* a note segment longer than this is not read */
#define PVG_BUILD_ID_MAX 64                 /* bytes; GNU ld writes 20 (sha1) or 16 (md5) */

struct pvg_elf_head {
	bool is64, msb;
	uint64_t phoff;     /* where the program headers are */
	size_t phdrs_bytes; /* phnum * phentsize */
	struct {
		uint64_t offset, size;
	} notes[PVG_ELF_MAX_NOTE_SEGMENTS];
	size_t n_notes;
};

/* Parses the ELF header in head[0..len). Returns 0 with the program headers' place in h
 * (phoff, phdrs_bytes), -ENOEXEC when the bytes are not ELF, -EINVAL when the header is
 * malformed (no program headers, sizes that do not fit). */
int pvg_elf_head_parse(const void *head, size_t len, struct pvg_elf_head *h);
/* Collects the PT_NOTE segments from the program headers (phdrs: phdrs_bytes bytes read
 * at phoff). Returns 0 (n_notes may be 0), or -EINVAL for a malformed table. Segments
 * beyond PVG_ELF_MAX_NOTE_SEGMENTS are ignored. */
int pvg_elf_note_segments(struct pvg_elf_head *h, const void *phdrs, size_t len);
/* Finds the NT_GNU_BUILD_ID note ("GNU") in one note segment's bytes. Returns its length
 * (1..PVG_BUILD_ID_MAX) with the bytes in id, 0 when the segment has none, -EINVAL for a
 * note whose sizes run past the segment. */
int pvg_elf_find_build_id(const void *notes, size_t len, bool msb,
			  unsigned char id[PVG_BUILD_ID_MAX]);
