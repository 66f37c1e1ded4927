/* SPDX-License-Identifier: MIT */
/* /proc/net/tcp and /proc/net/tcp6 text: a pure line parser (sys/net-tcp.h reads the files). */
#pragma once
#include "util/util.h"

#define PVG_TCP_LISTEN 0x0A

struct pvg_tcp_socket {
	int family;          /* 4 or 6 */
	unsigned char addr[16]; /* as the kernel prints it: 4 or 16 bytes, host order words */
	uint16_t port;
	uint8_t state;
	uint32_t uid;
	uint64_t inode; /* 0 for sockets without one (TIME_WAIT) */
};

struct pvg_tcp_table {
	struct pvg_tcp_socket *s;
	size_t n;
};

void pvg_tcp_table_clear(struct pvg_tcp_table *t);
/* "127.0.0.1" / "::" style text of a socket's local address. */
void pvg_tcp_addr_string(const struct pvg_tcp_socket *s, char *out, size_t size);

/* Parses the text of /proc/net/tcp (family 4) or tcp6 (family 6), header line included.
 * 0, or -EINVAL with *bad_line (1-based) set. */
int pvg_net_tcp_parse(const char *text, size_t len, int family, struct pvg_tcp_table *out,
		      size_t *bad_line);
