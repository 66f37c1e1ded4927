/* SPDX-License-Identifier: MIT */
/*
 * CUDA fatbins (.nv_fatbin, __nv_relfatbin). A container is
 *   u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries;
 * then entries, each with a header of at least 64 bytes (little-endian):
 *   0 u16 kind (1 PTX, 2 ELF), 2 u16 version, 4 u32 header size, 8 u64 payload size,
 *   16 u32 compressed size, 24 u32 tool version, 28 u32 SM (80 = sm_80),
 *   40 u64 flags (0x2000 LZ4-compressed, 0x8000 zstd-compressed, 0x100000 sm_NNa),
 *   56 u64 uncompressed size (when compressed).
 * Compressed payloads are decoded into a buffer of the declared size and must fill it
 * exactly: zstd frames (CUDA 12.8+ `--compress-mode=size`/default, and `-compress-all`), and
 * raw LZ4 blocks (CUDA 12.7 and older `-Xfatbin -compress-all`, and `--compress-mode=speed`),
 * whose exact length is the compressed size at 16 (the payload is padded to 8 bytes).
 */
#include <limits.h>
#include <lz4.h>
#include <zstd.h>

#include "formats/codeobj/codeobj.h"

#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define FATBIN_FLAG_LZ4 0x2000ull
#define FATBIN_FLAG_ZSTD 0x8000ull
#define FATBIN_FLAG_ARCH_SPECIFIC 0x100000ull

static uint16_t r16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t r32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t r64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

void pvg_ptx_kernels(const char *text, size_t n, struct pvg_code_object *co)
{
	static const char kw[] = ".entry";
	size_t kl = sizeof(kw) - 1;
	for (size_t i = 0; i + kl < n; i++) {
		if (memcmp(text + i, kw, kl) != 0 || (i > 0 && text[i - 1] != ' ' &&
						       text[i - 1] != '\t' && text[i - 1] != '\n'))
			continue;
		size_t j = i + kl;
		if (j >= n || (text[j] != ' ' && text[j] != '\t'))
			continue;
		while (j < n && (text[j] == ' ' || text[j] == '\t'))
			j++;
		size_t s = j;
		while (j < n && (text[j] == '_' || text[j] == '$' || text[j] == '.' ||
				 (text[j] >= '0' && text[j] <= '9') || (text[j] >= 'a' && text[j] <= 'z') ||
				 (text[j] >= 'A' && text[j] <= 'Z')))
			j++;
		if (j > s)
			pvg_co_add_kernel(co, text + s, j - s, NULL, 0, 0);
		i = j;
	}
	co->kernels_known = true;
}

/* The cubin's ELF header (64 bytes): the SM from e_flags, and that its section headers lie
 * inside its size bytes. 0, or -1 with co->error set. */
static int cubin_header(const uint8_t *eh, uint64_t size, struct pvg_code_object *co)
{
	if (memcmp(eh, "\177ELF", 4) != 0 || eh[4] != 2 || eh[5] != 1) {
		pvg_co_set_error(co, "cubin is not a little-endian ELF64 file");
		return -1;
	}
	if (r16(eh + 18) != PVG_EM_CUDA) {
		pvg_co_set_error(co, "cubin has e_machine %u, not CUDA (190)", r16(eh + 18));
		return -1;
	}
	co->osabi = eh[7];
	co->abi_version = eh[8];
	co->e_flags = r32(eh + 48);
	/* ABI version 7 and older: SM in the low byte, sm_XXa = 0x800. Version 8 (CUDA 12.8+):
	 * SM in bits 8-15, "a" = 0x8. */
	bool v2 = co->abi_version >= 8;
	unsigned sm = v2 ? (co->e_flags >> 8) & 0xff : co->e_flags & 0xff;
	bool accel = v2 ? (co->e_flags & 0x8) != 0 : (co->e_flags & 0x800) != 0;
	co->mach = sm;
	char arch[24];
	snprintf(arch, sizeof(arch), "sm_%u%s", sm, accel ? "a" : "");
	unsigned entry_sm;
	if (co->arch && sscanf(co->arch, "sm_%u", &entry_sm) == 1 && entry_sm != sm) {
		co->mismatch = pvg_asprintf("fatbin entry says %s but the cubin's e_flags 0x%x "
					    "(ABI version %u) say %s",
					    co->arch, co->e_flags, co->abi_version, arch);
	} else if (!co->arch || accel) {
		free(co->arch);
		co->arch = pvg_strdup(arch);
	}
	uint64_t shoff = r64(eh + 40);
	uint16_t shentsize = r16(eh + 58), shnum = r16(eh + 60);
	if (shnum == 0 || shentsize != 64 || shoff > size || (uint64_t)shnum * 64 > size - shoff) {
		pvg_co_set_error(co, "cubin section headers lie outside it");
		return -1;
	}
	return 0;
}

