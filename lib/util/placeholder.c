/* SPDX-License-Identifier: MIT */
/* "{name}" placeholders: see placeholder.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/placeholder.h"
#include "util/util.h"

#define MAX_NAME 32

int pvg_placeholder_present(const char *s)
{
	return s && (strchr(s, '{') || strchr(s, '}'));
}

static void known_names(const struct pvg_placeholder *t, size_t n, char *out, size_t size)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && o < size; i++)
		o += (size_t)snprintf(out + o, size - o, "%s{%s}", i ? ", " : "", t[i].name);
}

int pvg_placeholder_expand(const char *s, const struct pvg_placeholder *table, size_t n,
			   char **out, char *why, size_t why_size)
{
	*out = NULL;
	/* two passes: the length, then the text */
	for (int pass = 0; pass < 2; pass++) {
		size_t o = 0;
		for (const char *p = s; *p;) {
			if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
				if (pass)
					(*out)[o] = p[0];
				o++;
				p += 2;
				continue;
			}
			if (*p == '}')
				return pvg_fail(why, why_size, -EINVAL,
					    "a lone \"}\" (write \"}}\" for a literal brace)");
			if (*p != '{') {
				if (pass)
					(*out)[o] = *p;
				o++;
				p++;
				continue;
			}
			const char *close = strchr(p + 1, '}');
			size_t len = close ? (size_t)(close - p - 1) : 0;
			if (!close || len == 0 || len > MAX_NAME || memchr(p + 1, '{', len))
				return pvg_fail(why, why_size, -EINVAL,
					    "\"{\" without a placeholder name and \"}\" after it (write "
					    "\"{{\" for a literal brace)");
			const struct pvg_placeholder *ph = NULL;
			for (size_t i = 0; i < n; i++)
				if (strlen(table[i].name) == len && memcmp(table[i].name, p + 1, len) == 0)
					ph = &table[i];
			if (!ph) {
				char known[256];
				known_names(table, n, known, sizeof(known));
				return pvg_fail(why, why_size, -EINVAL,
					    "unknown placeholder {%.*s} (known: %s)", (int)len, p + 1,
					    known);
			}
			if (!ph->value)
				return pvg_fail(why, why_size, -ENOENT, "placeholder {%s} has no value here: %s",
					    ph->name, ph->unset ? ph->unset : "unset");
			size_t vl = strlen(ph->value);
			if (pass)
				memcpy(*out + o, ph->value, vl);
			o += vl;
			p = close + 1;
		}
		if (!pass) {
			*out = pvg_xcalloc(o + 1, 1);
		} else {
			(*out)[o] = '\0';
		}
	}
	return 0;
}
