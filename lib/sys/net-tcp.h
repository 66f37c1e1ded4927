/* SPDX-License-Identifier: MIT */
/* lib/sys: who listens on a port, from /proc/net/tcp{,6} (formats/net-tcp.h parses them). */
#pragma once

#include "formats/net-tcp.h"

/* Listening sockets on port (0: on any port) from <procfs>/net/tcp and tcp6 (a missing tcp6 is not an error).
 * 0 or -errno. */
int pvg_net_tcp_listeners(const char *procfs, uint16_t port, struct pvg_tcp_table *out);
