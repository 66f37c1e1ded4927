/* SPDX-License-Identifier: MIT */
/* Container runtimes' log formats, decoded as a stream; see ctrlog.h. */
#include "formats/ctrlog.h"
#include "formats/tz.h"

const char *pvg_ctrlog_kind_name(enum pvg_ctrlog_kind k)
{
	return k == PVG_CTRLOG_CRI ? "cri" : k == PVG_CTRLOG_DOCKER ? "docker-json" : "plain";
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int num(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static bool digits(const char *s, int n)
{
	for (int i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

int pvg_rfc3339_ns(const char *s, size_t len, int64_t *ns)
{
	/* 2026-12-01T21:26:35[.fraction](Z|+hh:mm|-hh:mm) */
	if (len < 20 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
	    !digits(s + 8, 2) || (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2) ||
	    s[13] != ':' || !digits(s + 14, 2) || s[16] != ':' || !digits(s + 17, 2))
		return -EINVAL;
	int year = num(s, 4), mon = num(s + 5, 2), mday = num(s + 8, 2);
	int hour = num(s + 11, 2), min = num(s + 14, 2), sec = num(s + 17, 2);
	/* nanoseconds since 1970 in 64 bits reach into 2262 */
	if (year < 1970 || year > 2261 || mon < 1 || mon > 12 || mday < 1 || mday > 31 ||
	    hour > 23 || min > 59 || sec > 60)
		return -EINVAL;
	size_t p = 19;
	int64_t frac = 0;
	if (p < len && s[p] == '.') {
		size_t k = 0;
		p++;
		while (p < len && is_digit(s[p])) {
			if (k < 9)
				frac = frac * 10 + (s[p] - '0');
			k++;
			p++;
		}
		if (k == 0 || k > 9)
			return -EINVAL;
		for (; k < 9; k++)
			frac *= 10;
	}
	int64_t off = 0;
	if (p < len && (s[p] == 'Z' || s[p] == 'z')) {
		p++;
	} else if (p + 6 <= len && (s[p] == '+' || s[p] == '-') && digits(s + p + 1, 2) &&
		   s[p + 3] == ':' && digits(s + p + 4, 2)) {
		int oh = num(s + p + 1, 2), om = num(s + p + 4, 2);
		if (oh > 23 || om > 59)
			return -EINVAL;
		off = (oh * 3600 + om * 60) * (s[p] == '-' ? -1 : 1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (p != len)
		return -EINVAL;
	*ns = (pvg_utc_from_fields(year, mon, mday, hour, min, sec) - off) * 1000000000 + frac;
	return 0;
}

/* "TS STREAM TAG" (the CRI head before its content): the time, the stream and whether the
 * tag says partial. */
static bool cri_head(const char *h, size_t n, int64_t *ns, int *stream, bool *partial)
{
	const char *s1 = memchr(h, ' ', n);
	if (!s1)
		return false;
	const char *s2 = memchr(s1 + 1, ' ', (size_t)(h + n - s1 - 1));
	if (!s2 || pvg_rfc3339_ns(h, (size_t)(s1 - h), ns) < 0)
		return false;
	size_t sl = (size_t)(s2 - s1 - 1);
	if (sl == 6 && memcmp(s1 + 1, "stdout", 6) == 0)
		*stream = 1;
	else if (sl == 6 && memcmp(s1 + 1, "stderr", 6) == 0)
		*stream = 2;
	else
		return false;
	/* tags: "F" or "P", perhaps followed by ":..." tags of a later version of the format */
	const char *t = s2 + 1;
	size_t tl = (size_t)(h + n - t);
	if (tl == 0 || (t[0] != 'F' && t[0] != 'P') || (tl > 1 && t[1] != ':'))
		return false;
	*partial = t[0] == 'P';
	return true;
}

enum pvg_ctrlog_kind pvg_ctrlog_detect(const char *bytes, size_t len)
{
	if (len >= 8 && memcmp(bytes, "{\"log\":\"", 8) == 0)
		return PVG_CTRLOG_DOCKER;
	/* a CRI head and its third space within the first 64 bytes */
	size_t n = len < 64 ? len : 64, spaces = 0;
	for (size_t i = 0; i < n; i++) {
		if (bytes[i] == '\n')
			break;
		if (bytes[i] == ' ' && ++spaces == 3) {
			int64_t ns;
			int stream;
			bool partial;
			return cri_head(bytes, i, &ns, &stream, &partial) ? PVG_CTRLOG_CRI
									 : PVG_CTRLOG_PLAIN;
		}
	}
	return PVG_CTRLOG_PLAIN;
}

/* ---- the decoder ------------------------------------------------------------------------------ */

enum {
	C_HEAD,
	C_BODY,
	RAW,          /* a record that breaks the format: its bytes as they are */
	J_START,
	J_KEY_OR_END,
	J_KEY,
	J_COLON,
	J_VALUE,
	J_LOG,
	J_LOG_ESC,
	J_LOG_U,
	J_CAP,        /* the string value of "stream" or "time" */
	J_SKIP_STR,
	J_SKIP_NEST,
	J_SKIP_SCALAR,
	J_AFTER,
	J_TRAIL,
	J_SKIP_REST,  /* broken after the log string was read: the rest is docker's, not the line's */
};

static void record_begin(struct pvg_ctrlog *d, uint64_t file);

void pvg_ctrlog_init(struct pvg_ctrlog *d, enum pvg_ctrlog_kind kind, size_t max_lines)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->cap_lines = max_lines < 16 ? 16 : max_lines;
	d->lines = pvg_xcalloc(d->cap_lines, sizeof(*d->lines));
	record_begin(d, 0);
}

void pvg_ctrlog_done(struct pvg_ctrlog *d)
{
	free(d->lines);
	memset(d, 0, sizeof(*d));
}

struct out {
	char *p;
	size_t w, cap;
};

static void put(struct pvg_ctrlog *d, struct out *o, char c)
{
	o->p[o->w++] = c;
	d->out_pos++;
}

/* A decoded line begins here unless one is open (the caller made room in the table). */
static void need_line(struct pvg_ctrlog *d)
{
	if (d->open)
		return;
	struct pvg_ctrlog_line *l = &d->lines[d->n_lines++];
	l->out = d->out_pos;
	l->file = d->rec_file;
	l->time_ns = d->rec_time;
	d->open = true;
}

static void content(struct pvg_ctrlog *d, struct out *o, char c)
{
	if (d->pending_nl) {
		/* a "\n" inside a log string: the line ends, another begins */
		put(d, o, '\n');
		d->open = false;
		d->pending_nl = false;
	}
	need_line(d);
	put(d, o, c);
}

static void line_end(struct pvg_ctrlog *d, struct out *o)
{
	d->pending_nl = false;
	need_line(d);
	put(d, o, '\n');
	d->open = false;
}

static void utf8(struct pvg_ctrlog *d, struct out *o, uint32_t cp)
{
	if (cp < 0x80) {
		content(d, o, (char)cp);
	} else if (cp < 0x800) {
		content(d, o, (char)(0xc0 | cp >> 6));
		put(d, o, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		content(d, o, (char)(0xe0 | cp >> 12));
		put(d, o, (char)(0x80 | ((cp >> 6) & 0x3f)));
		put(d, o, (char)(0x80 | (cp & 0x3f)));
	} else {
		content(d, o, (char)(0xf0 | cp >> 18));
		put(d, o, (char)(0x80 | ((cp >> 12) & 0x3f)));
		put(d, o, (char)(0x80 | ((cp >> 6) & 0x3f)));
		put(d, o, (char)(0x80 | (cp & 0x3f)));
	}
}

/* A decoded "\n" of a log string: written when the next character comes (then the line ends
 * inside the record) or at the record's end (where it is the line's end, or the record was a
 * part that docker cut). */
static void newline(struct pvg_ctrlog *d, struct out *o)
{
	if (d->pending_nl)
		line_end(d, o);
	d->pending_nl = true;
}

/* A decoded code unit of a \uXXXX escape, pairing surrogates; a lone one is U+FFFD. */
static void code_unit(struct pvg_ctrlog *d, struct out *o, uint32_t cu)
{
	if (d->u_high) {
		uint32_t hi = d->u_high;
		d->u_high = 0;
		if (cu >= 0xdc00 && cu <= 0xdfff) {
			utf8(d, o, 0x10000 + ((hi - 0xd800) << 10) + (cu - 0xdc00));
			return;
		}
		utf8(d, o, 0xfffd);
	}
	if (cu >= 0xd800 && cu <= 0xdbff)
		d->u_high = cu;
	else if (cu >= 0xdc00 && cu <= 0xdfff)
		utf8(d, o, 0xfffd);
	else if (cu == '\n')
		newline(d, o);
	else
		utf8(d, o, cu);
}

static void flush_high(struct pvg_ctrlog *d, struct out *o)
{
	if (d->u_high) {
		d->u_high = 0;
		utf8(d, o, 0xfffd);
	}
}

/* The record breaks the format at this byte. */
static void broken(struct pvg_ctrlog *d)
{
	d->malformed++;
	d->rec_time = PVG_CTRLOG_NO_TIME;
	d->st = d->log_done ? J_SKIP_REST : RAW;
}

static void record_begin(struct pvg_ctrlog *d, uint64_t file)
{
	d->rec_file = file;
	d->rec_out = d->out_pos;
	d->rec_time = PVG_CTRLOG_NO_TIME;
	d->rec_stream = 0;
	d->partial = false;
	d->log_done = false;
	d->any_key = false;
	d->buf_n = 0;
	d->spaces = 0;
	d->time_n = 0;
	d->u_high = 0;
	d->pending_nl = false;
	d->st = d->kind == PVG_CTRLOG_DOCKER ? J_START : d->kind == PVG_CTRLOG_CRI ? C_HEAD : RAW;
}

/* The decoded lines this record began take the time read at its end (docker writes "time"
 * after "log"). */
static void stamp_record(struct pvg_ctrlog *d)
{
	for (size_t i = d->n_lines; i-- > 0 && d->lines[i].out >= d->rec_out;)
		d->lines[i].time_ns = d->rec_time;
}

/* The '\n' that ends a record, in state st. */
static void record_end(struct pvg_ctrlog *d, struct out *o)
{
	d->records++;
	switch (d->st) {
	case C_HEAD: {
		/* no content separator: a line that is not CRI */
		d->malformed++;
		if (d->open)
			line_end(d, o);
		d->rec_time = PVG_CTRLOG_NO_TIME;
		for (size_t i = 0; i < d->buf_n; i++)
			content(d, o, d->buf[i]);
		line_end(d, o);
		break;
	}
	case C_BODY:
		if (!d->partial)
			line_end(d, o);
		break;
	case J_TRAIL:
		flush_high(d, o);
		if (d->time_n && pvg_rfc3339_ns(d->time_text, d->time_n, &d->rec_time) < 0) {
			d->rec_time = PVG_CTRLOG_NO_TIME;
			d->malformed++;
		}
		stamp_record(d);
		if (d->pending_nl)
			line_end(d, o);
		/* else: docker cut the line; the next record carries it on */
		break;
	case J_START:
		if (!d->any_key && !d->open) {
			/* an empty line between records */
			d->malformed++;
			line_end(d, o);
			break;
		}
		/* fall through */
	default:
		if (d->st != RAW && d->st != J_SKIP_REST)
			d->malformed++;
		flush_high(d, o);
		if (d->open || d->pending_nl)
			line_end(d, o);
		break;
	}
	record_begin(d, d->in_pos + 1);
}

/* The bytes that end a run of plain characters in a JSON string. */
static const bool json_stop[256] = { ['"'] = true, ['\\'] = true, ['\n'] = true };

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* One byte of a docker record (not '\n'). */
static void docker_byte(struct pvg_ctrlog *d, struct out *o, char c)
{
	switch (d->st) {
	case J_START:
		if (is_ws(c))
			return;
		if (c != '{') {
			d->malformed++;
			if (d->open)
				line_end(d, o);
			d->st = RAW;
			content(d, o, c);
			return;
		}
		d->any_key = true;
		d->st = J_KEY_OR_END;
		return;
	case J_KEY_OR_END:
		if (is_ws(c))
			return;
		if (c == '"') {
			d->buf_n = 0;
			d->st = J_KEY;
		} else if (c == '}') {
			d->st = J_TRAIL;
		} else {
			broken(d);
			if (d->st == RAW)
				content(d, o, c);
		}
		return;
	case J_KEY:
		if (c == '"') {
			d->key = d->buf_n == 3 && memcmp(d->buf, "log", 3) == 0	   ? 1
				 : d->buf_n == 6 && memcmp(d->buf, "stream", 6) == 0 ? 2
				 : d->buf_n == 4 && memcmp(d->buf, "time", 4) == 0   ? 3
										     : 0;
			d->st = J_COLON;
		} else if (d->buf_n < sizeof(d->buf)) {
			d->buf[d->buf_n++] = c; /* an escaped or overlong key matches none */
		}
		return;
	case J_COLON:
		if (is_ws(c))
			return;
		if (c == ':') {
			d->st = J_VALUE;
		} else {
			broken(d);
			if (d->st == RAW)
				content(d, o, c);
		}
		return;
	case J_VALUE:
		if (is_ws(c))
			return;
		if (c == '"') {
			d->buf_n = 0;
			d->esc = false;
			d->st = d->key == 1 ? J_LOG : d->key ? J_CAP : J_SKIP_STR;
		} else if (c == '{' || c == '[') {
			d->depth = 1;
			d->in_str = d->esc = false;
			d->st = J_SKIP_NEST;
		} else {
			d->st = J_SKIP_SCALAR;
		}
		return;
	case J_LOG:
		if (c == '"') {
			flush_high(d, o);
			d->log_done = true;
			d->st = J_AFTER;
		} else if (c == '\\') {
			d->st = J_LOG_ESC;
		} else {
			flush_high(d, o);
			content(d, o, c);
		}
		return;
	case J_LOG_ESC: {
		char v = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b'
			 : c == 'f' ? '\f' : c == '"' || c == '\\' || c == '/' ? c : 0;
		if (c == 'u') {
			d->u_val = 0;
			d->u_n = 0;
			d->st = J_LOG_U;
			return;
		}
		d->st = J_LOG;
		if (!v) {
			/* not a JSON escape: the rest of the record as it is */
			flush_high(d, o);
			broken(d);
			content(d, o, '\\');
			content(d, o, c);
			return;
		}
		code_unit(d, o, (uint32_t)(unsigned char)v);
		return;
	}
	case J_LOG_U: {
		int h = pvg_hex_digit(c);
		if (h < 0) {
			flush_high(d, o);
			broken(d);
			content(d, o, c);
			return;
		}
		d->u_val = d->u_val << 4 | (uint32_t)h;
		if (++d->u_n == 4) {
			d->st = J_LOG;
			code_unit(d, o, d->u_val);
		}
		return;
	}
	case J_CAP:
		if (d->esc) {
			d->esc = false;
		} else if (c == '\\') {
			d->esc = true;
		} else if (c == '"') {
			if (d->key == 2)
				d->rec_stream = d->buf_n == 6 && memcmp(d->buf, "stdout", 6) == 0   ? 1
						: d->buf_n == 6 && memcmp(d->buf, "stderr", 6) == 0 ? 2
												      : 0;
			else
				d->time_n = d->buf_n < sizeof(d->time_text) ? d->buf_n : 0;
			if (d->key == 3 && d->time_n)
				memcpy(d->time_text, d->buf, d->time_n);
			d->st = J_AFTER;
			return;
		}
		if (d->buf_n < sizeof(d->buf))
			d->buf[d->buf_n++] = c;
		return;
	case J_SKIP_STR:
		if (d->esc)
			d->esc = false;
		else if (c == '\\')
			d->esc = true;
		else if (c == '"')
			d->st = J_AFTER;
		return;
	case J_SKIP_NEST:
		if (d->in_str) {
			if (d->esc)
				d->esc = false;
			else if (c == '\\')
				d->esc = true;
			else if (c == '"')
				d->in_str = false;
		} else if (c == '"') {
			d->in_str = true;
		} else if (c == '{' || c == '[') {
			if (++d->depth > 64)
				broken(d);
		} else if ((c == '}' || c == ']') && --d->depth == 0) {
			d->st = J_AFTER;
		}
		return;
	case J_SKIP_SCALAR:
		if (c == ',' || c == '}')
			d->st = c == ',' ? J_KEY_OR_END : J_TRAIL;
		else if (is_ws(c))
			d->st = J_AFTER;
		return;
	case J_AFTER:
		if (is_ws(c))
			return;
		if (c == ',')
			d->st = J_KEY_OR_END;
		else if (c == '}')
			d->st = J_TRAIL;
		else if (broken(d), d->st == RAW)
			content(d, o, c);
		return;
	case J_TRAIL:
		if (!is_ws(c))
			broken(d);
		return;
	case J_SKIP_REST:
		return;
	case RAW:
		content(d, o, c);
		return;
	}
}

size_t pvg_ctrlog_decode(struct pvg_ctrlog *d, const char *in, size_t n, char *out_buf, size_t cap,
			 size_t *produced)
{
	struct out o = { out_buf, 0, cap };
	size_t i = 0;
	while (i < n && o.cap - o.w >= PVG_CTRLOG_SLACK && d->n_lines + 2 <= d->cap_lines) {
		char c = in[i];
		if (c == '\n') {
			record_end(d, &o);
			i++;
			d->in_pos++;
			continue;
		}
		/* runs of content: CRI and raw bodies, and docker's plain log characters */
		if (!d->pending_nl && (d->st == C_BODY || d->st == RAW ||
				       (d->st == J_LOG && c != '"' && c != '\\' && !d->u_high))) {
			need_line(d);
			size_t room = o.cap - o.w - PVG_CTRLOG_SLACK + 1, k = 0;
			size_t lim = n - i < room ? n - i : room;
			if (d->st != J_LOG) {
				const char *nl = memchr(in + i, '\n', lim);
				k = nl ? (size_t)(nl - (in + i)) : lim;
			} else {
				while (k < lim && !json_stop[(unsigned char)in[i + k]])
					k++;
			}
			memcpy(o.p + o.w, in + i, k);
			o.w += k;
			d->out_pos += k;
			d->in_pos += k;
			i += k;
			continue;
		}
		if (d->st == C_HEAD && d->buf_n == 0) {
			/* the whole head in the input: copied at once (the loop below reads it a
			 * byte at a time when it comes in pieces) */
			size_t lim = n - i < 80 ? n - i : 80, sp = 0, k = 0;
			for (; k < lim && in[i + k] != '\n'; k++)
				if (in[i + k] == ' ' && ++sp == 3)
					break;
			if (sp == 3 && k > 0) {
				memcpy(d->buf, in + i, k);
				d->buf_n = k;
				d->spaces = 2;
				d->in_pos += k;
				i += k;
				continue; /* the third space is handled below */
			}
		}
		if (d->st == C_HEAD) {
			if (c == ' ' && d->spaces == 2) {
				/* the third space: the head is whole */
				int64_t ns;
				int stream;
				bool partial;
				if (cri_head(d->buf, d->buf_n, &ns, &stream, &partial)) {
					if (d->open && stream != d->open_stream)
						line_end(d, &o); /* another stream's record: the part ends */
					else if (d->open)
						d->joined++;
					d->rec_time = ns;
					d->rec_stream = stream;
					d->partial = partial;
					d->open_stream = stream;
					d->st = C_BODY;
					if (!d->open && !partial)
						need_line(d); /* even an empty line is a line */
				} else {
					d->malformed++;
					if (d->open)
						line_end(d, &o);
					d->st = RAW;
					for (size_t k = 0; k < d->buf_n; k++)
						content(d, &o, d->buf[k]);
					content(d, &o, c);
				}
			} else if (d->buf_n < 80) {
				d->spaces += c == ' ';
				d->buf[d->buf_n++] = c;
			} else {
				/* no CRI head is this long */
				d->malformed++;
				if (d->open)
					line_end(d, &o);
				d->st = RAW;
				for (size_t k = 0; k < d->buf_n; k++)
					content(d, &o, d->buf[k]);
				content(d, &o, c);
			}
			i++;
			d->in_pos++;
			continue;
		}
		if (d->st == J_START && c == '{' && d->open)
			d->joined++;
		/* docker's own layout, taken at once: {"log":" and ,"stream":"stdout","time":" */
		if (d->st == J_START && n - i >= 8 && memcmp(in + i, "{\"log\":\"", 8) == 0) {
			d->any_key = true;
			d->key = 1;
			d->st = J_LOG;
			i += 8;
			d->in_pos += 8;
			continue;
		}
		if (d->st == J_AFTER && n - i >= 27 && memcmp(in + i, ",\"stream\":\"std", 14) == 0 &&
		    (memcmp(in + i + 14, "out\",\"time\":\"", 13) == 0 ||
		     memcmp(in + i + 14, "err\",\"time\":\"", 13) == 0)) {
			d->rec_stream = in[i + 14] == 'o' ? 1 : 2;
			d->key = 3;
			d->buf_n = 0;
			d->esc = false;
			d->st = J_CAP;
			i += 27;
			d->in_pos += 27;
			continue;
		}
		if (d->st == J_CAP && !d->esc) {
			/* a captured value without escapes, up to its quote */
			size_t lim = n - i < sizeof(d->buf) - d->buf_n ? n - i : sizeof(d->buf) - d->buf_n;
			size_t k = 0;
			while (k < lim && in[i + k] != '"' && in[i + k] != '\\' && in[i + k] != '\n')
				k++;
			if (k > 0) {
				memcpy(d->buf + d->buf_n, in + i, k);
				d->buf_n += k;
				i += k;
				d->in_pos += k;
				continue;
			}
		}
		docker_byte(d, &o, c);
		i++;
		d->in_pos++;
	}
	*produced = o.w;
	return i;
}

size_t pvg_ctrlog_finish(struct pvg_ctrlog *d, char *out_buf, size_t cap)
{
	struct out o = { out_buf, 0, cap };
	/* a last record without its '\n' (the runtime may be writing it now): what it decoded
	 * stays, as the log's last line; a docker record cut before its time has none. A line
	 * left open by a last part (CRI P, docker's cut) just ends with the log. */
	bool started = (d->st == C_HEAD && d->buf_n) || d->st == C_BODY || d->st == RAW ||
		       (d->kind == PVG_CTRLOG_DOCKER && d->st != J_START);
	if (!started || cap < PVG_CTRLOG_SLACK)
		return 0;
	d->records++;
	if (d->st == J_TRAIL) {
		if (d->time_n && pvg_rfc3339_ns(d->time_text, d->time_n, &d->rec_time) == 0)
			stamp_record(d);
	} else if (d->st == C_HEAD) {
		/* a head cut short, or a last line that is no CRI record: its bytes as they are */
		d->malformed++;
		if (d->open)
			line_end(d, &o);
		for (size_t i = 0; i < d->buf_n; i++)
			content(d, &o, d->buf[i]);
	} else if (d->st != C_BODY && d->st != RAW) {
		d->malformed++;
	}
	flush_high(d, &o);
	d->buf_n = 0;
	d->st = RAW;
	return o.w;
}

size_t pvg_ctrlog_hole(struct pvg_ctrlog *d, uint64_t n, char *out_buf, size_t cap)
{
	struct out o = { out_buf, 0, cap };
	/* the record begun before the hole ends there, as at a line end; a line a part left
	 * open (CRI P, docker's cut) ends too: nothing after the hole carries it on */
	if (d->in_pos > d->rec_file) /* bytes of a record were read */
		record_end(d, &o);
	if (d->open || d->pending_nl)
		line_end(d, &o);
	d->in_pos += n;
	record_begin(d, d->in_pos);
	return o.w;
}

const struct pvg_ctrlog_line *pvg_ctrlog_line_at(const struct pvg_ctrlog *d, uint64_t off)
{
	/* the last line that begins at or before off */
	size_t lo = 0, hi = d->n_lines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->lines[mid].out <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &d->lines[lo - 1] : NULL;
}

void pvg_ctrlog_drop_before(struct pvg_ctrlog *d, uint64_t off)
{
	/* keep the line that holds off and every later one */
	size_t keep = 0;
	while (keep + 1 < d->n_lines && d->lines[keep + 1].out <= off)
		keep++;
	if (keep) {
		memmove(d->lines, d->lines + keep, (d->n_lines - keep) * sizeof(*d->lines));
		d->n_lines -= keep;
	}
}
