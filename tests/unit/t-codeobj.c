/* SPDX-License-Identifier: MIT */
/* The code-object parsers on hand-made bytes: every length is checked, every rule named. */
#include <openssl/evp.h>
#include <zlib.h>

#include "formats/codeobj/codeobj.h"
#include "tap.h"

static bool accepts(const char *want, const char *have)
{
	struct pvg_target w, h;
	if (pvg_target_parse(want, &w) < 0 || pvg_target_parse(have, &h) < 0)
		return false;
	return pvg_target_accepts(&w, &h);
}

static void target_matching_follows_the_hip_runtime(void)
{
	CHECK(accepts("gfx90a:xnack-", "gfx90a"));          /* any runs with xnack off */
	CHECK(accepts("gfx90a:xnack+", "gfx90a"));          /* ... and on */
	CHECK(!accepts("gfx90a:xnack-", "gfx90a:xnack+"));  /* fixed on does not run off */
	CHECK(accepts("gfx90a:xnack-", "gfx90a:xnack-"));
	CHECK(accepts("gfx90a", "gfx90a:xnack+"));          /* nothing asked: any mode */
	CHECK(!accepts("gfx936", "gfx906"));
	CHECK(!accepts("gfx90a", "gfx90"));
	CHECK(accepts("gfx90a:sramecc+:xnack-", "gfx90a:sramecc+"));
	CHECK(!accepts("gfx90a:sramecc-:xnack-", "gfx90a:sramecc+"));
	CHECK(accepts("gfx906:sramecc+", "gfx906:sram-ecc+")); /* old spelling */
	struct pvg_target t;
	CHECK(pvg_target_parse("gfx90a:xnack", &t) < 0);
	CHECK(pvg_target_parse(":xnack+", &t) < 0);
	CHECK(pvg_target_parse("gfx90a:xnack-:sramecc+", &t) == 0);
	char buf[64];
	pvg_target_format(&t, buf, sizeof(buf));
	CHECK_STR(buf, "gfx90a:sramecc+:xnack-"); /* LLVM's order */
}

static void target_id_is_found_in_bundle_ids(void)
{
	CHECK_STR(pvg_target_id_of("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
		  "gfx90a:sramecc+:xnack-");
	CHECK_STR(pvg_target_id_of("hip-amdgcn-amd-amdhsa-gfx906"), "gfx906");
	CHECK_STR(pvg_target_id_of("amdgcn-amd-amdhsa--gfx936"), "gfx936");
	CHECK(pvg_target_id_of("host-x86_64-unknown-linux") == NULL);
	CHECK(pvg_target_id_of("hipv4-amdgcn-amd-amdhsa--xgfx1") == NULL);
}

static void mach_table_names_public_values_only(void)
{
	CHECK_STR(pvg_amdgpu_mach_name(0x2f), "gfx906");
	CHECK_STR(pvg_amdgpu_mach_name(0x3f), "gfx90a");
	CHECK_STR(pvg_amdgpu_mach_name(0x36), "gfx1030");
	CHECK_STR(pvg_amdgpu_mach_name(0x4c), "gfx942");
	CHECK(pvg_amdgpu_mach_name(0xf0) == NULL);
	CHECK(pvg_amdgpu_mach_name(0) == NULL);
}

/* msgpack writer for the tests */
struct w {
	uint8_t b[512];
	size_t n;
};
static void wb(struct w *w, uint8_t c) { w->b[w->n++] = c; }
static void ws(struct w *w, const char *s)
{
	size_t l = strlen(s);
	wb(w, (uint8_t)(0xa0 | l));
	memcpy(w->b + w->n, s, l);
	w->n += l;
}

static void metadata_gives_target_and_kernels(void)
{
	struct w w = { .n = 0 };
	wb(&w, 0x83);
	ws(&w, "amdhsa.version");
	wb(&w, 0x92), wb(&w, 1), wb(&w, 1);
	ws(&w, "amdhsa.kernels");
	wb(&w, 0x92);
	wb(&w, 0x84);
	ws(&w, ".name"), ws(&w, "wvSplitK");
	ws(&w, ".symbol"), ws(&w, "wvSplitK.kd");
	ws(&w, ".wavefront_size"), wb(&w, 64);
	ws(&w, ".args"), wb(&w, 0x91), wb(&w, 0x81), ws(&w, ".name"), ws(&w, "out");
	wb(&w, 0x82);
	ws(&w, ".name"), ws(&w, "_Z9scale_addILi4EEvPff");
	ws(&w, ".wavefront_size"), wb(&w, 0xcc), wb(&w, 32);
	ws(&w, "amdhsa.target");
	ws(&w, "amdgcn-amd-amdhsa--gfx936");

	struct pvg_code_object co = { 0 };
	char *err = NULL;
	CHECK_INT(pvg_amdgpu_metadata_parse(w.b, w.n, &co, &err), 0);
	CHECK_STR(co.note_target, "amdgcn-amd-amdhsa--gfx936");
	CHECK_INT(co.n_kernels, 2);
	if (co.n_kernels == 2) {
		CHECK_STR(co.kernels[0].name, "wvSplitK");
		CHECK_STR(co.kernels[0].symbol, "wvSplitK.kd");
		CHECK_INT(co.kernels[0].wavefront_size, 64);
		CHECK_INT(co.kernels[1].wavefront_size, 32);
	}
	CHECK(pvg_codeobj_has_kernel(&co, "wvSplitK"));
	CHECK(pvg_codeobj_has_kernel(&co, "scale_add")); /* "9scale_add" in the mangled name */
	CHECK(!pvg_codeobj_has_kernel(&co, "scale"));
	CHECK(!pvg_codeobj_has_kernel(&co, "out")); /* an argument is no kernel */

	/* every truncation of the map is refused, never read past */
	for (size_t cut = 0; cut < w.n; cut++) {
		struct pvg_code_object c2 = { 0 };
		char *e2 = NULL;
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, w.b, cut);
		int r = pvg_amdgpu_metadata_parse(copy, cut, &c2, &e2);
		if (r == 0) {
			printf("#   truncation at %zu accepted\n", cut);
			tap_case_failed = 1;
		}
		free(copy);
		free(e2);
		free(c2.note_target);
		for (size_t i = 0; i < c2.n_kernels; i++) {
			free(c2.kernels[i].name);
			free(c2.kernels[i].symbol);
		}
		free(c2.kernels);
	}
	free(err);
	free(co.note_target);
	for (size_t i = 0; i < co.n_kernels; i++) {
		free(co.kernels[i].name);
		free(co.kernels[i].symbol);
	}
	free(co.kernels);
}

