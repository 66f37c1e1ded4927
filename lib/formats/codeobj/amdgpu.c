/* SPDX-License-Identifier: MIT */
/*
 * AMDGPU code objects (ELF64, e_machine 224, OS/ABI 64 = AMDGPU_HSA): the processor and
 * xnack/sramecc settings from e_flags, the code object version from the ABI version, and
 * target and kernels from the NT_AMDGPU_METADATA note (owner "AMDGPU", msgpack).
 * Processors missing from the public EF_AMDGPU_MACH table (Hygon gfx936 and its siblings)
 * keep their raw value; their target comes from the note.
 */
#include <limits.h>

#include "formats/codeobj/codeobj.h"

static const struct {
	unsigned mach;
	const char *name;
} mach_table[] = {
	/* LLVM's AMDGPU_MACH_LIST (llvm/BinaryFormat/ELF.h), the public table */
	{ 0x20, "gfx600" },  { 0x21, "gfx601" },   { 0x22, "gfx700" },   { 0x23, "gfx701" },
	{ 0x24, "gfx702" },  { 0x25, "gfx703" },   { 0x26, "gfx704" },   { 0x28, "gfx801" },
	{ 0x29, "gfx802" },  { 0x2a, "gfx803" },   { 0x2b, "gfx810" },   { 0x2c, "gfx900" },
	{ 0x2d, "gfx902" },  { 0x2e, "gfx904" },   { 0x2f, "gfx906" },   { 0x30, "gfx908" },
	{ 0x31, "gfx909" },  { 0x32, "gfx90c" },   { 0x33, "gfx1010" },  { 0x34, "gfx1011" },
	{ 0x35, "gfx1012" }, { 0x36, "gfx1030" },  { 0x37, "gfx1031" },  { 0x38, "gfx1032" },
	{ 0x39, "gfx1033" }, { 0x3a, "gfx602" },   { 0x3b, "gfx705" },   { 0x3c, "gfx805" },
	{ 0x3d, "gfx1035" }, { 0x3e, "gfx1034" },  { 0x3f, "gfx90a" },   { 0x40, "gfx940" },
	{ 0x41, "gfx1100" }, { 0x42, "gfx1013" },  { 0x43, "gfx1150" },  { 0x44, "gfx1103" },
	{ 0x45, "gfx1036" }, { 0x46, "gfx1101" },  { 0x47, "gfx1102" },  { 0x48, "gfx1200" },
	{ 0x49, "gfx1250" }, { 0x4a, "gfx1151" },  { 0x4b, "gfx941" },   { 0x4c, "gfx942" },
	{ 0x4e, "gfx1201" }, { 0x4f, "gfx950" },   { 0x50, "gfx1310" },  { 0x51, "gfx9-generic" },
	{ 0x52, "gfx10-1-generic" }, { 0x53, "gfx10-3-generic" }, { 0x54, "gfx11-generic" },
	{ 0x55, "gfx1152" }, { 0x57, "gfx1154" },  { 0x58, "gfx1153" },  { 0x59, "gfx12-generic" },
	{ 0x5a, "gfx1251" }, { 0x5b, "gfx12-5-generic" }, { 0x5c, "gfx1172" }, { 0x5d, "gfx1170" },
	{ 0x5e, "gfx1171" }, { 0x5f, "gfx9-4-generic" },  { 0x62, "gfx11-7-generic" },
};

const char *pvg_amdgpu_mach_name(unsigned mach)
{
	for (size_t i = 0; i < ARRAY_SIZE(mach_table); i++)
		if (mach_table[i].mach == mach)
			return mach_table[i].name;
	return NULL;
}

/* ---- msgpack (just enough for the metadata map) ------------------------------------------- */

struct mp {
	const uint8_t *p;
	size_t n, pos;
	char *err;
};

static bool mp_need(struct mp *m, size_t k)
{
	if (m->n - m->pos < k) {
		if (!m->err)
			m->err = pvg_asprintf("msgpack truncated at byte %zu", m->pos);
		return false;
	}
	return true;
}

