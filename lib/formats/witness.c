/* SPDX-License-Identifier: MIT */
/* The dispatch witness file: sealing (writer side) and the bounded parser (reader side). */
#include <errno.h>
#include <string.h>

#include "formats/witness.h"

_Static_assert(sizeof(struct pvg_witness_header) == 392, "witness header layout");
_Static_assert(offsetof(struct pvg_witness_header, answered) == PVG_WITNESS_V1_HEADER_SIZE,
	       "version 2 appends to version 1's header");
_Static_assert(offsetof(struct pvg_witness_header, n_modules) == PVG_WITNESS_V2_HEADER_SIZE,
	       "version 3 appends to version 2's header");
_Static_assert(sizeof(struct pvg_witness_record) == 88, "witness record layout");
_Static_assert(offsetof(struct pvg_witness_record, module) == PVG_WITNESS_V2_RECORD_SIZE,
	       "version 3 appends to version 2's record");
_Static_assert(sizeof(struct pvg_witness_module) == 104, "witness module layout");

/* The header's version-3 module table, 0 before version 3. */
static uint64_t modules_bytes(const struct pvg_witness_header *h)
{
	return h->version >= 3 ? (uint64_t)h->n_modules * h->module_size : 0;
}

uint64_t pvg_witness_fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t checksum(const uint8_t *buf, size_t len)
{
	const size_t at = offsetof(struct pvg_witness_header, checksum);
	static const uint8_t zero[8];
	uint64_t h = pvg_witness_fnv(PVG_FNV_INIT, buf, at);
	h = pvg_witness_fnv(h, zero, sizeof(zero));
	return pvg_witness_fnv(h, buf + at + 8, len - at - 8);
}

int pvg_witness_seal(uint8_t *buf, size_t len)
{
	/* the sizes and the checksum are in version 1's part, the module table's in version 3's */
	struct pvg_witness_header h;
	if (len < PVG_WITNESS_V1_HEADER_SIZE)
		return -EINVAL;
	memset(&h, 0, sizeof(h));
	memcpy(&h, buf, PVG_WITNESS_V1_HEADER_SIZE);
	if (h.version >= 3) {
		if (len < sizeof(h))
			return -EINVAL;
		memcpy(&h, buf, sizeof(h));
	}
	uint64_t want = (uint64_t)h.header_size + (uint64_t)h.n_records * h.record_size +
			modules_bytes(&h) + h.strings_size;
	if (want != len || h.header_size < PVG_WITNESS_V1_HEADER_SIZE)
		return -EINVAL;
	const size_t at = offsetof(struct pvg_witness_header, checksum);
	memset(buf + at, 0, sizeof(h.checksum));
	uint64_t sum = checksum(buf, len);
	memcpy(buf + at, &sum, sizeof(sum));
	return 0;
}

const char *pvg_witness_strerror(enum pvg_witness_error e)
{
	switch (e) {
	case PVG_WITNESS_OK:
		return "ok";
	case PVG_WITNESS_E_SHORT:
		return "truncated (fewer bytes than its header announces)";
	case PVG_WITNESS_E_MAGIC:
		return "not a provgate witness file";
	case PVG_WITNESS_E_VERSION:
		return "written by a later witness version";
	case PVG_WITNESS_E_LAYOUT:
		return "header sizes or counts out of bounds";
	case PVG_WITNESS_E_CHECKSUM:
		return "checksum mismatch (changed or torn)";
	case PVG_WITNESS_E_RECORD:
		return "a record points outside the file's names";
	case PVG_WITNESS_E_TRAILING:
		return "bytes after the end its header announces";
	}
	return "?";
}

static bool str_in(const uint8_t *strings, uint32_t size, uint32_t off, uint32_t n,
		   struct pvg_witness_str *out)
{
	if (off > size || n > size - off || n > PVG_WITNESS_MAX_NAME)
		return false;
	out->p = (const char *)strings + off;
	out->n = n;
	return true;
}

