/* SPDX-License-Identifier: MIT */
/*
 * The one escaper for text that comes from the service side (SPEC §11): comm, command lines,
 * environment values, paths from /proc, log lines, marker text, fields of reports another node
 * wrote. What it may hold depends on where it goes, so there is one function per destination;
 * all of them share one rule for which characters never pass raw:
 *   - bytes that are not valid UTF-8 (overlong forms, surrogates, past U+10FFFF, truncated):
 *     "\xNN" for each byte;
 *   - C0 controls other than tab (so newline and CR too), DEL: "\xNN";
 *   - C1 controls U+0080..U+009F, noncharacters (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF), the line
 *     and paragraph separators U+2028/U+2029 and the bidirectional overrides and isolates
 *     (U+202A..U+202E, U+2066..U+2069): "\u{N}" in lower-case hex.
 * Valid printable UTF-8 (any script) passes unchanged, tab included. The escapes are plain
 * ASCII and backslashes are not doubled, so escaping twice gives what escaping once gave (XML's
 * entities aside): text escaped where it was read (lib/sys does for command lines) can be
 * escaped again where it is written.
 *
 * Each returns a new NUL-terminated string (allocation failure aborts); a NUL inside len
 * is escaped as "\x00".
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

/* Terminal text (stdout, stderr): the rule above. The same as pvg_utf8_sanitize, the JSON
 * escaper declared in util.h (cJSON then escapes quotes and backslashes). */
char *pvg_escape_term(const char *s, size_t len);
/* XML 1.0 character data and attribute values (either quote): the rule above, which leaves
 * only characters XML 1.0 allows (Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD]
 * | [#x10000-#x10FFFF], less LF and CR), and & < > " ' as entities. */
char *pvg_escape_xml(const char *s, size_t len);
/* Inside a comment of a config provgate writes (init's "// ..." lines): the rule above (no
 * newline, CR, U+2028/U+2029 can end a line comment) and "*" "/" written as "*\x2f", so that
 * the text cannot end a block comment either. */
char *pvg_escape_comment(const char *s, size_t len);

/* fputs of the escaped text of a NUL-terminated s (NULL writes nothing). */
void pvg_fputs_term(const char *s, FILE *f);
void pvg_fputs_xml(const char *s, FILE *f);