static uint64_t mp_be(const uint8_t *p, int k)
{
	uint64_t v = 0;
	for (int i = 0; i < k; i++)
		v = v << 8 | p[i];
	return v;
}

enum mp_type { MP_NIL, MP_BOOL, MP_INT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_FLOAT, MP_EXT,
	       MP_BAD };

struct mp_obj {
	enum mp_type type;
	int64_t i;
	const char *s; /* str/bin: bytes */
	uint64_t len;  /* str/bin length, array/map count */
};

/* Reads one header; strings' bytes are consumed, containers' children are not. */
static bool mp_read(struct mp *m, struct mp_obj *o)
{
	if (!mp_need(m, 1))
		return false;
	uint8_t c = m->p[m->pos++];
	memset(o, 0, sizeof(*o));
	int k = 0;
	if (c <= 0x7f) {
		o->type = MP_INT;
		o->i = c;
		return true;
	}
	if (c >= 0xe0) {
		o->type = MP_INT;
		o->i = (int8_t)c;
		return true;
	}
	if ((c & 0xf0) == 0x80) {
		o->type = MP_MAP;
		o->len = c & 0x0f;
		goto container;
	}
	if ((c & 0xf0) == 0x90) {
		o->type = MP_ARRAY;
		o->len = c & 0x0f;
		goto container;
	}
	if ((c & 0xe0) == 0xa0) {
		o->type = MP_STR;
		o->len = c & 0x1f;
		goto bytes;
	}
	switch (c) {
	case 0xc0: o->type = MP_NIL; return true;
	case 0xc2: case 0xc3: o->type = MP_BOOL; o->i = c == 0xc3; return true;
	case 0xc4: case 0xc5: case 0xc6:
		k = 1 << (c - 0xc4);
		o->type = MP_BIN;
		if (!mp_need(m, (size_t)k))
			return false;
		o->len = mp_be(m->p + m->pos, k);
		m->pos += (size_t)k;
		goto bytes;
	case 0xd9: case 0xda: case 0xdb:
		k = 1 << (c - 0xd9);
		o->type = MP_STR;
		if (!mp_need(m, (size_t)k))
			return false;
		o->len = mp_be(m->p + m->pos, k);
		m->pos += (size_t)k;
		goto bytes;
	case 0xca: case 0xcb:
		o->type = MP_FLOAT;
		k = c == 0xca ? 4 : 8;
		if (!mp_need(m, (size_t)k))
			return false;
		m->pos += (size_t)k;
		return true;
	case 0xcc: case 0xcd: case 0xce: case 0xcf:
		k = 1 << (c - 0xcc);
		if (!mp_need(m, (size_t)k))
			return false;
		o->type = MP_INT;
		o->i = (int64_t)mp_be(m->p + m->pos, k);
		m->pos += (size_t)k;
		return true;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
		k = 1 << (c - 0xd0);
		if (!mp_need(m, (size_t)k))
			return false;
		uint64_t u = mp_be(m->p + m->pos, k);
		m->pos += (size_t)k;
		o->type = MP_INT;
		if (k < 8 && (u >> (k * 8 - 1)) & 1)
			u |= ~(uint64_t)0 << (k * 8);
		o->i = (int64_t)u;
		return true;
	}
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
		o->type = MP_EXT;
		o->len = (uint64_t)1 << (c - 0xd4);
		if (!mp_need(m, 1 + (size_t)o->len))
			return false;
		m->pos += 1 + (size_t)o->len;
		return true;
	case 0xc7: case 0xc8: case 0xc9:
		k = 1 << (c - 0xc7);
		if (!mp_need(m, (size_t)k + 1))
			return false;
		o->type = MP_EXT;
		o->len = mp_be(m->p + m->pos, k);
		m->pos += (size_t)k + 1;
		if (!mp_need(m, o->len))
			return false;
		m->pos += (size_t)o->len;
		return true;
	case 0xdc: case 0xdd:
		k = c == 0xdc ? 2 : 4;
		o->type = MP_ARRAY;
		if (!mp_need(m, (size_t)k))
			return false;
		o->len = mp_be(m->p + m->pos, k);
		m->pos += (size_t)k;
		goto container;
	case 0xde: case 0xdf:
		k = c == 0xde ? 2 : 4;
		o->type = MP_MAP;
		if (!mp_need(m, (size_t)k))
			return false;
		o->len = mp_be(m->p + m->pos, k);
		m->pos += (size_t)k;
		goto container;
	default:
		if (!m->err)
			m->err = pvg_asprintf("msgpack: invalid type byte 0x%02x at %zu", c, m->pos - 1);
		return false;
	}
