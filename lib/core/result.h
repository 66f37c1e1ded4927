/* SPDX-License-Identifier: MIT */
/*
 * lib/core: a gate's result. Only core/ and checks/ know statuses and problems; the layers
 * below return data, -errno and a message (struct pvg_msg), and a gate turns them into a
 * status with problem codes of its own.
 */
#pragma once

#include "provgate.h"
#include "util/util.h"

struct pvg_problem {
	char *code;    /* "artifact-hash.mismatch" */
	char *message; /* what was seen */
	char *hint;    /* what to do; may be NULL */
};

struct pvg_result {
	int id;
	const char *name;
	enum pvg_status status;
	char *summary;
	cJSON *evidence; /* object */
	struct pvg_problem *problems;
	size_t n_problems;
	uint64_t elapsed_ns;
	uint64_t prepared_ns; /* its prepare, run earlier while another gate waited */
};

void pvg_problem(struct pvg_result *r, const char *code, const char *hint, const char *fmt, ...)
	PVG_PRINTF(4, 5);
void pvg_summary(struct pvg_result *r, const char *fmt, ...) PVG_PRINTF(2, 3);
void pvg_result_reset(struct pvg_result *r);

/* The status of two findings together: fail outranks unverifiable (the evidence that exists
 * contradicts the claim), which outranks pass. */
static inline enum pvg_status pvg_status_worst(enum pvg_status a, enum pvg_status b)
{
	if (a == PVG_FAIL || b == PVG_FAIL)
		return PVG_FAIL;
	if (a == PVG_UNVERIFIABLE || b == PVG_UNVERIFIABLE)
		return PVG_UNVERIFIABLE;
	return PVG_PASS;
}
