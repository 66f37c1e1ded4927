/* SPDX-License-Identifier: MIT */
/* The few lib/util helpers lib/sys/gpu-procs.c uses, for building it alone on a GPU machine
 * that has none of provgate's -dev packages (tests/gpu/nvml-probe/README.md). */
#pragma once
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
static inline void freep(void *p) { free(*(void **)p); }
#define _cleanup_free_ _cleanup_(freep)
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void *pvg_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		abort();
	return p;
}
static inline void *pvg_xrealloc(void *p, size_t n, size_t size)
{
	p = realloc(p, (n ? n : 1) * size);
	if (!p)
		abort();
	return p;
}
static inline char *pvg_strdup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		abort();
	return d;
}
static inline __attribute__((format(printf, 1, 2))) char *pvg_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}
