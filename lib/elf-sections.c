/* SPDX-License-Identifier: MIT */
/*
 * The host side: which sections of an ELF file carry device code, and the set of code
 * objects found in them. libelf reads only the ELF and section headers (and the small
 * wrapper sections); the device sections themselves are read with pread by the parsers,
 * header by header, so a 1 GB .hip_fatbin costs a few hundred kilobytes of reads.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include "codeobj.h"

int pvg_src_read(const struct pvg_src *s, uint64_t off, void *buf, size_t n)
{
	if (off > s->size || n > s->size - off)
		return -ENODATA;
	if (n == 0)
		return 0;
	if (s->mem) {
		memcpy(buf, s->mem + off, n);
		return 0;
	}
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(s->fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO; /* the file shrank under us */
		done += (size_t)r;
	}
	return 0;
}

struct pvg_codeobj_set *pvg_codeobj_set_new(const char *path, const struct pvg_codeobj_opts *opts)
{
	struct pvg_codeobj_set *set = pvg_xcalloc(1, sizeof(*set));
	set->path = pvg_strdup(path ? path : "(memory)");
	if (opts) {
		set->opts = *opts;
		if (opts->names_arch)
			set->names_arch = pvg_strdup(opts->names_arch);
		set->opts.names_arch = set->names_arch;
	}
	return set;
}

static void drop_names(struct pvg_code_object *co)
{
	if (!co->kernels)
		return;
	for (size_t i = 0; i < co->n_kernels; i++) {
		free(co->kernels[i].name);
		free(co->kernels[i].symbol);
	}
	free(co->kernels);
	co->kernels = NULL;
	co->names_dropped = co->n_kernels > 0;
}

void pvg_co_finish(struct pvg_codeobj_set *set, struct pvg_code_object *co)
{
	if (set->opts.kernel_names || !co->kernels)
		return;
	if (set->opts.names_arch && !co->error &&
	    pvg_codeobj_matches_arch(co, set->opts.names_arch))
		return;
	drop_names(co);
}

static void code_object_clear(struct pvg_code_object *co)
{
	drop_names(co);
	free(co->section);
	free(co->id);
	free(co->arch);
	free(co->note_target);
	free(co->id_target);
	free(co->kernels_why);
	free(co->error);
	free(co->mismatch);
}

void pvg_codeobj_set_free(struct pvg_codeobj_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n_objs; i++)
		code_object_clear(&set->objs[i]);
	free(set->objs);
	for (size_t i = 0; i < set->n_issues; i++) {
		free(set->issues[i].where);
		free(set->issues[i].message);
	}
	free(set->issues);
	for (size_t i = 0; i < set->n_sections; i++)
		free(set->sections[i].name);
	free(set->sections);
	free(set->path);
	free(set->names_arch);
	free(set);
}

void pvg_codeobj_set_freep(void *p)
{
	pvg_codeobj_set_free(p);
}

