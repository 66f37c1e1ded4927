/* SPDX-License-Identifier: MIT */
/*
 * The dispatch witness's pure parts: the witness file parser on the file recorded on the
 * H200 and on corrupt variants of it, attribution of a file to live targets, the AQL packet
 * decoder on packets laid out with ROCr's own hsa_kernel_dispatch_packet_t, and kernel
 * descriptor symbols of a real hipcc code object (tests/fixtures/codeobj) resolved from
 * kernel objects.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

#include "formats/aql.h"
#include "formats/codeobj/codeobj.h"
#include "formats/witness.h"
#include "tap.h"

#if __has_include(<hsa/hsa.h>)
#include <hsa/hsa.h>
#define HAVE_HSA 1
#endif

static uint8_t *slurp(const char *rel, size_t *len)
{
	const char *src = getenv("PVG_SRC");
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", src ? src : ".", rel);
	char *buf = NULL;
	if (pvg_read_file(path, 64u << 20, &buf, len) < 0) {
		printf("#   cannot read %s\n", path);
		return NULL;
	}
	return (uint8_t *)buf;
}

#define DEMO "tests/gpu/results/2026-12-01-h200-witness/demo.pvgw"
static struct pvg_witness_entry entries[PVG_WITNESS_MAX_RECORDS];

static const struct pvg_witness_entry *find(const struct pvg_witness_file *f, const char *name,
					    uint32_t gx)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->entries[i].name.n == strlen(name) &&
		    memcmp(f->entries[i].name.p, name, f->entries[i].name.n) == 0 &&
		    f->entries[i].grid[0] == gx)
			return &f->entries[i];
	return NULL;
}

static void witness_parses_the_h200_recording(void)
{
	size_t len;
	_cleanup_free_ uint8_t *b = slurp(DEMO, &len);
	CHECK(b != NULL);
	if (!b)
		return;
	struct pvg_witness_file f = { .entries = entries };
	CHECK_INT(pvg_witness_parse(b, len, &f, NULL), PVG_WITNESS_OK);
	CHECK_INT(f.n, 4);
	CHECK_INT(f.h.api, PVG_WITNESS_API_CUDA);
	CHECK_INT(f.h.launches, 7);
	CHECK_INT(f.h.graph_launches, 2);
	CHECK_INT(f.h.captured, 1);
	CHECK(f.h.flags & PVG_WITNESS_F_RECORDING);
	const struct pvg_witness_entry *e = find(&f, "_Z13pvg_wit_scalePffi", 8);
	CHECK(e && e->count == 2 && e->block[0] == 128 && e->first_ns < e->last_ns);
	CHECK(e && e->demangled.n == strlen("pvg_wit_scale(float*, float, int)"));
	e = find(&f, "_Z11pvg_wit_addPfPKfi", 4);
	CHECK(e && e->grid[1] == 2 && e->block[0] == 64 && e->count == 1);
	CHECK(find(&f, "_Z11pvg_wit_addPfPKfi", 5) != NULL);
	e = find(&f, "pvg_wit_plain", 3);
	CHECK(e && e->via == PVG_WITNESS_VIA_DRIVER && e->demangled.n == 0);
	CHECK(find(&f, "_Z13pvg_wit_scalePffi", 16) == NULL); /* captured, not run */
}

static bool same_record(const struct pvg_witness_entry *a, const struct pvg_witness_entry *b)
{
	return a->name.n == b->name.n && memcmp(a->name.p, b->name.p, a->name.n) == 0 &&
	       memcmp(a->grid, b->grid, sizeof(a->grid)) == 0 &&
	       memcmp(a->block, b->block, sizeof(a->block)) == 0 && a->count == b->count;
}

/* The second H200 run: the same program with runtime and driver callbacks and with driver
 * callbacks only records the same launches; PyTorch's kernels come demangled. */