static void metadata_counts_that_lie_are_refused(void)
{
	uint8_t b[] = { 0xdf, 0x7f, 0xff, 0xff, 0xff, 0xa1, 'x', 0x01 };
	struct pvg_code_object co = { 0 };
	char *err = NULL;
	CHECK(pvg_amdgpu_metadata_parse(b, sizeof(b), &co, &err) < 0);
	CHECK(err && strstr(err, "exceeds the remaining"));
	free(err);
	err = NULL;
	/* nesting beyond the depth limit */
	uint8_t deep[80];
	deep[0] = 0x81, deep[1] = 0xa1, deep[2] = 'k';
	for (size_t i = 3; i < sizeof(deep); i++)
		deep[i] = 0x91;
	CHECK(pvg_amdgpu_metadata_parse(deep, sizeof(deep), &co, &err) < 0);
	free(err);
	err = NULL;
	/* a wavefront size no int holds (2^32 + 64, a uint64) is refused, not cut to 64 */
	struct w w = { .n = 0 };
	wb(&w, 0x81);
	ws(&w, "amdhsa.kernels");
	wb(&w, 0x91);
	wb(&w, 0x82);
	ws(&w, ".name"), ws(&w, "k");
	ws(&w, ".wavefront_size"), wb(&w, 0xcf);
	static const uint8_t big[8] = { 0, 0, 0, 1, 0, 0, 0, 64 };
	memcpy(w.b + w.n, big, 8);
	w.n += 8;
	CHECK(pvg_amdgpu_metadata_parse(w.b, w.n, &co, &err) < 0);
	CHECK(err && strstr(err, ".wavefront_size 4294967360"));
	CHECK_INT(co.n_kernels, 0);
	free(err);
	err = NULL;
	/* and a negative one (int64 -1) */
	w.b[w.n - 9] = 0xd3;
	memset(w.b + w.n - 8, 0xff, 8);
	CHECK(pvg_amdgpu_metadata_parse(w.b, w.n, &co, &err) < 0);
	CHECK(err && strstr(err, "out of range"));
	CHECK_INT(co.n_kernels, 0);
	free(err);
}

static size_t put_bundle(uint8_t *b, size_t cap, uint64_t n, const uint64_t *offs,
			 const uint64_t *sizes, const char *const *ids)
{
	size_t p = 0;
	memcpy(b, PVG_BUNDLE_MAGIC, 24);
	memcpy(b + 24, &n, 8);
	p = 32;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t l = strlen(ids[i]);
		memcpy(b + p, &offs[i], 8);
		memcpy(b + p + 8, &sizes[i], 8);
		memcpy(b + p + 16, &l, 8);
		memcpy(b + p + 24, ids[i], l);
		p += 24 + l;
	}
	(void)cap;
	return p;
}

