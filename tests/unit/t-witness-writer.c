/* SPDX-License-Identifier: MIT */
/*
 * The witness library's writer (lib/witness/writer.c, compiled in with the sanitizers):
 * launches counted from many threads at once while the helper thread rewrites the file every
 * 10 ms, and a reader that keeps parsing the file meanwhile never sees a torn one.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "formats/witness.h"
#include "tap.h"
#include "util/util.h"
#include "witness/witness.h"

#define THREADS 8
#define PER_THREAD 100000
#define KERNELS 16

static char dir[] = "/tmp/pvg-witness-writer.XXXXXX";
static char file[4200];
static atomic_int stop_reader;
static long reads_ok, reads_bad;
static struct pvg_witness_entry entries[PVG_WITNESS_MAX_RECORDS];

static void *launcher(void *arg)
{
	long id = (long)arg;
	char name[32];
	for (long i = 0; i < PER_THREAD; i++) {
		unsigned k = (unsigned)((i + id) % KERNELS);
		snprintf(name, sizeof(name), "_Z6kernelILi%uEEvv", k);
		struct pvg_launch l = { .handle = 0x5000 + k, .grid = { k + 1, 1, 1 },
					.block = { 64, 1, 1 }, .via = PVG_WITNESS_VIA_DRIVER,
					.name = name };
		pvg_witness_record(&l);
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	static struct pvg_witness_entry mine[PVG_WITNESS_MAX_RECORDS];
	while (!atomic_load(&stop_reader)) {
		char *buf = NULL;
		size_t len = 0;
		if (pvg_read_file(file, PVG_WITNESS_MAX_FILE, &buf, &len) == 0) {
			struct pvg_witness_file f = { .entries = mine };
			if (pvg_witness_parse((uint8_t *)buf, len, &f, NULL) == PVG_WITNESS_OK)
				reads_ok++;
			else
				reads_bad++;
			free(buf);
		}
	}
	return NULL;
}

static void writer_counts_concurrent_launches_and_never_tears(void)
{
	CHECK(mkdtemp(dir) != NULL);
	setenv("PROVGATE_WITNESS_INTERVAL_MS", "10", 1);
	CHECK_INT(pvg_witness_start(dir), 0);
	CHECK_INT(pvg_witness_start(dir), -EALREADY);
	pvg_witness_set_api(PVG_WITNESS_API_CUDA, "test", 1);
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	CHECK(file[0] != '\0');
	pthread_t r, t[THREADS];
	pthread_create(&r, NULL, reader, NULL);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, launcher, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	usleep(50000);
	atomic_store(&stop_reader, 1);
	pthread_join(r, NULL);
	pvg_witness_stop();
	printf("#   %ld whole reads while writing, %ld bad\n", reads_ok, reads_bad);
	CHECK(reads_ok > 0);
	CHECK_INT(reads_bad, 0);

	char *buf = NULL;
	size_t len = 0;
	CHECK_INT(pvg_read_file(file, PVG_WITNESS_MAX_FILE, &buf, &len), 0);
	struct pvg_witness_file f = { .entries = entries };
	CHECK_INT(pvg_witness_parse((uint8_t *)buf, len, &f, NULL), PVG_WITNESS_OK);
	CHECK_INT(f.n, KERNELS);
	CHECK_INT(f.h.launches, (long)THREADS * PER_THREAD);
	CHECK(f.h.flags & PVG_WITNESS_F_FINAL);
	uint64_t total = 0;
	for (size_t i = 0; i < f.n; i++) {
		total += f.entries[i].count;
		CHECK_INT(f.entries[i].count, (long)THREADS * PER_THREAD / KERNELS);
		CHECK(f.entries[i].first_ns <= f.entries[i].last_ns);
		CHECK_INT(f.entries[i].name.n, strlen("_Z6kernelILi0EEvv") + (f.entries[i].grid[0] > 10));
	}
	CHECK_INT(total, (long)THREADS * PER_THREAD);
	CHECK_INT(f.h.pid, getpid());
	free(buf);
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	RUN(writer_counts_concurrent_launches_and_never_tears);
	TAP_EXIT();
}
