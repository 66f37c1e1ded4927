/* SPDX-License-Identifier: MIT */
/* libFuzzer target: /proc/<pid>/maps and /proc/net/tcp{,6} text on arbitrary bytes. */
/* Built by tests/fuzz/build.sh. */
#include "sys/maps.h"
#include "sys/net-tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_maps maps = { 0 };
	size_t bad = 0;
	pvg_maps_parse((const char *)data, size, &maps, &bad);
	pvg_maps_clear(&maps);
	for (int family = 4; family <= 6; family += 2) {
		struct pvg_tcp_table t = { 0 };
		size_t bad_line = 0;
		pvg_net_tcp_parse((const char *)data, size, family, &t, &bad_line);
		for (size_t i = 0; i < t.n; i++) {
			char addr[128];
			pvg_tcp_addr_string(&t.s[i], addr, sizeof(addr));
		}
		pvg_tcp_table_clear(&t);
	}
	return 0;
}
