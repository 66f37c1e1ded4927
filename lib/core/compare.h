/* SPDX-License-Identifier: MIT */
/*
 * An A/B certificate: two provgate reports (a baseline and a candidate) are like for like
 * when both are certified, come from two different service processes, and every field of
 * their environments is equal except the declared differences, each of which really differs.
 */
#pragma once
#include "core/result.h"

enum pvg_field_verdict {
	PVG_FIELD_EQUAL = 0,
	PVG_FIELD_EQUAL_WEAK,    /* equal, but only by size (a shared object without build-id) */
	PVG_FIELD_DECLARED,      /* differs, and was declared */
	PVG_FIELD_DIFFERS,       /* differs, not declared: refused */
	PVG_FIELD_DECLARED_EQUAL, /* declared by name, equal on both sides: refused */
	PVG_FIELD_UNREADABLE,    /* could not be read on a side: refused */
};

struct pvg_compare_field {
	char *name;      /* "service.env.VLLM_USE_V1", "fact.block size" */
	char *baseline;  /* NULL: absent on that side */
	char *candidate;
	bool baseline_unreadable, candidate_unreadable;
	bool weak;       /* compared by size only */
	enum pvg_field_verdict verdict;
};

struct pvg_compare_side {
	char *path;
	char sha256[65];  /* of the report file ("" unknown): an attestation's subject */
	char *name;       /* the report's experiment name */
	char *started_at;
	bool certified;   /* as this comparison judged it */
	bool is_exec;
	long pid;         /* -1 unknown */
	char *start_time;
};

struct pvg_compare {
	struct pvg_compare_side baseline, candidate;
	struct pvg_compare_field *fields; /* sorted by name */
	size_t n_fields;
	struct pvg_problem *problems;
	size_t n_problems;
	size_t n_weak;
	bool like_for_like;
};

struct pvg_compare_input {
	const char *path;
	const cJSON *report; /* NULL when it could not be parsed */
	const char *why;     /* why not, then */
	const char *sha256;  /* of the file's bytes as read; NULL when not read */
};

/* Compares two reports (a side that is not a report is a refusal, never a crash).
 * declared: field names or fnmatch(3) patterns. Fills out; returns 0. */
int pvg_compare_reports(const struct pvg_compare_input *baseline,
			const struct pvg_compare_input *candidate, const char *const *declared,
			size_t n_declared, struct pvg_compare *out);
/* The provgate.compare/1 document. */
cJSON *pvg_compare_json(const struct pvg_compare *c, const char *const *declared,
			size_t n_declared);
void pvg_compare_clear(struct pvg_compare *c);
const char *pvg_field_verdict_name(enum pvg_field_verdict v);
/* The problem code of an undeclared difference in the field. */
const char *pvg_compare_field_code(const char *field);
