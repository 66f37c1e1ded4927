/* SPDX-License-Identifier: MIT */
/*
 * A service view built from procfs text: a root pid, its descendants and its start time
 * (procfs/PID/stat starttime after procfs/stat btime). Reads text only, so tests can point
 * it at a fixture tree ($PROVGATE_PROCFS).
 */
#include <dirent.h>

#include "markers.h"

struct pid_set {
	pid_t *pids; /* sorted */
	size_t n;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

static bool set_has(void *opaque, pid_t pid)
{
	const struct pid_set *set = opaque;
	return bsearch(&pid, set->pids, set->n, sizeof(pid_t), cmp_pid) != NULL;
}

static void set_free(void *opaque)
{
	struct pid_set *set = opaque;
	if (set)
		free(set->pids);
	free(set);
}

/* ppid and starttime (clock ticks after boot) from procfs/PID/stat. */
static int read_stat(const char *procfs, pid_t pid, pid_t *ppid, unsigned long long *start)
{
	_cleanup_free_ char *path = pvg_asprintf("%s/%d/stat", procfs, (int)pid);
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = pvg_read_small_file(path, 4096, &text, &len);
	if (r < 0)
		return r;
	/* comm may hold spaces and parentheses: fields start after the last ')' */
	char *close = strrchr(text, ')');
	if (!close)
		return -EBADMSG;
	char state;
	int pp;
	unsigned long long st = 0;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
	 * cutime cstime priority nice num_threads itrealvalue starttime */
	if (sscanf(close + 1,
		   " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &state, &pp, &st) != 3)
		return -EBADMSG;
	*ppid = pp;
	*start = st;
	return 0;
}

static int boot_time(const char *procfs, time_t *out)
{
	_cleanup_free_ char *path = pvg_asprintf("%s/stat", procfs);
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = pvg_read_small_file(path, 1 << 20, &text, &len);
	if (r < 0)
		return r;
	const char *b = strstr(text, "\nbtime ");
	if (!b)
		return -EBADMSG;
	*out = (time_t)strtoll(b + 7, NULL, 10);
	return 0;
}

int pvg_service_view_from_pid(const char *procfs, pid_t root, struct pvg_service_view *view)
{
	memset(view, 0, sizeof(*view));
	pid_t ppid;
	unsigned long long ticks;
	int r = read_stat(procfs, root, &ppid, &ticks);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	time_t btime;
	r = boot_time(procfs, &btime);
	if (r < 0)
		return r;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	view->start.tv_sec = btime + (time_t)(ticks / (unsigned long long)hz);
	view->start.tv_nsec = (long)(ticks % (unsigned long long)hz) * (1000000000L / hz);
	view->root = root;

	/* every process's parent, then the descendants of root */
	_cleanup_free_ pid_t *pids = NULL, *parents = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir(procfs);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d)) && n < (1u << 22)) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		pid_t pp;
		unsigned long long st;
		if (read_stat(procfs, (pid_t)pid, &pp, &st) < 0)
			continue; /* exited meanwhile */
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			pids = pvg_xrealloc(pids, cap, sizeof(pid_t));
			parents = pvg_xrealloc(parents, cap, sizeof(pid_t));
		}
		pids[n] = (pid_t)pid;
		parents[n++] = pp;
	}
	closedir(d);
	struct pid_set *set = pvg_xcalloc(1, sizeof(*set));
	set->pids = pvg_xcalloc(n + 1, sizeof(pid_t));
	set->pids[set->n++] = root;
	for (size_t done = 0; done < set->n; done++) /* breadth first over the tree */
		for (size_t i = 0; i < n; i++)
			if (parents[i] == set->pids[done] && pids[i] != root) {
				bool dup = false;
				for (size_t k = 0; k < set->n && !dup; k++)
					dup = set->pids[k] == pids[i];
				if (!dup && set->n <= n)
					set->pids[set->n++] = pids[i];
			}
	qsort(set->pids, set->n, sizeof(pid_t), cmp_pid);
	view->in_tree = set_has;
	view->opaque = set;
	view->release = set_free;
	return 0;
}

void pvg_service_view_release(struct pvg_service_view *view)
{
	if (view->release)
		view->release(view->opaque);
	memset(view, 0, sizeof(*view));
}