/* Kernels: STO_CUDA_ENTRY (0x10) functions of the symbol table, for a cubin whose header
 * cubin_header accepted. */
static void cubin_kernels(const struct pvg_src *src, uint64_t off, uint64_t size,
			  const uint8_t *eh, struct pvg_code_object *co)
{
	uint64_t shoff = r64(eh + 40);
	uint16_t shnum = r16(eh + 60);
	_cleanup_free_ uint8_t *sh = malloc((size_t)shnum * 64);
	if (!sh)
		abort();
	if (pvg_src_read(src, off + shoff, sh, (size_t)shnum * 64) < 0) {
		pvg_co_set_error(co, "cubin section headers cannot be read");
		return;
	}
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *s = sh + (size_t)i * 64;
		if (r32(s + 4) != 2 /* SHT_SYMTAB */)
			continue;
		uint64_t so = r64(s + 24), ss = r64(s + 32);
		uint32_t link = r32(s + 40);
		if (link >= shnum || so > size || ss > size - so || ss > PVG_CO_MAX_NOTE_BYTES) {
			pvg_co_set_error(co, "cubin symbol table lies outside it");
			return;
		}
		const uint8_t *st = sh + (size_t)link * 64;
		uint64_t to = r64(st + 24), ts = r64(st + 32);
		if (to > size || ts > size - to || ts > PVG_CO_MAX_NOTE_BYTES) {
			pvg_co_set_error(co, "cubin string table lies outside it");
			return;
		}
		_cleanup_free_ uint8_t *syms = malloc(ss ? ss : 1);
		_cleanup_free_ char *str = malloc(ts + 1);
		if (!syms || !str)
			abort();
		if (pvg_src_read(src, off + so, syms, ss) < 0 ||
		    pvg_src_read(src, off + to, str, ts) < 0) {
			pvg_co_set_error(co, "cubin symbols cannot be read");
			return;
		}
		str[ts] = 0;
		/* names are offsets into the string table, and many symbols may name one string:
		 * the names kept cannot be more bytes than the cubin holds */
		uint64_t name_bytes = 0;
		for (uint64_t k = 0; k + 24 <= ss; k += 24) {
			uint32_t name = r32(syms + k);
			uint8_t info = syms[k + 4], other = syms[k + 5];
			if ((info & 0xf) != 2 /* STT_FUNC */ || !(other & 0x10) || name >= ts)
				continue;
			const char *nm = str + name;
			size_t len = strlen(nm);
			if (len + 1 > size - name_bytes) {
				pvg_co_set_error(co, "its kernel names add up to more than the cubin's "
						 "%" PRIu64 " bytes: its symbols name the same bytes "
						 "again and again", size);
				return;
			}
			name_bytes += len + 1;
			pvg_co_add_kernel(co, nm, len, NULL, 0, 0);
		}
		co->kernels_known = true;
		break;
	}
	if (!co->kernels_known) {
		free(co->kernels_why);
		co->kernels_why = pvg_strdup("cubin has no symbol table");
	}
}

void pvg_cubin_parse(const struct pvg_src *src, uint64_t off, uint64_t size,
		     struct pvg_code_object *co)
{
	uint8_t eh[64];
	if (size < sizeof(eh) || pvg_src_read(src, off, eh, sizeof(eh)) < 0) {
		pvg_co_set_error(co, "cubin is too short for an ELF header");
		return;
	}
	if (cubin_header(eh, size, co) == 0)
		cubin_kernels(src, off, size, eh, co);
}