static void witness_h200_driver_only_sees_the_same_launches(void)
{
	static struct pvg_witness_entry e2[PVG_WITNESS_MAX_RECORDS];
	size_t la, lb;
	_cleanup_free_ uint8_t *a = slurp("tests/gpu/results/2026-12-01-h200-witness/demo-2.pvgw", &la);
	_cleanup_free_ uint8_t *b =
		slurp("tests/gpu/results/2026-12-01-h200-witness/demo-2-driver-only.pvgw", &lb);
	CHECK(a && b);
	if (!a || !b)
		return;
	struct pvg_witness_file fa = { .entries = entries }, fb = { .entries = e2 };
	CHECK_INT(pvg_witness_parse(a, la, &fa, NULL), PVG_WITNESS_OK);
	CHECK_INT(pvg_witness_parse(b, lb, &fb, NULL), PVG_WITNESS_OK);
	CHECK_INT(fa.h.nested_driver, 7); /* every runtime launch showed its driver launch */
	CHECK_INT(fb.h.nested_driver, 0);
	CHECK_INT(fa.h.launches, fb.h.launches);
	CHECK_INT(fa.h.captured, 1);
	CHECK_INT(fb.h.captured, 1);
	CHECK_INT(fa.n, 4);
	CHECK_INT(fb.n, fa.n);
	for (size_t i = 0; i < fa.n; i++) {
		bool found = false;
		for (size_t j = 0; j < fb.n; j++)
			found |= same_record(&fa.entries[i], &fb.entries[j]);
		CHECK(found);
	}
	size_t lt;
	_cleanup_free_ uint8_t *t = slurp("tests/gpu/results/2026-12-01-h200-witness/torch-loop-2.pvgw", &lt);
	if (!t)
		return;
	struct pvg_witness_file ft = { .entries = entries };
	CHECK_INT(pvg_witness_parse(t, lt, &ft, NULL), PVG_WITNESS_OK);
	CHECK_INT(ft.h.launches, 12202);
	const char *want = "void at::native::vectorized_elementwise_kernel<8,";
	bool seen = false;
	for (size_t i = 0; i < ft.n; i++)
		seen |= ft.entries[i].demangled.n > strlen(want) &&
			memcmp(ft.entries[i].demangled.p, want, strlen(want)) == 0 &&
			ft.entries[i].count == 3050;
	CHECK(seen);
}

static enum pvg_witness_error parse_copy(const uint8_t *b, size_t len)
{
	/* a copy of exactly len bytes, so that ASan sees any read past it */
	uint8_t *c = pvg_xcalloc(len ? len : 1, 1);
	memcpy(c, b, len);
	struct pvg_witness_file f = { .entries = entries };
	enum pvg_witness_error e = pvg_witness_parse(c, len, &f, NULL);
	free(c);
	return e;
}

static void witness_refuses_every_cut_and_change(void)
{
	size_t len;
	_cleanup_free_ uint8_t *b = slurp(DEMO, &len);
	if (!b)
		return;
	for (size_t n = 0; n < len; n++) {
		enum pvg_witness_error e = parse_copy(b, n);
		if (e != PVG_WITNESS_E_SHORT) {
			printf("#   cut at %zu: %s\n", n, pvg_witness_strerror(e));
			tap_case_failed = 1;
			break;
		}
	}
	_cleanup_free_ uint8_t *c = pvg_xcalloc(len + 1, 1);
	memcpy(c, b, len);
	CHECK_INT(parse_copy(c, len + 1), PVG_WITNESS_E_TRAILING);
	/* every single flipped byte after the magic and version is caught */
	for (size_t i = 12; i < len; i++) {
		memcpy(c, b, len);
		c[i] ^= 0x20;
		enum pvg_witness_error e = parse_copy(c, len);
		if (e == PVG_WITNESS_OK) {
			printf("#   flipped byte %zu not caught\n", i);
			tap_case_failed = 1;
			break;
		}
	}
	memcpy(c, b, len);
	c[0] = 'X';
	CHECK_INT(parse_copy(c, len), PVG_WITNESS_E_MAGIC);
	const size_t V1 = PVG_WITNESS_V1_HEADER_SIZE; /* the recorded file is version 1 */
	struct pvg_witness_header h;
	memcpy(c, b, len);
	memcpy(&h, c, V1);
	h.version = PVG_WITNESS_VERSION + 1;
	memcpy(c, &h, V1);
	CHECK_INT(parse_copy(c, len), PVG_WITNESS_E_VERSION);
	/* version 2 with version 1's header size: its fields would be read from the records */
	h.version = 2;
	memcpy(c, &h, V1);
	CHECK_INT(pvg_witness_seal(c, len), 0);
	CHECK_INT(parse_copy(c, len), PVG_WITNESS_E_LAYOUT);
	/* sealed but lying: a record whose name leaves the string area, a count of zero */
	memcpy(c, b, len);
	struct pvg_witness_record r;
	memcpy(&r, c + V1, sizeof(r));
	r.name_off = h.strings_size + 1;
	memcpy(c + V1, &r, sizeof(r));
	CHECK_INT(pvg_witness_seal(c, len), 0);
	CHECK_INT(parse_copy(c, len), PVG_WITNESS_E_RECORD);
	memcpy(c, b, len);
	memcpy(&r, c + V1, sizeof(r));
	r.count = 0;
	memcpy(c + V1, &r, sizeof(r));
	CHECK_INT(pvg_witness_seal(c, len), 0);
	CHECK_INT(parse_copy(c, len), PVG_WITNESS_E_RECORD);
	/* more records than the bound */
	memcpy(c, b, len);
	memcpy(&h, c, V1);
	h.n_records = PVG_WITNESS_MAX_RECORDS + 1;
	memcpy(c, &h, V1);
	CHECK_INT(parse_copy(c, len), PVG_WITNESS_E_LAYOUT);
	CHECK_INT(pvg_witness_seal(c, len), -EINVAL);
}

