/* SPDX-License-Identifier: MIT */
/* Threads: started here only, joined by whoever started them. */
#include <sched.h>

#include "util/thread.h"

unsigned pvg_cpus_usable(void)
{
	cpu_set_t cs;
	if (sched_getaffinity(0, sizeof(cs), &cs) == 0 && CPU_COUNT(&cs) > 0)
		return (unsigned)CPU_COUNT(&cs);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

int pvg_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	int r = pthread_create(thread, NULL, fn, arg);
	return r ? -r : 0;
}

struct call {
	void (*fn)(void *);
	void *arg;
};

static void *call_thread(void *p)
{
	struct call *c = p;
	c->fn(c->arg);
	return NULL;
}

int pvg_run_on_thread(void (*fn)(void *arg), void *arg)
{
	struct call c = { fn, arg };
	pthread_t t;
	int r = pvg_thread_start(&t, call_thread, &c);
	if (r == 0)
		pthread_join(t, NULL);
	return r;
}

enum { MAX_JOB_THREADS = PVG_MAX_JOB_THREADS };

void pvg_run_jobs(void (*fn)(void *job), void *jobs, size_t n, size_t stride)
{
	struct call calls[MAX_JOB_THREADS];
	pthread_t tids[MAX_JOB_THREADS];
	bool started[MAX_JOB_THREADS] = { false };
	char *base = jobs;
	for (size_t i = 1; i < n; i++) {
		if (i >= MAX_JOB_THREADS)
			break;
		calls[i] = (struct call){ fn, base + i * stride };
		started[i] = pvg_thread_start(&tids[i], call_thread, &calls[i]) == 0;
	}
	if (n)
		fn(base);
	for (size_t i = 1; i < n; i++) {
		if (i < MAX_JOB_THREADS && started[i])
			pthread_join(tids[i], NULL);
		else
			fn(base + i * stride);
	}
}