enum pvg_witness_error pvg_witness_parse(const uint8_t *buf, size_t len,
					 struct pvg_witness_file *out, size_t *at)
{
	size_t dummy;
	if (!at)
		at = &dummy;
	*at = 0;
	out->n = 0;
	struct pvg_witness_header *h = &out->h;
	if (len < 8) {
		memset(h, 0, sizeof(*h));
		return PVG_WITNESS_E_SHORT;
	}
	if (memcmp(buf, PVG_WITNESS_MAGIC, 8) != 0)
		return PVG_WITNESS_E_MAGIC;
	if (len < PVG_WITNESS_V1_HEADER_SIZE)
		return PVG_WITNESS_E_SHORT;
	memset(h, 0, sizeof(*h));
	memcpy(h, buf, PVG_WITNESS_V1_HEADER_SIZE);
	if (h->version < 1 || h->version > PVG_WITNESS_VERSION) {
		*at = offsetof(struct pvg_witness_header, version);
		return h->version > PVG_WITNESS_VERSION ? PVG_WITNESS_E_VERSION : PVG_WITNESS_E_LAYOUT;
	}
	/* each version appends to the one before; what an older one lacks stays 0 */
	size_t min_header = h->version == 1   ? PVG_WITNESS_V1_HEADER_SIZE
			    : h->version == 2 ? PVG_WITNESS_V2_HEADER_SIZE
					      : sizeof(*h);
	size_t min_record = h->version < 3 ? PVG_WITNESS_V2_RECORD_SIZE
					   : sizeof(struct pvg_witness_record);
	if (h->version > 1 && len >= min_header)
		memcpy(h, buf, min_header);
	if (h->header_size < min_header || h->header_size > 4096 || h->record_size < min_record ||
	    h->record_size > 1024 || h->n_records > PVG_WITNESS_MAX_RECORDS ||
	    h->strings_size > PVG_WITNESS_MAX_STRINGS ||
	    (h->version >= 3 &&
	     (h->n_modules > PVG_WITNESS_MAX_MODULES ||
	      (h->n_modules && (h->module_size < sizeof(struct pvg_witness_module) ||
				h->module_size > 1024))))) {
		*at = offsetof(struct pvg_witness_header, header_size);
		return PVG_WITNESS_E_LAYOUT;
	}
	uint64_t mod_bytes = modules_bytes(h);
	uint64_t want = (uint64_t)h->header_size + (uint64_t)h->n_records * h->record_size +
			mod_bytes + h->strings_size;
	if (want > len) {
		*at = len;
		return PVG_WITNESS_E_SHORT;
	}
	if (want < len) {
		*at = (size_t)want;
		return PVG_WITNESS_E_TRAILING;
	}
	if (checksum(buf, len) != h->checksum) {
		*at = offsetof(struct pvg_witness_header, checksum);
		return PVG_WITNESS_E_CHECKSUM;
	}
	h->boot_id[sizeof(h->boot_id) - 1] = '\0';
	h->note[sizeof(h->note) - 1] = '\0';
	const uint8_t *mods = buf + h->header_size + (size_t)h->n_records * h->record_size;
	const uint8_t *strings = mods + mod_bytes;
	uint32_t n_mods = h->version >= 3 ? h->n_modules : 0;
	out->n_modules = 0;
	for (uint32_t i = 0; i < n_mods; i++) {
		struct pvg_witness_module m;
		size_t off = (size_t)(mods - buf) + (size_t)i * h->module_size;
		memcpy(&m, buf + off, sizeof(m));
		*at = off;
		struct pvg_witness_str path;
		if (!str_in(strings, h->strings_size, m.path_off, m.path_len, &path) ||
		    (m.unload_ns && m.unload_ns < m.load_ns))
			return PVG_WITNESS_E_RECORD;
		if (!out->modules)
			continue;
		struct pvg_witness_mod *x = &out->modules[i];
		memcpy(x->sha256, m.sha256, sizeof(x->sha256));
		x->size = m.size;
		x->load_ns = m.load_ns;
		x->unload_ns = m.unload_ns;
		x->handle = m.handle;
		x->file_offset = m.file_offset;
		x->api_id = m.api_id;
		x->origin = m.origin;
		x->flags = m.flags;
		x->arch = m.arch;
		x->names = m.names;
		x->unhashed = m.unhashed;
		x->path = path;
		out->n_modules = i + 1;
	}
	for (uint32_t i = 0; i < h->n_records; i++) {
		size_t off = h->header_size + (size_t)i * h->record_size;
		struct pvg_witness_record r;
		memset(&r, 0, sizeof(r));
		memcpy(&r, buf + off, h->version < 3 ? PVG_WITNESS_V2_RECORD_SIZE : sizeof(r));
		struct pvg_witness_entry *e = &out->entries[i];
		*at = off;
		if (!str_in(strings, h->strings_size, r.name_off, r.name_len, &e->name) ||
		    !str_in(strings, h->strings_size, r.demangled_off, r.demangled_len,
			    &e->demangled) ||
		    !str_in(strings, h->strings_size, r.module_off, r.module_len, &e->module) ||
		    r.first_ns > r.last_ns || r.count == 0 || r.module > n_mods ||
		    (r.module == 0) != (r.bind == PVG_WITNESS_BIND_NONE) ||
		    r.bind > PVG_WITNESS_BIND_AMBIGUOUS)
			return PVG_WITNESS_E_RECORD;
		e->code = r.module;
		e->bind = r.bind;
		memcpy(e->grid, r.grid, sizeof(e->grid));
		memcpy(e->block, r.block, sizeof(e->block));
		e->via = r.via;
		e->flags = r.flags;
		e->count = r.count;
		e->first_ns = r.first_ns;
		e->last_ns = r.last_ns;
		out->n = i + 1;
	}
	*at = 0;
	return PVG_WITNESS_OK;
}