bytes:
	if (!mp_need(m, o->len))
		return false;
	o->s = (const char *)m->p + m->pos;
	m->pos += (size_t)o->len;
	return true;
container:
	/* every element takes at least one byte: a count beyond what remains is a lie */
	if (o->len > m->n - m->pos || (o->type == MP_MAP && o->len * 2 > m->n - m->pos)) {
		if (!m->err)
			m->err = pvg_asprintf("msgpack: count %" PRIu64 " at byte %zu exceeds the "
					      "remaining %zu bytes",
					      o->len, m->pos, m->n - m->pos);
		return false;
	}
	return true;
}

/* Skips one value, iteratively: `pending` counts the values still to skip, and since each
 * takes at least a byte, more pending values than remaining bytes is a lie caught at once. */
static bool mp_skip(struct mp *m)
{
	uint64_t pending = 1;
	while (pending) {
		if (pending > m->n - m->pos) {
			if (!m->err)
				m->err = pvg_asprintf("msgpack: %" PRIu64 " values due at byte %zu "
						      "exceed the remaining %zu bytes",
						      pending, m->pos, m->n - m->pos);
			return false;
		}
		uint8_t c = m->p[m->pos];
		if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3) {
			m->pos++;
			pending--;
			continue;
		}
		if ((c & 0xe0) == 0xa0) { /* fixstr, the common case */
			if (!mp_need(m, 1 + (size_t)(c & 0x1f)))
				return false;
			m->pos += 1 + (size_t)(c & 0x1f);
			pending--;
			continue;
		}
		struct mp_obj o;
		if (!mp_read(m, &o))
			return false;
		pending--;
		if (o.type == MP_ARRAY)
			pending += o.len;
		else if (o.type == MP_MAP)
			pending += 2 * o.len;
	}
	return true;
}

static bool key_is(const struct mp_obj *o, const char *k)
{
	size_t kl = strlen(k);
	return o->type == MP_STR && o->len == kl && memcmp(o->s, k, kl) == 0;
}

static bool parse_kernel(struct mp *m, struct pvg_code_object *co)
{
	struct mp_obj o;
	size_t start = m->pos;
	if (!mp_read(m, &o))
		return false;
	if (o.type != MP_MAP) {
		m->pos = start; /* not a map: skip it as a whole */
		return mp_skip(m);
	}
	const char *name = NULL, *sym = NULL;
	size_t nl = 0, sl = 0;
	int wave = 0;
	for (uint64_t i = 0; i < o.len; i++) {
		struct mp_obj k, v;
		if (!mp_read(m, &k))
			return false;
		size_t at = m->pos;
		if (!mp_read(m, &v))
			return false;
		if (key_is(&k, ".name") && v.type == MP_STR) {
			name = v.s;
			nl = (size_t)v.len;
		} else if (key_is(&k, ".symbol") && v.type == MP_STR) {
			sym = v.s;
			sl = (size_t)v.len;
		} else if (key_is(&k, ".wavefront_size") && v.type == MP_INT) {
			/* lanes (32 or 64 on every AMD GPU): a number no int holds is no count, and
			 * cutting it to one would report a plausible size the file never gave */
			if (v.i < 0 || v.i > INT_MAX) {
				m->err = pvg_asprintf("msgpack: .wavefront_size %" PRId64
						      " at byte %zu is out of range",
						      v.i, at);
				return false;
			}
			wave = (int)v.i;
		} else if (v.type == MP_ARRAY || v.type == MP_MAP) {
			m->pos = at;
			if (!mp_skip(m))
				return false;
		}
	}
	if (name && memchr(name, 0, nl))
		nl = strnlen(name, nl);
	if (sym && memchr(sym, 0, sl))
		sl = strnlen(sym, sl);
	if (name || sym)
		pvg_co_add_kernel(co, name, nl, sym, sl, wave);
	return true;
}