static void bundle_parse_checks_every_length(void)
{
	uint8_t b[4096] = { 0 };
	const char *ids[] = { "host-x86_64-unknown-linux", "hipv4-amdgcn-amd-amdhsa--gfx906" };
	uint64_t offs[] = { 256, 256 }, sizes[] = { 0, 1000 };
	size_t hl = put_bundle(b, sizeof(b), 2, offs, sizes, ids);
	CHECK(hl < 256);
	struct pvg_src src = { .mem = b, .fd = -1, .size = sizeof(b) };
	struct pvg_bundle bd;
	char *err = NULL;
	CHECK_INT(pvg_bundle_parse(&src, 0, 1256, &bd, &err), 0);
	CHECK_INT(bd.n_entries, 2);
	CHECK_INT(bd.end, 1256);
	if (bd.n_entries == 2)
		CHECK_STR(bd.entries[1].id, ids[1]);
	pvg_bundle_clear(&bd);

	/* one byte short: the entry runs past the end */
	CHECK(pvg_bundle_parse(&src, 0, 1255, &bd, &err) < 0);
	CHECK(err && strstr(err, "runs past the end"));
	free(err), err = NULL;
	/* every shorter limit is refused */
	for (uint64_t lim = 0; lim < 1255; lim += 7) {
		if (pvg_bundle_parse(&src, 0, lim, &bd, &err) == 0) {
			printf("#   limit %" PRIu64 " accepted\n", lim);
			tap_case_failed = 1;
			pvg_bundle_clear(&bd);
		}
		free(err), err = NULL;
	}
	/* absurd count */
	uint64_t huge = 1ull << 40;
	memcpy(b + 24, &huge, 8);
	CHECK(pvg_bundle_parse(&src, 0, sizeof(b), &bd, &err) < 0);
	CHECK(err && strstr(err, "absurd entry count"));
	free(err), err = NULL;
	/* an overflowing offset + size */
	uint64_t two = 2, big = UINT64_MAX - 10;
	memcpy(b + 24, &two, 8);
	memcpy(b + 32 + 24 + strlen(ids[0]), &big, 8);
	CHECK(pvg_bundle_parse(&src, 0, sizeof(b), &bd, &err) < 0);
	free(err);
}

static void md5_low64_is_little_endian_first_half(void)
{
	/* MD5("") = d41d8cd98f00b204e9800998ecf8427e */
	CHECK(pvg_md5_low64((const uint8_t *)"", 0) == 0x04b2008fd98c1dd4ull);
}

static size_t make_ccob(uint8_t *out, unsigned version, const uint8_t *plain, size_t n,
			uint64_t declared, int total_delta)
{
	uLongf cl = compressBound(n);
	uint8_t *comp = malloc(cl);
	compress2(comp, &cl, plain, n, 9);
	uint64_t h = pvg_md5_low64(plain, n);
	uint16_t v = (uint16_t)version, m = 0;
	memcpy(out, "CCOB", 4);
	memcpy(out + 4, &v, 2);
	memcpy(out + 6, &m, 2);
	size_t hs;
	if (version == 1) {
		uint32_t u = (uint32_t)declared;
		memcpy(out + 8, &u, 4);
		memcpy(out + 12, &h, 8);
		hs = 20;
	} else if (version == 2) {
		uint32_t t = (uint32_t)(24 + cl + total_delta), u = (uint32_t)declared;
		memcpy(out + 8, &t, 4);
		memcpy(out + 12, &u, 4);
		memcpy(out + 16, &h, 8);
		hs = 24;
	} else {
		uint64_t t = 32 + cl + total_delta, u = declared;
		memcpy(out + 8, &t, 8);
		memcpy(out + 16, &u, 8);
		memcpy(out + 24, &h, 8);
		hs = 32;
	}
	memcpy(out + hs, comp, cl);
	free(comp);
	return hs + cl;
}

static int ccob_roundtrip(const uint8_t *c, size_t n, char **err)
{
	struct pvg_ccob h;
	int r = pvg_ccob_parse_header(c, n, &h, err);
	if (r < 0)
		return r;
	uint8_t *out = NULL;
	size_t used = 0;
	size_t avail = h.version >= 2 && h.total_size <= n ? h.total_size - h.header_size
							    : n - h.header_size;
	r = pvg_ccob_decompress(&h, c + h.header_size, avail, &out, &used, err);
	free(out);
	return r;
}

static void ccob_versions_sizes_and_hash(void)
{
	uint8_t plain[3000], c[4096];
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i % 251);
	char *err = NULL;
	for (unsigned v = 1; v <= 3; v++) {
		size_t n = make_ccob(c, v, plain, sizeof(plain), sizeof(plain), 0);
		CHECK_INT(ccob_roundtrip(c, n, &err), 0);
		free(err), err = NULL;
		/* declared smaller than the stream: refused, never written past */
		n = make_ccob(c, v, plain, sizeof(plain), 1000, 0);
		CHECK(ccob_roundtrip(c, n, &err) < 0);
		CHECK(err && strstr(err, "exceeds the declared size"));
		free(err), err = NULL;
		/* declared larger than the stream */
		n = make_ccob(c, v, plain, sizeof(plain), 5000, 0);
		CHECK(ccob_roundtrip(c, n, &err) < 0);
		free(err), err = NULL;
		/* a flipped hash byte */
		n = make_ccob(c, v, plain, sizeof(plain), sizeof(plain), 0);
		c[v == 1 ? 12 : v == 2 ? 16 : 24] ^= 1;
		CHECK(ccob_roundtrip(c, n, &err) < 0);
		CHECK(err && strstr(err, "hash mismatch"));
		free(err), err = NULL;
		/* every truncated header is refused */
		for (size_t cut = 0; cut < (v == 1 ? 20u : v == 2 ? 24u : 32u); cut++) {
			struct pvg_ccob h;
			if (pvg_ccob_parse_header(c, cut, &h, &err) == 0) {
				printf("#   v%u header cut at %zu accepted\n", v, cut);
				tap_case_failed = 1;
			}
			free(err), err = NULL;
		}
	}
	/* v2 whose declared total is shorter than the stream */
	size_t n = make_ccob(c, 2, plain, sizeof(plain), sizeof(plain), -10);
	CHECK(ccob_roundtrip(c, n, &err) < 0);
	free(err), err = NULL;
	/* version and method are checked */
	n = make_ccob(c, 3, plain, sizeof(plain), sizeof(plain), 0);
	c[4] = 9;
	CHECK(ccob_roundtrip(c, n, &err) < 0);
	CHECK(err && strstr(err, "unknown CCOB version 9"));
	free(err), err = NULL;
	c[4] = 3, c[6] = 7;
	CHECK(ccob_roundtrip(c, n, &err) < 0);
	CHECK(err && strstr(err, "compression method 7"));
	free(err), err = NULL;
	/* a bomb by declaration is refused before any allocation */
	c[6] = 0;
	uint64_t big = 8ull << 30;
	memcpy(c + 16, &big, 8);
	CHECK(ccob_roundtrip(c, n, &err) == -EFBIG);
	free(err);
}


