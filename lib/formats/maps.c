/* SPDX-License-Identifier: MIT */
/*
 * /proc/<pid>/maps lines: "START-END PERMS OFFSET MAJ:MIN INODE [PATH]". The path runs to the
 * end of the line and may hold spaces; the kernel escapes only '\n' (as "\012") and appends
 * " (deleted)" when the file was unlinked after it was mapped.
 */
#include "formats/maps.h"

static bool hex_field(const char **p, const char *end, uint64_t *v, char stop)
{
	uint64_t x = 0;
	const char *s = *p;
	int digits = 0;
	while (s < end && *s != stop) {
		int d = pvg_hex_digit(*s);
		if (d < 0)
			return false;
		if (++digits > 16)
			return false;
		x = x << 4 | (uint64_t)d;
		s++;
	}
	if (digits == 0 || s == end)
		return false;
	*v = x;
	*p = s + 1; /* past the stop byte */
	return true;
}

static bool dec_field(const char **p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	const char *s = *p;
	int digits = 0;
	while (s < end && *s >= '0' && *s <= '9') {
		if (++digits > 20 || x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (digits == 0)
		return false;
	*v = x;
	*p = s;
	return true;
}

static int parse_line(const char *s, const char *end, struct pvg_mapping *m)
{
	uint64_t maj, min;
	memset(m, 0, sizeof(*m));
	if (!hex_field(&s, end, &m->start, '-') || !hex_field(&s, end, &m->end, ' '))
		return -EINVAL;
	if (m->end < m->start || end - s < 5 || s[4] != ' ')
		return -EINVAL;
	memcpy(m->perms, s, 4);
	for (int i = 0; i < 4; i++)
		if (!m->perms[i] || !strchr("rwxps-", m->perms[i]))
			return -EINVAL;
	s += 5;
	if (!hex_field(&s, end, &m->offset, ' ') || !hex_field(&s, end, &maj, ':') ||
	    !hex_field(&s, end, &min, ' ') || maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	m->dev_major = (unsigned)maj;
	m->dev_minor = (unsigned)min;
	if (!dec_field(&s, end, &m->inode))
		return -EINVAL;
	if (s < end && *s != ' ')
		return -EINVAL;
	while (s < end && *s == ' ')
		s++;
	size_t plen = (size_t)(end - s);
	if (plen == 0) {
		m->kind = PVG_MAPPING_ANON;
		return 0;
	}
	static const char deleted[] = " (deleted)";
	if (s[0] == '/') {
		m->kind = PVG_MAPPING_FILE;
		if (plen > sizeof(deleted) - 1 &&
		    memcmp(s + plen - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0) {
			m->deleted = true;
			plen -= sizeof(deleted) - 1;
		}
	} else {
		m->kind = PVG_MAPPING_SPECIAL;
	}
	/* input need not be NUL-terminated: copy exactly plen bytes */
	m->path = pvg_xcalloc(plen + 1, 1);
	memcpy(m->path, s, plen);
	return 0;
}

void pvg_maps_clear(struct pvg_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		free(maps->m[i].path);
	free(maps->m);
	maps->m = NULL;
	maps->n = 0;
}

int pvg_maps_parse(const char *text, size_t len, struct pvg_maps *out, size_t *bad_line)
{
	size_t cap = 0, line = 0;
	const char *p = text, *end = text + len;
	out->m = NULL;
	out->n = 0;
	if (bad_line)
		*bad_line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		line++;
		if (le > p) {
			if (out->n == cap) {
				cap = cap ? cap * 2 : 64;
				out->m = pvg_xrealloc(out->m, cap, sizeof(*out->m));
			}
			int r = parse_line(p, le, &out->m[out->n]);
			if (r < 0) {
				if (bad_line)
					*bad_line = line;
				pvg_maps_clear(out);
				return r;
			}
			out->n++;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}
