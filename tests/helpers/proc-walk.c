/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/procs: the least /proc work a complete gates 4+5 decision needs, as a
 * reference: every process's stat and cmdline read and every fd of it read with readlink
 * (the port's owner, the GPU holders), on one thread per usable CPU. It decides nothing.
 *   proc-walk [--fds-only]
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int *pids;
static size_t n_pids, n_threads;
static int procfd;
static int fds_only;

static void read_small(const char *name)
{
	char buf[4096];
	int fd = openat(procfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)!read(fd, buf, sizeof(buf));
	close(fd);
}

static void *walk(void *arg)
{
	size_t k = (size_t)arg;
	char name[64], link[4096];
	union {
		struct dirent64 d;
		char b[8192];
	} ents;
	for (size_t i = k; i < n_pids; i += n_threads) {
		if (!fds_only) {
			snprintf(name, sizeof(name), "%d/stat", pids[i]);
			read_small(name);
			snprintf(name, sizeof(name), "%d/cmdline", pids[i]);
			read_small(name);
		}
		snprintf(name, sizeof(name), "%d/fd", pids[i]);
		int d = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d < 0)
			continue;
		ssize_t n;
		while ((n = getdents64(d, ents.b, sizeof(ents.b))) > 0) {
			for (ssize_t off = 0; off < n;) {
				struct dirent64 *de = (struct dirent64 *)(ents.b + off);
				off += de->d_reclen;
				if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
					(void)!readlinkat(d, de->d_name, link, sizeof(link));
			}
		}
		close(d);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	fds_only = argc > 1 && strcmp(argv[1], "--fds-only") == 0;
	procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fdopendir(dup(procfd));
	if (procfd < 0 || !dir) {
		perror("/proc");
		return 1;
	}
	size_t cap = 1024;
	pids = malloc(cap * sizeof(*pids));
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (n_pids == cap)
			pids = realloc(pids, (cap *= 2) * sizeof(*pids));
		pids[n_pids++] = atoi(de->d_name);
	}
	closedir(dir);
	cpu_set_t set;
	n_threads = sched_getaffinity(0, sizeof(set), &set) == 0 ? (size_t)CPU_COUNT(&set) : 1;
	if (n_threads > 16)
		n_threads = 16;
	pthread_t th[16];
	for (size_t k = 1; k < n_threads; k++)
		pthread_create(&th[k], NULL, walk, (void *)k);
	walk((void *)0);
	for (size_t k = 1; k < n_threads; k++)
		pthread_join(th[k], NULL);
	free(pids);
	return 0;
}
