/* SPDX-License-Identifier: MIT */
/*
 * The host side: which sections of an ELF file carry device code. libelf reads only the ELF
 * and section headers (and the small wrapper sections); the device sections themselves are
 * read with pread by the parsers it dispatches to (offload-bundle.c, cuda-fatbin.c), header
 * by header, so a 1 GB .hip_fatbin costs a few hundred kilobytes of reads.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include "formats/codeobj/codeobj.h"
#include "util/hash.h"
#include "util/untrusted.h"

static struct pvg_co_section *add_section(struct pvg_codeobj_set *set, const char *name,
					  uint64_t off, uint64_t size)
{
	set->sections = pvg_xrealloc(set->sections, set->n_sections + 1, sizeof(*set->sections));
	struct pvg_co_section *s = &set->sections[set->n_sections++];
	*s = (struct pvg_co_section){ pvg_strdup(name), off, size, 0 };
	return s;
}

static unsigned count_containers(const struct pvg_codeobj_set *set, const char *section,
				 size_t first)
{
	unsigned n = 0;
	for (size_t i = first; i < set->n_objs; i++)
		if (strcmp(set->objs[i].section, section) == 0 && set->objs[i].bundle + 1 > n)
			n = set->objs[i].bundle + 1;
	return n;
}

/* Wrapper records ({magic, version, pointer, pointer}, 24 bytes) point at the containers
 * by virtual address; count those that land on a container we found. */
static void scan_wrappers(struct pvg_codeobj_set *set, Elf *elf, Elf_Scn *scn, uint32_t magic,
			  const GElf_Shdr *fats, char (*fat_names)[32], size_t n_fats)
{
	GElf_Shdr sh;
	if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size > (1u << 20))
		return;
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return;
	(void)elf;
	const uint8_t *p = d->d_buf;
	for (size_t o = 0; o + 24 <= d->d_size; o += 24) {
		uint32_t m;
		uint64_t ptr;
		memcpy(&m, p + o, 4);
		if (m != magic)
			continue;
		set->n_wrappers++;
		memcpy(&ptr, p + o + 8, 8);
		/* CUDA -rdc artifacts have two device sections (__nv_relfatbin, .nv_fatbin) and
		 * wrappers pointing into each */
		const GElf_Shdr *fat = NULL;
		const char *fat_name = NULL;
		for (size_t f = 0; f < n_fats && !fat; f++)
			if (ptr >= fats[f].sh_addr && ptr < fats[f].sh_addr + fats[f].sh_size) {
				fat = &fats[f];
				fat_name = fat_names[f];
			}
		if (!fat)
			continue;
		uint64_t rel = ptr - fat->sh_addr;
		/* a container was found there when some object records that start */
		bool located = false;
		for (size_t i = 0; i < set->n_objs && !located; i++) {
			const struct pvg_code_object *co = &set->objs[i];
			located = co->entry == 0 && co->container_offset == fat->sh_offset + rel &&
				  strcmp(co->section, fat_name) == 0;
		}
		if (located)
			set->n_wrappers_located++;
		else if (!set->objs_truncated)
			pvg_co_issue(set, fat_name,
				     "wrapper %zu points at offset 0x%" PRIx64 ", where no container "
				     "was read",
				     o / 24, (uint64_t)fat->sh_offset + rel);
	}
}

static bool starts_with_magic(const struct pvg_src *src, uint64_t off, uint64_t n)
{
	uint8_t m[PVG_BUNDLE_MAGIC_LEN];
	if (n >= PVG_BUNDLE_MAGIC_LEN && pvg_src_read(src, off, m, PVG_BUNDLE_MAGIC_LEN) == 0 &&
	    memcmp(m, PVG_BUNDLE_MAGIC, PVG_BUNDLE_MAGIC_LEN) == 0)
		return true;
	if (n >= 4 && pvg_src_read(src, off, m, 4) == 0 && memcmp(m, PVG_CCOB_MAGIC, 4) == 0)
		return true;
	return false;
}