static struct pvg_witness_header hdr(int pid, int nspid, unsigned levels, uint64_t ticks,
				     const char *boot)
{
	struct pvg_witness_header h = { .pid = pid, .nspid = nspid, .nspid_levels = levels,
					.start_ticks = ticks };
	snprintf(h.boot_id, sizeof(h.boot_id), "%s", boot);
	return h;
}

static void witness_attribution(void)
{
	const char *boot = "6566603d-eea5-4d1d-9e35-04d3fff95847";
	/* 100: on provgate's own namespace; 4242: in a container where it is pid 7 */
	const struct pvg_witness_target t[] = { { 100, 100, 5000 }, { 4242, 7, 6000 } };
	size_t which = 99;
	struct pvg_witness_header h = hdr(100, 100, 1, 5000, boot);
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, &which), PVG_WITNESS_LIVE);
	CHECK_INT(which, 0);
	h = hdr(7, 7, 1, 6000, boot); /* written inside the container: its own view */
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, &which), PVG_WITNESS_LIVE);
	CHECK_INT(which, 1);
	h = hdr(100, 100, 1, 4999, boot); /* pid 100 reused */
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, NULL), PVG_WITNESS_PID_REUSED);
	h = hdr(7, 7, 1, 100, boot); /* the container's earlier pid 7 */
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, NULL), PVG_WITNESS_PID_REUSED);
	h = hdr(100, 100, 1, 5000, "00000000-0000-0000-0000-000000000000");
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, NULL), PVG_WITNESS_OTHER_BOOT);
	CHECK_INT(pvg_witness_attribute(&h, "", t, 2, NULL), PVG_WITNESS_OTHER_BOOT);
	h = hdr(31, 100, 2, 5000, boot); /* pid 100 of another namespace, same tick */
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, NULL), PVG_WITNESS_FOREIGN_NS);
	h = hdr(4242, 4242, 1, 6000, boot); /* the container's host pid, claimed as its own */
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, NULL), PVG_WITNESS_FOREIGN_NS);
	h = hdr(555, 555, 1, 5000, boot);
	CHECK_INT(pvg_witness_attribute(&h, boot, t, 2, NULL), PVG_WITNESS_NOT_TARGET);
}

static void aql_decodes_packets_laid_out_by_rocr_header(void)
{
#ifdef HAVE_HSA
	CHECK_INT(sizeof(hsa_kernel_dispatch_packet_t), PVG_AQL_PACKET_SIZE);
	hsa_kernel_dispatch_packet_t p[3];
	memset(p, 0, sizeof(p));
	p[0].header = (uint16_t)(HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE |
				 1 << HSA_PACKET_HEADER_BARRIER |
				 HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE);
	p[0].setup = 2 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
	p[0].workgroup_size_x = 256;
	p[0].workgroup_size_y = 1;
	p[0].workgroup_size_z = 1;
	p[0].grid_size_x = 1000; /* not a multiple: the last workgroup is partial */
	p[0].grid_size_y = 4;
	p[0].grid_size_z = 1;
	p[0].kernel_object = 0x7f12000a1040ull;
	p[1] = p[0];
	p[1].header = HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE;
	p[2] = p[0];
	p[2].workgroup_size_y = 0;
	struct pvg_aql_dispatch d;
	CHECK_INT(pvg_aql_decode((const uint8_t *)&p[0], &d), 1);
	CHECK_INT(d.dims, 2);
	CHECK_INT(d.kernel_object, 0x7f12000a1040ull);
	CHECK_INT(d.workgroup[0], 256);
	CHECK_INT(d.grid[0], 1000);
	CHECK_INT(d.workgroups[0], 4);
	CHECK_INT(d.workgroups[1], 4);
	CHECK_INT(d.workgroups[2], 1);
	CHECK_INT(pvg_aql_decode((const uint8_t *)&p[1], &d), 0);
	CHECK_INT(pvg_aql_decode((const uint8_t *)&p[2], &d), -EINVAL);
	p[0].kernel_object = 0;
	CHECK_INT(pvg_aql_decode((const uint8_t *)&p[0], &d), -EINVAL);
#else
	if (getenv("CI") && strcmp(getenv("CI"), "true") == 0) {
		printf("#   hsa/hsa.h missing (Debian: libhsa-runtime-dev)\n");
		tap_case_failed = 1;
	} else {
		printf("skip - aql_decodes_packets_laid_out_by_rocr_header: hsa/hsa.h not installed\n");
	}
#endif
}

