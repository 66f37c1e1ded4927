/* SPDX-License-Identifier: MIT */
#include "core/report-read.h"
#include "util/hash.h"

static bool blank(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

int pvg_report_read(const char *path, size_t max, bool want_sha256, struct pvg_report_file *f)
{
	memset(f, 0, sizeof(*f));
	struct stat st;
	if (stat(path, &st) < 0) {
		f->bad = PVG_REPORT_UNREADABLE;
		return f->err = -errno;
	}
	_cleanup_free_ char *text = NULL;
	int r = (uint64_t)st.st_size > max ? -EFBIG : pvg_read_file(path, max, &text, &f->len);
	if (r == 0 && f->len > (size_t)st.st_size)
		r = -EFBIG; /* grew while read: not a finished report */
	if (r < 0) {
		f->bad = r == -EFBIG ? PVG_REPORT_TOO_BIG : PVG_REPORT_UNREADABLE;
		return f->err = r;
	}
	if (want_sha256)
		pvg_sha256_hex(text, f->len, f->sha256);
	const char *nul = memchr(text, '\0', f->len);
	if (f->len == 0 || nul) {
		f->bad = f->len ? PVG_REPORT_NUL : PVG_REPORT_EMPTY;
		f->at = nul ? (size_t)(nul - text) : 0;
		return 0;
	}
	const char *end = NULL;
	f->root = cJSON_ParseWithOpts(text, &end, false);
	if (!f->root) {
		const char *e = cJSON_GetErrorPtr();
		f->at = e && e >= text && e <= text + f->len ? (size_t)(e - text) : 0;
		f->bad = PVG_REPORT_TRUNCATED;
		for (const char *q = text + f->at; *q; q++)
			if (!blank(*q))
				f->bad = PVG_REPORT_MALFORMED;
		return 0;
	}
	while (end && blank(*end))
		end++;
	if (end && *end)
		f->bad = PVG_REPORT_TRAILING;
	else if (!cJSON_IsObject(f->root))
		f->bad = PVG_REPORT_NOT_OBJECT;
	return 0;
}

void pvg_report_file_clear(struct pvg_report_file *f)
{
	cJSON_Delete(f->root);
	f->root = NULL;
}