int pvg_amdgpu_metadata_parse(const uint8_t *p, size_t n, struct pvg_code_object *co,
			      char **err)
{
	struct mp m = { .p = p, .n = n };
	struct mp_obj top;
	if (!mp_read(&m, &top) || top.type != MP_MAP) {
		*err = m.err ? m.err : pvg_strdup("metadata is not a msgpack map");
		return -EBADMSG;
	}
	bool kernels_seen = false;
	for (uint64_t i = 0; i < top.len; i++) {
		struct mp_obj k, v;
		if (!mp_read(&m, &k))
			goto bad;
		size_t at = m.pos;
		if (!mp_read(&m, &v))
			goto bad;
		if (key_is(&k, "amdhsa.target") && v.type == MP_STR) {
			free(co->note_target);
			co->note_target = pvg_co_strndup(v.s, (size_t)v.len);
			if (!co->note_target)
				abort();
		} else if (key_is(&k, "amdhsa.kernels") && v.type == MP_ARRAY) {
			kernels_seen = true;
			for (uint64_t j = 0; j < v.len; j++)
				if (!parse_kernel(&m, co))
					goto bad;
		} else if (v.type == MP_ARRAY || v.type == MP_MAP) {
			m.pos = at;
			if (!mp_skip(&m))
				goto bad;
		}
	}
	if (!kernels_seen) {
		*err = pvg_strdup("metadata has no amdhsa.kernels");
		return -EBADMSG;
	}
	return 0;
bad:
	*err = m.err ? m.err : pvg_strdup("metadata msgpack is malformed");
	return -EBADMSG;
}

/* ---- the ELF ------------------------------------------------------------------------------- */

static uint16_t r16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t r32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t r64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Walks a note block; returns true when the AMDGPU metadata note was found and parsed. */
static bool scan_notes(const uint8_t *p, size_t n, struct pvg_code_object *co, bool *found)
{
	size_t pos = 0;
	while (n - pos >= 12) {
		uint32_t namesz = r32(p + pos), descsz = r32(p + pos + 4), type = r32(p + pos + 8);
		pos += 12;
		size_t na = ((size_t)namesz + 3) & ~(size_t)3;
		size_t da = ((size_t)descsz + 3) & ~(size_t)3;
		if (na > n - pos || (na == n - pos && da > 0) || da > n - pos - na) {
			pvg_co_set_error(co, "note runs past the end of its segment");
			return false;
		}
		const uint8_t *name = p + pos, *desc = p + pos + na;
		pos += na + da;
		if (type == 32 && namesz == 7 && memcmp(name, "AMDGPU\0", 7) == 0) {
			*found = true;
			_cleanup_free_ char *err = NULL;
			if (pvg_amdgpu_metadata_parse(desc, descsz, co, &err) < 0) {
				pvg_co_set_error(co, "NT_AMDGPU_METADATA: %s", err);
				return false;
			}
			co->kernels_known = true;
			return true;
		}
	}
	return true;
}

/* Reads one note segment. *total counts the note bytes read so far: the segments of a code
 * object are its own bytes, so together they cannot be more than it holds; headers that name
 * the same bytes again and again would read them once per header. */
static void read_notes(const struct pvg_src *src, uint64_t off, uint64_t size, uint64_t noff,
		       uint64_t nsize, struct pvg_code_object *co, bool *found, uint64_t *total)
{
	if (noff > size || nsize > size - noff) {
		pvg_co_set_error(co, "note at 0x%" PRIx64 "+0x%" PRIx64 " lies outside the code "
				 "object (%" PRIu64 " bytes)",
				 noff, nsize, size);
		return;
	}
	if (nsize > size - *total) {
		pvg_co_set_error(co, "its note segments add up to more than the code object's %" PRIu64
				 " bytes: they name the same bytes more than once", size);
		return;
	}
	*total += nsize;
	if (nsize > PVG_CO_MAX_NOTE_BYTES) {
		pvg_co_set_error(co, "note segment of %" PRIu64 " bytes is absurd", nsize);
		return;
	}
	_cleanup_free_ uint8_t *buf = malloc(nsize ? nsize : 1);
	if (!buf)
		abort();
	if (pvg_src_read(src, off + noff, buf, nsize) < 0) {
		pvg_co_set_error(co, "note cannot be read");
		return;
	}
	scan_notes(buf, nsize, co, found);
}