struct kd_list {
	struct pvg_kd_entry v[16];
	char names[16][128];
	size_t n;
	uint64_t base;
};

static bool add_kd(void *opaque, const char *name, size_t len, uint64_t value)
{
	struct kd_list *l = opaque;
	if (l->n == 16 || len >= 128)
		return false;
	memcpy(l->names[l->n], name, len);
	l->names[l->n][len] = '\0';
	l->v[l->n].name = l->names[l->n];
	l->v[l->n].kernel_object = l->base + value;
	l->n++;
	return true;
}

static void kd_symbols_of_a_hipcc_code_object_resolve_kernel_objects(void)
{
	size_t len;
	_cleanup_free_ uint8_t *b = slurp("tests/fixtures/codeobj/bundle-gfx906.bin", &len);
	if (!b)
		return;
	struct pvg_src src = { .mem = b, .fd = -1, .size = len };
	struct pvg_bundle bundle;
	_cleanup_free_ char *err = NULL;
	CHECK_INT(pvg_bundle_parse(&src, 0, len, &bundle, &err), 0);
	const struct pvg_bundle_entry *gfx906 = NULL;
	for (uint64_t i = 0; i < bundle.n_entries; i++)
		if (strstr(bundle.entries[i].id, "gfx906"))
			gfx906 = &bundle.entries[i];
	CHECK(gfx906 != NULL);
	if (gfx906) {
		/* where the loader put the code object: kernel_object = base + st_value */
		struct kd_list l = { .n = 0, .base = 0x7f1200000000ull };
		int n = pvg_amdgpu_kd_symbols(b + gfx906->offset, gfx906->size, add_kd, &l);
		CHECK_INT(n, 2);
		pvg_kd_sort(l.v, l.n);
		bool wv = false, sa = false;
		for (size_t i = 0; i < l.n; i++) {
			const char *got = pvg_kd_lookup(l.v, l.n, l.v[i].kernel_object);
			wv |= got && strcmp(got, "wvSplitK") == 0;
			sa |= got && strcmp(got, "_Z9scale_addILi4EEvPff") == 0;
		}
		CHECK(wv && sa);
		CHECK(pvg_kd_lookup(l.v, l.n, l.base) == NULL);
		CHECK(pvg_kd_lookup(l.v, l.n, l.v[0].kernel_object + 1) == NULL);
		/* cut short: never a read outside */
		for (uint64_t cut = 0; cut < gfx906->size; cut += 97) {
			uint8_t *c = pvg_xcalloc(cut ? cut : 1, 1);
			memcpy(c, b + gfx906->offset, cut);
			struct kd_list m = { .n = 0 };
			int r = pvg_amdgpu_kd_symbols(c, cut, add_kd, &m);
			CHECK(r <= 2);
			free(c);
		}
	}
	pvg_bundle_clear(&bundle);
	CHECK_INT(pvg_amdgpu_kd_symbols((const uint8_t *)"not an elf", 10, add_kd, NULL), -EINVAL);
}

/* The URIs ROCr's loader gives a loaded code object (hsa_ven_amd_loader.h's grammar, and what
 * amd_hsa_loader.cpp writes: file:// %-encoded with a decimal range, memory:// with a hex
 * offset), and hostile ones. */