/* ---- CCOBs on the real fixtures (tests/fixtures/codeobj, from hipcc's code objects) ---- */

static uint8_t *fixture(const char *name, size_t *len)
{
	const char *src = getenv("PVG_SRC");
	_cleanup_free_ char *p = pvg_asprintf("%s/tests/fixtures/codeobj/%s", src ? src : ".", name);
	char *data = NULL;
	if (pvg_read_file(p, 1 << 24, &data, len) < 0) {
		printf("#   cannot read %s\n", p);
		tap_case_failed = 1;
		*len = 0;
		return NULL;
	}
	return (uint8_t *)data;
}

/* pvg_ccob_inflate of n bytes of the CCOB c (its whole length, or cut to in_len) */
static int inflate_of(const uint8_t *c, size_t len, uint64_t in_len, uint8_t *out, size_t want,
		      char **err)
{
	struct pvg_ccob h;
	int r = pvg_ccob_parse_header(c, len, &h, err);
	if (r < 0)
		return r;
	struct pvg_src src = { .mem = c, .fd = -1, .size = len };
	size_t used;
	return pvg_ccob_inflate(&h, &src, h.header_size, in_len, out, want, &used, err);
}

static void ccob_prefix_and_whole_on_fixtures(void)
{
	size_t bl;
	_cleanup_free_ uint8_t *bundle = fixture("bundle-gfx906.bin", &bl);
	const char *names[] = { "ccob-v2-zlib.bin", "ccob-v2-zstd.bin", "ccob-v3-zlib.bin",
				"ccob-v3-zstd.bin" };
	for (size_t i = 0; bundle && i < sizeof(names) / sizeof(names[0]); i++) {
		size_t cl;
		_cleanup_free_ uint8_t *c = fixture(names[i], &cl);
		if (!c)
			continue;
		struct pvg_ccob h;
		char *err = NULL;
		CHECK_INT(pvg_ccob_parse_header(c, cl, &h, &err), 0);
		CHECK_INT(h.uncompressed_size, bl);
		uint64_t in_len = h.total_size - h.header_size;
		uint8_t *out = malloc(bl);
		/* a prefix: the bundle header only, and exactly the bundle's bytes */
		memset(out, 0xee, bl);
		CHECK_INT(inflate_of(c, cl, in_len, out, 64, &err), 0);
		CHECK(memcmp(out, bundle, 64) == 0);
		CHECK(out[64] == 0xee); /* nothing written past what was asked */
		/* up to the end of the gfx906 entry's ELF header */
		CHECK_INT(inflate_of(c, cl, in_len, out, 4096 + 64, &err), 0);
		CHECK(memcmp(out, bundle, 4096 + 64) == 0);
		/* whole: with the hash checked */
		CHECK_INT(inflate_of(c, cl, in_len, out, bl, &err), 0);
		CHECK(memcmp(out, bundle, bl) == 0);
		/* a wrong hash: a prefix does not see it (it is not checked), the whole does */
		c[h.version == 2 ? 16 : 24] ^= 1;
		CHECK_INT(inflate_of(c, cl, in_len, out, 4096, &err), 0);
		CHECK(inflate_of(c, cl, in_len, out, bl, &err) < 0);
		CHECK(err && strstr(err, "hash mismatch"));
		free(err), err = NULL;
		c[h.version == 2 ? 16 : 24] ^= 1;
		/* the stream cut short: its start still decodes, the whole is refused */
		CHECK(inflate_of(c, cl, in_len - 40, out, bl, &err) < 0);
		CHECK(err && (strstr(err, "truncated") || strstr(err, "corrupt")));
		printf("#   %s cut: %s\n", names[i], err ? err : "");
		free(err), err = NULL;
		if (h.method == PVG_CCOB_ZLIB) /* zstd decodes a block (here: all of it) at once */
			CHECK_INT(inflate_of(c, cl, in_len - 40, out, 64, &err), 0);
		/* asking past what a cut stream holds is refused, not padded */
		CHECK(inflate_of(c, cl, 20, out, bl - 1, &err) < 0);
		free(err), err = NULL;
		free(out);
	}
}

