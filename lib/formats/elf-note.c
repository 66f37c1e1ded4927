/* SPDX-License-Identifier: MIT */
/* GNU build-id from PT_NOTE segments: every length is checked against what remains. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "elf-note.h"

static uint16_t rd16(const unsigned char *p, bool msb)
{
	return msb ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t rd32(const unsigned char *p, bool msb)
{
	return msb ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		   : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t rd64(const unsigned char *p, bool msb)
{
	uint64_t a = rd32(p, msb), b = rd32(p + 4, msb);
	return msb ? a << 32 | b : b << 32 | a;
}

int pvg_elf_head_parse(const void *head, size_t len, struct pvg_elf_head *h)
{
	const unsigned char *e = head;
	memset(h, 0, sizeof(*h));
	if (len < EI_NIDENT || memcmp(e, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	if (e[EI_CLASS] != ELFCLASS32 && e[EI_CLASS] != ELFCLASS64)
		return -EINVAL;
	if (e[EI_DATA] != ELFDATA2LSB && e[EI_DATA] != ELFDATA2MSB)
		return -EINVAL;
	h->is64 = e[EI_CLASS] == ELFCLASS64;
	h->msb = e[EI_DATA] == ELFDATA2MSB;
	size_t ehsize = h->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (len < ehsize)
		return -EINVAL;
	uint16_t phentsize, phnum;
	if (h->is64) {
		h->phoff = rd64(e + offsetof(Elf64_Ehdr, e_phoff), h->msb);
		phentsize = rd16(e + offsetof(Elf64_Ehdr, e_phentsize), h->msb);
		phnum = rd16(e + offsetof(Elf64_Ehdr, e_phnum), h->msb);
	} else {
		h->phoff = rd32(e + offsetof(Elf32_Ehdr, e_phoff), h->msb);
		phentsize = rd16(e + offsetof(Elf32_Ehdr, e_phentsize), h->msb);
		phnum = rd16(e + offsetof(Elf32_Ehdr, e_phnum), h->msb);
	}
	size_t want = h->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	/* PN_XNUM (program header count in section 0) is for core files, not shared objects */
	if (h->phoff == 0 || phnum == 0 || phnum == PN_XNUM || phentsize != want)
		return -EINVAL;
	h->phdrs_bytes = (size_t)phnum * phentsize;
	return 0;
}

int pvg_elf_note_segments(struct pvg_elf_head *h, const void *phdrs, size_t len)
{
	const unsigned char *p = phdrs;
	size_t ent = h->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	if (len < h->phdrs_bytes)
		return -EINVAL;
	h->n_notes = 0;
	for (size_t off = 0; off + ent <= h->phdrs_bytes; off += ent) {
		const unsigned char *ph = p + off;
		uint32_t type = rd32(ph, h->msb);
		if (type != PT_NOTE)
			continue;
		uint64_t o, sz;
		if (h->is64) {
			o = rd64(ph + offsetof(Elf64_Phdr, p_offset), h->msb);
			sz = rd64(ph + offsetof(Elf64_Phdr, p_filesz), h->msb);
		} else {
			o = rd32(ph + offsetof(Elf32_Phdr, p_offset), h->msb);
			sz = rd32(ph + offsetof(Elf32_Phdr, p_filesz), h->msb);
		}
		if (o + sz < o)
			return -EINVAL;
		if (h->n_notes == PVG_ELF_MAX_NOTE_SEGMENTS)
			break;
		h->notes[h->n_notes].offset = o;
		h->notes[h->n_notes].size = sz;
		h->n_notes++;
	}
	return 0;
}

int pvg_elf_find_build_id(const void *notes, size_t len, bool msb,
			  unsigned char id[PVG_BUILD_ID_MAX])
{
	const unsigned char *p = notes;
	size_t off = 0;
	/* Elf32_Nhdr and Elf64_Nhdr are the same three 32-bit words; name and descriptor are
	 * padded to 4 bytes (GNU notes in ELF64 files too) */
	while (len - off >= 12) {
		uint32_t namesz = rd32(p + off, msb);
		uint32_t descsz = rd32(p + off + 4, msb);
		uint32_t type = rd32(p + off + 8, msb);
		off += 12;
		size_t name_pad = ((size_t)namesz + 3) & ~(size_t)3;
		size_t desc_pad = ((size_t)descsz + 3) & ~(size_t)3;
		if (name_pad > len - off)
			return -EINVAL;
		const unsigned char *name = p + off;
		off += name_pad;
		if (desc_pad > len - off) {
			/* the last descriptor may lack its padding */
			if (descsz > len - off)
				return -EINVAL;
			desc_pad = descsz;
		}
		const unsigned char *desc = p + off;
		off += desc_pad;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0) {
			if (descsz == 0 || descsz > PVG_BUILD_ID_MAX)
				return -EINVAL;
			memcpy(id, desc, descsz);
			return (int)descsz;
		}
	}
	return 0;
}