/* A file that is itself a device container or code object, not a host ELF. */
static void scan_raw(struct pvg_codeobj_set *set, const struct pvg_src *src)
{
	uint8_t h[64] = { 0 };
	size_t n = src->size < sizeof(h) ? (size_t)src->size : sizeof(h);
	if (pvg_src_read(src, 0, h, n) < 0) {
		pvg_co_issue(set, "(file)", "cannot read the file's first bytes");
		return;
	}
	uint32_t m32 = 0;
	if (n >= 4)
		memcpy(&m32, h, 4);
	if (starts_with_magic(src, 0, src->size)) {
		add_section(set, "(file)", 0, src->size)->n_containers = 0;
		pvg_hip_scan_section(set, src, "(file)", 0, src->size);
		set->sections[set->n_sections - 1].n_containers = count_containers(set, "(file)", 0);
	} else if (m32 == PVG_FATBIN_MAGIC) {
		add_section(set, "(file)", 0, src->size);
		pvg_cuda_scan_section(set, src, "(file)", 0, src->size);
		set->sections[set->n_sections - 1].n_containers = count_containers(set, "(file)", 0);
	}
}

static void scan_elf(struct pvg_codeobj_set *set, const struct pvg_src *src, Elf *elf)
{
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh)) {
		pvg_co_issue(set, "(file)", "ELF header cannot be read: %s", elf_errmsg(-1));
		return;
	}
	/* the file is itself a device code object */
	if (eh.e_machine == PVG_EM_AMDGPU || eh.e_machine == PVG_EM_CUDA) {
		struct pvg_code_object *co = pvg_co_add(set, "(file)", 0, 0);
		if (!co)
			return;
		snprintf(co->container, sizeof(co->container), "elf");
		co->offset = 0;
		co->size = src->size;
		add_section(set, "(file)", 0, src->size)->n_containers = 1;
		if (eh.e_machine == PVG_EM_AMDGPU) {
			co->kind = PVG_CO_AMDGPU;
			co->id = pvg_strdup("(code object file)");
			pvg_amdgpu_parse(src, 0, src->size, co);
			pvg_amdgpu_check_consistency(co);
		} else {
			co->kind = PVG_CO_CUBIN;
			co->id = pvg_strdup("(cubin file)");
			pvg_cubin_parse(src, 0, src->size, co);
		}
		pvg_co_finish(set, co);
		return;
	}

	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) < 0) {
		pvg_co_issue(set, "(file)", "section name table cannot be found: %s",
			     elf_errmsg(-1));
		return;
	}
	Elf_Scn *hipf = NULL, *nvf = NULL;
	GElf_Shdr hip_sh, nv_sh[2];
	bool have_hip = false;
	size_t n_nv = 0;
	char hip_name[1][32] = { "" }, nv_name[2][32] = { "", "" };
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		bool hip = strcmp(name, ".hip_fatbin") == 0;
		bool nv = strcmp(name, ".nv_fatbin") == 0 || strcmp(name, "__nv_relfatbin") == 0;
		if (strcmp(name, ".hipFatBinSegment") == 0)
			hipf = scn;
		if (strcmp(name, ".nvFatBinSegment") == 0)
			nvf = scn;
		if (!hip && !nv)
			continue;
		if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0) {
			pvg_co_issue(set, name, "section is empty");
			continue;
		}
		if (sh.sh_offset > src->size || sh.sh_size > src->size - sh.sh_offset) {
			pvg_co_issue(set, name,
				     "section [0x%" PRIx64 ", +0x%" PRIx64 ") lies past the end of "
				     "the file (%" PRIu64 " bytes)",
				     (uint64_t)sh.sh_offset, (uint64_t)sh.sh_size, src->size);
			continue;
		}
		/* a linked file has one section of each name; two that name the same bytes (or
		 * one name twice) would be read once each, and their containers numbered alike */
		const struct pvg_co_section *seen = NULL;
		for (size_t k = 0; k < set->n_sections && !seen; k++) {
			const struct pvg_co_section *o = &set->sections[k];
			if (strcmp(o->name, name) == 0 ||
			    (sh.sh_offset < o->offset + o->size && o->offset < sh.sh_offset + sh.sh_size))
				seen = o;
		}
		if (seen) {
			pvg_co_issue(set, name,
				     "section [0x%" PRIx64 ", +0x%" PRIx64 ") is not read: %s %s "
				     "[0x%" PRIx64 ", +0x%" PRIx64 ") was",
				     (uint64_t)sh.sh_offset, (uint64_t)sh.sh_size,
				     strcmp(seen->name, name) == 0 ? "another section of that name,"
								   : "it overlaps",
				     seen->name, seen->offset, seen->size);
			continue;
		}
		size_t first = set->n_objs;
		add_section(set, name, sh.sh_offset, sh.sh_size);
		size_t si = set->n_sections - 1;
		if (hip) {
			pvg_hip_scan_section(set, src, name, sh.sh_offset, sh.sh_size);
			if (!have_hip) {
				hip_sh = sh;
				have_hip = true;
				snprintf(hip_name[0], sizeof(hip_name[0]), "%s", name);
			}
		} else {
			pvg_cuda_scan_section(set, src, name, sh.sh_offset, sh.sh_size);
			if (n_nv < 2) {
				nv_sh[n_nv] = sh;
				snprintf(nv_name[n_nv], sizeof(nv_name[n_nv]), "%s", name);
				n_nv++;
			}
		}
		set->sections[si].n_containers = count_containers(set, name, first);
	}
	if (hipf)
		scan_wrappers(set, elf, hipf, PVG_HIPF_MAGIC, &hip_sh, hip_name, have_hip ? 1 : 0);
	if (nvf)
		scan_wrappers(set, elf, nvf, PVG_FATBIN_WRAPPER_MAGIC, nv_sh, nv_name, n_nv);
}

