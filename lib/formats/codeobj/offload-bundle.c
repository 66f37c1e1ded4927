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

static int by_offset(const void *a, const void *b)
{
	const struct pvg_bundle_entry *x = *(const struct pvg_bundle_entry *const *)a;
	const struct pvg_bundle_entry *y = *(const struct pvg_bundle_entry *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int by_id(const void *a, const void *b)
{
	return strcmp((*(const struct pvg_bundle_entry *const *)a)->id,
		      (*(const struct pvg_bundle_entry *const *)b)->id);
}

/* clang-offload-bundler writes each target once, each entry's bytes after the last: entries
 * that share bytes would be read (and hashed) once each, 4096 times over for one object,
 * and two entries of one id leave which one the runtime loads unsaid. 0, or -1 with *err. */
static int bundle_entries_distinct(const struct pvg_bundle *b, char **err)
{
	size_t n = (size_t)b->n_entries;
	_cleanup_free_ const struct pvg_bundle_entry **v = pvg_xcalloc(n, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = &b->entries[i];
	qsort(v, n, sizeof(*v), by_offset);
	const struct pvg_bundle_entry *prev = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!v[i]->size)
			continue;
		if (prev && v[i]->offset < prev->offset + prev->size) {
			*err = pvg_asprintf("entries %s and %s share bytes (0x%" PRIx64 "+0x%" PRIx64
					    " and 0x%" PRIx64 "+0x%" PRIx64 ")",
					    prev->id, v[i]->id, prev->offset, prev->size, v[i]->offset,
					    v[i]->size);
			return -1;
		}
		prev = v[i];
	}
	qsort(v, n, sizeof(*v), by_id);
	for (size_t i = 1; i < n; i++)
		if (strcmp(v[i - 1]->id, v[i]->id) == 0) {
			*err = pvg_asprintf("two entries have the id %s", v[i]->id);
			return -1;
		}
	return 0;
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
	if (bundle_entries_distinct(b, err) < 0)
		goto bad;
	return 0;
bad:
	pvg_bundle_clear(b);
	return -EBADMSG;
}

/* Adds the object of bundle entry be (its payload not read yet). True when it is an AMDGPU
 * code object whose bytes are to be parsed. */
static bool entry_object(struct pvg_codeobj_set *set, const struct pvg_bundle_entry *be,
			 const char *section, unsigned idx, unsigned i, const char *container,
			 struct pvg_code_object **out)
{
	struct pvg_code_object *co = pvg_co_add(set, section, idx, i);
	*out = co;
	if (!co)
		return false;
	snprintf(co->container, sizeof(co->container), "%s", container);
	co->id = pvg_strdup(be->id);
	co->size = be->size;
	if (strncmp(be->id, "host-", 5) == 0) {
		co->kind = PVG_CO_HOST;
		co->kernels_known = true;
		return false;
	}
	const char *tid = pvg_target_id_of(be->id);
	if (strstr(be->id, "amdgcn") == NULL) {
		co->kind = PVG_CO_OTHER;
		co->kernels_why = pvg_strdup("entry kind is not an AMDGPU code object");
		if (tid)
			co->arch = pvg_strdup(tid);
		return false;
	}
	co->kind = PVG_CO_AMDGPU;
	if (tid)
		co->id_target = pvg_strdup(tid);
	if (be->size == 0) {
		pvg_co_set_error(co, "entry %s is empty", be->id);
		return false;
	}
	return true;
}

/* Reads the AMDGPU code object of an entry at [off, off+size) of src. */
static void parse_entry(struct pvg_codeobj_set *set, const struct pvg_src *src, uint64_t off,
			uint64_t size, struct pvg_code_object *co)
{
	free(co->arch); /* the bundle id's, until the code object says */
	co->arch = NULL;
	free(co->kernels_why);
	co->kernels_why = NULL;
	co->not_decoded = false;
	pvg_amdgpu_parse(src, off, size, co);
	pvg_amdgpu_check_consistency(co);
	pvg_co_finish(set, co);
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
		struct pvg_code_object *co;
		bool parse = entry_object(set, be, section, idx, (unsigned)i, container, &co);
		if (!co)
			break;
		co->container_offset = compressed ? file_off : off;
		co->container_size = b.end; /* a CCOB's own length is filled in by add_ccob */
		co->offset = compressed ? file_off : off + be->offset;
		co->compressed = compressed;
		if (parse)
			parse_entry(set, src, off + be->offset, be->size, co);
		/* a plain entry is hashed from the file after the walk (pvg_co_digest_plain) */
		if (compressed && src->mem && pvg_co_digest_wanted(set, co))
			pvg_co_digest_mem(co, src->mem + off + be->offset, be->size);
	}
	*end = b.end;
	pvg_bundle_clear(&b);
	return 0;
}