static void add_entry(struct pvg_codeobj_set *set, const struct pvg_src *src, uint64_t eoff,
		      const uint8_t *h, uint32_t hsize, uint64_t payload, uint64_t psize,
		      const char *section, unsigned idx, unsigned ei)
{
	struct pvg_code_object *co = pvg_co_add(set, section, idx, ei);
	if (!co)
		return;
	uint16_t kind = r16(h);
	uint32_t sm = r32(h + 28);
	uint64_t flags = hsize >= 48 ? r64(h + 40) : 0;
	uint64_t usize = hsize >= 64 ? r64(h + 56) : 0;
	uint32_t csize = r32(h + 16);
	snprintf(co->container, sizeof(co->container), "fatbin");
	co->offset = payload;
	co->size = psize;
	char id[48];
	if (kind == FATBIN_KIND_ELF) {
		co->kind = PVG_CO_CUBIN;
		/* CUDA 13 marks sm_90a-style (arch-specific) entries with 0x100000 in the entry
		 * flags; their cubins' e_flags do not always say so */
		const char *a = flags & FATBIN_FLAG_ARCH_SPECIFIC ? "a" : "";
		snprintf(id, sizeof(id), "elf sm_%u%s", sm, a);
		co->arch = pvg_asprintf("sm_%u%s", sm, a);
	} else if (kind == FATBIN_KIND_PTX) {
		co->kind = PVG_CO_PTX;
		snprintf(id, sizeof(id), "ptx compute_%u", sm);
		co->arch = pvg_asprintf("compute_%u", sm);
	} else {
		co->kind = PVG_CO_OTHER;
		snprintf(id, sizeof(id), "kind %u sm_%u", kind, sm);
	}
	co->id = pvg_strdup(id);
	(void)eoff;

	if (flags & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD)) {
		co->compressed = true;
		co->size = usize;
		if ((flags & FATBIN_FLAG_LZ4) && (flags & FATBIN_FLAG_ZSTD)) {
			pvg_co_set_error(co, "entry flags 0x%" PRIx64 " claim both LZ4 and zstd "
					 "compression", flags);
			return;
		}
		if (usize == 0 || usize > PVG_CO_MAX_UNCOMPRESSED) {
			pvg_co_set_error(co, "compressed entry declares %" PRIu64 " bytes", usize);
			return;
		}
		if (co->kind == PVG_CO_OTHER) {
			co->kernels_why = pvg_strdup("entry kind is not decoded");
			return;
		}
		/* decoded with the others once the walk is done (pvg_cuda_decode_deferred) */
		uint64_t clen = csize && csize <= psize ? csize : psize;
		if (set->n_deferred == 0 || (set->n_deferred >= 8 &&
					     (set->n_deferred & (set->n_deferred - 1)) == 0))
			set->deferred = pvg_xrealloc(set->deferred,
						     set->n_deferred ? set->n_deferred * 2 : 8,
						     sizeof(*set->deferred));
		set->deferred[set->n_deferred++] = (struct pvg_co_deferred){
			.obj = (size_t)(co - set->objs),
			.payload = payload,
			.clen = clen,
			.usize = usize,
			.lz4 = (flags & FATBIN_FLAG_LZ4) != 0,
		};
		return;
	}
	const struct pvg_src *from = src;
	uint64_t poff = payload, plen = psize;
	if (co->kind == PVG_CO_CUBIN) {
		pvg_cubin_parse(from, poff, plen, co);
	} else if (co->kind == PVG_CO_PTX) {
		if (plen > PVG_CO_MAX_UNCOMPRESSED) {
			pvg_co_set_error(co, "PTX entry of %" PRIu64 " bytes is absurd", plen);
			return;
		}
		_cleanup_free_ char *text = malloc(plen + 1);
		if (!text)
			abort();
		if (pvg_src_read(from, poff, text, plen) < 0) {
			pvg_co_set_error(co, "PTX entry cannot be read");
			return;
		}
		text[plen] = 0;
		pvg_ptx_kernels(text, plen, co);
	} else {
		co->kernels_why = pvg_strdup("entry kind is not decoded");
	}
}

