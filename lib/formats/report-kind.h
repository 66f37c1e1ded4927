/* SPDX-License-Identifier: MIT */
/*
 * Is this file one of provgate's own outputs? Decided by content, never by name: a JSON
 * object whose "schema" is "provgate.<kind>/<n>" (reports, comparisons, merged cluster
 * verdicts), an in-toto Statement whose predicateType is provgate's, or a DSSE envelope
 * holding such a Statement.
 */
#pragma once
#include "util/util.h"

/* Bytes a caller needs to read to decide (larger files are never provgate output). */
#define PVG_REPORT_KIND_MAX (16u << 20)

/* The kind ("provgate.report/1", "in-toto:<predicateType>", ...) written to kind (may be
 * NULL) when bytes are provgate output; false otherwise, also for malformed JSON. */
bool pvg_report_kind(const char *bytes, size_t len, char *kind, size_t kind_size);
/* Does text start (after blanks) like a JSON object? Lets a caller read 1 byte before a
 * whole file. */
bool pvg_report_kind_maybe(const char *bytes, size_t len);
