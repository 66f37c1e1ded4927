/* SPDX-License-Identifier: MIT */
/* The listening sockets of a port, read from the socket tables under a procfs root. */
#include "sys/net-tcp.h"

int pvg_net_tcp_listeners(const char *procfs, uint16_t port, struct pvg_tcp_table *out)
{
	static const struct {
		const char *name;
		int family;
	} files[] = { { "tcp", 4 }, { "tcp6", 6 } };
	struct pvg_tcp_table all = { 0 };
	out->s = NULL;
	out->n = 0;
	for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
		_cleanup_free_ char *path = pvg_asprintf("%s/net/%s", procfs, files[f].name);
		_cleanup_free_ char *text = NULL;
		size_t len;
		int r = pvg_read_file(path, 256u << 20, &text, &len);
		if (r == -ENOENT && files[f].family == 6)
			continue; /* IPv6 disabled */
		if (r < 0) {
			pvg_tcp_table_clear(&all);
			return r;
		}
		r = pvg_net_tcp_parse(text, len, files[f].family, &all, NULL);
		if (r < 0) {
			pvg_tcp_table_clear(&all);
			return r;
		}
	}
	for (size_t i = 0; i < all.n; i++)
		if (all.s[i].state == PVG_TCP_LISTEN && (port == 0 || all.s[i].port == port)) {
			out->s = pvg_xrealloc(out->s, out->n + 1, sizeof(*out->s));
			out->s[out->n++] = all.s[i];
		}
	pvg_tcp_table_clear(&all);
	return 0;
}