void pvg_cuda_scan_section(struct pvg_codeobj_set *set, const struct pvg_src *src,
			   const char *section, uint64_t off, uint64_t size)
{
	uint64_t pos = 0;
	unsigned idx = 0;
	while (size - pos >= 16) {
		_cleanup_free_ char *where = pvg_asprintf("%s fatbin %u", section, idx);
		uint8_t h[16];
		if (pvg_src_read(src, off + pos, h, 16) < 0) {
			pvg_co_issue(set, where, "header cannot be read");
			return;
		}
		if (r32(h) != PVG_FATBIN_MAGIC) {
			/* padding between containers is zeros */
			bool zero = true;
			for (int i = 0; i < 16; i++)
				zero &= h[i] == 0;
			if (zero) {
				pos += 8;
				continue;
			}
			pvg_co_issue(set, where, "no fatbin magic at offset 0x%" PRIx64, off + pos);
			return;
		}
		uint16_t hs = r16(h + 6);
		uint64_t fs = r64(h + 8);
		if (hs < 16 || hs > size - pos || fs > size - pos - hs) {
			pvg_co_issue(set, where, "container size %" PRIu64 " (header %u) runs past "
				     "the section end (%" PRIu64 " bytes left)",
				     fs, hs, size - pos);
			return;
		}
		uint64_t e = pos + hs, end = pos + hs + fs;
		unsigned ei = 0;
		while (end - e >= 16) {
			uint8_t eh[64] = { 0 };
			if (pvg_src_read(src, off + e, eh, 16) < 0)
				break;
			uint32_t ehs = r32(eh + 4);
			uint64_t ps = r64(eh + 8);
			if (r16(eh) == 0 && ehs == 0)
				break; /* trailing padding */
			if (ehs < 32 || ehs > end - e || ps > end - e - ehs) {
				pvg_co_issue(set, where,
					     "entry %u: header %u / payload %" PRIu64 " bytes run past "
					     "the container (%" PRIu64 " bytes left)",
					     ei, ehs, ps, end - e);
				return;
			}
			if (pvg_src_read(src, off + e, eh, ehs < 64 ? ehs : 64) < 0)
				break;
			add_entry(set, src, off + e, eh, ehs, off + e + ehs, ps, section, idx, ei);
			if (set->n_objs && !set->objs_truncated) {
				struct pvg_code_object *co = &set->objs[set->n_objs - 1];
				co->container_offset = off + pos;
				co->container_size = hs + fs;
				pvg_co_finish(set, co);
			}
			if (set->objs_truncated)
				return;
			ei++;
			e += ehs + ps;
		}
		if (ei == 0)
			pvg_co_issue(set, where, "container has no entries");
		idx++;
		pos = (end + 7) & ~(uint64_t)7;
		if (pos > size)
			break;
	}
}

/* ---- the deferred entries, decoded in parallel ------------------------------------------------ */

/* Enough input for an ELF header's worth of output from either codec, most of the time. */
#define PREFIX_INPUT (64u << 10)

struct decode_pool {
	struct pvg_codeobj_set *set;
	const struct pvg_src *src;
	size_t next; /* the next deferred entry to take (atomic) */
	struct pvg_co_budget budget; /* bytes of whole-entry buffers held by the workers */
};

static const char *codec_of(const struct pvg_co_deferred *d)
{
	return d->lz4 ? "LZ4" : "zstd";
}

/* The first n bytes the entry decodes to, from as little input as will do. 0, or -1 with
 * the error set. */
static int decode_prefix(const struct pvg_src *src, const struct pvg_co_deferred *d, uint8_t *out,
			 size_t n, struct pvg_code_object *co)
{
	uint64_t have = d->clen < PREFIX_INPUT ? d->clen : PREFIX_INPUT;
	for (;;) {
		_cleanup_free_ uint8_t *in = malloc(have ? have : 1);
		if (!in)
			abort();
		if (pvg_src_read(src, d->payload, in, have) < 0) {
			pvg_co_set_error(co, "compressed entry cannot be read");
			return -1;
		}
		size_t got = 0;
		if (d->lz4) {
			int r = LZ4_decompress_safe_partial((const char *)in, (char *)out, (int)have,
							    (int)n, (int)n);
			got = r > 0 ? (size_t)r : 0;
		} else {
			ZSTD_DCtx *z = ZSTD_createDCtx();
			if (!z)
				abort();
			ZSTD_outBuffer o = { out, n, 0 };
			ZSTD_inBuffer i = { in, have, 0 };
			while (o.pos < n) {
				size_t r = ZSTD_decompressStream(z, &o, &i);
				if (ZSTD_isError(r) || r == 0 || (i.pos == i.size && o.pos < n))
					break;
			}
			got = o.pos;
			ZSTD_freeDCtx(z);
		}
		if (got == n)
			return 0;
		if (have < d->clen) {
			have = d->clen; /* the header needs more of the stream than the prefix */
			continue;
		}
		pvg_co_set_error(co, "%s-compressed entry does not decode to its first %zu bytes",
				 codec_of(d), n);
		return -1;
	}
}

