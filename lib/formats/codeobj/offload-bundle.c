/* SPDX-License-Identifier: MIT */
/*
 * Clang offload bundles: "__CLANG_OFFLOAD_BUNDLE__", u64 entry count, then per entry
 * u64 offset (from the bundle's start), u64 size, u64 id length, id bytes. A .hip_fatbin
 * section holds several bundles back to back, each starting 4096-aligned (Debian's
 * librocsparse has 111), and any of them may be a compressed CCOB bundle instead.
 */
#include "formats/codeobj/codeobj.h"

void pvg_bundle_clear(struct pvg_bundle *b)
{
	for (uint64_t i = 0; i < b->n_entries; i++)
		free(b->entries[i].id);
	free(b->entries);
	memset(b, 0, sizeof(*b));
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

int pvg_bundle_parse(const struct pvg_src *src, uint64_t off, uint64_t limit,
		     struct pvg_bundle *b, char **err)
{
	memset(b, 0, sizeof(*b));
	uint8_t head[PVG_BUNDLE_MAGIC_LEN + 8];
	if (limit < sizeof(head) || pvg_src_read(src, off, head, sizeof(head)) < 0) {
		*err = pvg_asprintf("truncated bundle header: %" PRIu64 " bytes left, 32 needed",
				    limit);
		return -EBADMSG;
	}
	if (memcmp(head, PVG_BUNDLE_MAGIC, PVG_BUNDLE_MAGIC_LEN) != 0) {
		*err = pvg_strdup("no __CLANG_OFFLOAD_BUNDLE__ magic");
		return -EBADMSG;
	}
	uint64_t n = rd64(head + PVG_BUNDLE_MAGIC_LEN);
	/* each entry needs at least 24 header bytes */
	if (n == 0 || n > PVG_CO_MAX_BUNDLE_ENTRIES || n > (limit - sizeof(head)) / 24) {
		*err = pvg_asprintf("absurd entry count %" PRIu64 " (the bundle has %" PRIu64
				    " bytes)",
				    n, limit);
		return -EBADMSG;
	}
	b->entries = pvg_xcalloc(n, sizeof(*b->entries));
	uint64_t pos = sizeof(head);
	for (uint64_t i = 0; i < n; i++) {
		uint8_t e[24];
		if (limit - pos < 24 || pvg_src_read(src, off + pos, e, 24) < 0) {
			*err = pvg_asprintf("truncated bundle header at entry %" PRIu64, i);
			goto bad;
		}
		struct pvg_bundle_entry *be = &b->entries[i];
		be->offset = rd64(e);
		be->size = rd64(e + 8);
		uint64_t idlen = rd64(e + 16);
		pos += 24;
		if (idlen == 0 || idlen > PVG_CO_MAX_ID_LEN || idlen > limit - pos) {
			*err = pvg_asprintf("entry %" PRIu64 ": id length %" PRIu64
					    " is empty, absurd or runs past the bundle",
					    i, idlen);
			goto bad;
		}
		be->id = pvg_xcalloc(1, idlen + 1);
		b->n_entries = i + 1;
		if (pvg_src_read(src, off + pos, be->id, idlen) < 0) {
			*err = pvg_asprintf("entry %" PRIu64 ": id cannot be read", i);
			goto bad;
		}
		if (memchr(be->id, 0, idlen)) {
			*err = pvg_asprintf("entry %" PRIu64 ": id contains a NUL byte", i);
			goto bad;
		}
		pos += idlen;
	}
	b->header_size = pos;
	b->end = pos;
	for (uint64_t i = 0; i < n; i++) {
		struct pvg_bundle_entry *be = &b->entries[i];
		if (be->offset > limit || be->size > limit - be->offset) {
			*err = pvg_asprintf("entry %" PRIu64 " (%s) at offset 0x%" PRIx64
					    " size 0x%" PRIx64 " runs past the end (0x%" PRIx64 ")",
					    i, be->id, be->offset, be->size, limit);
			goto bad;
		}
		if (be->size && be->offset < b->header_size) {
			*err = pvg_asprintf("entry %" PRIu64 " (%s) overlaps the bundle header", i,
					    be->id);
			goto bad;
		}
		if (be->offset + be->size > b->end)
			b->end = be->offset + be->size;
	}
	return 0;
bad:
	pvg_bundle_clear(b);
	return -EBADMSG;
}

/* Adds the entries of the bundle at off; data_src may be a decompressed CCOB in memory,
 * in which case file_off is where the CCOB sits in the file. */
static int add_bundle(struct pvg_codeobj_set *set, const struct pvg_src *src, uint64_t off,
		      uint64_t limit, const char *section, unsigned idx, const char *container,
		      bool compressed, uint64_t file_off, uint64_t *end)
{
	struct pvg_bundle b;
	_cleanup_free_ char *err = NULL;
	_cleanup_free_ char *where = pvg_asprintf("%s bundle %u", section, idx);
	if (pvg_bundle_parse(src, off, limit, &b, &err) < 0) {
		pvg_co_issue(set, where, "%s", err);
		return -EBADMSG;
	}
	for (uint64_t i = 0; i < b.n_entries; i++) {
		const struct pvg_bundle_entry *be = &b.entries[i];
		struct pvg_code_object *co = pvg_co_add(set, section, idx, (unsigned)i);
		if (!co)
			break;
		co->container_offset = compressed ? file_off : off;
		co->container_size = b.end; /* a CCOB's own length is filled in by add_ccob */
		snprintf(co->container, sizeof(co->container), "%s", container);
		co->id = pvg_strdup(be->id);
		co->offset = compressed ? file_off : off + be->offset;
		co->size = be->size;
		co->compressed = compressed;
		if (strncmp(be->id, "host-", 5) == 0) {
			co->kind = PVG_CO_HOST;
			co->kernels_known = true;
			continue;
		}
		const char *tid = pvg_target_id_of(be->id);
		if (strstr(be->id, "amdgcn") == NULL) {
			co->kind = PVG_CO_OTHER;
			co->kernels_why = pvg_strdup("entry kind is not an AMDGPU code object");
			if (tid)
				co->arch = pvg_strdup(tid);
			continue;
		}
		co->kind = PVG_CO_AMDGPU;
		if (tid)
			co->id_target = pvg_strdup(tid);
		if (be->size == 0) {
			pvg_co_set_error(co, "entry %s is empty", be->id);
			continue;
		}
		pvg_amdgpu_parse(src, off + be->offset, be->size, co);
		pvg_amdgpu_check_consistency(co);
		pvg_co_finish(set, co);
	}
	*end = b.end;
	pvg_bundle_clear(&b);
	return 0;
}

/* A CCOB at off (at most limit bytes to the section's end): decompress, then read the
 * bundle inside from memory. Sets *end to the CCOB's length. */
static int add_ccob(struct pvg_codeobj_set *set, const struct pvg_src *src, uint64_t off,
		    uint64_t limit, const char *section, unsigned idx, uint64_t *end)
{
	_cleanup_free_ char *where = pvg_asprintf("%s bundle %u (CCOB)", section, idx);
	uint8_t hb[32] = { 0 };
	size_t hn = limit < sizeof(hb) ? (size_t)limit : sizeof(hb);
	struct pvg_ccob h;
	_cleanup_free_ char *err = NULL;
	if (pvg_src_read(src, off, hb, hn) < 0) {
		pvg_co_issue(set, where, "header cannot be read");
		return -EBADMSG;
	}
	if (pvg_ccob_parse_header(hb, hn, &h, &err) < 0) {
		pvg_co_issue(set, where, "%s", err);
		return -EBADMSG;
	}
	uint64_t avail;
	if (h.version >= 2) {
		if (h.total_size > limit) {
			pvg_co_issue(set, where,
				     "declared size %" PRIu64 " runs past the end of the section "
				     "(%" PRIu64 " bytes left)",
				     h.total_size, limit);
			return -EBADMSG;
		}
		avail = h.total_size - h.header_size;
	} else {
		avail = limit - h.header_size; /* version 1 does not record its length */
	}
	if (avail > PVG_CO_MAX_COMPRESSED)
		avail = PVG_CO_MAX_COMPRESSED;
	_cleanup_free_ uint8_t *comp = malloc(avail ? avail : 1);
	if (!comp)
		abort();
	if (pvg_src_read(src, off + h.header_size, comp, avail) < 0) {
		pvg_co_issue(set, where, "compressed data cannot be read");
		return -EBADMSG;
	}
	_cleanup_free_ uint8_t *plain = NULL;
	size_t consumed = 0;
	if (pvg_ccob_decompress(&h, comp, avail, &plain, &consumed, &err) < 0) {
		pvg_co_issue(set, where, "%s", err);
		return -EBADMSG;
	}
	char container[32];
	snprintf(container, sizeof(container), "ccob-v%u-%s", h.version,
		 pvg_ccob_method_name(h.method));
	struct pvg_src mem = { .mem = plain, .fd = -1, .size = h.uncompressed_size };
	uint64_t inner_end;
	if (add_bundle(set, &mem, 0, h.uncompressed_size, section, idx, container, true, off,
		       &inner_end) < 0)
		return -EBADMSG;
	*end = h.version >= 2 ? h.total_size : h.header_size + consumed;
	for (size_t i = set->n_objs; i-- > 0;) {
		struct pvg_code_object *co = &set->objs[i];
		if (co->bundle != idx || strcmp(co->section, section) != 0)
			break;
		co->container_size = *end;
	}
	return 0;
}

static bool magic_at(const struct pvg_src *src, uint64_t off, uint64_t left, bool *ccob)
{
	uint8_t m[PVG_BUNDLE_MAGIC_LEN];
	if (left >= 4 && pvg_src_read(src, off, m, 4) == 0 && memcmp(m, PVG_CCOB_MAGIC, 4) == 0) {
		*ccob = true;
		return true;
	}
	*ccob = false;
	return left >= PVG_BUNDLE_MAGIC_LEN &&
	       pvg_src_read(src, off, m, PVG_BUNDLE_MAGIC_LEN) == 0 &&
	       memcmp(m, PVG_BUNDLE_MAGIC, PVG_BUNDLE_MAGIC_LEN) == 0;
}

/* After a bundle ending at pos: the next one starts at the next 4096 boundary (clang's
 * alignment), or failing that at an 8-byte boundary within the next page. Returns the
 * position or size when nothing follows; non-zero bytes that are no bundle are an issue. */
static uint64_t next_bundle(struct pvg_codeobj_set *set, const struct pvg_src *src,
			    uint64_t base, uint64_t size, uint64_t pos, const char *section,
			    unsigned idx)
{
	bool ccob;
	uint64_t a = (pos + 4095) & ~(uint64_t)4095;
	if (a < size && magic_at(src, base + a, size - a, &ccob))
		return a;
	uint8_t buf[4096 + 32];
	uint64_t from = (pos + 7) & ~(uint64_t)7;
	if (from >= size)
		return size;
	size_t n = size - from < sizeof(buf) ? (size_t)(size - from) : sizeof(buf);
	if (pvg_src_read(src, base + from, buf, n) < 0)
		return size;
	for (size_t i = 0; i + 4 <= n; i += 8) {
		if (memcmp(buf + i, PVG_CCOB_MAGIC, 4) == 0 ||
		    (i + PVG_BUNDLE_MAGIC_LEN <= n &&
		     memcmp(buf + i, PVG_BUNDLE_MAGIC, PVG_BUNDLE_MAGIC_LEN) == 0))
			return from + i;
	}
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != 0) {
			_cleanup_free_ char *where = pvg_asprintf("%s after bundle %u", section, idx);
			pvg_co_issue(set, where,
				     "%" PRIu64 " bytes at offset 0x%" PRIx64 " are not a bundle",
				     size - from, base + from);
			return size;
		}
	}
	if (n < size - from) {
		/* more than a page of zeros: look once more at the following page boundaries */
		for (uint64_t p = (from + n + 4095) & ~(uint64_t)4095; p < size; p += 4096) {
			if (magic_at(src, base + p, size - p, &ccob))
				return p;
			uint8_t z[64];
			size_t zn = size - p < sizeof(z) ? (size_t)(size - p) : sizeof(z);
			if (pvg_src_read(src, base + p, z, zn) < 0)
				break;
			for (size_t i = 0; i < zn; i++)
				if (z[i]) {
					_cleanup_free_ char *where =
						pvg_asprintf("%s after bundle %u", section, idx);
					pvg_co_issue(set, where,
						     "bytes at offset 0x%" PRIx64 " are not a bundle",
						     base + p);
					return size;
				}
		}
	}
	return size;
}

void pvg_hip_scan_section(struct pvg_codeobj_set *set, const struct pvg_src *src,
			  const char *section, uint64_t off, uint64_t size)
{
	uint64_t pos = 0;
	unsigned idx = 0;
	while (pos < size) {
		bool ccob;
		if (!magic_at(src, off + pos, size - pos, &ccob)) {
			_cleanup_free_ char *where = pvg_asprintf("%s bundle %u", section, idx);
			pvg_co_issue(set, where,
				     "no offload bundle at offset 0x%" PRIx64
				     " (neither __CLANG_OFFLOAD_BUNDLE__ nor CCOB)",
				     off + pos);
			return;
		}
		uint64_t end = 0;
		int r = ccob ? add_ccob(set, src, off + pos, size - pos, section, idx, &end)
			     : add_bundle(set, src, off + pos, size - pos, section, idx, "bundle",
					  false, 0, &end);
		if (r < 0)
			return; /* without a trustworthy end, what follows cannot be found */
		if (set->objs_truncated)
			return;
		idx++;
		pos = next_bundle(set, src, off, size, pos + (end ? end : 1), section, idx - 1);
	}
}