static int scan_src(const struct pvg_src *src, const char *name,
		    const struct pvg_codeobj_opts *opts, struct pvg_codeobj_set **out)
{
	struct pvg_codeobj_set *set = pvg_codeobj_set_new(name, opts);
	set->decode_limit = src->size > PVG_CO_DECODE_FLOOR / PVG_CO_DECODE_RATIO
				    ? src->size * PVG_CO_DECODE_RATIO
				    : PVG_CO_DECODE_FLOOR;
	if (src->size > UINT64_MAX / PVG_CO_DECODE_RATIO)
		set->decode_limit = UINT64_MAX;
	set->decode_left = set->decode_limit;
	uint8_t ident[4] = { 0 };
	if (src->size >= 4 && pvg_src_read(src, 0, ident, 4) == 0 &&
	    memcmp(ident, "\177ELF", 4) == 0) {
		set->elf = true;
		elf_version(EV_CURRENT);
		Elf *elf = src->mem ? elf_memory((char *)(uintptr_t)src->mem, src->size)
				    : elf_begin(src->fd, ELF_C_READ, NULL);
		if (!elf || elf_kind(elf) != ELF_K_ELF) {
			pvg_co_issue(set, "(file)", "not a readable ELF file: %s", elf_errmsg(-1));
		} else {
			scan_elf(set, src, elf);
		}
		if (elf)
			elf_end(elf);
	} else {
		scan_raw(set, src);
	}
	pvg_cuda_decode_deferred(set, src);
	pvg_hip_decode_deferred(set, src);
	pvg_co_digest_plain(set, src);
	pvg_co_index_digests(set);
	*out = set;
	return 0;
}

int pvg_codeobj_scan_mem(const uint8_t *data, size_t size, const char *name,
			 const struct pvg_codeobj_opts *opts, struct pvg_codeobj_set **out)
{
	struct pvg_src src = { .mem = data, .fd = -1, .size = size };
	return scan_src(&src, name, opts, out);
}

int pvg_codeobj_scan_fd(int fd, const char *path, const struct pvg_codeobj_opts *opts,
			struct pvg_codeobj_set **out)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	struct pvg_src src = { .mem = NULL, .fd = fd, .size = (uint64_t)st.st_size };
	return scan_src(&src, path, opts, out);
}

int pvg_codeobj_scan_path(const char *path, const struct pvg_codeobj_opts *opts,
			  struct pvg_codeobj_set **out)
{
	/* never a device, and an artifact's size bound (util/hash.h): a sparse terabyte whose
	 * headers name huge sections is refused, not read */
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = pvg_hash_max_size() };
	struct pvg_untrusted_file f;
	_cleanup_close_ int fd = pvg_open_untrusted(path, &how, &f);
	if (fd < 0)
		return f.refused == PVG_REFUSED_DEVICE || f.refused == PVG_REFUSED_FIFO ||
				       f.refused == PVG_REFUSED_SOCKET
			       ? -EINVAL
			       : fd;
	if ((uint64_t)f.st.st_size >= PVG_HASH_SPARSE_MIN &&
	    pvg_data_bytes(fd, (uint64_t)f.st.st_size) < (uint64_t)f.st.st_size / 2)
		return -EFBIG;
	if (lseek(fd, 0, SEEK_SET) < 0) /* pvg_data_bytes' seeks moved it */
		return -errno;
	return pvg_codeobj_scan_fd(fd, path, opts, out);
}