static size_t count_objs(const struct pvg_codeobj_set *set, bool (*pred)(const struct pvg_code_object *))
{
	size_t n = 0;
	for (size_t i = 0; i < set->n_objs; i++)
		n += pred(&set->objs[i]);
	return n;
}

static bool is_amdgpu(const struct pvg_code_object *co) { return co->kind == PVG_CO_AMDGPU; }
static bool read_whole(const struct pvg_code_object *co)
{
	return co->kind == PVG_CO_AMDGPU && co->kernels_known && co->co_version == 4;
}
static bool unchecked(const struct pvg_code_object *co)
{
	return co->kind == PVG_CO_AMDGPU && co->checksum == PVG_CSUM_UNCHECKED;
}
static bool verified(const struct pvg_code_object *co)
{
	return co->kind == PVG_CO_AMDGPU && co->checksum == PVG_CSUM_VERIFIED;
}
static bool gfx906_read(const struct pvg_code_object *co)
{
	return co->kind == PVG_CO_AMDGPU && co->id_target && strcmp(co->id_target, "gfx906") == 0 &&
	       co->kernels_known && !co->not_decoded && co->kernels && !co->error && !co->mismatch;
}

static void many_ccobs_decompressed_as_far_as_asked(void)
{
	size_t len;
	_cleanup_free_ uint8_t *lib = fixture("hip-ccob-many.so", &len);
	if (!lib)
		return;
	struct pvg_codeobj_set *set;
	/* nothing asked for: the bundle headers only */
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "many", NULL, &set), 0);
	CHECK_INT(set->n_issues, 0);
	CHECK_INT(count_objs(set, is_amdgpu), 122);
	CHECK_INT(count_objs(set, read_whole), 0);
	CHECK_INT(count_objs(set, unchecked), 122);
	CHECK_INT(set->objs[set->n_objs - 1].bundle, 39);
	for (size_t i = 1; i < set->n_objs; i++) /* in the walk's order */
		if (set->objs[i].bundle < set->objs[i - 1].bundle)
			tap_case_failed = 1;
	pvg_codeobj_set_free(set);
	/* gfx906: read in every bundle, the checksums unchecked (it is never the last entry) */
	struct pvg_codeobj_opts o = { .names_arch = "gfx906" };
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "many", &o, &set), 0);
	CHECK_INT(set->n_issues, 0);
	CHECK_INT(count_objs(set, gfx906_read), 40);
	CHECK_INT(count_objs(set, unchecked), 122);
	CHECK(count_objs(set, read_whole) < 122);
	pvg_codeobj_set_free(set);
	/* every kernel: every bundle whole, every checksum checked */
	struct pvg_codeobj_opts all = { .kernel_names = true };
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "many", &all, &set), 0);
	CHECK_INT(set->n_issues, 0);
	CHECK_INT(count_objs(set, read_whole), 122);
	CHECK_INT(count_objs(set, verified), 122);
	pvg_codeobj_set_free(set);
	/* a wrong hash in bundle 5: found when it is read whole, with the bundles in order */
	uint64_t off = 0;
	for (size_t i = 0; i + 4 <= len; i += 4096)
		if (memcmp(lib + i, "CCOB", 4) == 0 && off++ == 5) {
			uint16_t v;
			memcpy(&v, lib + i + 4, 2);
			lib[i + (v == 2 ? 16 : 24)] ^= 0x40;
			break;
		}
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "many", &all, &set), 0);
	CHECK_INT(set->n_issues, 1);
	CHECK(set->n_issues && strstr(set->issues[0].where, "bundle 5 (CCOB)") &&
	      strstr(set->issues[0].message, "hash mismatch"));
	CHECK_INT(count_objs(set, read_whole), 122 - (5 % 3 == 0 ? 5 : 2));
	pvg_codeobj_set_free(set);
	/* ... and not when only a prefix is (it is then said to be unchecked) */
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "many", &o, &set), 0);
	CHECK_INT(set->n_issues, 0);
	CHECK_INT(count_objs(set, gfx906_read), 40);
	pvg_codeobj_set_free(set);
}
static void ptx_entries_are_kernels(void)
{
	const char ptx[] = ".version 9.0\n.target sm_90\n.visible .entry wvSplitK(\n.param .u64 p)\n"
			   "{ ret; }\n.visible .entry _Z9scale_addPff(\n.func notakernel()\n";
	struct pvg_code_object co = { 0 };
	pvg_ptx_kernels(ptx, sizeof(ptx) - 1, &co);
	CHECK_INT(co.n_kernels, 2);
	CHECK(pvg_codeobj_has_kernel(&co, "wvSplitK"));
	CHECK(pvg_codeobj_has_kernel(&co, "scale_add"));
	for (size_t i = 0; i < co.n_kernels; i++)
		free(co.kernels[i].name);
	free(co.kernels);
}

