/* SPDX-License-Identifier: MIT */
/* libFuzzer target: is this file one of provgate's own outputs (JSON, in-toto, DSSE)? */
/* Built by tests/fuzz/build.sh. */
#include "formats/report-kind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char kind[128];
	pvg_report_kind((const char *)data, size, kind, sizeof(kind));
	pvg_report_kind((const char *)data, size, NULL, 0);
	return 0;
}
