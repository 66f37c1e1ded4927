/* SPDX-License-Identifier: MIT */
/* libFuzzer target: /proc/<pid>/maps, /proc/net/tcp{,6}, the NSpid line of status,
 * /proc/<pid>/cgroup, /proc/<pid>/mountinfo, /proc/<pid>/stat and cmdline text on arbitrary
 * bytes. */
/* Built by tests/fuzz/build.sh. */
#include "formats/container.h"
#include "formats/maps.h"
#include "formats/net-tcp.h"
#include "formats/proc-stat.h"

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
	struct pvg_nspid nspid;
	pvg_nspid_parse((const char *)data, size, &nspid);
	struct pvg_container ctr;
	pvg_cgroup_container((const char *)data, size, &ctr);
	struct pvg_rootfs fs;
	if (pvg_mountinfo_root((const char *)data, size, &fs) > 0 && !fs.source)
		__builtin_trap(); /* a found root always has its source */
	pvg_rootfs_clear(&fs);
	struct pvg_proc_stat st;
	if (pvg_proc_stat_parse((const char *)data, size, &st) == 0 && strlen(st.comm) > 15)
		__builtin_trap(); /* the name is always cut to the kernel's 15 bytes */
	free(pvg_cmdline_text((const char *)data, size));
	return 0;
}
