/* SPDX-License-Identifier: MIT */
/* The one escaper for service text, by destination (escape.h says the rule). */
#include "util/escape.h"
#include "util/util.h"

enum dest { DEST_TERM, DEST_XML, DEST_COMMENT };

/* Length of the valid UTF-8 sequence at s (1..4) and its code point, or 0 when invalid
 * (overlong, a surrogate, past U+10FFFF, truncated, a stray continuation byte). */
static size_t utf8_decode(const unsigned char *s, size_t left, uint32_t *cp_out)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80) {
		*cp_out = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		n = 2;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*cp_out = cp;
	return n;
}

/* A valid code point that is never written raw: it moves the cursor, ends a line, is not
 * a character (XML 1.0 forbids U+FFFE/U+FFFF) or reorders what a reader sees. */
static bool code_point_unsafe(uint32_t cp)
{
	return (cp < 0x20 && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) ||
	       (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe || cp == 0x2028 ||
	       cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static char *escape(const char *str, size_t len, enum dest d)
{
	const unsigned char *s = (const unsigned char *)str;
	/* the widest: "&quot;" for one byte; "\u{10fffe}" is 10 for 4, "\xNN" 4 for 1 */
	char *out = pvg_xcalloc(len * 6 + 1, 1);
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp = 0;
		size_t n = utf8_decode(s + i, len - i, &cp);
		if (n == 0 || (n == 1 && code_point_unsafe(cp))) {
			o += (size_t)sprintf(out + o, "\\x%02x", s[i]);
			i++;
			continue;
		}
		i += n;
		if (code_point_unsafe(cp)) {
			o += (size_t)sprintf(out + o, "\\u{%x}", (unsigned)cp);
			continue;
		}
		const char *ent = NULL;
		if (d == DEST_XML) {
			switch (cp) {
			case '<': ent = "&lt;"; break;
			case '>': ent = "&gt;"; break;
			case '&': ent = "&amp;"; break;
			case '"': ent = "&quot;"; break;
			case '\'': ent = "&apos;"; break;
			default: break;
			}
		} else if (d == DEST_COMMENT && cp == '/' && o > 0 && out[o - 1] == '*') {
			ent = "\\x2f"; /* "*" "/" would end a block comment */
		}
		if (ent) {
			size_t el = strlen(ent);
			memcpy(out + o, ent, el);
			o += el;
		} else {
			memcpy(out + o, s + i - n, n);
			o += n;
		}
	}
	out[o] = '\0';
	return out;
}

char *pvg_escape_term(const char *s, size_t len)
{
	return escape(s, len, DEST_TERM);
}

/* JSON's destination has the terminal's rule: a report is read on terminals too, and what
 * compare and merge read back from one is then already clean. */
char *pvg_utf8_sanitize(const char *s, size_t len)
{
	return escape(s, len, DEST_TERM);
}

char *pvg_escape_xml(const char *s, size_t len)
{
	return escape(s, len, DEST_XML);
}

char *pvg_escape_comment(const char *s, size_t len)
{
	return escape(s, len, DEST_COMMENT);
}

void pvg_fputs_term(const char *s, FILE *f)
{
	if (!s)
		return;
	_cleanup_free_ char *c = pvg_escape_term(s, strlen(s));
	fputs(c, f);
}

void pvg_fputs_xml(const char *s, FILE *f)
{
	if (!s)
		return;
	_cleanup_free_ char *c = pvg_escape_xml(s, strlen(s));
	fputs(c, f);
}
