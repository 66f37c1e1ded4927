/* SPDX-License-Identifier: MIT */
/* JSON with comments: blanking the comments, and positions in the text (jsonc.c). */
#pragma once

#include "util/util.h"

/* Replaces // and block comments with spaces (newlines kept, so line numbers stay right;
 * strings are left alone). 0, or -EINVAL with *bad_at at a block comment never closed. */
int pvg_jsonc_strip_comments(char *s, size_t len, size_t *bad_at);
/* The 1-based line and column of offset off in s. */
void pvg_jsonc_line_col(const char *s, size_t off, int *line, int *col);
/* Where the key (or, with at_value, the value) that a dotted path names stands in text (valid
 * JSON, comments blanked): "markers.require[0].selected". False when it is not there. */
bool pvg_jsonc_find(const char *text, size_t len, const char *path, bool at_value, size_t *off);