static void scan_of_garbage_finds_nothing(void)
{
	uint8_t junk[1024];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 31 + 7);
	struct pvg_codeobj_set *set = NULL;
	CHECK_INT(pvg_codeobj_scan_mem(junk, sizeof(junk), "junk", NULL, &set), 0);
	CHECK_INT(set->n_objs, 0);
	pvg_codeobj_set_free(set);
	memcpy(junk, "\177ELF", 4);
	CHECK_INT(pvg_codeobj_scan_mem(junk, sizeof(junk), "junk", NULL, &set), 0);
	CHECK_INT(set->n_objs, 0);
	CHECK(set->n_issues > 0);
	pvg_codeobj_set_free(set);
}

/* KFD's gfx_target_version and HSA_OVERRIDE_GFX_VERSION, as ROCr turns them into names */
static void gfx_names_of_versions(void)
{
	char n[32];
	CHECK_INT(pvg_gfx_name_of_version(90306, n, sizeof(n)), 0);
	CHECK_STR(n, "gfx936");
	CHECK_INT(pvg_gfx_name_of_version(90010, n, sizeof(n)), 0);
	CHECK_STR(n, "gfx90a");
	CHECK_INT(pvg_gfx_name_of_version(100300, n, sizeof(n)), 0);
	CHECK_STR(n, "gfx1030");
	CHECK_INT(pvg_gfx_name_of_version(110001, n, sizeof(n)), 0);
	CHECK_STR(n, "gfx1101");
	CHECK_INT(pvg_gfx_name_of_version(0, n, sizeof(n)), -EINVAL);
	CHECK_INT(pvg_gfx_name_of_version(91600, n, sizeof(n)), -EINVAL);
	CHECK_INT(pvg_gfx_name_of_version(90016, n, sizeof(n)), -EINVAL);
	CHECK_INT(pvg_gfx_name_of_override("9.3.6", n, sizeof(n)), 0);
	CHECK_STR(n, "gfx936");
	CHECK_INT(pvg_gfx_name_of_override("10.3.0", n, sizeof(n)), 0);
	CHECK_STR(n, "gfx1030");
	CHECK_INT(pvg_gfx_name_of_override("9.0.10", n, sizeof(n)), 0);
	CHECK_STR(n, "gfx90a");
	const char *bad[] = { "", "9", "9.3", "9.3.", "9.3.6.1", "9.3.16", "a.b.c", "9..6",
			      " 9.3.6", "9.3.6 ", "1000.0.0", "0.0.0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(pvg_gfx_name_of_override(bad[i], n, sizeof(n)), -EINVAL);
}

/* The one parser of target ids, strict for a config's arch: the features in their one
 * spelling only; the closest known name for a typo, none for a name too long to compare. */
static void arch_validation_uses_the_strict_target_parser(void)
{
	struct pvg_target t;
	CHECK_INT(pvg_target_parse("gfx90a:sram-ecc+", &t), 0); /* a code object's note */
	CHECK(t.sramecc == PVG_FEAT_ON);
	CHECK(!pvg_arch_valid("gfx90a:sram-ecc+"));		/* but not a config's arch */
	CHECK_INT(pvg_target_parse("gfx90a:xnack-+", &t), 0);
	CHECK(t.other_features);
	CHECK(!pvg_arch_valid("gfx90a:xnack-+"));
	CHECK(!pvg_arch_valid("gfx90a:xnack+:"));
	CHECK(!pvg_arch_valid("gfx90a::xnack+"));
	CHECK(pvg_arch_valid("gfx90a:xnack+:xnack-"));
	CHECK(pvg_arch_valid("gfx10-3-generic:xnack-"));
	char *why = pvg_target_id_problem("GFX90A");
	CHECK(why && strstr(why, "did you mean \"gfx90a\"?"));
	free(why);
	why = pvg_target_id_problem("sm_91");
	CHECK(why && strstr(why, "did you mean \"sm_90\"?"));
	free(why);
	char longname[80];
	memset(longname, 'a', sizeof(longname) - 1);
	memcpy(longname, "gfx", 3);
	longname[sizeof(longname) - 1] = '\0';
	why = pvg_target_id_problem(longname);
	CHECK(why && strstr(why, "is not a known GPU architecture (expected"));
	free(why);
	CHECK(pvg_target_id_problem("gfx942:sramecc+:xnack-") == NULL);
}


/* ---- identities: the sha256 of each code object as the driver receives it ---- */

static void sha256_of(const uint8_t *p, size_t n, uint8_t out[32])
{
	unsigned int l = 0;
	EVP_Digest(p, n, out, &l, EVP_sha256(), NULL);
}

static const struct pvg_code_object *first_of_arch(const struct pvg_codeobj_set *set,
						    const char *arch)
{
	for (size_t i = 0; i < set->n_objs; i++)
		if (set->objs[i].arch && strcmp(set->objs[i].arch, arch) == 0)
			return &set->objs[i];
	return NULL;
}

static size_t n_digests(const struct pvg_codeobj_set *set)
{
	size_t n = 0;
	for (size_t i = 0; i < set->n_objs; i++)
		n += set->objs[i].digest_known;
	return n;
}

static void digests_are_of_the_objects_asked_for(void)
{
	size_t len;
	_cleanup_free_ uint8_t *lib = fixture("hip-multi.so", &len);
	if (!lib)
		return;
	struct pvg_codeobj_set *none, *one, *all, *file;
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "hip-multi.so", NULL, &none), 0);
	CHECK_INT(n_digests(none), 0);
	struct pvg_codeobj_opts o1 = { .digest_arch = "gfx906" }, oa = { .all_digests = true };
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "hip-multi.so", &o1, &one), 0);
	CHECK_INT(n_digests(one), 1);
	const struct pvg_code_object *co = first_of_arch(one, "gfx906");
	CHECK(co && co->digest_known && co->digest_size == co->size && co->size > 0);
	/* the entry's bytes in the file, hashed here in one piece */
	uint8_t want[32];
	sha256_of(lib + co->offset, co->size, want);
	CHECK(memcmp(co->sha256, want, 32) == 0);
	const struct pvg_code_object *which = NULL;
	CHECK(pvg_codeobj_has_digest(one, want, &which) && which == co);
	want[31] ^= 1;
	CHECK(!pvg_codeobj_has_digest(one, want, &which) && which == NULL);
	CHECK(!pvg_codeobj_has_digest(NULL, want, NULL));
	want[31] ^= 1;
	/* every device code object, not the host entry; the same through the file (pread) */
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "hip-multi.so", &oa, &all), 0);
	CHECK_INT(n_digests(all), 5);
	CHECK_INT(all->n_by_digest, 5);
	const char *src = getenv("PVG_SRC");
	_cleanup_free_ char *path = pvg_asprintf("%s/tests/fixtures/codeobj/hip-multi.so",
						 src ? src : ".");
	CHECK_INT(pvg_codeobj_scan_path(path, &oa, &file), 0);
	for (size_t i = 0; i < all->n_objs; i++) {
		CHECK(all->objs[i].digest_known == (all->objs[i].kind == PVG_CO_AMDGPU));
		CHECK(memcmp(all->objs[i].sha256, file->objs[i].sha256, 32) == 0);
		CHECK(pvg_codeobj_has_digest(file, all->objs[i].sha256, &which) ==
		      all->objs[i].digest_known);
	}
	CHECK(pvg_codeobj_has_digest(all, want, &which) && which->arch &&
	      strcmp(which->arch, "gfx906") == 0);
	/* digest_arch belongs to the set, not to the caller's string */
	char arch[16] = "gfx906";
	struct pvg_codeobj_opts oc = { .digest_arch = arch };
	struct pvg_codeobj_set *copy;
	CHECK_INT(pvg_codeobj_scan_mem(lib, len, "hip-multi.so", &oc, &copy), 0);
	memcpy(arch, "gfx908", 6);
	CHECK_STR(copy->opts.digest_arch, "gfx906");
	pvg_codeobj_set_free(copy);
	pvg_codeobj_set_free(none);
	pvg_codeobj_set_free(one);
	pvg_codeobj_set_free(all);
	pvg_codeobj_set_free(file);
}

