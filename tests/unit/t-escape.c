/* SPDX-License-Identifier: MIT */
/* The escaper of service text (lib/util/escape.c), by destination, on hostile input. */
#include <stdint.h>

#include "util/escape.h"
#include "util/util.h"
#include "tap.h"

/* Test-side UTF-8 decoder, written apart from the one under test: length of the sequence at
 * s and its code point, or 0 when invalid. */
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

/* What no destination may hold raw. */
static bool forbidden(uint32_t cp)
{
	return (cp < 0x20 && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) || cp == 0xfffe ||
	       cp == 0xffff || (cp & 0xfffe) == 0xfffe || (cp >= 0xfdd0 && cp <= 0xfdef) ||
	       cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* XML 1.0's Char production. */
static bool xml_char(uint32_t cp)
{
	return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
	       (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/* 0 when out is valid UTF-8 holding nothing forbidden (and, for XML, only XML 1.0 Chars and
 * no raw markup); else the offset of the first offence + 1. */
static size_t first_offence(const char *out, bool xml)
{
	const unsigned char *s = (const unsigned char *)out;
	size_t len = strlen(out);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = decode(s + i, len - i, &cp);
		bool markup = cp < 0x80 && cp && strchr("<>\"'", (int)cp);
		if (!n || forbidden(cp) || (xml && (!xml_char(cp) || markup)))
			return i + 1;
		if (xml && cp == '&' && strncmp(out + i, "&lt;", 4) && strncmp(out + i, "&gt;", 4) &&
		    strncmp(out + i, "&amp;", 5) && strncmp(out + i, "&quot;", 6) &&
		    strncmp(out + i, "&apos;", 6))
			return i + 1;
		i += n;
	}
	return 0;
}

static void terminal_escapes_controls_and_invalid_bytes(void)
{
	/* a clear-screen, a CSI as its one-byte C1 form (invalid UTF-8) and as U+009B */
	char *s = pvg_escape_term("a\x1b[2Jb\x9b" "31m\xc2\x9b" "c\x7f", 14);
	CHECK_STR(s, "a\\x1b[2Jb\\x9b31m\\u{9b}c\\x7f");
	free(s);
	/* a newline would let the service forge a line of provgate's own output */
	s = pvg_escape_term("\n{\r\t}", 5);
	CHECK_STR(s, "\\x0a{\\x0d\t}");
	free(s);
	s = pvg_escape_term("x\0y", 3);
	CHECK_STR(s, "x\\x00y");
	free(s);
	/* overlong '/', a surrogate, past U+10FFFF, a truncated sequence, a lone continuation */
	s = pvg_escape_term("\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82" "z", 12);
	CHECK_STR(s, "\\xc0\\xaf\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80\\xe2\\x82z");
	free(s);
	/* bidi overrides reorder what a reader sees; line separators end lines in editors */
	s = pvg_escape_term("a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x80\xa8" "d", 13);
	CHECK_STR(s, "a\\u{202e}b\\u{2066}c\\u{2028}d");
	free(s);
}

static void terminal_keeps_printable_utf8(void)
{
	const char *ok = "vllm::EngineCore é 日本 🙂 \\x41 tab\there";
	char *s = pvg_escape_term(ok, strlen(ok));
	CHECK_STR(s, ok);
	free(s);
	s = pvg_escape_term("", 0);
	CHECK_STR(s, "");
	free(s);
}

static void json_sanitizer_is_the_same_rule(void)
{
	/* noncharacters and C1 do not pass into a report either */
	char *s = pvg_utf8_sanitize("\xef\xbf\xbe\xef\xbf\xbf\xc2\x85\xf4\x8f\xbf\xbf", 12);
	CHECK_STR(s, "\\u{fffe}\\u{ffff}\\u{85}\\u{10ffff}");
	free(s);
	char *t = pvg_escape_term("\xef\xb7\x90\x1b", 4);
	s = pvg_utf8_sanitize("\xef\xb7\x90\x1b", 4);
	CHECK_STR(s, t);
	CHECK_STR(s, "\\u{fdd0}\\x1b");
	free(s);
	free(t);
}

static void xml_escapes_markup_and_forbidden_characters(void)
{
	char *s = pvg_escape_xml("<a href=\"x\" b='y'>&amp;</a>", 27);
	CHECK_STR(s, "&lt;a href=&quot;x&quot; b=&apos;y&apos;&gt;&amp;amp;&lt;/a&gt;");
	free(s);
	/* U+FFFE, U+FFFF, a surrogate and a C0 control make a document not well-formed */
	s = pvg_escape_xml("m\xef\xbf\xbe\xef\xbf\xbf\xed\xbf\xbf\x01\xef\xbf\xbd", 14);
	CHECK_STR(s, "m\\u{fffe}\\u{ffff}\\xed\\xbf\\xbf\\x01\xef\xbf\xbd");
	free(s);
}

static void comment_text_cannot_end_the_comment(void)
{
	/* a comm of "\n{" would end init's "// guessed:" line and be parsed as config */
	char *s = pvg_escape_comment("\n{\"x\":1}", 8);
	CHECK_STR(s, "\\x0a{\"x\":1}");
	CHECK(!strchr(s, '\n'));
	free(s);
	s = pvg_escape_comment("a */ {} /* **/ \r\xe2\x80\xa9", 19);
	CHECK_STR(s, "a *\\x2f {} /* **\\x2f \\x0d\\u{2029}");
	CHECK(!strstr(s, "*/"));
	free(s);
	/* a glob keeps its shape, only the pair is broken */
	s = pvg_escape_comment("csrc/**/x.cu", 12);
	CHECK_STR(s, "csrc/**\\x2fx.cu");
	free(s);
}

static void fputs_writes_escaped_text(void)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	pvg_fputs_term("a\x1b" "b", f);
	pvg_fputs_term(NULL, f);
	pvg_fputs_xml("<\xef\xbf\xbf>", f);
	fclose(f);
	CHECK_STR(buf, "a\\x1bb&lt;\\u{ffff}&gt;");
	free(buf);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

static void random_bytes_keep_every_invariant(void)
{
	/* random bytes, with the pieces that matter mixed in often */
	static const char *const pieces[] = { "\xef\xbf\xbe", "\xef\xbf\xbf", "\xc2\x9b", "\x1b[",
					      "\xe2\x80\xa8", "*/", "*", "/", "\n", "&", "<",
					      "\xed\xa0\x80", "\xf4\x8f\xbf\xbf", "\xe2\x80\xae",
					      "é", "\xc3", "\"'" };
	unsigned char in[96];
	size_t bad = 0, reported = 0;
	for (int round = 0; round < 20000; round++) {
		size_t len = next() % sizeof(in), n = 0;
		while (n < len) {
			if (next() % 3 == 0) {
				const char *p = pieces[next() % ARRAY_SIZE(pieces)];
				size_t pl = strlen(p);
				if (n + pl > len)
					break;
				memcpy(in + n, p, pl);
				n += pl;
			} else {
				in[n++] = (unsigned char)next();
			}
		}
		char *t = pvg_escape_term((const char *)in, n);
		char *x = pvg_escape_xml((const char *)in, n);
		char *c = pvg_escape_comment((const char *)in, n);
		char *tt = pvg_escape_term(t, strlen(t));
		char *cc = pvg_escape_comment(c, strlen(c));
		/* nothing dropped (a NUL inside is escaped too); valid UTF-8 with nothing
		 * forbidden; XML-safe; no comment end; escaping twice changes nothing */
		bad += strlen(t) < n || strlen(x) < n || strlen(c) < n;
		bad += first_offence(t, false) != 0;
		bad += first_offence(x, true) != 0;
		bad += first_offence(c, false) != 0 || strstr(c, "*/") != NULL;
		bad += strcmp(t, tt) != 0 || strcmp(c, cc) != 0;
		if (bad && !reported++) {
			printf("#   round %d: term %zu xml %zu comment %zu\n", round,
			       first_offence(t, false), first_offence(x, true), first_offence(c, false));
			printf("#   %s\n#   %s\n#   %s\n", t, x, c);
		}
		free(t);
		free(x);
		free(c);
		free(tt);
		free(cc);
	}
	CHECK_INT(bad, 0);
}

int main(void)
{
	RUN(terminal_escapes_controls_and_invalid_bytes);
	RUN(terminal_keeps_printable_utf8);
	RUN(json_sanitizer_is_the_same_rule);
	RUN(xml_escapes_markup_and_forbidden_characters);
	RUN(comment_text_cannot_end_the_comment);
	RUN(fputs_writes_escaped_text);
	RUN(random_bytes_keep_every_invariant);
	TAP_EXIT();
}
