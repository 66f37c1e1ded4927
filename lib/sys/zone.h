/* SPDX-License-Identifier: MIT */
/*
 * The time zone a process's C library writes local time in, as glibc finds it: TZ in the
 * process's environment (a zone name under TZDIR or /usr/share/zoneinfo, an absolute path,
 * or a POSIX TZ rule; empty: UTC), else /etc/localtime (absent: UTC), each file read in the
 * process's own root through <procfs>/PID/root, symlinks resolved inside that root, with the
 * rights of the process's user (<procfs>/PID/status): what its C library could read. Only a
 * regular file is opened (never a device, FIFO or socket; a file of procfs or sysfs is not
 * read). Read once; provgate's own zone (TZ, tzset) is never touched.
 */
#pragma once
#include "formats/tz.h"
#include "util/util.h"

struct pvg_proc_zone {
	bool known;
	struct pvg_tz tz;
	char *name;   /* "Asia/Shanghai", "CST-8", "UTC" ("" when unknown) */
	char *source; /* how it was found ("TZ=Asia/Shanghai in its environment, ...") */
	struct pvg_msg why; /* when not known: why (text) and what to do (hint) */
	/* when not known because the zone file was refused (SPEC §11: a device, FIFO, socket,
	 * folder, a file of the kernel's, too big, a link out of bounds, or not readable by the
	 * service's user): a word for it ("device", "kernel-file", "denied", ...), else NULL */
	const char *refused;
};

/* 0 with out->known saying whether the zone is known; -ESRCH when the process is gone. */
int pvg_proc_zone_read(const char *procfs, pid_t pid, struct pvg_proc_zone *out);
void pvg_proc_zone_clear(struct pvg_proc_zone *z);