/* How many bytes the bundle header at the start of p needs, when n bytes of it tell
 * (0: more are needed to know). An absurd header is left to pvg_bundle_parse. */
static uint64_t bundle_header_need(const uint8_t *p, size_t n)
{
	if (n < PVG_BUNDLE_MAGIC_LEN + 8)
		return 0;
	uint64_t count = rd64(p + PVG_BUNDLE_MAGIC_LEN), pos = PVG_BUNDLE_MAGIC_LEN + 8;
	if (count > PVG_CO_MAX_BUNDLE_ENTRIES)
		return pos;
	for (uint64_t i = 0; i < count; i++) {
		if (n - pos < 24)
			return 0;
		uint64_t idlen = rd64(p + pos + 16);
		if (idlen > PVG_CO_MAX_ID_LEN)
			return pos + 24;
		pos += 24 + idlen;
		if (pos > n)
			return 0;
	}
	return pos;
}

/* A CCOB of version 2 or 3 at off: its bundle header from a prefix of the stream, the
 * objects of its entries, and the rest of the work deferred to pvg_hip_decode_deferred. */
static int add_ccob_deferred(struct pvg_codeobj_set *set, const struct pvg_src *src,
			     uint64_t off, const struct pvg_ccob *h, const char *section,
			     unsigned idx, const char *where)
{
	uint64_t in_len = h->total_size - h->header_size;
	size_t want = h->uncompressed_size < 4096 ? (size_t)h->uncompressed_size : 4096;
	_cleanup_free_ uint8_t *head = NULL;
	_cleanup_free_ char *err = NULL;
	for (;;) {
		free(head);
		head = malloc(want);
		if (!head)
			abort();
		size_t used;
		if (pvg_ccob_inflate(h, src, off + h->header_size, in_len, head, want, &used,
				     &err) < 0) {
			pvg_co_issue(set, where, "%s", err);
			return -EBADMSG;
		}
		if (want == h->uncompressed_size || bundle_header_need(head, want) != 0)
			break;
		want = want > h->uncompressed_size / 4 ? (size_t)h->uncompressed_size : want * 4;
	}
	struct pvg_src mem = { .mem = head, .fd = -1, .size = want };
	struct pvg_bundle b;
	if (pvg_bundle_parse(&mem, 0, h->uncompressed_size, &b, &err) < 0) {
		pvg_co_issue(set, where, "%s", err);
		return -EBADMSG;
	}
	char container[32];
	snprintf(container, sizeof(container), "ccob-v%u-%s", h->version,
		 pvg_ccob_method_name(h->method));
	struct pvg_ccob_deferred d = {
		.h = *h,
		.off = off,
		.first_obj = set->n_objs,
		.ent = pvg_xcalloc(b.n_entries * 2, sizeof(uint64_t)),
	};
	uint64_t need = 0;
	for (uint64_t i = 0; i < b.n_entries; i++) {
		const struct pvg_bundle_entry *be = &b.entries[i];
		struct pvg_code_object *co;
		bool parse = entry_object(set, be, section, idx, (unsigned)i, container, &co);
		if (!co)
			break;
		d.n_objs++;
		d.ent[2 * i] = be->offset;
		d.ent[2 * i + 1] = be->size;
		co->container_offset = off;
		co->container_size = h->total_size;
		co->offset = off;
		co->compressed = true;
		co->ccob_bundle_size = h->uncompressed_size;
		co->checksum = PVG_CSUM_UNCHECKED;
		co->ccob_decoded = want;
		if (!parse)
			continue;
		/* until its bytes are read: the target its bundle id names, which is what the
		 * runtime picks the entry by */
		if (co->id_target)
			co->arch = pvg_strdup(co->id_target);
		co->not_decoded = true;
		co->kernels_why = pvg_asprintf("CCOB-compressed (%s) entry, not decompressed: "
					       "kernels and ELF details are read only when asked "
					       "for (provgate inspect --kernels, or the configured "
					       "arch)",
					       pvg_ccob_method_name(h->method));
		if (!co->arch || pvg_co_names_wanted(set, co) || pvg_co_digest_wanted(set, co)) {
			if (be->offset + be->size > need)
				need = be->offset + be->size;
		}
	}
	/* the whole bundle when the entries asked for reach its end: then its hash is checked */
	d.want = need >= b.end ? h->uncompressed_size : need;
	pvg_bundle_clear(&b);
	if (d.want == 0) {
		free(d.ent);
		return 0;
	}
	d.where = pvg_strdup(where);
	if (set->n_ccobs == 0 || (set->n_ccobs >= 8 && (set->n_ccobs & (set->n_ccobs - 1)) == 0))
		set->ccobs = pvg_xrealloc(set->ccobs, set->n_ccobs ? set->n_ccobs * 2 : 8,
					  sizeof(*set->ccobs));
	set->ccobs[set->n_ccobs++] = d;
	return 0;
}

