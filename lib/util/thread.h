/* SPDX-License-Identifier: MIT */
/*
 * lib/util: the one place that starts threads. Every caller does its work on the calling
 * thread when a thread cannot be had (no error reaches the user: the work is the same, only
 * slower).
 */
#pragma once

#include <pthread.h>

#include "util/util.h"

/* The CPUs this process may run on (its affinity mask), at least 1. */
unsigned pvg_cpus_usable(void);
/* The most threads pvg_run_jobs starts for one call (the calling thread included). */
#define PVG_MAX_JOB_THREADS 16u
/* Starts fn(arg) on a thread of its own: 0, or -errno (the caller then does the work). */
int pvg_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);
/* Runs fn(arg) on a thread of its own and waits for it: for work that must not share this
 * thread's settings (priority, CPU affinity). 0, or -errno when no thread started (fn did
 * not run: the caller does the work its own way). */
int pvg_run_on_thread(void (*fn)(void *arg), void *arg);
/* Runs fn on each of n jobs laid out stride bytes apart: the first on this thread, each
 * other on a thread of its own (or here, when none starts); returns when all are done. */
void pvg_run_jobs(void (*fn)(void *job), void *jobs, size_t n, size_t stride);
