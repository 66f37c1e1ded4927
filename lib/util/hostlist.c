/* SPDX-License-Identifier: MIT */
/* Slurm hostlist expressions: see hostlist.h. Every item is checked whole before anything is
 * expanded, so that a huge range is refused by arithmetic, never by running out of memory. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hostlist.h"
#include "util/util.h"

#define MAX_DIGITS 9
#define MAX_GROUPS 8  /* bracket groups in one item */
#define MAX_RANGES 64 /* ranges in one group */

struct range {
	unsigned long lo, hi;
	int width;
};

struct group {
	const char *prefix; /* the text before this group's '[' (after the previous ']') */
	size_t prefix_len;
	struct range r[MAX_RANGES];
	size_t n_ranges;
	uint64_t count; /* names this group adds */
};

void pvg_hostlist_clear(struct pvg_hostlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->host[i]);
	free(l->host);
	l->host = NULL;
	l->n = 0;
}

static bool is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t' || c == '\n';
}

/* One number of a range: 1..MAX_DIGITS decimal digits. */
static int parse_number(const char **p, const char *end, unsigned long *v, int *width)
{
	const char *s = *p;
	unsigned long n = 0;
	int d = 0;
	while (s < end && *s >= '0' && *s <= '9') {
		if (++d > MAX_DIGITS)
			return -ERANGE;
		n = n * 10 + (unsigned long)(*s++ - '0');
	}
	if (!d)
		return -EINVAL;
	*p = s;
	*v = n;
	*width = d;
	return 0;
}

/* "N", "N-M", ... up to the closing bracket at end. */
static int parse_group(const char *item, int item_len, const char *s, const char *end,
		       struct group *g, char *why, size_t why_size)
{
	g->n_ranges = 0;
	g->count = 0;
	while (s <= end) {
		const char *tok = s;
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *stop = comma ? comma : end;
		struct range r;
		unsigned long hi;
		int wl, wh;
		int e = parse_number(&s, stop, &r.lo, &wl);
		if (e == 0 && s < stop && *s == '-') {
			s++;
			e = parse_number(&s, stop, &hi, &wh);
		} else {
			hi = r.lo;
		}
		if (e == -ERANGE)
			return pvg_fail(why, why_size, -E2BIG,
				    "\"%.*s\": a number has more than %d digits", item_len, item,
				    MAX_DIGITS);
		if (e < 0 || s != stop)
			return pvg_fail(why, why_size, -EINVAL,
				    "\"%.*s\": \"%.*s\" is not a number or a range N-M", item_len,
				    item, (int)(stop - tok), tok);
		if (hi < r.lo)
			return pvg_fail(why, why_size, -EINVAL,
				    "\"%.*s\": range %.*s ends before it starts", item_len, item,
				    (int)(stop - tok), tok);
		if (g->n_ranges == MAX_RANGES)
			return pvg_fail(why, why_size, -E2BIG,
				    "\"%.*s\": more than %d ranges in one bracket", item_len, item,
				    MAX_RANGES);
		r.hi = hi;
		r.width = wl;
		g->r[g->n_ranges++] = r;
		g->count += hi - r.lo + 1;
		if (!comma)
			break;
		s = comma + 1;
	}
	return 0;
}

/* Appends every name of the item: groups multiplied out left to right. */
static void expand_item(const struct group *g, size_t n_groups, const char *tail, size_t tail_len,
		       struct pvg_hostlist *out, size_t *cap)
{
	/* the position in each group: which range, and the offset inside it */
	size_t ri[MAX_GROUPS] = { 0 };
	unsigned long off[MAX_GROUPS] = { 0 };
	for (;;) {
		char name[PVG_HOSTLIST_MAX_NAME + 1];
		size_t o = 0;
		for (size_t k = 0; k < n_groups; k++) {
			memcpy(name + o, g[k].prefix, g[k].prefix_len);
			o += g[k].prefix_len;
			const struct range *r = &g[k].r[ri[k]];
			o += (size_t)snprintf(name + o, sizeof(name) - o, "%0*lu", r->width,
					      r->lo + off[k]);
		}
		memcpy(name + o, tail, tail_len);
		o += tail_len;
		name[o] = '\0';
		if (out->n == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			out->host = pvg_xrealloc(out->host, *cap, sizeof(*out->host));
		}
		out->host[out->n++] = pvg_strdup(name);
		/* next combination: the last group moves fastest */
		size_t k = n_groups;
		while (k > 0) {
			k--;
			const struct range *r = &g[k].r[ri[k]];
			if (r->lo + off[k] < r->hi) {
				off[k]++;
				break;
			}
			off[k] = 0;
			if (ri[k] + 1 < g[k].n_ranges) {
				ri[k]++;
				break;
			}
			ri[k] = 0;
			if (k == 0)
				return;
		}
		if (n_groups == 0)
			return;
	}
}

