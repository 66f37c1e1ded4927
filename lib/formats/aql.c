/* SPDX-License-Identifier: MIT */
/* AQL kernel-dispatch packets and AMDGPU kernel descriptor symbols (see aql.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/aql.h"

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

int pvg_aql_decode(const uint8_t pkt[PVG_AQL_PACKET_SIZE], struct pvg_aql_dispatch *out)
{
	memset(out, 0, sizeof(*out));
	uint16_t header = rd16(pkt);
	if ((header & 0xff) != PVG_AQL_TYPE_KERNEL_DISPATCH)
		return 0;
	uint16_t setup = rd16(pkt + 2);
	out->dims = setup & 0x3;
	for (unsigned d = 0; d < 3; d++) {
		out->workgroup[d] = rd16(pkt + 4 + 2 * d);
		out->grid[d] = rd32(pkt + 12 + 4 * d);
	}
	out->kernel_object = rd64(pkt + 32);
	if (out->dims == 0 || out->kernel_object == 0)
		return -EINVAL;
	for (unsigned d = 0; d < 3; d++) {
		/* dimensions past dims must be 1 by the HSA spec; a zero size is never valid */
		if (out->workgroup[d] == 0 || out->grid[d] == 0)
			return -EINVAL;
		out->workgroups[d] = (uint32_t)(((uint64_t)out->grid[d] + out->workgroup[d] - 1) /
						out->workgroup[d]);
	}
	return 1;
}

#define SHT_SYMTAB_ 2
#define SHT_DYNSYM_ 11

int pvg_amdgpu_kd_symbols(const uint8_t *elf, size_t size, pvg_kd_fn fn, void *opaque)
{
	if (size < 64 || memcmp(elf, "\177ELF", 4) != 0 || elf[4] != 2 /* 64-bit */ ||
	    elf[5] != 1 /* little-endian */)
		return -EINVAL;
	uint64_t shoff = rd64(elf + 0x28);
	uint16_t shentsize = rd16(elf + 0x3a), shnum = rd16(elf + 0x3c);
	if (shentsize < 64 || shoff > size || (uint64_t)shnum * shentsize > size - shoff)
		return -EBADMSG;
	/* .symtab when there is one, else .dynsym */
	int pick = -1;
	for (unsigned want = SHT_SYMTAB_;; want = SHT_DYNSYM_) {
		for (unsigned i = 0; i < shnum && pick < 0; i++)
			if (rd32(elf + shoff + (uint64_t)i * shentsize + 4) == want)
				pick = (int)i;
		if (pick >= 0 || want == SHT_DYNSYM_)
			break;
	}
	if (pick < 0)
		return 0;
	const uint8_t *sh = elf + shoff + (uint64_t)pick * shentsize;
	uint64_t off = rd64(sh + 0x18), len = rd64(sh + 0x20), ent = rd64(sh + 0x38);
	uint32_t link = rd32(sh + 0x28);
	if (ent < 24 || off > size || len > size - off || link >= shnum)
		return -EBADMSG;
	const uint8_t *strsh = elf + shoff + (uint64_t)link * shentsize;
	uint64_t stroff = rd64(strsh + 0x18), strlen_ = rd64(strsh + 0x20);
	if (stroff > size || strlen_ > size - stroff)
		return -EBADMSG;
	const char *strtab = (const char *)elf + stroff;
	int n = 0;
	for (uint64_t s = 0; s + ent <= len; s += ent) {
		const uint8_t *sym = elf + off + s;
		uint32_t name = rd32(sym);
		if (name >= strlen_)
			continue;
		const char *nm = strtab + name;
		const char *end = memchr(nm, '\0', strlen_ - name);
		if (!end)
			return -EBADMSG;
		size_t nl = (size_t)(end - nm);
		if (nl <= 3 || memcmp(end - 3, ".kd", 3) != 0 || (sym[4] & 0xf) != 1 /* STT_OBJECT */)
			continue;
		n++;
		if (!fn(opaque, nm, nl - 3, rd64(sym + 8)))
			break;
	}
	return n;
}

static int kd_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct pvg_kd_entry *)a)->kernel_object;
	uint64_t y = ((const struct pvg_kd_entry *)b)->kernel_object;
	return x < y ? -1 : x > y;
}

void pvg_kd_sort(struct pvg_kd_entry *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), kd_cmp);
}

const struct pvg_kd_entry *pvg_kd_find(const struct pvg_kd_entry *v, size_t n,
				       uint64_t kernel_object)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].kernel_object == kernel_object)
			return &v[mid];
		if (v[mid].kernel_object < kernel_object)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *pvg_kd_lookup(const struct pvg_kd_entry *v, size_t n, uint64_t kernel_object)
{
	const struct pvg_kd_entry *e = pvg_kd_find(v, n, kernel_object);
	return e ? e->name : NULL;
}

