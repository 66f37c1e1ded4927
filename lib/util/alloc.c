/* SPDX-License-Identifier: MIT */
/* Allocation that aborts on failure (util.h): the leaf every other util file calls. */
#include "util/util.h"

static void oom(void)
{
	fputs("provgate: out of memory\n", stderr);
	abort();
}

char *pvg_strdup(const char *s)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		oom();
	return d;
}

char *pvg_vasprintf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		oom();
	return s;
}

char *pvg_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = pvg_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void *pvg_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *pvg_xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		oom();
	void *q = realloc(p, (n && size) ? n * size : 1);
	if (!q)
		oom();
	return q;
}