static enum pvg_feature v4_feature(uint32_t bits, uint32_t any, uint32_t off, uint32_t on)
{
	if (bits == on)
		return PVG_FEAT_ON;
	if (bits == off)
		return PVG_FEAT_OFF;
	if (bits == any)
		return PVG_FEAT_ANY;
	return PVG_FEAT_UNSUPPORTED;
}

void pvg_amdgpu_parse(const struct pvg_src *src, uint64_t off, uint64_t size,
		      struct pvg_code_object *co)
{
	co->kind = PVG_CO_AMDGPU;
	co->kernels_known = false;
	uint8_t eh[64];
	if (size < sizeof(eh) || pvg_src_read(src, off, eh, sizeof(eh)) < 0) {
		pvg_co_set_error(co, "code object is too short for an ELF header (%" PRIu64
				 " bytes)", size);
		return;
	}
	if (memcmp(eh, "\177ELF", 4) != 0) {
		pvg_co_set_error(co, "code object is not an ELF file");
		return;
	}
	if (eh[4] != 2 || eh[5] != 1) {
		pvg_co_set_error(co, "code object is not a little-endian ELF64 file");
		return;
	}
	uint16_t machine = r16(eh + 18);
	if (machine != PVG_EM_AMDGPU) {
		pvg_co_set_error(co, "code object has e_machine %u, not AMDGPU (224)", machine);
		return;
	}
	co->osabi = eh[7];
	co->abi_version = eh[8];
	co->e_flags = r32(eh + 48);
	co->mach = co->e_flags & 0xff;
	co->mach_name = pvg_amdgpu_mach_name(co->mach);
	if (co->osabi == 64) /* ELFOSABI_AMDGPU_HSA: ABI version 0..4 is code object v2..v6 */
		co->co_version = co->abi_version <= 4 ? co->abi_version + 2 : 0;
	if (co->co_version >= 4) {
		co->xnack = v4_feature(co->e_flags & 0x300, 0x100, 0x200, 0x300);
		co->sramecc = v4_feature(co->e_flags & 0xc00, 0x400, 0x800, 0xc00);
	} else if (co->co_version == 3) {
		co->xnack = co->e_flags & 0x100 ? PVG_FEAT_ON : PVG_FEAT_ANY;
		co->sramecc = co->e_flags & 0x200 ? PVG_FEAT_ON : PVG_FEAT_ANY;
	}

	/* notes: program headers first (what the loader sees), section headers otherwise */
	uint64_t phoff = r64(eh + 32), shoff = r64(eh + 40);
	uint16_t phentsize = r16(eh + 54), phnum = r16(eh + 56);
	uint16_t shentsize = r16(eh + 58), shnum = r16(eh + 60);
	bool found = false, any_note = false;
	uint64_t note_total = 0;
	if (phnum && phentsize == 56) {
		if (phoff > size || (uint64_t)phnum * 56 > size - phoff) {
			pvg_co_set_error(co, "program headers lie outside the code object");
			return;
		}
		_cleanup_free_ uint8_t *phs = malloc((size_t)phnum * 56);
		if (!phs)
			abort();
		if (pvg_src_read(src, off + phoff, phs, (size_t)phnum * 56) < 0) {
			pvg_co_set_error(co, "program headers cannot be read");
			return;
		}
		for (unsigned i = 0; i < phnum && !found && !co->error; i++) {
			const uint8_t *ph = phs + (size_t)i * 56;
			if (r32(ph) != 4 /* PT_NOTE */)
				continue;
			any_note = true;
			read_notes(src, off, size, r64(ph + 8), r64(ph + 32), co, &found,
				   &note_total);
		}
	}
	if (!found && !any_note && shnum && shentsize == 64 && !co->error) {
		if (shoff > size || (uint64_t)shnum * 64 > size - shoff) {
			pvg_co_set_error(co, "section headers lie outside the code object");
			return;
		}
		for (unsigned i = 0; i < shnum && !found && !co->error; i++) {
			uint8_t sh[64];
			if (pvg_src_read(src, off + shoff + (uint64_t)i * 64, sh, 64) < 0) {
				pvg_co_set_error(co, "section header %u cannot be read", i);
				return;
			}
			if (r32(sh + 4) != 7 /* SHT_NOTE */)
				continue;
			read_notes(src, off, size, r64(sh + 24), r64(sh + 32), co, &found,
				   &note_total);
		}
	}
	if (co->error)
		return;
	if (!found) {
		free(co->kernels_why);
		co->kernels_why = pvg_strdup("no NT_AMDGPU_METADATA note");
		if (co->co_version >= 3)
			pvg_co_set_error(co, "code object v%d has no NT_AMDGPU_METADATA note",
					 co->co_version);
	}