static void hsa_uri_parser_reads_rocr_uris_and_refuses_bad_ones(void)
{
	struct pvg_hsa_uri u;
	const char *why = NULL;
	const char *s = "file:///dir1/dir2/file1";
	CHECK_INT(pvg_hsa_uri_parse(s, strlen(s), &u, &why), 0);
	CHECK(u.scheme == PVG_HSA_URI_FILE && !u.has_range);
	CHECK_STR(u.path, "/dir1/dir2/file1");
	s = "file:///dir3/dir4/file2#offset=0x2000&size=3000";
	CHECK_INT(pvg_hsa_uri_parse(s, strlen(s), &u, &why), 0);
	CHECK(u.has_range && u.offset == 0x2000 && u.size == 3000);
	s = "memory://1234#offset=0x20000&size=3000";
	CHECK_INT(pvg_hsa_uri_parse(s, strlen(s), &u, &why), 0);
	CHECK(u.scheme == PVG_HSA_URI_MEMORY && u.pid == 1234 && u.offset == 0x20000 &&
	      u.size == 3000);
	/* %-escapes decoded, an octal offset, '?' for '#', 0X */
	s = "file:///opt/my%20lib/libk%2B.so?offset=010&size=0X1f";
	CHECK_INT(pvg_hsa_uri_parse(s, strlen(s), &u, &why), 0);
	CHECK_STR(u.path, "/opt/my lib/libk+.so");
	CHECK(u.offset == 8 && u.size == 31);
	/* only len bytes are read: the loader's text is not NUL-terminated */
	s = "memory://7#offset=0x10&size=16XXXX";
	CHECK_INT(pvg_hsa_uri_parse(s, strlen(s) - 4, &u, &why), 0);
	CHECK(u.pid == 7 && u.offset == 16 && u.size == 16);

	static const struct {
		const char *uri;
		const char *why;
	} bad[] = {
		{ "memory://1234", "a memory URI without offset and size" },
		{ "file:///x#offset=4096", "a range without size=" },
		{ "memory://1#offset=0x10", "a range without size=" },
		{ "file:///x#size=10", "a range without offset=" },
		{ "file:///x#offset=1&size=2junk", "text after the range's size" },
		{ "file:///x#offset=0x&size=1", "an offset that is not a number" },
		{ "file:///x#offset=09&size=1", "a range without size=" },
		{ "file:///x#offset=18446744073709551616&size=1", "an offset that is not a number" },
		{ "file:///x#offset=1&size=-1", "a size that is not a number" },
		{ "file:///a%2", "a bad %-escape in the path" },
		{ "file:///a%zz", "a bad %-escape in the path" },
		{ "file:///a%00b", "%00 in the path" },
		{ "file://", "no path" },
		{ "file://#offset=1&size=1", "no path" },
		{ "memory://#offset=1&size=1", "no process id" },
		{ "memory://99999999999999999999#offset=1&size=1", "a process id out of range" },
		{ "memory://12x#offset=1&size=1", "text after the path or process that is not a range" },
		{ "http://host/x", "neither file:// nor memory://" },
		{ "", "neither file:// nor memory://" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		int r = pvg_hsa_uri_parse(bad[i].uri, strlen(bad[i].uri), &u, &why);
		if (r != -EINVAL || !why || strcmp(why, bad[i].why) != 0)
			printf("#   %s: %d, %s\n", bad[i].uri, r, why ? why : "(null)");
		CHECK_INT(r, -EINVAL);
		CHECK_STR(why, bad[i].why);
	}
	/* a NUL inside the given length */
	static const char nul[] = "file:///a\0b#offset=1&size=1";
	CHECK_INT(pvg_hsa_uri_parse(nul, sizeof(nul) - 1, &u, &why), -EINVAL);
	CHECK_STR(why, "a NUL inside the URI");
	/* a path longer than PATH_MAX */
	static char longp[PVG_HSA_URI_MAX_PATH + 16];
	memcpy(longp, "file://", 7);
	memset(longp + 7, 'a', sizeof(longp) - 8);
	CHECK_INT(pvg_hsa_uri_parse(longp, sizeof(longp) - 1, &u, &why), -EINVAL);
	CHECK_STR(why, "a path longer than PATH_MAX");
}

int main(void)
{
	RUN(witness_parses_the_h200_recording);
	RUN(witness_h200_driver_only_sees_the_same_launches);
	RUN(witness_refuses_every_cut_and_change);
	RUN(witness_attribution);
	RUN(aql_decodes_packets_laid_out_by_rocr_header);
	RUN(kd_symbols_of_a_hipcc_code_object_resolve_kernel_objects);
	RUN(hsa_uri_parser_reads_rocr_uris_and_refuses_bad_ones);
	TAP_EXIT();
}