/* A CCOB at off (at most limit bytes to the section's end). Version 1 records no length:
 * only the end of its stream says where the next bundle starts, so it is decompressed
 * whole here; of versions 2 and 3 only the bundle header is (add_ccob_deferred). Sets *end
 * to the CCOB's length. */
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
	if (h.version >= 2) {
		if (h.total_size > limit) {
			pvg_co_issue(set, where,
				     "declared size %" PRIu64 " runs past the end of the section "
				     "(%" PRIu64 " bytes left)",
				     h.total_size, limit);
			return -EBADMSG;
		}
		/* its length is known: a bundle header that does not decompress (an issue) leaves
		 * the bundles after it to be read */
		(void)add_ccob_deferred(set, src, off, &h, section, idx, where);
		*end = h.total_size;
		return 0;
	}
	/* without decoding it whole, where the next bundle starts is not known: the walk ends */
	if (!pvg_co_decode_take(set, h.uncompressed_size)) {
		_cleanup_free_ char *why = pvg_co_over_budget_why(set);
		if (!set->incomplete)
			set->incomplete = pvg_asprintf("%s and what follows it in the section are "
						       "not read: %s", where, why);
		return -E2BIG;
	}
	uint64_t avail = limit - h.header_size;
	if (avail > PVG_CO_MAX_COMPRESSED)
		avail = PVG_CO_MAX_COMPRESSED;
	_cleanup_free_ uint8_t *plain = malloc(h.uncompressed_size);
	if (!plain)
		abort();
	size_t consumed = 0;
	if (pvg_ccob_inflate(&h, src, off + h.header_size, avail, plain, h.uncompressed_size,
			     &consumed, &err) < 0) {
		pvg_co_issue(set, where, "%s", err);
		return -EBADMSG;
	}
	char container[32];
	snprintf(container, sizeof(container), "ccob-v%u-%s", h.version,
		 pvg_ccob_method_name(h.method));
	struct pvg_src mem = { .mem = plain, .fd = -1, .size = h.uncompressed_size };
	uint64_t inner_end;
	size_t first = set->n_objs;
	if (add_bundle(set, &mem, 0, h.uncompressed_size, section, idx, container, true, off,
		       &inner_end) < 0)
		return -EBADMSG;
	*end = h.header_size + consumed;
	for (size_t i = first; i < set->n_objs; i++) {
		struct pvg_code_object *co = &set->objs[i];
		co->container_size = *end;
		co->checksum = PVG_CSUM_VERIFIED;
		co->ccob_decoded = co->ccob_bundle_size = h.uncompressed_size;
	}
	return 0;
}