	/* the target: the note's when there is one, else e_flags' (known processors only) */
	const char *nt = pvg_target_id_of(co->note_target);
	char buf[96];
	if (nt) {
		co->arch = pvg_strdup(nt);
	} else if (co->mach_name) {
		struct pvg_target t = { .xnack = co->xnack, .sramecc = co->sramecc };
		snprintf(t.processor, sizeof(t.processor), "%s", co->mach_name);
		pvg_target_format(&t, buf, sizeof(buf));
		co->arch = pvg_strdup(buf);
	} else if (co->id_target) {
		co->arch = pvg_strdup(co->id_target);
	}
}

static const char *feat_sign(enum pvg_feature f)
{
	return f == PVG_FEAT_ON ? "+" : f == PVG_FEAT_OFF ? "-" : "any";
}

void pvg_amdgpu_check_consistency(struct pvg_code_object *co)
{
	if (co->kind != PVG_CO_AMDGPU || co->error)
		return;
	struct pvg_target id, note;
	bool have_id = co->id_target && pvg_target_parse(co->id_target, &id) == 0;
	const char *nt = pvg_target_id_of(co->note_target);
	bool have_note = nt && pvg_target_parse(nt, &note) == 0;
	bool hipv4 = co->id && (strncmp(co->id, "hipv4-", 6) == 0 || strncmp(co->id, "hip-", 4) != 0);

	if (have_id && have_note) {
		bool same = strcmp(id.processor, note.processor) == 0;
		/* old "hip-" ids carry no features; compare the processor only */
		if (same && hipv4)
			same = id.xnack == note.xnack && id.sramecc == note.sramecc;
		if (!same) {
			co->mismatch = pvg_asprintf("bundle id says %s but the metadata note says %s",
						    co->id_target, nt);
			return;
		}
	}
	if (co->co_version < 4)
		return; /* V2/V3 e_flags do not say "unspecified" vs "off" */
	const struct pvg_target *claim = have_note ? &note : have_id ? &id : NULL;
	const char *claim_s = have_note ? nt : co->id_target;
	if (!claim || !co->mach_name)
		return; /* unknown mach: trust the note, report the raw value */
	if (strcmp(claim->processor, co->mach_name) != 0) {
		co->mismatch = pvg_asprintf("%s says %s but e_flags 0x%x names %s",
					    have_note ? "metadata note" : "bundle id", claim_s,
					    co->e_flags, co->mach_name);
		return;
	}
	enum pvg_feature ex = co->xnack == PVG_FEAT_UNSUPPORTED ? PVG_FEAT_ANY : co->xnack;
	enum pvg_feature es = co->sramecc == PVG_FEAT_UNSUPPORTED ? PVG_FEAT_ANY : co->sramecc;
	if (ex != claim->xnack || es != claim->sramecc)
		co->mismatch = pvg_asprintf("%s says %s but e_flags 0x%x has xnack %s, sramecc %s",
					    have_note ? "metadata note" : "bundle id", claim_s,
					    co->e_flags, feat_sign(co->xnack), feat_sign(co->sramecc));
}