/* ---- loaded code object URIs ----------------------------------------------------------------- */

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* A C integral literal at p[0..end): 0x/0X hex, a leading 0 octal, else decimal; digits only,
 * no sign, no overflow. The characters used, or 0. */
static size_t uri_number(const char *p, const char *end, uint64_t *out)
{
	const char *q = p;
	unsigned base = 10;
	if (end - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
		base = 16;
		q += 2;
	} else if (q < end && q[0] == '0') {
		base = 8;
	}
	const char *digits = q;
	uint64_t v = 0;
	for (; q < end; q++) {
		int d = hex_digit(*q);
		if (d < 0 || (unsigned)d >= base)
			break;
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return 0;
		v = v * base + (unsigned)d;
	}
	if (q == digits)
		return 0;
	*out = v;
	return (size_t)(q - p);
}

/* "#offset=N&size=N" (or with '?') exactly filling p[0..end) */
static int uri_range(const char *p, const char *end, struct pvg_hsa_uri *out, const char **why)
{
	static const char off_key[] = "offset=", size_key[] = "&size=";
	if (p == end)
		return 0;
	if (*p != '#' && *p != '?') {
		*why = "text after the path or process that is not a range";
		return -EINVAL;
	}
	p++;
	if ((size_t)(end - p) < sizeof(off_key) - 1 || memcmp(p, off_key, sizeof(off_key) - 1) != 0) {
		*why = "a range without offset=";
		return -EINVAL;
	}
	p += sizeof(off_key) - 1;
	size_t n = uri_number(p, end, &out->offset);
	if (!n) {
		*why = "an offset that is not a number";
		return -EINVAL;
	}
	p += n;
	if ((size_t)(end - p) < sizeof(size_key) - 1 ||
	    memcmp(p, size_key, sizeof(size_key) - 1) != 0) {
		*why = "a range without size=";
		return -EINVAL;
	}
	p += sizeof(size_key) - 1;
	n = uri_number(p, end, &out->size);
	if (!n) {
		*why = "a size that is not a number";
		return -EINVAL;
	}
	if (p + n != end) {
		*why = "text after the range's size";
		return -EINVAL;
	}
	out->has_range = true;
	return 0;
}

int pvg_hsa_uri_parse(const char *uri, size_t len, struct pvg_hsa_uri *out, const char **why)
{
	static const char file[] = "file://", memory[] = "memory://";
	const char *dummy;
	if (!why)
		why = &dummy;
	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (!uri || memchr(uri, '\0', len)) {
		*why = "a NUL inside the URI";
		return -EINVAL;
	}
	const char *end = uri + len;
	if (len >= sizeof(file) - 1 && memcmp(uri, file, sizeof(file) - 1) == 0) {
		out->scheme = PVG_HSA_URI_FILE;
		const char *p = uri + sizeof(file) - 1;
		size_t o = 0;
		for (; p < end && *p != '#' && *p != '?'; p++) {
			char c = *p;
			if (c == '%') {
				int hi = end - p >= 3 ? hex_digit(p[1]) : -1;
				int lo = hi >= 0 ? hex_digit(p[2]) : -1;
				if (lo < 0 || (hi | lo) == 0) {
					*why = lo < 0 ? "a bad %-escape in the path" : "%00 in the path";
					return -EINVAL;
				}
				c = (char)(hi << 4 | lo);
				p += 2;
			}
			if (o + 1 >= sizeof(out->path)) {
				*why = "a path longer than PATH_MAX";
				return -EINVAL;
			}
			out->path[o++] = c;
		}
		out->path[o] = '\0';
		if (o == 0) {
			*why = "no path";
			return -EINVAL;
		}
		return uri_range(p, end, out, why);
	}
	if (len >= sizeof(memory) - 1 && memcmp(uri, memory, sizeof(memory) - 1) == 0) {
		out->scheme = PVG_HSA_URI_MEMORY;
		const char *p = uri + sizeof(memory) - 1, *digits = p;
		for (; p < end && *p >= '0' && *p <= '9'; p++) {
			if (out->pid > (UINT64_MAX - 9) / 10) {
				*why = "a process id out of range";
				return -EINVAL;
			}
			out->pid = out->pid * 10 + (uint64_t)(*p - '0');
		}
		if (p == digits) {
			*why = "no process id";
			return -EINVAL;
		}
		if (uri_range(p, end, out, why) < 0)
			return -EINVAL;
		if (!out->has_range) {
			*why = "a memory URI without offset and size";
			return -EINVAL;
		}
		return 0;
	}
	*why = "neither file:// nor memory://";
	return -EINVAL;
}