/* A CCOB entry's digest is of its decompressed bytes: the plain bundle's, whatever the
 * version and codec; the whole bundle need not be decompressed for it. */
static void ccob_digests_equal_the_plain_bundle(void)
{
	size_t bl;
	_cleanup_free_ uint8_t *bundle = fixture("bundle-gfx906.bin", &bl);
	if (!bundle)
		return;
	struct pvg_codeobj_opts o = { .digest_arch = "gfx906" };
	struct pvg_codeobj_set *plain;
	CHECK_INT(pvg_codeobj_scan_mem(bundle, bl, "bundle", &o, &plain), 0);
	const struct pvg_code_object *ref = first_of_arch(plain, "gfx906");
	CHECK(ref && ref->digest_known && !ref->compressed);
	const char *names[] = { "ccob-v1-zlib.bin", "ccob-v1-zstd.bin", "ccob-v2-zlib.bin",
				"ccob-v2-zstd.bin", "ccob-v3-zlib.bin", "ccob-v3-zstd.bin" };
	for (size_t i = 0; ref && i < sizeof(names) / sizeof(names[0]); i++) {
		size_t cl;
		_cleanup_free_ uint8_t *c = fixture(names[i], &cl);
		struct pvg_codeobj_set *set;
		CHECK_INT(pvg_codeobj_scan_mem(c, cl, names[i], &o, &set), 0);
		const struct pvg_code_object *co = first_of_arch(set, "gfx906");
		CHECK(co && co->compressed && co->digest_known);
		CHECK(co && memcmp(co->sha256, ref->sha256, 32) == 0);
		CHECK(co && co->digest_size == ref->digest_size);
		pvg_codeobj_set_free(set);
	}
	pvg_codeobj_set_free(plain);
	/* 40 CCOBs: every gfx906 entry hashed, no other; decompressed only as far as those */
	size_t ml;
	_cleanup_free_ uint8_t *many = fixture("hip-ccob-many.so", &ml);
	struct pvg_codeobj_set *set;
	CHECK_INT(pvg_codeobj_scan_mem(many, ml, "many", &o, &set), 0);
	size_t n906 = 0;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		bool is906 = co->arch && strcmp(co->arch, "gfx906") == 0;
		n906 += is906;
		CHECK(co->digest_known == is906);
	}
	CHECK_INT(n906, 40);
	pvg_codeobj_set_free(set);
}

