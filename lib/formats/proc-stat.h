/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/stat and /proc/<pid>/cmdline text: pure parsers (sys/procs.c reads them). */
#pragma once

#include "util/util.h"

struct pvg_proc_stat {
	char comm[16];         /* the kernel's name, cut to 15 bytes */
	char state;            /* 'R', 'S', 'Z', ... */
	int ppid;
	uint64_t start_ticks;  /* field 22: since boot, in clock ticks */
};

/* "pid (comm) S ppid pgrp ... starttime ...": comm may hold spaces and parentheses, so the
 * fields after it are counted from its last ')'. 0, or -EBADMSG when fields are missing or a
 * number does not fit in 64 bits. */
int pvg_proc_stat_parse(const char *text, size_t len, struct pvg_proc_stat *out);
/* The command line as one string: arguments joined by spaces, control bytes shown as '?';
 * NULL when it is empty (kernel threads, zombies). */
char *pvg_cmdline_text(const char *bytes, size_t len);
