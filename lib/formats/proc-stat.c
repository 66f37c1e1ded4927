/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/stat and cmdline text. */
#include "formats/proc-stat.h"

int pvg_proc_stat_parse(const char *text, size_t len, struct pvg_proc_stat *out)
{
	memset(out, 0, sizeof(*out));
	const char *open = memchr(text, '(', len), *close = NULL;
	for (const char *q = text + len; q > text;)
		if (*--q == ')') {
			close = q;
			break;
		}
	if (!open || !close || close < open || (size_t)(close - text) + 3 > len ||
	    close[1] != ' ')
		return -EBADMSG;
	size_t cl = (size_t)(close - open - 1);
	if (cl >= sizeof(out->comm))
		cl = sizeof(out->comm) - 1;
	memcpy(out->comm, open + 1, cl);
	out->comm[cl] = 0;
	const char *q = close + 2, *end = text + len;
	out->state = *q++;
	/* ppid is field 4, starttime field 22: the 1st and 19th number after the state */
	uint64_t v[19];
	int k = 0;
	while (k < 19) {
		while (q < end && *q == ' ')
			q++;
		if (q >= end || *q < '0' || *q > '9') {
			/* fields such as tty_nr and the priority may be negative */
			if (q < end && *q == '-' && q + 1 < end && q[1] >= '0' && q[1] <= '9') {
				q++;
			} else {
				return -EBADMSG;
			}
		}
		uint64_t x = 0;
		while (q < end && *q >= '0' && *q <= '9') {
			/* the kernel writes each field in 64 bits: more is not its text */
			if (__builtin_mul_overflow(x, 10, &x) ||
			    __builtin_add_overflow(x, (uint64_t)(*q - '0'), &x))
				return -EBADMSG;
			q++;
		}
		v[k++] = x;
	}
	if (v[0] > 0x3fffffff)
		return -EBADMSG;
	out->ppid = (int)v[0];
	out->start_ticks = v[18];
	return 0;
}

char *pvg_cmdline_text(const char *bytes, size_t len)
{
	while (len && bytes[len - 1] == 0)
		len--;
	if (!len)
		return NULL;
	char *s = pvg_xrealloc(NULL, len + 1, 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)bytes[i];
		s[i] = c == 0 ? ' ' : c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	s[len] = 0;
	return s;
}