/* CUDA: a compressed entry's digest is of the cubin (or PTX text) it decodes to; PTX is
 * hashed for the sm_NN whose driver could compile it, relocatable cubins never. */
static void cuda_digests_of_plain_and_compressed_entries(void)
{
	const char *names[] = { "cuda.fatbin", "cuda-z.fatbin", "cuda-lz4.fatbin" };
	uint8_t sm90[32], ptx[32];
	struct pvg_codeobj_opts o90 = { .digest_arch = "sm_90" }, o80 = { .digest_arch = "sm_80" };
	for (size_t i = 0; i < 3; i++) {
		size_t l;
		_cleanup_free_ uint8_t *f = fixture(names[i], &l);
		if (!f)
			return;
		struct pvg_codeobj_set *set, *set80;
		CHECK_INT(pvg_codeobj_scan_mem(f, l, names[i], &o90, &set), 0);
		const struct pvg_code_object *c = first_of_arch(set, "sm_90"),
					     *p = first_of_arch(set, "compute_90"),
					     *c80 = first_of_arch(set, "sm_80");
		CHECK(c && p && c80 && c->digest_known && p->digest_known && !c80->digest_known);
		if (!c || !p)
			return;
		CHECK(c->compressed == (i > 0));
		CHECK_INT(c->digest_size, c->size);
		if (i == 0) {
			memcpy(sm90, c->sha256, 32);
			memcpy(ptx, p->sha256, 32);
			/* the cubin is the payload itself; PTX text ends at its NUL */
			uint8_t want[32];
			sha256_of(f + c->offset, c->size, want);
			CHECK(memcmp(want, sm90, 32) == 0);
			size_t tl = strnlen((const char *)f + p->offset, p->size);
			CHECK(tl < p->size);
			CHECK_INT(p->digest_size, tl);
			sha256_of(f + p->offset, tl, want);
			CHECK(memcmp(want, ptx, 32) == 0);
		} else {
			CHECK(memcmp(c->sha256, sm90, 32) == 0);
			CHECK(memcmp(p->sha256, ptx, 32) == 0);
		}
		/* sm_80: its cubin, not compute_90 PTX (an sm_80 driver cannot compile it) */
		CHECK_INT(pvg_codeobj_scan_mem(f, l, names[i], &o80, &set80), 0);
		CHECK_INT(n_digests(set80), 1);
		CHECK(first_of_arch(set80, "sm_80")->digest_known);
		pvg_codeobj_set_free(set);
		pvg_codeobj_set_free(set80);
	}
	/* a damaged LZ4 entry: malformed, no identity */
	size_t l;
	_cleanup_free_ uint8_t *bad = fixture("cuda-lz4-bad.fatbin", &l);
	struct pvg_codeobj_set *set;
	CHECK_INT(pvg_codeobj_scan_mem(bad, l, "bad", &o90, &set), 0);
	const struct pvg_code_object *c = first_of_arch(set, "sm_90");
	CHECK(c && c->error && !c->digest_known);
	CHECK(!pvg_codeobj_has_digest(set, sm90, NULL));
	pvg_codeobj_set_free(set);
	/* -rdc: the cubins of __nv_relfatbin are not loadable, those of .nv_fatbin are */
	const char *src = getenv("PVG_SRC");
	_cleanup_free_ char *rdc = pvg_asprintf("%s/tests/fixtures/cuda-rdc/rdc-both.so",
						src ? src : ".");
	struct pvg_codeobj_opts oa = { .all_digests = true };
	CHECK_INT(pvg_codeobj_scan_path(rdc, &oa, &set), 0);
	size_t n = 0;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		bool reloc = strcmp(co->section, "__nv_relfatbin") == 0;
		CHECK(co->digest_known == !reloc);
		CHECK(pvg_co_loadable(co) == !reloc);
		n += co->digest_known;
	}
	CHECK_INT(n, 2);
	pvg_codeobj_set_free(set);
}

int main(void)
{
	RUN(gfx_names_of_versions);
	RUN(arch_validation_uses_the_strict_target_parser);
	RUN(target_matching_follows_the_hip_runtime);
	RUN(target_id_is_found_in_bundle_ids);
	RUN(mach_table_names_public_values_only);
	RUN(metadata_gives_target_and_kernels);
	RUN(metadata_counts_that_lie_are_refused);
	RUN(bundle_parse_checks_every_length);
	RUN(md5_low64_is_little_endian_first_half);
	RUN(ccob_versions_sizes_and_hash);
	RUN(ccob_prefix_and_whole_on_fixtures);
	RUN(many_ccobs_decompressed_as_far_as_asked);
	RUN(ptx_entries_are_kernels);
	RUN(scan_of_garbage_finds_nothing);
	RUN(digests_are_of_the_objects_asked_for);
	RUN(ccob_digests_equal_the_plain_bundle);
	RUN(cuda_digests_of_plain_and_compressed_entries);
	TAP_EXIT();
}
