/* SPDX-License-Identifier: MIT */
/*
 * /proc/net/tcp{,6} lines: "sl: LOCAL REMOTE ST TX:RX TR:WHEN RETR UID TIMEOUT INODE ...",
 * addresses as hex words and ports as 4 hex digits. Only what the listener check needs is kept.
 */
#include <arpa/inet.h>
#include <sys/socket.h>

#include "formats/net-tcp.h"

/* Next whitespace-separated token of [*p, end). */
static bool token(const char **p, const char *end, const char **t, size_t *tlen)
{
	const char *s = *p;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == end)
		return false;
	*t = s;
	while (s < end && *s != ' ' && *s != '\t')
		s++;
	*tlen = (size_t)(s - *t);
	*p = s;
	return true;
}

static bool parse_hex(const char *t, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	if (n == 0 || n > 16)
		return false;
	for (size_t i = 0; i < n; i++) {
		int d = pvg_hex_digit(t[i]);
		if (d < 0)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return true;
}

static bool parse_dec(const char *t, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (t[i] < '0' || t[i] > '9' || x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(t[i] - '0');
	}
	*v = x;
	return true;
}

static int parse_line(const char *s, const char *end, int family, struct pvg_tcp_socket *out)
{
	const char *t;
	size_t n;
	uint64_t v;
	size_t addr_hex = family == 6 ? 32 : 8;
	memset(out, 0, sizeof(*out));
	out->family = family;
	if (!token(&s, end, &t, &n) || n < 2 || t[n - 1] != ':') /* "sl:" */
		return -EINVAL;
	if (!token(&s, end, &t, &n) || n != addr_hex + 5 || t[addr_hex] != ':')
		return -EINVAL;
	for (size_t i = 0; i < addr_hex / 2; i++) {
		int hi = pvg_hex_digit(t[2 * i]), lo = pvg_hex_digit(t[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out->addr[i] = (unsigned char)(hi << 4 | lo);
	}
	if (!parse_hex(t + addr_hex + 1, 4, &v))
		return -EINVAL;
	out->port = (uint16_t)v;
	if (!token(&s, end, &t, &n) || n != addr_hex + 5) /* remote */
		return -EINVAL;
	if (!token(&s, end, &t, &n) || !parse_hex(t, n, &v) || v > 0xff)
		return -EINVAL;
	out->state = (uint8_t)v;
	for (int skip = 0; skip < 3; skip++) /* tx:rx, tr:when, retrnsmt */
		if (!token(&s, end, &t, &n))
			return -EINVAL;
	if (!token(&s, end, &t, &n) || !parse_dec(t, n, &v) || v > UINT32_MAX)
		return -EINVAL;
	out->uid = (uint32_t)v;
	if (!token(&s, end, &t, &n)) /* timeout */
		return -EINVAL;
	if (!token(&s, end, &t, &n) || !parse_dec(t, n, &v))
		return -EINVAL;
	out->inode = v;
	return 0;
}

void pvg_tcp_table_clear(struct pvg_tcp_table *t)
{
	free(t->s);
	t->s = NULL;
	t->n = 0;
}

int pvg_net_tcp_parse(const char *text, size_t len, int family, struct pvg_tcp_table *out,
		      size_t *bad_line)
{
	const char *p = text, *end = text + len;
	size_t cap = 0, line = 0;
	if (bad_line)
		*bad_line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		line++;
		const char *q = p;
		while (q < le && *q == ' ')
			q++;
		/* the header line starts with "sl"; blank lines carry nothing */
		if (q < le && !(line == 1 && le - q >= 2 && q[0] == 's' && q[1] == 'l')) {
			if (out->n == cap) {
				cap = cap ? cap * 2 : 32;
				out->s = pvg_xrealloc(out->s, cap, sizeof(*out->s));
			}
			if (parse_line(q, le, family, &out->s[out->n]) < 0) {
				if (bad_line)
					*bad_line = line;
				return -EINVAL;
			}
			out->n++;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

void pvg_tcp_addr_string(const struct pvg_tcp_socket *s, char *out, size_t size)
{
	/* the kernel prints each 32-bit word in host byte order */
	unsigned char net[16];
	size_t words = s->family == 6 ? 4 : 1;
	for (size_t w = 0; w < words; w++) {
		uint32_t hv = (uint32_t)s->addr[4 * w] << 24 | (uint32_t)s->addr[4 * w + 1] << 16 |
			      (uint32_t)s->addr[4 * w + 2] << 8 | s->addr[4 * w + 3];
		memcpy(net + 4 * w, &hv, 4); /* back into the host's memory order */
	}
	if (!inet_ntop(s->family == 6 ? AF_INET6 : AF_INET, net, out, (socklen_t)size))
		snprintf(out, size, "?");
}