enum pvg_witness_attr pvg_witness_attribute(const struct pvg_witness_header *h,
					    const char *boot_id,
					    const struct pvg_witness_target *targets, size_t n,
					    size_t *which)
{
	if (!boot_id || !boot_id[0] || !h->boot_id[0] ||
	    strncmp(h->boot_id, boot_id, sizeof(h->boot_id)) != 0)
		return PVG_WITNESS_OTHER_BOOT;
	bool reused = false, foreign = false;
	for (size_t i = 0; i < n; i++) {
		const struct pvg_witness_target *t = &targets[i];
		/* a target in provgate's own pid namespace: its writer saw one level, pid == nspid */
		bool same_view = t->pid == t->nspid;
		if (t->nspid == h->nspid) {
			if (same_view && (h->nspid_levels != 1 || h->pid != h->nspid)) {
				foreign = true;
			} else if (t->start_ticks == h->start_ticks) {
				if (which)
					*which = i;
				return PVG_WITNESS_LIVE;
			} else {
				reused = true;
			}
		} else if (t->pid == h->nspid || t->pid == h->pid) {
			/* the number is a target's pid in provgate's namespace, not in the writer's */
			foreign = true;
		}
	}
	return reused ? PVG_WITNESS_PID_REUSED : foreign ? PVG_WITNESS_FOREIGN_NS
							  : PVG_WITNESS_NOT_TARGET;
}

const char *pvg_witness_attr_name(enum pvg_witness_attr a)
{
	switch (a) {
	case PVG_WITNESS_LIVE:
		return "live";
	case PVG_WITNESS_OTHER_BOOT:
		return "earlier boot";
	case PVG_WITNESS_PID_REUSED:
		return "earlier process with the same pid";
	case PVG_WITNESS_FOREIGN_NS:
		return "same pid number in another pid namespace";
	case PVG_WITNESS_NOT_TARGET:
		return "not a target process";
	}
	return "?";
}

const char *pvg_witness_origin_name(uint32_t origin)
{
	static const char *const names[] = {
		[PVG_WITNESS_ORIGIN_UNKNOWN] = "unknown", [PVG_WITNESS_ORIGIN_FILE] = "file",
		[PVG_WITNESS_ORIGIN_MEMORY] = "memory",	  [PVG_WITNESS_ORIGIN_PTX_JIT] = "ptx-jit",
		[PVG_WITNESS_ORIGIN_EMBEDDED] = "embedded",
	};
	return origin < sizeof(names) / sizeof(names[0]) ? names[origin] : "unknown";
}

const char *pvg_witness_unhashed_name(uint32_t why)
{
	static const char *const names[PVG_WITNESS_UNHASHED_N] = {
		"not-said", "too-large", "no-image", "query-failed", "unreadable",
		"bad-uri", "bad-range", "no-memory", "storage",
	};
	return why < PVG_WITNESS_UNHASHED_N ? names[why] : "unknown";
}
