/* SPDX-License-Identifier: MIT */
/*
 * Target ids as the runtimes match them ("gfx90a:xnack-", "gfx936", "sm_90"): parsed from a
 * config's arch, a bundle entry id or a code object's note, and compared with the runtime's
 * rule (a feature left unspecified accepts either setting). Used by the parsers and the set.
 * The table of known targets and the validation of a config's arch (with the closest known
 * name) are here too, on the same parser.
 */
#include <ctype.h>
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

/* strict: the features a config's arch may name, in their one spelling (xnack, sramecc);
 * otherwise "sram-ecc" is read as sramecc and any other feature is noted in other_features */
static int parse_target(const char *s, struct pvg_target *t, bool strict)
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
			 (!strict && fl - 1 == 8 && strncmp(f, "sram-ecc", 8) == 0))
			t->sramecc = v;
		else if (strict)
			return -EINVAL;
		else
			t->other_features = true;
	}
	return 0;
}

int pvg_target_parse(const char *s, struct pvg_target *t)
{
	return parse_target(s, t, false);
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

/* ---- the known targets --------------------------------------------------------------------- */

/*
 * AMD: LLVM's AMDGPU processor list (clang --offload-arch values, see LLVM's AMDGPUUsage
 * "Processors" table, LLVM 20) plus Hygon DCU's gfx936 (DTK's LLVM). CUDA: the real
 * architectures nvcc's -arch=sm_NN takes (CUDA 13 and earlier ones). An unknown but
 * well-formed name is refused too: no code object could ever be found for it, and a typo such
 * as gfx1234 for gfx1103 would only show there; a target newer than this table needs it added.
 */
static const char *const amd_targets[] = {
	"gfx600",  "gfx601",  "gfx602",  "gfx700",  "gfx701",  "gfx702",  "gfx703",  "gfx704",
	"gfx705",  "gfx801",  "gfx802",  "gfx803",  "gfx805",  "gfx810",  "gfx900",  "gfx902",
	"gfx904",  "gfx906",  "gfx908",  "gfx909",  "gfx90a",  "gfx90c",  "gfx936",  "gfx940",
	"gfx941",  "gfx942",  "gfx950",  "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030",
	"gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1100", "gfx1101",
	"gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153", "gfx1200", "gfx1201",
	"gfx9-generic", "gfx9-4-generic", "gfx10-1-generic", "gfx10-3-generic", "gfx11-generic",
	"gfx12-generic",
};
static const char *const cuda_targets[] = {
	"sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50",	"sm_52", "sm_53",
	"sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",	"sm_86", "sm_87",
	"sm_88", "sm_89", "sm_90", "sm_100", "sm_101", "sm_103", "sm_110", "sm_120", "sm_121",
};

static bool in_table(const char *const *t, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(t[i]) == len && strncmp(t[i], s, len) == 0)
			return true;
	return false;
}

/* The known name closest to base (compared in lower case: gfx9OA -> gfx90a), or NULL when
 * none is within two edits. */
static const char *closest_target(const char *base)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (int t = 0; t < 2; t++) {
		const char *const *tab = t ? cuda_targets : amd_targets;
		size_t n = t ? ARRAY_SIZE(cuda_targets) : ARRAY_SIZE(amd_targets);
		for (size_t i = 0; i < n; i++) {
			size_t edits = pvg_edit_distance(base, tab[i]);
			if (edits > 2)
				continue; /* never close; SIZE_MAX for a name over 63 characters */
			/* ties go to the longer common prefix: sm_91 is sm_90, not sm_21 */
			size_t pre = 0;
			while (base[pre] && tolower((unsigned char)base[pre]) == tab[i][pre])
				pre++;
			size_t d = edits * 64 + 63 - (pre < 63 ? pre : 63);
			if (d < best_d) {
				best_d = d;
				best = tab[i];
			}
		}
	}
	return best;
}

char *pvg_target_id_problem(const char *arch)
{
	if (!arch || !arch[0])
		return pvg_strdup("empty");
	if (strncmp(arch, "compute_", 8) == 0)
		return pvg_asprintf("\"%s\" is a virtual (PTX) architecture; arch names the GPU's "
				    "real one: sm_%s", arch, arch + 8);
	size_t base_len = strcspn(arch, ":");
	if (strncmp(arch, "sm_", 3) == 0) {
		size_t l = strlen(arch);
		/* sm_90a, sm_100f: the arch-specific and family forms of a known one (>= sm_90) */
		size_t bl = l > 3 && (arch[l - 1] == 'a' || arch[l - 1] == 'f') ? l - 1 : l;
		if (!strchr(arch, ':') && in_table(cuda_targets, ARRAY_SIZE(cuda_targets), arch, bl) &&
		    (bl == l || atoi(arch + 3) >= 90))
			return NULL;
	} else if (strncmp(arch, "gfx", 3) == 0 &&
		   in_table(amd_targets, ARRAY_SIZE(amd_targets), arch, base_len)) {
		struct pvg_target t;
		if (parse_target(arch, &t, true) == 0)
			return NULL;
		return pvg_asprintf("\"%s\": a target feature must be xnack or sramecc followed by + "
				    "or - (gfx90a:xnack-)", arch);
	}
	_cleanup_free_ char *base = pvg_asprintf("%.*s", (int)base_len, arch);
	const char *best = closest_target(base);
	if (best)
		return pvg_asprintf("\"%s\" is not a known GPU architecture; did you mean \"%s\"? "
				    "(AMD gfx targets from LLVM's list and gfx936, or CUDA sm_NN)",
				    arch, best);
	return pvg_asprintf("\"%s\" is not a known GPU architecture (expected an AMD gfx target "
			    "such as gfx936 or gfx90a:xnack-, or CUDA sm_NN such as sm_90)", arch);
}

bool pvg_arch_valid(const char *arch)
{
	_cleanup_free_ char *why = pvg_target_id_problem(arch);
	return why == NULL;
}

bool pvg_arch_is_cuda(const char *arch)
{
	return arch && strncmp(arch, "sm_", 3) == 0;
}