int pvg_hostlist_expand(const char *spec, size_t max_hosts, struct pvg_hostlist *out, char *why,
			size_t why_size)
{
	pvg_hostlist_clear(out);
	if (why && why_size)
		why[0] = '\0';
	size_t cap = 0;
	uint64_t total = 0;
	const char *p = spec;
	int r = 0;
	while (*p) {
		while (*p && is_sep(*p))
			p++;
		if (!*p)
			break;
		/* the item: up to a separator outside brackets */
		const char *item = p;
		int depth = 0;
		while (*p && (depth || !is_sep(*p))) {
			if (*p == '[' && ++depth > 1)
				break;
			if (*p == ']' && --depth < 0)
				break;
			if (depth && (*p == ' ' || *p == '\t' || *p == '\n'))
				break;
			p++;
		}
		const char *item_end = p;
		while (*item_end && !is_sep(*item_end))
			item_end++; /* for the message only */
		int item_len = (int)(item_end - item);
		if (item_len > 200)
			item_len = 200;
		if (depth != 0 || (*p && !is_sep(*p))) {
			r = pvg_fail(why, why_size, -EINVAL, "\"%.*s\": brackets do not pair up",
				 item_len, item);
			goto bad;
		}
		struct group g[MAX_GROUPS];
		size_t n_groups = 0;
		const char *s = item;
		uint64_t count = 1;
		size_t name_len = 0;
		while (s < p) {
			const char *open = memchr(s, '[', (size_t)(p - s));
			if (!open)
				break;
			if (n_groups == MAX_GROUPS) {
				r = pvg_fail(why, why_size, -E2BIG, "\"%.*s\": more than %d bracket groups",
					 item_len, item, MAX_GROUPS);
				goto bad;
			}
			const char *close = memchr(open, ']', (size_t)(p - open));
			struct group *cur = &g[n_groups];
			cur->prefix = s;
			cur->prefix_len = (size_t)(open - s);
			if (close == open + 1) {
				r = pvg_fail(why, why_size, -EINVAL, "\"%.*s\": an empty bracket",
					 item_len, item);
				goto bad;
			}
			r = parse_group(item, item_len, open + 1, close, cur, why, why_size);
			if (r < 0)
				goto bad;
			int widest = 0;
			for (size_t k = 0; k < cur->n_ranges; k++) {
				int w = snprintf(NULL, 0, "%0*lu", cur->r[k].width, cur->r[k].hi);
				if (w > widest)
					widest = w;
			}
			name_len += cur->prefix_len + (size_t)widest;
			count *= cur->count; /* at most 64 * 10^9 per group; checked below */
			if (count > max_hosts) {
				r = pvg_fail(why, why_size, -E2BIG, "\"%.*s\" names more than %zu hosts",
					 item_len, item, max_hosts);
				goto bad;
			}
			n_groups++;
			s = close + 1;
		}
		if (n_groups && s < p) {
			r = pvg_fail(why, why_size, -EINVAL,
				 "\"%.*s\": text after the last bracket (Slurm refuses it too)",
				 item_len, item);
			goto bad;
		}
		name_len += (size_t)(p - s);
		if (name_len > PVG_HOSTLIST_MAX_NAME) {
			r = pvg_fail(why, why_size, -E2BIG, "\"%.*s\": a host name longer than %d bytes",
				 item_len, item, PVG_HOSTLIST_MAX_NAME);
			goto bad;
		}
		total += count;
		if (total > max_hosts) {
			r = pvg_fail(why, why_size, -E2BIG, "the list names more than %zu hosts",
				 max_hosts);
			goto bad;
		}
		expand_item(g, n_groups, s, (size_t)(p - s), out, &cap);
	}
	if (out->n == 0) {
		r = pvg_fail(why, why_size, -EINVAL, "the list names no host");
		goto bad;
	}
	return 0;
bad:
	pvg_hostlist_clear(out);
	return r;
}