/* The whole entry into plain (usize bytes): 0, or -1 with the error set. */
static int decode_whole(const uint8_t *comp, uint64_t clen, uint8_t *plain,
			const struct pvg_co_deferred *d, struct pvg_code_object *co)
{
	uint64_t usize = d->usize;
	if (d->lz4) {
		_Static_assert(PVG_CO_MAX_UNCOMPRESSED <= INT_MAX, "LZ4 sizes are ints");
		int r = clen > (uint64_t)INT_MAX ? -1 :
			LZ4_decompress_safe((const char *)comp, (char *)plain, (int)clen, (int)usize);
		if (r < 0 || (uint64_t)r != usize) {
			pvg_co_set_error(co, "LZ4-compressed entry does not decode to its declared "
					 "%" PRIu64 " bytes: %s", usize, r < 0 ? "corrupt block" : "short");
			return -1;
		}
		return 0;
	}
	unsigned long long fs = ZSTD_getFrameContentSize(comp, clen);
	if (fs != ZSTD_CONTENTSIZE_UNKNOWN && fs != ZSTD_CONTENTSIZE_ERROR && fs != usize) {
		pvg_co_set_error(co, "zstd frame holds %llu bytes but the entry declares %" PRIu64,
				 fs, usize);
		return -1;
	}
	size_t r = ZSTD_decompress(plain, usize, comp, clen);
	if (ZSTD_isError(r) || r != usize) {
		pvg_co_set_error(co, "zstd-compressed entry does not decode to its declared "
				 "%" PRIu64 " bytes: %s", usize,
				 ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short");
		return -1;
	}
	return 0;
}

static void decode_one(struct decode_pool *p, const struct pvg_co_deferred *d)
{
	struct pvg_code_object *co = &p->set->objs[d->obj];
	uint8_t eh[64];
	if (co->kind == PVG_CO_CUBIN) {
		if (d->usize < sizeof(eh)) {
			pvg_co_set_error(co, "cubin is too short for an ELF header");
			return;
		}
		if (decode_prefix(p->src, d, eh, sizeof(eh), co) < 0 ||
		    cubin_header(eh, d->usize, co) < 0)
			return;
	}
	bool digest = pvg_co_digest_wanted(p->set, co);
	if (!digest && !pvg_co_names_wanted(p->set, co)) {
		co->not_decoded = true;
		co->kernels_why = pvg_asprintf("%s-compressed entry: kernel names are decoded only "
					       "when asked for (provgate inspect --kernels, or the "
					       "configured arch)", codec_of(d));
		return;
	}
	if (!pvg_co_decode_take(p->set, d->usize)) {
		co->not_decoded = true;
		free(co->kernels_why);
		co->kernels_why = pvg_co_over_budget_why(p->set);
		return;
	}
	uint64_t held = d->clen + d->usize + 1;
	pvg_co_budget_take(&p->budget, held);
	uint8_t *comp = malloc(d->clen ? d->clen : 1), *plain = malloc(d->usize + 1);
	if (!comp || !plain)
		abort();
	if (pvg_src_read(p->src, d->payload, comp, d->clen) < 0) {
		pvg_co_set_error(co, "compressed entry cannot be read");
	} else if (decode_whole(comp, d->clen, plain, d, co) == 0) {
		free(comp);
		comp = NULL;
		if (digest)
			pvg_co_digest_mem(co, plain, d->usize);
		if (co->kind == PVG_CO_CUBIN) {
			struct pvg_src mem = { .mem = plain, .fd = -1, .size = d->usize };
			cubin_kernels(&mem, 0, d->usize, eh, co);
		} else {
			plain[d->usize] = 0;
			pvg_ptx_kernels((const char *)plain, d->usize, co);
		}
	}
	free(comp);
	free(plain);
	pvg_co_budget_give(&p->budget, held);
}

static void decode_worker(void *arg)
{
	struct decode_pool *p = *(struct decode_pool **)arg;
	for (;;) {
		size_t k = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
		if (k >= p->set->n_deferred)
			break;
		const struct pvg_co_deferred *d = &p->set->deferred[k];
		decode_one(p, d);
		pvg_co_finish(p->set, &p->set->objs[d->obj]);
	}
}

void pvg_cuda_decode_deferred(struct pvg_codeobj_set *set, const struct pvg_src *src)
{
	if (!set->n_deferred)
		return;
	struct decode_pool pool = { .set = set, .src = src };
	pvg_co_budget_init(&pool.budget);
	/* a thread per CPU, but not for a handful of entries */
	pvg_co_run_workers(decode_worker, &pool, set->n_deferred / 8 + 1);
	pvg_co_budget_destroy(&pool.budget);
	free(set->deferred);
	set->deferred = NULL;
	set->n_deferred = 0;
}