void pvg_co_issue(struct pvg_codeobj_set *set, const char *where, const char *fmt, ...)
{
	if (set->n_issues >= PVG_CO_MAX_ISSUES) {
		set->issues_truncated = true;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	char *msg = pvg_vasprintf(fmt, ap);
	va_end(ap);
	set->issues = pvg_xrealloc(set->issues, set->n_issues + 1, sizeof(*set->issues));
	set->issues[set->n_issues++] = (struct pvg_co_issue){ pvg_strdup(where), msg };
}

struct pvg_code_object *pvg_co_add(struct pvg_codeobj_set *set, const char *section,
				   unsigned bundle, unsigned entry)
{
	if (set->n_objs >= PVG_CO_MAX_OBJECTS) {
		if (!set->objs_truncated)
			pvg_co_issue(set, section, "more than %u code objects; the rest is not read",
				     PVG_CO_MAX_OBJECTS);
		set->objs_truncated = true;
		return NULL;
	}
	if (set->n_objs == 0 || (set->n_objs >= 8 && (set->n_objs & (set->n_objs - 1)) == 0))
		set->objs = pvg_xrealloc(set->objs, set->n_objs ? set->n_objs * 2 : 8,
					 sizeof(*set->objs));
	struct pvg_code_object *co = &set->objs[set->n_objs++];
	memset(co, 0, sizeof(*co));
	co->section = pvg_strdup(section);
	co->bundle = bundle;
	co->entry = entry;
	return co;
}

char *pvg_co_strndup(const void *p, size_t n)
{
	const char *nul = memchr(p, 0, n);
	if (nul)
		n = (size_t)(nul - (const char *)p);
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

void pvg_co_set_error(struct pvg_code_object *co, const char *fmt, ...)
{
	if (co->error)
		return; /* the first problem explains the rest */
	va_list ap;
	va_start(ap, fmt);
	co->error = pvg_vasprintf(fmt, ap);
	va_end(ap);
}

void pvg_co_add_kernel(struct pvg_code_object *co, const char *name, size_t name_len,
		       const char *symbol, size_t symbol_len, int wavefront_size)
{
	if (co->n_kernels >= PVG_CO_MAX_KERNELS)
		return;
	if (co->n_kernels == 0 || (co->n_kernels >= 4 && (co->n_kernels & (co->n_kernels - 1)) == 0))
		co->kernels = pvg_xrealloc(co->kernels, co->n_kernels ? co->n_kernels * 2 : 4,
					   sizeof(*co->kernels));
	struct pvg_kernel *k = &co->kernels[co->n_kernels++];
	k->name = name ? pvg_co_strndup(name, name_len) : NULL;
	k->symbol = symbol ? pvg_co_strndup(symbol, symbol_len) : NULL;
	if ((name && !k->name) || (symbol && !k->symbol))
		abort();
	k->wavefront_size = wavefront_size;
}

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
		size_t first = set->n_objs;
		struct pvg_co_section *s = add_section(set, name, sh.sh_offset, sh.sh_size);
		(void)s;
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
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return pvg_codeobj_scan_fd(fd, path, opts, out);
}

/* ---- matching and JSON --------------------------------------------------------------------- */

const char *pvg_co_kind_name(enum pvg_co_kind k)
{
	switch (k) {
	case PVG_CO_HOST: return "host";
	case PVG_CO_AMDGPU: return "amdgpu";
	case PVG_CO_CUBIN: return "cubin";
	case PVG_CO_PTX: return "ptx";
	default: return "other";
	}
}

bool pvg_codeobj_matches_arch(const struct pvg_code_object *co, const char *arch)
{
	if (!co->arch || !arch)
		return false;
	if (strncmp(arch, "sm_", 3) == 0) {
		/* sm_90 (a CC 9.0 device) also loads an sm_90a cubin; sm_90a asks for that one */
		size_t l = strlen(arch);
		return co->kind == PVG_CO_CUBIN &&
		       (strcmp(co->arch, arch) == 0 ||
			(strncmp(co->arch, arch, l) == 0 && strcmp(co->arch + l, "a") == 0));
	}
	if (co->kind != PVG_CO_AMDGPU)
		return false;
	struct pvg_target want, have;
	if (pvg_target_parse(arch, &want) < 0 || pvg_target_parse(co->arch, &have) < 0)
		return false;
	return pvg_target_accepts(&want, &have);
}

static bool ident_in_mangled(const char *mangled, const char *want)
{
	size_t wl = strlen(want);
	if (strncmp(mangled, "_Z", 2) != 0 || wl == 0)
		return false;
	char num[24];
	snprintf(num, sizeof(num), "%zu", wl);
	size_t nl = strlen(num);
	for (const char *p = strstr(mangled, num); p; p = strstr(p + 1, num)) {
		if (p > mangled && p[-1] >= '0' && p[-1] <= '9')
			continue;
		if (strncmp(p + nl, want, wl) == 0)
			return true;
	}
	return false;
}

bool pvg_codeobj_has_kernel(const struct pvg_code_object *co, const char *want)
{
	if (!co->kernels)
		return false;
	for (size_t i = 0; i < co->n_kernels; i++) {
		const struct pvg_kernel *k = &co->kernels[i];
		if (k->name && (strcmp(k->name, want) == 0 || ident_in_mangled(k->name, want)))
			return true;
		if (k->symbol && strcmp(k->symbol, want) == 0)
			return true;
	}
	return false;
}

static const char *feature_name(enum pvg_feature f)
{
	switch (f) {
	case PVG_FEAT_OFF: return "off";
	case PVG_FEAT_ON: return "on";
	case PVG_FEAT_UNSUPPORTED: return "unsupported";
	default: return "any";
	}
}

cJSON *pvg_codeobj_json(const struct pvg_code_object *co, bool with_kernels)
{
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "section", co->section);
	pvg_json_add_int(o, "bundle", (int)co->bundle);
	pvg_json_add_int(o, "entry", (int)co->entry);
	pvg_json_add_str(o, "container", co->container);
	pvg_json_add_str(o, "id", co->id);
	pvg_json_add_str(o, "kind", pvg_co_kind_name(co->kind));
	pvg_json_add_str(o, "arch", co->arch);
	pvg_json_add_u64(o, "offset", co->offset);
	pvg_json_add_u64(o, "size", co->size);
	pvg_json_add_u64(o, "container_offset", co->container_offset);
	pvg_json_add_u64(o, "container_size", co->container_size);
	pvg_json_add_bool(o, "compressed", co->compressed);
	if (co->kind == PVG_CO_AMDGPU) {
		pvg_json_add_int(o, "code_object_version", co->co_version);
		char hex[16];
		snprintf(hex, sizeof(hex), "0x%x", co->e_flags);
		pvg_json_add_str(o, "e_flags", hex);
		snprintf(hex, sizeof(hex), "0x%x", co->mach);
		pvg_json_add_str(o, "mach", hex);
		pvg_json_add_str(o, "mach_name", co->mach_name);
		pvg_json_add_str(o, "xnack", feature_name(co->xnack));
		pvg_json_add_str(o, "sramecc", feature_name(co->sramecc));
		pvg_json_add_str(o, "note_target", co->note_target);
	} else if (co->kind == PVG_CO_CUBIN) {
		char hex[16];
		snprintf(hex, sizeof(hex), "0x%x", co->e_flags);
		pvg_json_add_str(o, "e_flags", hex);
		pvg_json_add_int(o, "abi_version", co->abi_version);
	}
	pvg_json_add_bool(o, "kernels_known", co->kernels_known);
	if (!co->kernels_known && co->kernels_why)
		pvg_json_add_str(o, "kernels_unknown_because", co->kernels_why);
	pvg_json_add_int(o, "kernel_count", (int)co->n_kernels);
	if (with_kernels && co->kernels) {
		cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
		for (size_t i = 0; i < co->n_kernels; i++) {
			cJSON *k = cJSON_CreateObject();
			pvg_json_add_str(k, "name", co->kernels[i].name);
			if (co->kernels[i].symbol)
				pvg_json_add_str(k, "symbol", co->kernels[i].symbol);
			if (co->kernels[i].wavefront_size)
				pvg_json_add_int(k, "wavefront_size", co->kernels[i].wavefront_size);
			cJSON_AddItemToArray(ks, k);
		}
	}
	if (co->error)
		pvg_json_add_str(o, "error", co->error);
	if (co->mismatch)
		pvg_json_add_str(o, "mismatch", co->mismatch);
	return o;
}

cJSON *pvg_codeobj_sections_json(const struct pvg_codeobj_set *set)
{
	cJSON *secs = cJSON_CreateArray();
	for (size_t i = 0; i < set->n_sections; i++) {
		cJSON *s = cJSON_CreateObject();
		pvg_json_add_str(s, "name", set->sections[i].name);
		pvg_json_add_u64(s, "offset", set->sections[i].offset);
		pvg_json_add_u64(s, "size", set->sections[i].size);
		pvg_json_add_int(s, "containers", (int)set->sections[i].n_containers);
		cJSON_AddItemToArray(secs, s);
	}
	return secs;
}
