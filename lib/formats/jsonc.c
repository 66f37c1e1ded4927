/* SPDX-License-Identifier: MIT */
/*
 * JSON with comments, as provgate.json is written: the comments blanked out (so that a JSON
 * parser reads the rest), and where a dotted path's key or value stands in the text (cJSON
 * keeps no positions), for messages that point at a line and column.
 */
#include <ctype.h>

#include "formats/jsonc.h"

int pvg_jsonc_strip_comments(char *s, size_t len, size_t *bad_at)
{
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		if (in_str) {
			if (s[i] == '\\' && i + 1 < len)
				i++;
			else if (s[i] == '"')
				in_str = false;
			continue;
		}
		if (s[i] == '"') {
			in_str = true;
		} else if (s[i] == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] != '\n')
				s[i++] = ' ';
		} else if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') {
			size_t start = i;
			s[i++] = ' ';
			s[i++] = ' ';
			while (i < len && !(s[i] == '*' && i + 1 < len && s[i + 1] == '/')) {
				if (s[i] != '\n')
					s[i] = ' ';
				i++;
			}
			if (i >= len) {
				*bad_at = start;
				return -EINVAL;
			}
			s[i] = ' ';
			s[i + 1] = ' ';
			i++;
		}
	}
	return 0;
}

void pvg_jsonc_line_col(const char *s, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && s[i]; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* ---- where a key is in the text --------------------------------------------------------- */

/*
 * cJSON keeps no positions, so an error's key is found again in the (comment-stripped, valid)
 * text by a small scanner that follows the dotted path ("markers.require[0].selected"). It
 * reads each byte at most once and nests at most MAX_DEPTH deep.
 */
#define MAX_DEPTH 64

struct jscan {
	const char *s;
	size_t n, i;
};

static void js_ws(struct jscan *j)
{
	while (j->i < j->n && isspace((unsigned char)j->s[j->i]))
		j->i++;
}

/* A string token at j->i: [*start, *end) is its raw content. */
static bool js_string(struct jscan *j, size_t *start, size_t *end)
{
	if (j->i >= j->n || j->s[j->i] != '"')
		return false;
	*start = ++j->i;
	while (j->i < j->n && j->s[j->i] != '"')
		j->i += j->s[j->i] == '\\' ? 2 : 1;
	if (j->i >= j->n)
		return false;
	*end = j->i++;
	return true;
}

static bool js_skip(struct jscan *j, int depth)
{
	js_ws(j);
	if (j->i >= j->n || depth > MAX_DEPTH)
		return false;
	char c = j->s[j->i];
	size_t a, b;
	if (c == '"')
		return js_string(j, &a, &b);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->i++;
		js_ws(j);
		if (j->i < j->n && j->s[j->i] == close) {
			j->i++;
			return true;
		}
		for (;;) {
			if (c == '{') {
				js_ws(j);
				if (!js_string(j, &a, &b))
					return false;
				js_ws(j);
				if (j->i >= j->n || j->s[j->i] != ':')
					return false;
				j->i++;
			}
			if (!js_skip(j, depth + 1))
				return false;
			js_ws(j);
			if (j->i < j->n && j->s[j->i] == ',') {
				j->i++;
				continue;
			}
			if (j->i < j->n && j->s[j->i] == close) {
				j->i++;
				return true;
			}
			return false;
		}
	}
	while (j->i < j->n && !strchr(",]} \t\r\n", j->s[j->i]))
		j->i++;
	return true;
}

/* Offset of the key (or, with at_value, of the value) that path names; false when not found. */
static bool js_find(struct jscan *j, const char *path, bool at_value, size_t *off, int depth)
{
	js_ws(j);
	if (j->i >= j->n || depth > MAX_DEPTH)
		return false;
	if (*path == '[') {
		char *end;
		long want = strtol(path + 1, &end, 10);
		if (*end != ']' || j->s[j->i] != '[')
			return false;
		const char *rest = end + 1;
		if (*rest == '.')
			rest++;
		j->i++;
		for (long k = 0;; k++) {
			js_ws(j);
			if (k == want) {
				if (!*rest) {
					*off = j->i;
					return true;
				}
				return js_find(j, rest, at_value, off, depth + 1);
			}
			if (!js_skip(j, depth + 1))
				return false;
			js_ws(j);
			if (j->i >= j->n || j->s[j->i] != ',')
				return false;
			j->i++;
		}
	}
	if (j->s[j->i] != '{')
		return false;
	size_t comp = strcspn(path, ".[");
	j->i++;
	for (;;) {
		js_ws(j);
		size_t key_at = j->i, a, b;
		if (!js_string(j, &a, &b))
			return false;
		js_ws(j);
		if (j->i >= j->n || j->s[j->i] != ':')
			return false;
		j->i++;
		if (b - a == comp && memcmp(j->s + a, path, comp) == 0) {
			const char *rest = path + comp;
			if (*rest == '.')
				rest++;
			if (!*rest) {
				js_ws(j);
				*off = at_value ? j->i : key_at;
				return true;
			}
			return js_find(j, rest, at_value, off, depth + 1);
		}
		if (!js_skip(j, depth + 1))
			return false;
		js_ws(j);
		if (j->i >= j->n || j->s[j->i] != ',')
			return false;
		j->i++;
	}
}

bool pvg_jsonc_find(const char *text, size_t len, const char *path, bool at_value, size_t *off)
{
	struct jscan j = { .s = text, .n = len };
	return js_find(&j, path, at_value, off, 0);
}
