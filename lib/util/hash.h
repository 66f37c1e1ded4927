/* SPDX-License-Identifier: MIT */
/* lib/util: SHA-256 of files with the identity of the fd that was read, and the build /
 * installed pair read in one pass. No run context: callers cache what they need. */
#pragma once

#include "util/util.h"


/* What one open fd said about a file: identity and digest belong together. */
struct pvg_file_id {
	char *path;
	int err;      /* 0, or the negative errno that stopped us */
	const char *err_what; /* "open", "read", "not a regular file", ... */
	mode_t mode;
	uint64_t size;
	uint64_t dev;
	uint64_t ino;
	struct timespec mtime;
	struct timespec ctime;
	/* refused unread (err -EFBIG): over pvg_hash_max_size, or mostly holes */
	bool too_large;
	bool sparse;
	uint64_t data_bytes; /* not holes (pvg_data_bytes), for files of PVG_HASH_SPARSE_MIN on */
	unsigned char sha256[32];
	char hex[65];
	bool hashed;
	/* the digest was taken from another file whose bytes compared equal to these */
	bool digest_by_compare;
};

/* How the bulk readers read: bytes asked of each read() (chunks that stay in the reading
 * core's cache cost far less to copy out of the page cache than ones that do not), the
 * depth of the pair job's ring, whether a big file gets a reader thread beside its hasher,
 * whether the hasher gets a CPU of its own on 2-3 CPU machines (always, or when the machine
 * is otherwise quiet: a pinned hasher waits for whoever else holds its CPU). The defaults are what
 * tests/bench/chunks measured; setting another plan is for that benchmark. */
struct pvg_read_plan {
	size_t chunk;
	unsigned ring;
	bool split; /* files of 64 MiB and more: read on one thread, hashed on another */
	bool pin;
	bool pin_if_quiet; /* pin only when nothing else is runnable as the job starts */
	/* the pair job's hand-off: the hasher reads the installed file itself and the other
	 * thread reads the build and compares (else that thread reads both, the hasher hashes) */
	bool hasher_reads;
};
#define PVG_READ_RING_MAX 64u
#define PVG_READ_PLAN_DEFAULT                                                              \
	{ .chunk = 64u << 10, .ring = 8, .split = true, .pin = false, .pin_if_quiet = true,       \
	  .hasher_reads = false }
/* NULL: the defaults again. Out-of-range sizes fall back to the default. */
void pvg_read_plan_set(const struct pvg_read_plan *plan);
const struct pvg_read_plan *pvg_read_plan_get(void);

/* SHA-256 of bytes in memory, as 64 lowercase hex digits. */
void pvg_sha256_hex(const void *data, size_t n, char out[65]);

/* Opens without blocking (FIFOs), fstats, refuses non-regular files with -EINVAL
 * (err_what says why), hashes the regular file on the same fd. */
/* Every file hashed is opened as pvg_open_untrusted does (never a device) and refused
 * unread when it is larger than the bound (a run sets it from its config; 0: the default)
 * or, from PVG_HASH_SPARSE_MIN bytes on, when less than half of it is data (SEEK_DATA). */
#define PVG_HASH_MAX_SIZE_DEFAULT (16ull << 30)
#define PVG_HASH_SPARSE_MIN (64u << 20)
void pvg_hash_set_max_size(uint64_t bytes);
uint64_t pvg_hash_max_size(void);
int pvg_hash_file(const char *path, struct pvg_file_id *out);
/* Hashes n files concurrently, one thread each (n <= 8). Returns 0; per-file errors in out[i]. */
int pvg_hash_files(const char *const *paths, size_t n, struct pvg_file_id *out);
/* Hashes an already open fd from its current offset up to len bytes (or EOF when len < 0). */
int pvg_hash_fd(int fd, int64_t len, unsigned char digest[32], uint64_t *nread);
void pvg_file_id_clear(struct pvg_file_id *id);
/* Same dev, inode, size, mtime and ctime: the same bytes, as far as the kernel says. */
bool pvg_file_id_matches(const struct pvg_file_id *id, const struct stat *st);
/* The build and the installed artifact in one pass: each chunk of the installed file is read
 * once, compared with the build's and hashed on a thread of its own, so that the digest and
 * the comparison are of the same bytes. start never blocks (threads do the work); join waits
 * and hands over both identities: *i with its digest, *b with the same digest when every byte
 * was compared equal (digest_by_compare). join returns 1 (equal) or 0 (differ, unreadable,
 * changed while read: see the err fields); *diff_at is the first differing byte, or
 * UINT64_MAX when unknown (sizes differ, not compared). cancel stops, waits and frees. */
struct pvg_pair_job;
/* build may be NULL: the installed file is only hashed (pvg_hash_file does so for big files) */
struct pvg_pair_job *pvg_pair_start(const char *build, const char *installed);
bool pvg_pair_differs(struct pvg_pair_job *job); /* already known to differ */
/* Pins the calling thread off the CPU the job's hasher has to itself (on small machines
 * only); for threads that end with the job, like the one preparing later gates. */
void pvg_pair_keep_off(const struct pvg_pair_job *job);
/* Waits until the files are known to differ, or every byte was read; true if they differ. */
bool pvg_pair_wait_differs(struct pvg_pair_job *job);
const char *pvg_pair_installed(const struct pvg_pair_job *job);
int pvg_pair_join(struct pvg_pair_job *job, struct pvg_file_id *b, struct pvg_file_id *i,
		  uint64_t *diff_at);
void pvg_pair_cancel(struct pvg_pair_job *job);
/* Optional progress callback for long hashes (bytes done, total), called at most every 100 ms. */
typedef void (*pvg_progress_fn)(const char *path, uint64_t done, uint64_t total);
void pvg_hash_set_progress(pvg_progress_fn fn);

