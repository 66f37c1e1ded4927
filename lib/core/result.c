/* SPDX-License-Identifier: MIT */
/* A gate's result: problems and summary, and the names of statuses and phases. */
#include "core/result.h"
#include "pvg-version.h"

static const char *const status_names[] = {
	[PVG_PASS] = "pass",
	[PVG_FAIL] = "fail",
	[PVG_UNVERIFIABLE] = "unverifiable",
	[PVG_BLOCKED] = "blocked",
	[PVG_SKIPPED] = "skipped",
};

static const char *const phase_names[] = {
	[PVG_PHASE_INSTALL] = "install",
	[PVG_PHASE_PRESTART] = "prestart",
	[PVG_PHASE_LIVE] = "live",
};

const char *pvg_version(void)
{
	return PVG_VERSION;
}

const char *pvg_status_name(enum pvg_status s)
{
	return (unsigned)s < ARRAY_SIZE(status_names) ? status_names[s] : "?";
}

const char *pvg_phase_name(enum pvg_phase p)
{
	return (unsigned)p < ARRAY_SIZE(phase_names) ? phase_names[p] : "?";
}

int pvg_phase_from_name(const char *name, enum pvg_phase *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(phase_names); i++)
		if (strcmp(name, phase_names[i]) == 0) {
			*out = (enum pvg_phase)i;
			return 0;
		}
	return -EINVAL;
}

/* ---- results ------------------------------------------------------------------------------ */

void pvg_problem(struct pvg_result *r, const char *code, const char *hint, const char *fmt, ...)
{
	r->problems = pvg_xrealloc(r->problems, r->n_problems + 1, sizeof(*r->problems));
	struct pvg_problem *p = &r->problems[r->n_problems++];
	va_list ap;
	va_start(ap, fmt);
	p->message = pvg_vasprintf(fmt, ap);
	va_end(ap);
	p->code = pvg_strdup(code);
	p->hint = pvg_strdup(hint);
}

void pvg_summary(struct pvg_result *r, const char *fmt, ...)
{
	free(r->summary);
	va_list ap;
	va_start(ap, fmt);
	r->summary = pvg_vasprintf(fmt, ap);
	va_end(ap);
}

void pvg_result_reset(struct pvg_result *r)
{
	for (size_t i = 0; i < r->n_problems; i++) {
		free(r->problems[i].code);
		free(r->problems[i].message);
		free(r->problems[i].hint);
	}
	free(r->problems);
	free(r->summary);
	if (r->evidence)
		cJSON_Delete(r->evidence);
	memset(r, 0, sizeof(*r));
}