/* ---- the deferred CCOBs, decompressed in parallel ------------------------------------------- */

struct ccob_pool {
	struct pvg_codeobj_set *set;
	const struct pvg_src *src;
	size_t next; /* the next deferred CCOB to take (atomic) */
	struct pvg_co_budget budget;
};

static void ccob_decode_one(struct ccob_pool *p, struct pvg_ccob_deferred *d)
{
	struct pvg_codeobj_set *set = p->set;
	/* the decoder's input buffer (64 KiB) is counted with the output */
	if (!pvg_co_decode_take(set, d->want)) {
		for (size_t k = 0; k < d->n_objs; k++) {
			struct pvg_code_object *co = &set->objs[d->first_obj + k];
			if (co->kind == PVG_CO_AMDGPU && !co->error && co->not_decoded) {
				free(co->kernels_why);
				co->kernels_why = pvg_co_over_budget_why(set);
			}
		}
		return;
	}
	uint64_t held = d->want + (64u << 10);
	pvg_co_budget_take(&p->budget, held);
	uint8_t *plain = malloc(d->want);
	if (!plain)
		abort();
	size_t used;
	char *err = NULL;
	bool whole = d->want == d->h.uncompressed_size;
	int r = pvg_ccob_inflate(&d->h, p->src, d->off + d->h.header_size,
				 d->h.total_size - d->h.header_size, plain, d->want, &used, &err);
	struct pvg_src mem = { .mem = plain, .fd = -1, .size = d->want };
	for (size_t k = 0; k < d->n_objs; k++) {
		struct pvg_code_object *co = &set->objs[d->first_obj + k];
		uint64_t eo = d->ent[2 * k], es = d->ent[2 * k + 1];
		if (r < 0) {
			co->checksum = PVG_CSUM_FAILED;
			if (co->kind == PVG_CO_AMDGPU && !co->error) {
				free(co->kernels_why);
				co->kernels_why = pvg_asprintf("not read: its CCOB does not "
							       "decompress (%s)", err);
			}
			continue;
		}
		co->checksum = whole ? PVG_CSUM_VERIFIED : PVG_CSUM_UNCHECKED;
		co->ccob_decoded = d->want;
		if (co->kind == PVG_CO_AMDGPU && !co->error && co->not_decoded && eo <= d->want &&
		    es <= d->want - eo) {
			parse_entry(set, &mem, eo, es, co);
			if (pvg_co_digest_wanted(set, co))
				pvg_co_digest_mem(co, plain + eo, es);
		}
	}
	free(plain);
	pvg_co_budget_give(&p->budget, held);
	d->err = r < 0 ? err : NULL;
	if (r >= 0)
		free(err);
}

static void ccob_worker(void *arg)
{
	struct ccob_pool *p = *(struct ccob_pool **)arg;
	for (;;) {
		size_t k = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
		if (k >= p->set->n_ccobs)
			break;
		ccob_decode_one(p, &p->set->ccobs[k]);
	}
}

void pvg_hip_decode_deferred(struct pvg_codeobj_set *set, const struct pvg_src *src)
{
	if (!set->n_ccobs)
		return;
	struct ccob_pool pool = { .set = set, .src = src };
	pvg_co_budget_init(&pool.budget);
	pvg_co_run_workers(ccob_worker, &pool, set->n_ccobs);
	pvg_co_budget_destroy(&pool.budget);
	for (size_t i = 0; i < set->n_ccobs; i++) {
		struct pvg_ccob_deferred *d = &set->ccobs[i];
		if (d->err)
			pvg_co_issue(set, d->where, "%s", d->err);
		free(d->ent);
		free(d->where);
		free(d->err);
	}
	free(set->ccobs);
	set->ccobs = NULL;
	set->n_ccobs = 0;
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
