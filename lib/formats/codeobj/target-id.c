/* SPDX-License-Identifier: MIT */
/*
 * Target ids as the runtimes match them ("gfx90a:xnack-", "gfx936", "sm_90"): parsed from a
 * config's arch, a bundle entry id or a code object's note, and compared with the runtime's
 * rule (a feature left unspecified accepts either setting). Used by the parsers and the set.
 */
#include <errno.h>
#include <stdio.h>
#include "formats/codeobj/codeobj.h"

const char *pvg_target_id_of(const char *s)
{
	if (!s)
		return NULL;
	for (const char *p = s; *p; p++) {
		if ((p == s || p[-1] == '-') &&
		    (strncmp(p, "gfx", 3) == 0 || strncmp(p, "sm_", 3) == 0))
			return p;
	}
	return NULL;
}

int pvg_target_parse(const char *s, struct pvg_target *t)
{
	memset(t, 0, sizeof(*t));
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	if (n == 0 || n >= sizeof(t->processor))
		return -EINVAL;
	memcpy(t->processor, s, n);
	while (colon) {
		const char *f = colon + 1;
		colon = strchr(f, ':');
		size_t fl = colon ? (size_t)(colon - f) : strlen(f);
		if (fl < 2)
			return -EINVAL;
		char sign = f[fl - 1];
		if (sign != '+' && sign != '-')
			return -EINVAL;
		enum pvg_feature v = sign == '+' ? PVG_FEAT_ON : PVG_FEAT_OFF;
		if (fl - 1 == 5 && strncmp(f, "xnack", 5) == 0)
			t->xnack = v;
		else if ((fl - 1 == 7 && strncmp(f, "sramecc", 7) == 0) ||
			 (fl - 1 == 8 && strncmp(f, "sram-ecc", 8) == 0))
			t->sramecc = v;
		else
			t->other_features = true;
	}
	return 0;
}

void pvg_target_format(const struct pvg_target *t, char *out, size_t size)
{
	/* LLVM's canonical order: sramecc before xnack */
	snprintf(out, size, "%s%s%s", t->processor,
		 t->sramecc == PVG_FEAT_ON ? ":sramecc+" : t->sramecc == PVG_FEAT_OFF ? ":sramecc-" : "",
		 t->xnack == PVG_FEAT_ON ? ":xnack+" : t->xnack == PVG_FEAT_OFF ? ":xnack-" : "");
}

static bool feature_accepts(enum pvg_feature want, enum pvg_feature have)
{
	if (have == PVG_FEAT_ANY || have == PVG_FEAT_UNSUPPORTED)
		return true;
	if (want == PVG_FEAT_ANY)
		return true;
	return want == have;
}

bool pvg_target_accepts(const struct pvg_target *want, const struct pvg_target *have)
{
	return strcmp(want->processor, have->processor) == 0 &&
	       feature_accepts(want->xnack, have->xnack) &&
	       feature_accepts(want->sramecc, have->sramecc);
}

bool pvg_target_compatible(const char *want, const char *have)
{
	struct pvg_target w, h;
	if (!want || !have || pvg_target_parse(want, &w) < 0 || pvg_target_parse(have, &h) < 0)
		return false;
	return pvg_target_accepts(&w, &h);
}

int pvg_gfx_name_of_version(unsigned long v, char *out, size_t size)
{
	unsigned long major = v / 10000, minor = v / 100 % 100, step = v % 100;
	if (v == 0 || major == 0 || major > 99 || minor > 15 || step > 15)
		return -EINVAL;
	snprintf(out, size, "gfx%lu%lx%lx", major, minor, step);
	return 0;
}

int pvg_gfx_name_of_override(const char *s, char *out, size_t size)
{
	unsigned long part[3];
	for (int i = 0; i < 3; i++) {
		if (!s || *s < '0' || *s > '9')
			return -EINVAL;
		unsigned long v = 0;
		for (int d = 0; *s >= '0' && *s <= '9'; d++, s++) {
			if (d >= 3)
				return -EINVAL;
			v = v * 10 + (unsigned long)(*s - '0');
		}
		part[i] = v;
		if (i < 2 && *s++ != '.')
			return -EINVAL;
	}
	if (*s)
		return -EINVAL;
	if (part[1] > 15 || part[2] > 15)
		return -EINVAL;
	return pvg_gfx_name_of_version(part[0] * 10000 + part[1] * 100 + part[2], out, size);
}
